"""The architecture of a transformer being trained, and what follows from it: parameter
counts (total and active per token), per-layer parameters and FLOPs.

A `ModelSpec` holds what the papers publish (layers, hidden size, FFN size, heads and
KV heads, vocabulary, sequence length; experts, top-k and expert FFN size for a mixture
of experts; DeepSeek's multi-head latent attention ranks).  The counts are derived from
the architecture, never typed in, so a preset whose numbers are wrong fails its check
against the published count (`designer.workload.presets`).

Counted: attention projections (grouped-query or latent), the MLP (gated SwiGLU with
three matrices or a plain two-matrix GELU MLP), the router, input embeddings and the
output head (once when tied), learned position embeddings.  Biases and norms are
counted as vectors of the hidden size (two norms per layer), which is what they weigh.

Example
-------
>>> m = ModelSpec(layers=2, hidden=64, ffn=256, heads=4, kv_heads=4, vocab=100,
...               seq_len=32, gated_mlp=False)
>>> m.attention_params(), m.mlp_params()
(16384, 32768)
>>> m.params() == 2 * (16384 + 32768 + 128) + 2 * 6400 + 64
True
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["ModelSpec"]


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer (dense or mixture of experts).

    Attributes
    ----------
    layers, hidden, ffn, heads, kv_heads, vocab, seq_len : int
        Transformer layers, hidden size, dense MLP inner size, attention heads, key/value
        heads (grouped-query attention; ``heads`` for plain multi-head), vocabulary and
        training sequence length.
    head_dim : int
        Size of one head; 0: ``hidden // heads``.
    experts, top_k, expert_ffn : int
        Routed experts per MoE layer (0: dense model), experts each token goes to, and
        each expert's MLP inner size.
    shared_experts : int
        Experts every token goes to besides the routed ones (DeepSeek).
    expert_groups, topk_groups : int
        Group-limited routing (DeepSeek-V3's ``n_group`` and ``topk_group``): the routed
        experts in ``expert_groups`` equal groups, each token's ``top_k`` drawn from its
        best ``topk_groups`` groups (`designer.workload.experts`); 0: no limit.
    dense_layers : int
        The first layers of an MoE model that have a dense MLP of size ``ffn``.
    q_lora_rank, kv_lora_rank, rope_head_dim : int
        Multi-head latent attention (DeepSeek-V2/V3): the query and key/value
        compression ranks and the decoupled RoPE head size; ``kv_lora_rank`` 0 means
        ordinary attention.
    gated_mlp : bool
        SwiGLU MLP (three matrices) rather than a two-matrix GELU MLP.
    tied_embeddings : bool
        The output head shares the input embedding matrix.
    learned_positions : bool
        Learned position embeddings of ``seq_len`` x ``hidden`` (GPT-3).
    """

    layers: int
    hidden: int
    ffn: int
    heads: int
    kv_heads: int
    vocab: int
    seq_len: int
    head_dim: int = 0
    experts: int = 0
    top_k: int = 0
    expert_ffn: int = 0
    shared_experts: int = 0
    expert_groups: int = 0
    topk_groups: int = 0
    dense_layers: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    gated_mlp: bool = True
    tied_embeddings: bool = False
    learned_positions: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "bool":
                if not isinstance(value, bool):
                    raise ValueError(f"model field {f.name!r} must be true or false")
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"model field {f.name!r} must be a whole number >= 0")
        for name in ("layers", "hidden", "heads", "kv_heads", "vocab", "seq_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"model field {name!r} must be >= 1")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"model: heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.experts and not 1 <= self.top_k <= self.experts:
            raise ValueError(f"model: top_k ({self.top_k}) must be 1..experts ({self.experts})")
        if self.expert_groups or self.topk_groups:
            if not self.experts or not self.expert_groups or self.experts % self.expert_groups:
                raise ValueError(
                    f"model: expert_groups ({self.expert_groups}) must divide experts "
                    f"({self.experts})"
                )
            if not 1 <= self.topk_groups <= self.expert_groups:
                raise ValueError(
                    f"model: topk_groups ({self.topk_groups}) must be 1..expert_groups "
                    f"({self.expert_groups})"
                )
            if self.top_k > self.topk_groups * (self.experts // self.expert_groups):
                raise ValueError(
                    f"model: top_k ({self.top_k}) exceeds the experts of topk_groups groups"
                )
        if self.experts and self.expert_ffn < 1:
            raise ValueError("model: an MoE model needs expert_ffn >= 1")
        if self.dense_layers > self.layers:
            raise ValueError("model: dense_layers exceeds layers")
        if not self.experts and self.ffn < 1:
            raise ValueError("model field 'ffn' must be >= 1")

    # ------------------------------------------------------------------ shapes
    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def d_head(self) -> int:
        """Size of one attention head."""
        return self.head_dim or self.hidden // self.heads

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts."""
        return self.layers - self.dense_layers if self.is_moe else 0

    @property
    def kv_width(self) -> int:
        """Keys plus values per token per layer (elements), what context parallelism
        exchanges: ``2 kv_heads d_head``; for latent attention the compressed KV and
        the RoPE key, which is what is cached and exchanged."""
        if self.kv_lora_rank:
            return self.kv_lora_rank + self.rope_head_dim
        return 2 * self.kv_heads * self.d_head

    # ------------------------------------------------------------------ counts
    def attention_params(self) -> int:
        """Weights of one layer's attention (no norms)."""
        h, d, n = self.hidden, self.d_head, self.heads
        if self.kv_lora_rank:
            qk = d + self.rope_head_dim
            q = (
                h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * n * qk
                if self.q_lora_rank
                else h * n * qk
            )
            kv = (
                h * (self.kv_lora_rank + self.rope_head_dim)
                + self.kv_lora_rank
                + self.kv_lora_rank * n * 2 * d
            )
            return q + kv + n * d * h
        return 2 * h * n * d + 2 * h * self.kv_heads * d

    def _mlp(self, inner: int) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden * inner

    def mlp_params(self) -> int:
        """Weights of one dense MLP of size ``ffn``."""
        return self._mlp(self.ffn)

    def expert_params(self) -> int:
        """Weights of one expert (0 for a dense model)."""
        return self._mlp(self.expert_ffn) if self.is_moe else 0

    def moe_layer_params(self, active: bool = False) -> int:
        """One MoE layer's MLP: routed experts (``top_k`` of them when ``active``),
        shared experts and the router."""
        routed = self.top_k if active else self.experts
        return (routed + self.shared_experts) * self.expert_params() + self.hidden * self.experts

    def embedding_params(self) -> int:
        """Input embedding, output head (none when tied) and learned positions."""
        e = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return e + (self.seq_len * self.hidden if self.learned_positions else 0)

    def layer_params(self, moe: bool, active: bool = False) -> int:
        """All weights of one layer, norms included."""
        mlp = self.moe_layer_params(active) if moe else self.mlp_params()
        return self.attention_params() + mlp + 2 * self.hidden

    def params(self, active: bool = False) -> int:
        """Total parameters (``active``: those one token uses, the MoE layers counting
        ``top_k`` routed experts)."""
        dense = self.layers - self.moe_layers
        return (
            dense * self.layer_params(False)
            + self.moe_layers * self.layer_params(True, active)
            + self.embedding_params()
            + self.hidden
        )

    def stage_params(self, layers: range, first: bool, last: bool) -> tuple[int, int]:
        """Weights of a pipeline stage holding ``layers``: ``(dense, routed experts)``.

        ``first`` adds the input embedding (and learned positions), ``last`` the output
        head (unless tied) and the final norm."""
        dense = expert = 0
        for i in layers:
            if self.is_moe_layer(i):
                full = self.layer_params(True)
                expert += self.experts * self.expert_params()
                dense += full - self.experts * self.expert_params()
            else:
                dense += self.layer_params(False)
        if first:
            dense += self.vocab * self.hidden
            dense += self.seq_len * self.hidden if self.learned_positions else 0
        if last:
            dense += self.hidden + (0 if self.tied_embeddings else self.vocab * self.hidden)
        return dense, expert

    # ------------------------------------------------------------------ flops
    def layer_flops_per_token(self, moe: bool) -> float:
        """Forward FLOPs of one layer per token: 2 per active weight, plus attention's
        score and value products, ``4 seq_len heads d_head`` (the full square, as the
        Megatron-LM FLOP count of Narayanan et al. 2021 takes it)."""
        qk = self.d_head + (self.rope_head_dim if self.kv_lora_rank else 0)
        attn = 2 * self.seq_len * self.heads * (qk + self.d_head)
        return 2.0 * self.layer_params(moe, active=True) + attn

    def head_flops_per_token(self) -> float:
        """Forward FLOPs of the output head (logits) per token."""
        return 2.0 * self.vocab * self.hidden

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) has a mixture-of-experts MLP."""
        return self.is_moe and layer >= self.dense_layers
