"""Where a mixture-of-experts layer's tokens go: routing odds and the dispatch traffic.

A token picks ``top_k`` of the layer's ``experts``.  With group-limited routing
(DeepSeek-V2/V3: ``expert_groups`` groups, a token's experts drawn from its best
``topk_groups`` of them; DeepSeek-V3 Section 2.1.2 and its ``n_group`` / ``topk_group``
configuration) the experts come from a few groups only; placed one group per server,
that bounds the servers a token reaches (DeepSeek-V3: at most 4).

`hit_odds` gives the chance that a token needs a given set of experts (those of one
rank, or of one server) under a balanced router: the groups chosen uniformly, then the
experts uniformly among the chosen groups' (hypergeometric).  That is what an
expert-parallel dispatcher that sends each token once per rank needs, and what the
DeepEP tests draw (random scores; ``benchmarks/workload_accuracy.py`` compares).

Two dispatchers (Megatron-LM's ``--moe-token-dispatcher-type``):

* ``alltoall``: one all-to-all per pass, a copy of each token per chosen expert
  (``tokens x top_k`` rows), the same to every rank;
* ``deepep`` (DeepEP's normal kernels, "flex" in Megatron): a token crosses the network
  once per server it needs, to the GPU of its own local index there, which forwards it
  over NVLink once per rank it needs.  Two all-to-alls run together: over each local
  index's GPUs across servers (RDMA) and over each server's GPUs (NVLink), each with
  the expected bytes per pair.  Its kernels run on a few SMs and reach
  `DEEPEP_EFFICIENCY` of the link rates.
"""

from __future__ import annotations

from math import comb

from designer.workload.model import ModelSpec

__all__ = ["DEEPEP_EFFICIENCY", "DISPATCHERS", "deepep_bytes", "dispatch_odds", "hit_odds"]

#: The token dispatchers a job can use (`TrainingConfig.ep_dispatcher`).
DISPATCHERS = ("alltoall", "deepep")

#: Fraction of the link rates DeepEP's normal kernels reach (they run on ~20 SMs,
#: leaving the rest to computation): fitted once on DeepEP's published intranode and
#: internode table by ``python benchmarks/workload_accuracy.py --table deepep --fit``.
DEEPEP_EFFICIENCY = 0.84


def hit_odds(
    experts: int, top_k: int, held: int, groups_held: int = 1, expert_groups: int = 0,
    topk_groups: int = 0,
) -> float:
    """Chance that one token needs at least one of ``held`` experts.

    Parameters
    ----------
    experts, top_k : int
        Routed experts of the layer and experts per token.
    held : int
        Experts of the set (a rank's or a server's), spread evenly over
        ``groups_held`` of the routing groups (1 when the set lies inside one group).
    expert_groups, topk_groups : int
        Group-limited routing (0: none): the experts in ``expert_groups`` equal groups,
        each token's drawn from ``topk_groups`` of them.
    """
    if not 0 < held <= experts or not 1 <= top_k <= experts:
        raise ValueError(f"held ({held}) and top_k ({top_k}) must be 1..experts ({experts})")
    groups = expert_groups or 1
    chosen = topk_groups if expert_groups else 1
    per_group = experts // groups
    pool = chosen * per_group  # experts a token draws from
    spans = min(max(groups_held, 1), groups)
    per_span = held / spans  # the set's experts in each group it touches
    total = comb(pool, top_k)
    miss = 0.0
    for j in range(0, min(spans, chosen) + 1):
        ways = comb(spans, j) * comb(groups - spans, chosen - j)
        if not ways:
            continue
        free = pool - round(j * per_span)
        miss += ways / comb(groups, chosen) * (comb(free, top_k) / total if free >= top_k else 0.0)
    return 1.0 - miss


def dispatch_odds(model: ModelSpec, ep: int, per_server: int) -> tuple[float, float]:
    """``(server, rank)``: the chance that a token of an EP group of ``ep`` ranks needs a
    given server (holding ``per_server`` of the ranks; 1 when the group is one server)
    and a given rank, the experts spread evenly over the ranks in order."""

    def odds(ranks: int) -> float:
        held = model.experts * ranks // ep
        spans = max(1, round((model.expert_groups or 1) * ranks / ep))
        return hit_odds(model.experts, model.top_k, held, spans, model.expert_groups,
                        model.topk_groups)

    return (odds(per_server) if per_server < ep else 1.0), odds(1)


def deepep_bytes(
    tokens: float, token_bytes: float, servers: int, per_server: int, odds_server: float,
    odds_rank: float,
) -> tuple[float, float]:
    """The two all-to-alls of one DeepEP dispatch (or combine), as nccl-tests sizes.

    Each of ``servers x per_server`` GPUs holds ``tokens`` tokens of ``token_bytes``.
    Returns ``(rdma, nvlink)``: the per-rank buffer of the all-to-all among one local
    index's GPUs across the servers (to each server, the tokens that need it) and of
    the all-to-all among one server's GPUs (to each rank, the tokens of every server
    that need it, forwarded).
    """
    rdma = servers * tokens * odds_server * token_bytes
    nvlink = per_server * servers * tokens * odds_rank * token_bytes
    return rdma, nvlink
