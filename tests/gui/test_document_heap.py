"""Opening a design settles the heap: the old design is collected, the new one frozen."""

import gc
import weakref

from designer.gui.document import Document
from designer.model.templates import build_template


def test_replace_collects_the_old_design_and_freezes_the_new(qapp):
    document = Document(build_template("example"))
    hgx = build_template("hgx")
    hgx.self_reference = hgx  # garbage only a collection frees, as real cycles are
    document.replace(hgx)
    frozen = weakref.ref(hgx)
    del hgx
    assert gc.get_freeze_count() > 0  # the hgx design now sits in the frozen generation
    document.replace(build_template("example"))
    # Frozen, yet collected once replaced: settle_heap unfreezes before it collects.
    assert frozen() is None
    gc.unfreeze()
