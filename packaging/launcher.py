"""Entry script of the frozen app: the same ``main`` as the ``fabric-designer`` command.

It lives outside the ``designer`` package on purpose: PyInstaller puts the entry
script's folder on the module path, and ``designer/io`` there would shadow the
standard library's ``io``.
"""

import sys

from designer.cli import main

if __name__ == "__main__":
    sys.exit(main())
