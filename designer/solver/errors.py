"""Domain exceptions of the solver layer.

A solver raises these when the arrays it is handed cannot describe a network problem
(a negative capacity, a flow index past the end, a flow whose rate is undefined).  They
are :class:`~designer.model.errors.DesignError` subclasses, so the CLI and the GUI show
``str(error)`` like any other design error.
"""

from designer.model.errors import DesignError


class SolverError(DesignError):
    """The input of a solver is malformed or describes an ill-posed problem."""
