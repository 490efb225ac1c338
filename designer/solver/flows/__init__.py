"""What a collective sends: algorithms as phases of rank-to-rank transfers (`phases`,
`collectives`), the rank orders they use, the routed flows built from route tables
(`recipe`), and which flows of a solved collective cross a link (`index`).

This front door hands on the names callers outside the solver use.
"""

from designer.solver.flows.index import FlowIndex, FlowRow

__all__ = ["FlowIndex", "FlowRow"]
