"""A training job: its model, training configuration, parallel layout, placement and
compute speed.

Parallel sizes follow Megatron-LM: ``tp * cp * pp * dp`` is the job's GPU count and
expert parallelism is carved out of data parallelism (``ep`` divides ``dp`` and the
number of experts; each expert's weights are replicated ``dp / ep`` times), as in
Megatron-Core and the DeepSeek-V3 report (PP16, EP64, DP128 on 2,048 GPUs).

Every check raises ``ValueError`` with one line naming the job and the field.

Example
-------
>>> from designer.workload.presets import preset
>>> job = Job.from_preset("a", preset("tiny"))
>>> job.parallel.gpus, job.config.micro_batches(job.parallel)
(8, 4)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from designer.workload.experts import DISPATCHERS
from designer.workload.model import ModelSpec

__all__ = [
    "DEFAULT_MFU",
    "DTYPE_BYTES",
    "PLACEMENTS",
    "RECOMPUTE",
    "ZERO",
    "Job",
    "Parallelism",
    "TrainingConfig",
]

#: Bytes per element of each training dtype.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
#: Optimizer-state sharding: none, ZeRO-1 (Megatron's distributed optimizer), FSDP/ZeRO-3.
ZERO = ("none", "1", "3")
#: Activation recomputation (Korthikanti et al. 2022): none, selective (attention
#: only), full (each layer's input kept, the layer recomputed in backward).
RECOMPUTE = ("none", "selective", "full")
#: Placement policies (`designer.workload.placement`).
PLACEMENTS = ("packed", "spread", "rail-aligned", "explicit")
#: Fraction of the GPU's dense peak its matrix multiplications reach (an assumption:
#: Llama 3 405B reports 38-43 % end-to-end MFU on H100 *including* bubbles, exposed
#: communication and memory-bound work, which the simulation adds on top).
DEFAULT_MFU = 0.5


def _positive_int(job: str, name: str, value, low: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"job {job!r}: {name} must be a whole number >= {low}, got {value!r}")
    return value


@dataclass(frozen=True)
class TrainingConfig:
    """How the job trains.

    Attributes
    ----------
    global_batch, micro_batch : int
        Sequences per iteration, and per micro-batch on one pipeline.
    dtype : str
        Weights and activations (`DTYPE_BYTES`).
    grad_dtype : str
        Gradients as reduced over data parallelism (Megatron accumulates and reduces in
        fp32 by default).
    zero : str
        `ZERO`.
    sequence_parallel : bool
        Megatron sequence parallelism (tensor-parallel all-reduces become reduce-scatter
        plus all-gather; layer-norm and dropout activations sharded).
    recompute : str
        `RECOMPUTE`.
    seq_len : int
        Training sequence length; 0: the model's.
    bucket_mb : float
        Data-parallel gradient bucket size in MB (PyTorch DDP's 25 MB is small for
        Megatron, which uses 40M parameters; 160 MB of fp32 here).
    flash_attention : bool
        Fused attention (FlashAttention, Dao et al. 2022): the ``s x s`` attention
        scores never reach HBM, so they neither take memory nor memory traffic.  Off
        for the unfused kernels of 2021-era Megatron-LM.
    ep_dispatcher : str
        How a mixture-of-experts layer's tokens reach their experts
        (`designer.workload.experts.DISPATCHERS`): ``"alltoall"`` or ``"deepep"``.
    """

    global_batch: int
    micro_batch: int = 1
    dtype: str = "bf16"
    grad_dtype: str = "fp32"
    zero: str = "none"
    sequence_parallel: bool = True
    recompute: str = "selective"
    seq_len: int = 0
    bucket_mb: float = 160.0
    flash_attention: bool = True
    ep_dispatcher: str = "alltoall"

    def check(self, job: str, par: Parallelism) -> None:
        """Raise ``ValueError`` (one line naming ``job`` and the field) if this
        configuration is impossible with ``par``."""
        _positive_int(job, "global_batch", self.global_batch)
        _positive_int(job, "micro_batch", self.micro_batch)
        _positive_int(job, "seq_len", self.seq_len, low=0)
        for name, value, allowed in (
            ("dtype", self.dtype, DTYPE_BYTES),
            ("grad_dtype", self.grad_dtype, DTYPE_BYTES),
            ("zero", self.zero, ZERO),
            ("recompute", self.recompute, RECOMPUTE),
            ("ep_dispatcher", self.ep_dispatcher, DISPATCHERS),
        ):
            if value not in allowed:
                raise ValueError(
                    f"job {job!r}: {name} must be one of {', '.join(allowed)}, got {value!r}"
                )
        for name in ("sequence_parallel", "flash_attention"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"job {job!r}: {name} must be true or false")
        if not self.bucket_mb > 0:
            raise ValueError(f"job {job!r}: bucket_mb must be > 0")
        per = self.micro_batch * par.dp
        if self.global_batch % per:
            raise ValueError(
                f"job {job!r}: global_batch ({self.global_batch}) must be a "
                f"multiple of micro_batch x dp ({self.micro_batch} x {par.dp})"
            )
        m = self.global_batch // per
        if par.vp > 1 and m % par.pp:
            raise ValueError(
                f"job {job!r}: with virtual stages the micro-batches per "
                f"iteration ({m}) must be a multiple of pp ({par.pp})"
            )

    def micro_batches(self, par: Parallelism) -> int:
        """Micro-batches each pipeline runs per iteration."""
        return self.global_batch // (self.micro_batch * par.dp)


@dataclass(frozen=True)
class Parallelism:
    """The job's parallel layout.

    Attributes
    ----------
    tp, pp, dp, cp : int
        Tensor, pipeline, data and context parallel sizes; ``tp cp pp dp = gpus``.
    vp : int
        Virtual pipeline stages per GPU (interleaved 1F1B when > 1).
    ep : int
        Expert parallel size, within data parallelism.
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    cp: int = 1
    vp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    def check(self, job: str, model: ModelSpec, gpus: int | None = None) -> None:
        """Raise ``ValueError`` (one line naming ``job`` and the field) if the layout
        does not fit ``model`` or does not multiply to ``gpus``."""
        for name in ("tp", "pp", "dp", "ep", "cp", "vp"):
            _positive_int(job, name, getattr(self, name))
        if gpus is not None and self.gpus != gpus:
            raise ValueError(
                f"job {job!r}: tp x cp x pp x dp = {self.tp} x {self.cp} x "
                f"{self.pp} x {self.dp} = {self.gpus}, not the job's {gpus} GPUs"
            )
        if self.ep > 1 and not model.is_moe:
            raise ValueError(f"job {job!r}: ep={self.ep} but the model has no experts")
        if model.is_moe and model.experts % self.ep:
            raise ValueError(
                f"job {job!r}: ep ({self.ep}) must divide the model's {model.experts} experts"
            )
        if self.dp % self.ep:
            raise ValueError(
                f"job {job!r}: ep ({self.ep}) must divide dp ({self.dp}): "
                "expert parallelism is carved out of data parallelism"
            )
        if model.heads % self.tp:
            raise ValueError(
                f"job {job!r}: tp ({self.tp}) must divide the model's {model.heads} attention heads"
            )
        if model.layers < self.pp * self.vp:
            raise ValueError(
                f"job {job!r}: pp x vp ({self.pp} x {self.vp}) exceeds the "
                f"model's {model.layers} layers"
            )


