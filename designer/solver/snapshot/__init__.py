"""The immutable array view of a design that the solver works on (`Snapshot`), and what
it derives from the model: structural order, NVLink domain walks, rail NICs, per-arc
delays.

`build` defines the snapshot; this front door hands on the names callers outside the
package use.
"""

from designer.solver.snapshot.build import (
    DEAD,
    NVLINK,
    PCIE,
    Snapshot,
    build_snapshot,
    capture_design,
    take_snapshot,
)

__all__ = ["DEAD", "NVLINK", "PCIE", "Snapshot", "build_snapshot", "capture_design",
           "take_snapshot"]
