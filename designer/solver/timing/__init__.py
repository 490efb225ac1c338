"""NCCL's time model for one collective: latency and bandwidth per protocol, channels and
the auto algorithm choice (`nccl_model`), with its parameters (`nccl_params`) and the
steps NCCL's collectives take (`nccl_steps`)."""
