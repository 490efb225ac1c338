"""``python -m designer`` is the ``fabric-designer`` command."""

import sys

from designer.cli import main

sys.exit(main())