@dataclass(frozen=True)
class Job:
    """One training job on a design.

    Attributes
    ----------
    name : str
    model : ModelSpec
    config : TrainingConfig
    parallel : Parallelism
    placement : str
        `PLACEMENTS`; ``explicit`` uses ``gpus`` in rank order.
    gpus : tuple of str
        GPU node ids for ``explicit`` placement.
    colour : str
        ``#rrggbb`` for views.
    mfu : float
        Fraction of the GPU's peak its matrix multiplications reach (`DEFAULT_MFU`);
        memory-bound work runs at the GPU's memory bandwidth instead
        (`designer.workload.traffic`).
    tflops : float
        Peak dense TFLOP/s per GPU; 0: the design's GPU catalog entry (``bf16_tflops``).
    layer_times : tuple of float
        ``(forward, backward)`` seconds of one layer for one micro-batch on one GPU,
        given by the user instead of FLOPs over speed; empty: derived.
    preset : str
        The preset it started from, for display.
    """

    name: str
    model: ModelSpec
    config: TrainingConfig
    parallel: Parallelism
    placement: str = "packed"
    gpus: tuple[str, ...] = ()
    colour: str = "#1f77b4"
    mfu: float = DEFAULT_MFU
    tflops: float = 0.0
    layer_times: tuple[float, ...] = ()
    preset: str = ""

    @property
    def seq_len(self) -> int:
        return self.config.seq_len or self.model.seq_len

    @property
    def n_gpus(self) -> int:
        return self.parallel.gpus

    def check(self) -> None:
        """Raise ``ValueError`` with one line naming the job and field when anything is
        inconsistent."""
        if not self.name or not isinstance(self.name, str):
            raise ValueError("a job needs a name")
        self.parallel.check(
            self.name, self.model, len(self.gpus) if self.placement == "explicit" else None
        )
        self.config.check(self.name, self.parallel)
        if self.placement not in PLACEMENTS:
            raise ValueError(
                f"job {self.name!r}: placement must be one of "
                f"{', '.join(PLACEMENTS)}, got {self.placement!r}"
            )
        if self.placement != "explicit" and self.gpus:
            raise ValueError(
                f"job {self.name!r}: gpus are listed but placement is "
                f'{self.placement!r} (use placement = "explicit")'
            )
        if not 0 < self.mfu <= 1:
            raise ValueError(f"job {self.name!r}: mfu must be in (0, 1], got {self.mfu!r}")
        if not self.tflops >= 0:
            raise ValueError(f"job {self.name!r}: tflops must be >= 0")
        if self.layer_times and (
            len(self.layer_times) != 2 or not all(t > 0 for t in self.layer_times)
        ):
            raise ValueError(f"job {self.name!r}: layer_times must be [forward_s, backward_s] > 0")

    def layer_activation_bytes(self, moe: bool, scores: bool = True) -> float:
        """Bytes of activations one forward pass of one layer writes on one rank for
        one micro-batch (Korthikanti et al. 2022, arXiv 2205.05198, Section 4).

        With ``s`` the sequence per CP rank, ``b`` the micro-batch, ``h`` the hidden
        size, ``a`` the heads and ``t`` TP: ``s b h (10 + 24 / t + 5 a s / (h t))``, or
        ``s b h / t (34 + 5 a s / h)`` with sequence parallelism.  The MLP's share (19 of
        the 34) is scaled by the layer's MLP width against GPT's ``4 h`` (gated MLPs
        x1.5; MoE: top-k plus shared experts).  The attention scores' ``5 a s / h`` term
        counts only when ``scores``.
        """
        m, cfg, par = self.model, self.config, self.parallel
        s, b, h, t = self.seq_len / par.cp, cfg.micro_batch, m.hidden, par.tp
        width = (m.top_k + m.shared_experts) * m.expert_ffn if moe else m.ffn
        mlp = 2 + 17 * width / (4 * h) * (1.5 if m.gated_mlp else 1.0)
        attn_scores = 5 * m.heads * s / h if scores else 0.0
        # Korthikanti's 34 = 15 (attention, norms: 11 + 4) + 19 (MLP); TP shards 24.
        if cfg.sequence_parallel and t > 1:
            return s * b * h / t * (15 + mlp + attn_scores)
        sharded = 24 * (15 + mlp) / 34
        return s * b * h * (15 + mlp - sharded + sharded / t + attn_scores / t)

    @classmethod
    def from_preset(cls, name: str, p, **changes) -> Job:
        """A job from preset ``p`` (`designer.workload.presets.Preset`) with its
        default training configuration and layout; ``changes`` replace fields."""
        par = {k: v for k, v in p.parallel.items() if k != "gpus"}
        job = cls(
            name=name,
            model=p.model,
            config=TrainingConfig(**p.training),
            parallel=Parallelism(**par),
            preset=p.name,
        )
        return replace(job, **changes) if changes else job
