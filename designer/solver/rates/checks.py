"""Input checks of the max-min solver: shapes, ranges, values, and what follows from them.

Kept apart from `designer.solver.rates.maxmin`, which reads as the algorithm.  The checks take
whole-array reductions (a minimum and a maximum) and no temporary arrays unless something
is wrong: on a ring all-reduce's 800k pairs they are a fair part of the solve.
"""

from __future__ import annotations

import numpy as np

from designer.solver.arrays.shared_routes import SharedRoutes
from designer.solver.errors import SolverError
from designer.solver.tuning import current

__all__ = ["checked_inputs"]


def checked_inputs(capacity, pair_flow, pair_link, pair_weight, n_flows, demand,
                   routes: SharedRoutes | None):
    """Validated inputs of `designer.solver.rates.maxmin.max_min_rates` (which see).

    Returns ``(cap, flow, link, weight, n_flows, dem, routes, linkless, starved)``: arrays
    of compact dtypes (copied only if needed; ``weight`` and ``dem`` may be None), the
    checked routes, the flows that cross no link and the (sorted) flows that cross a dead
    link.  Raises SolverError naming the culprit.
    """
    cap = _capacity_array(capacity)
    n_links = cap.size
    flow = _index_array(pair_flow, "pair_flow")
    link = _index_array(pair_link, "pair_link")
    if flow.size != link.size:
        raise SolverError(
            f"pair_flow has {flow.size} entries but pair_link has {link.size}; "
            "they must pair up one to one"
        )
    weight = _weight_array(pair_weight, flow.size)
    link = _check_range(link, n_links, "pair_link", "link")
    if routes is not None and n_flows is None:  # flows listed only as taking a route
        n_flows = max(int(flow.max(initial=-1)),
                      int(np.max(routes.pair_flow, initial=-1))) + 1
        if demand is not None:
            n_flows = max(n_flows, int(np.size(demand)))
    n_flows = _flow_count(n_flows, flow, demand)
    flow = _check_range(flow, n_flows, "pair_flow", "flow")
    dem = _demand_array(demand, n_flows)
    listed = None
    if routes is not None:
        routes = _checked_routes(routes, n_links, n_flows)
        listed = _listed(routes.pair_flow, n_flows)
    if listed is None or not listed.all():  # (every flow may take a route)
        listed = _listed(flow, n_flows) if listed is None else listed | _listed(flow, n_flows)
    linkless = np.flatnonzero(~listed)
    if linkless.size and (dem is None or np.isinf(dem[linkless]).any()):
        i = linkless[0] if dem is None else linkless[np.argmax(np.isinf(dem[linkless]))]
        raise SolverError(
            f"flow {i} crosses no link and has no finite demand: its rate is unbounded"
        )
    # Flows across a link of no capacity.  A snapshot keeps the arcs of failed links at
    # capacity 0 and routes nothing over them: test the pairs first, and build the
    # per-entry route ids (an array the size of the route table) only for a hit.
    dead = cap == 0
    starved = flow[:0].copy()
    if dead.any():
        hit = dead[link]
        if hit.any():
            starved = np.unique(flow[hit])
        hit = dead[routes.link] if routes is not None else link[:0]
        if hit.any():
            dead_route = np.zeros(routes.n_routes, bool)
            dead_route[routes.route_of_entry()[hit]] = True
            starved = np.union1d(starved, routes.pair_flow[dead_route[routes.pair_route]])
            starved = starved.astype(np.int32)
    return cap, flow, link, weight, n_flows, dem, routes, linkless, starved


def _checked_routes(routes: SharedRoutes, n_links: int, n_flows: int) -> SharedRoutes:
    """``routes`` validated, ids int32 unless they are int64 already (a copy of a big
    table costs more than the narrower type saves); raises SolverError naming the
    culprit."""
    ptr = np.asarray(routes.ptr, np.int64)
    link = _index_array(routes.link, "routes.link")
    if ptr.ndim != 1 or ptr.size == 0 or ptr[0] != 0 or np.any(np.diff(ptr) < 0) \
            or ptr[-1] != link.size:
        raise SolverError("routes.ptr must rise from 0 to the number of route entries")
    weight = _weight_array(routes.weight, link.size, "routes.weight")
    flow = _index_array(routes.pair_flow, "routes.pair_flow")
    route = _index_array(routes.pair_route, "routes.pair_route")
    if flow.shape != route.shape:
        raise SolverError("routes.pair_flow and routes.pair_route must pair up one to one")
    ids = [_check_range(x, upper, name, what, keep_int64=True) for x, upper, name, what in (
        (link, n_links, "routes.link", "link"), (flow, n_flows, "routes.pair_flow", "flow"),
        (route, routes.n_routes, "routes.pair_route", "route"))]
    mult = None
    if routes.pair_mult is not None:
        mult = np.asarray(routes.pair_mult, np.float64)
        if mult.shape != flow.shape or not np.all((mult > 0) & np.isfinite(mult)):
            raise SolverError("routes.pair_mult must be finite and > 0, one per pair")
    return SharedRoutes(ptr, ids[0], weight, ids[1], ids[2], mult, routes.local)


