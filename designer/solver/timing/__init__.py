"""NCCL's time model for one collective: latency and bandwidth per protocol, channels and
the auto algorithm choice (`nccl_model`), with its parameters (`nccl_params`) and the
steps NCCL's collectives take (`nccl_steps`).

This front door hands on the names the calibration benchmark uses.
"""

from designer.solver.timing.nccl_model import CollectiveShape, choose, nvls_bus_ceiling
from designer.solver.timing.nccl_params import (
    DEFAULT_PARAMS_PATH,
    FITTED,
    ModelParams,
    load_params,
)

__all__ = ["DEFAULT_PARAMS_PATH", "FITTED", "CollectiveShape", "ModelParams", "choose",
           "load_params", "nvls_bus_ceiling"]
