"""Exact weighted max-min fair rates of flows sharing capacitated links.

`maxmin.max_min_rates` is the front door; `checks` validates its inputs, `levels` and
`steps` are its filling strategies, `tables` their indexes.
"""

from designer.solver.rates.maxmin import TIE_RTOL, MaxMinResult, max_min_rates

__all__ = ["TIE_RTOL", "MaxMinResult", "max_min_rates"]