def _listed(flow: np.ndarray, n_flows: int) -> np.ndarray:
    """Which flows ``flow`` lists (a mask over the flows)."""
    listed = np.zeros(n_flows, bool)
    step = current().input_slice
    for a in range(0, flow.size, step):  # slices: small temporaries (see maxmin_levels)
        ids = flow[a:a + step]
        # Pairs often come grouped by flow: then one id per run will do.
        change = ids[1:] != ids[:-1]
        if np.count_nonzero(change) < ids.size // 8:
            listed[ids[0]] = True
            listed[ids[1:][change]] = True
        else:
            listed[ids] = True  # no int64 copy of the ids, unlike np.bincount
    return listed


def _all_positive_finite(values: np.ndarray, zero_ok: bool = False) -> bool:
    """Whether ``values`` are all finite and > 0 (>= 0 with ``zero_ok``): two reductions,
    no temporary arrays (NaN fails the test on the minimum)."""
    if not values.size:
        return True
    lo, hi = values.min(), values.max()
    return bool((lo >= 0 if zero_ok else lo > 0) and hi < np.inf)


def _capacity_array(capacity) -> np.ndarray:
    cap = np.asarray(capacity, dtype=np.float64)
    if cap.ndim != 1:
        raise SolverError(f"capacity must be a 1-D array, got shape {cap.shape}")
    if _all_positive_finite(cap, zero_ok=True):
        return cap
    bad = np.flatnonzero(~np.isfinite(cap) | (cap < 0))
    if bad.size:
        i = bad[0]
        raise SolverError(f"capacity of link {i} is {cap[i]}; it must be finite and >= 0")
    return cap


def _index_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise SolverError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size == 0:
        return np.empty(0, np.int32)
    if arr.dtype.kind not in "iu":
        raise SolverError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr


def _ids_below(ids: np.ndarray, upper: int) -> bool:
    """Whether integer ``ids`` all lie in ``[0, upper)``, in one pass: seen as unsigned,
    a negative id is huge."""
    if ids.dtype.kind == "i":
        ids = ids.view(ids.dtype.str.replace("i", "u"))
    return int(ids.max()) < upper


def _check_range(index: np.ndarray, upper: int, name: str, what: str,
                 keep_int64: bool = False) -> np.ndarray:
    """Reject indices outside ``[0, upper)``; return them as int32 (copied only if needed;
    ``keep_int64``: int64 ones as they are)."""
    narrow = index if keep_int64 and index.dtype == np.int64 else index.astype(np.int32,
                                                                               copy=False)
    if index.size == 0:
        return narrow
    if upper <= 2**31 and _ids_below(index, upper):  # the common case, in one pass
        return narrow
    lo, hi = int(index.min()), int(index.max())
    if lo < 0:
        p = int(np.argmax(index < 0))
        raise SolverError(f"{name}[{p}] = {lo}: {what} ids must be >= 0")
    if hi >= upper:
        p = int(np.argmax(index >= upper))
        raise SolverError(f"{name}[{p}] = {index[p]} but there are only {upper} {what}s")
    if hi > np.iinfo(np.int32).max:
        raise SolverError(f"{name} has {what} id {hi}; at most 2**31 - 1 {what}s are supported")
    return narrow


def _weight_array(pair_weight, n_pairs: int, name: str = "pair_weight") -> np.ndarray | None:
    if pair_weight is None:
        return None
    weight = np.asarray(pair_weight, dtype=np.float64)
    if weight.shape != (n_pairs,):
        raise SolverError(f"{name} has shape {weight.shape}, expected ({n_pairs},)")
    if _all_positive_finite(weight):
        return weight
    bad = np.flatnonzero(~(weight > 0) | ~np.isfinite(weight))
    if bad.size:
        p = bad[0]
        raise SolverError(f"{name}[{p}] = {weight[p]}; weights must be finite and > 0")
    return weight


def _flow_count(n_flows, flow: np.ndarray, demand) -> int:
    if n_flows is not None:
        n = int(n_flows)
        if n < 0:
            raise SolverError(f"n_flows = {n_flows} is negative")
        return n
    # Flows past the last pair may exist when they have a demand (and no link).
    n_listed = int(flow.max(initial=-1)) + 1
    return n_listed if demand is None else max(n_listed, int(np.size(demand)))


def _demand_array(demand, n_flows: int) -> np.ndarray | None:
    if demand is None:
        return None
    dem = np.asarray(demand, dtype=np.float64)
    if dem.shape != (n_flows,):
        raise SolverError(f"demand has shape {dem.shape}, expected ({n_flows},) (one per flow)")
    bad = np.flatnonzero(np.isnan(dem) | (dem < 0))
    if bad.size:
        i = bad[0]
        raise SolverError(f"demand of flow {i} is {dem[i]}; it must be >= 0 (inf: unlimited)")
    return dem
