"""Does a job fit in its GPUs' memory?  Per pipeline stage: weights, gradients,
optimizer states and activations of one rank, against the GPU's HBM.

* **Weights** in the training dtype, **gradients** in ``grad_dtype`` (Megatron keeps an
  fp32 main gradient), **optimizer states** of mixed-precision Adam: an fp32 master copy
  (unless training in fp32) and two fp32 moments, 12 bytes a parameter (Rajbhandari et
  al. 2020).  ZeRO-1 shards the optimizer states over the data-parallel group (DP x
  CP); ZeRO-3 also shards weights and gradients.  Expert weights are divided by ``ep``
  and sharded over the ``dp / ep`` expert replicas.
* **Activations** per layer and micro-batch, Korthikanti et al. 2022 (arXiv 2205.05198,
  Section 4), with ``s`` the sequence per CP rank, ``b`` the micro-batch, ``h`` the
  hidden size, ``a`` the heads, ``t`` TP:
  ``s b h (10 + 24 / t + 5 a s / (h t))`` with TP; ``s b h / t (34 + 5 a s / h)`` with
  sequence parallelism (`Job.layer_activation_bytes`); selective recompute and fused
  attention drop the ``5 a s / h`` attention-score term; full recompute keeps only
  each layer's input, ``2 s b h`` (``/ t`` with sequence parallelism).
  Under 1F1B the first stage holds ``min(pp, m)`` micro-batches of its layers, times
  ``1 + (pp - 1) / (pp vp)`` when interleaved (Korthikanti et al., Section 4.2.3); the
  last stage also holds the fp32 logits ``4 s b V / t``.

Example
-------
>>> from designer.workload.job import Job
>>> from designer.workload.presets import preset
>>> fit = memory_fit(Job.from_preset("a", preset("gpt3-175b")), hbm_GB=80)
>>> fit.fits, round(fit.weights_GB, 1), round(fit.total_GB)
(True, 2.9, 36)
"""

from __future__ import annotations

from dataclasses import dataclass

from designer.workload.job import DTYPE_BYTES, Job
from designer.workload.traffic import stage_layers

__all__ = ["MemoryFit", "activation_bytes_per_layer", "memory_fit"]

#: Adam's fp32 moments (and master copy) per parameter.
_ADAM_MOMENTS = 8
_MASTER = 4


@dataclass(frozen=True)
class MemoryFit:
    """The memory of one rank of the fullest pipeline stage, in GB (10^9 bytes).

    Attributes
    ----------
    stage : int
        The pipeline stage (device) that needs the most.
    weights_GB, grads_GB, optimizer_GB, activations_GB, total_GB : float
    hbm_GB : float
        The GPU's memory (0: unknown).
    fits : bool
        ``total_GB <= hbm_GB`` (True when the memory is unknown).
    per_stage_GB : tuple of float
        Every stage's total.
    """

    stage: int
    weights_GB: float
    grads_GB: float
    optimizer_GB: float
    activations_GB: float
    total_GB: float
    hbm_GB: float
    fits: bool
    per_stage_GB: tuple[float, ...]

    def summary(self) -> str:
        """One line: the breakdown and the verdict."""
        verdict = ("fits" if self.fits else "does NOT fit") + (
            f" in {self.hbm_GB:.0f} GB" if self.hbm_GB else " (GPU memory unknown)"
        )
        return (
            f"{self.total_GB:.1f} GB per GPU (stage {self.stage}: weights "
            f"{self.weights_GB:.1f}, gradients {self.grads_GB:.1f}, optimizer "
            f"{self.optimizer_GB:.1f}, activations {self.activations_GB:.1f}): {verdict}"
        )


def activation_bytes_per_layer(job: Job, moe: bool) -> float:
    """Activation bytes one rank keeps for one layer and one micro-batch (see module)."""
    cfg, par = job.config, job.parallel
    if cfg.recompute == "full":
        sp = cfg.sequence_parallel and par.tp > 1
        return 2 * job.seq_len / par.cp * cfg.micro_batch * job.model.hidden / (
            par.tp if sp else 1
        )
    scores = cfg.recompute != "selective" and not cfg.flash_attention
    return job.layer_activation_bytes(moe, scores)


def memory_fit(job: Job, hbm_GB: float = 0.0) -> MemoryFit:
    """Memory of one rank of each pipeline stage of ``job`` against ``hbm_GB``.

    Parameters
    ----------
    job : Job
    hbm_GB : float
        The GPU's memory (the catalog's ``memory_GB``); 0 when unknown.

    Returns
    -------
    MemoryFit
    """
    m, cfg, par = job.model, job.config, job.parallel
    w, g = DTYPE_BYTES[cfg.dtype], DTYPE_BYTES[cfg.grad_dtype]
    opt = _ADAM_MOMENTS + (0 if cfg.dtype == "fp32" else _MASTER)
    chunks = stage_layers(m.layers, par.pp * par.vp)
    micro = cfg.micro_batches(par)
    shard = par.dp * par.cp
    expert_shard = par.dp // par.ep * par.cp
    rows = []
    for x in range(par.pp):
        dense = expert = 0.0
        act = 0.0
        for ch in range(par.vp):
            v = ch * par.pp + x
            d, e = m.stage_params(chunks[v], v == 0, v == par.pp * par.vp - 1)
            dense += d / par.tp
            expert += e / (par.ep * par.tp)
            act += sum(activation_bytes_per_layer(job, m.is_moe_layer(i)) for i in chunks[v])
        inflight = min(par.pp - x, micro)
        if par.vp > 1:
            inflight *= 1 + (par.pp - 1) / (par.pp * par.vp)
        act *= inflight
        if x == par.pp - 1:
            act += 4 * job.seq_len / par.cp * cfg.micro_batch * m.vocab / par.tp
        opt_bytes = opt * (dense / shard + expert / expert_shard)
        if cfg.zero == "none":
            opt_bytes = opt * (dense + expert)
        if cfg.zero == "3":
            weights = w * (dense / shard + expert / expert_shard)
            grads = g * (dense / shard + expert / expert_shard)
        else:
            weights, grads = w * (dense + expert), g * (dense + expert)
        rows.append((weights, grads, opt_bytes, act))
    totals = [sum(r) / 1e9 for r in rows]
    worst = max(range(par.pp), key=lambda i: totals[i])
    weights, grads, opt_bytes, act = (v / 1e9 for v in rows[worst])
    total = totals[worst]
    return MemoryFit(
        stage=worst,
        weights_GB=weights,
        grads_GB=grads,
        optimizer_GB=opt_bytes,
        activations_GB=act,
        total_GB=total,
        hbm_GB=float(hbm_GB),
        fits=not hbm_GB or total <= hbm_GB,
        per_stage_GB=tuple(totals),
    )
