"""Domain exceptions of the model layer.

Every error a user can cause (a bad file, an impossible link, an unknown catalog
model) is one of these, with a one-line message that names the culprit.  The CLI and
the GUI print ``str(error)`` and nothing else.
"""


class DesignError(ValueError):
    """A design cannot be built or changed as asked (names the node, link or field)."""


class CatalogError(DesignError):
    """The component catalog is missing an entry or holds an invalid one."""
