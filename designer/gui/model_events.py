"""`ModelSlot`: a Qt object's connection to one of the design's psygnal signals.

The design (`designer.model.topology.Topology`) knows nothing of Qt; its signals hold a
bound-method slot by weak reference, so a slot whose object is collected is dropped.
A Qt object is not collected when Qt deletes it, though: its Python wrapper lives on
until the last reference (a cycle, a pending callback) goes, and calling it meanwhile
raises "Internal C++ object already deleted".  `ModelSlot` disconnects when the Qt
object is destroyed, and moves the connection when the object follows another design.
"""

from __future__ import annotations

from collections.abc import Callable

from psygnal import SignalInstance
from PySide6.QtCore import QObject

__all__ = ["ModelSlot"]


class ModelSlot:
    """``slot`` (a bound method of ``owner``) connected to at most one model signal, and
    to none once ``owner`` is destroyed.

    Parameters
    ----------
    owner : QObject
        The object whose method ``slot`` is; its ``destroyed`` signal ends the
        connection.
    slot : callable
        What the model signal calls.

    Examples
    --------
    In a widget's ``__init__``::

        self._follow = ModelSlot(self, self._on_topology_changed)
        self._follow.watch(document.topology.events.changed)
    """

    def __init__(self, owner: QObject, slot: Callable) -> None:
        self._slot = slot
        self._signal: SignalInstance | None = None
        # The owner keeps this object; Qt calls `watch(None)` as the owner goes.
        owner.destroyed.connect(self._on_owner_destroyed)

    @property
    def signal(self) -> SignalInstance | None:
        """The model signal connected now (None when none is)."""
        return self._signal

    def watch(self, signal: SignalInstance | None) -> None:
        """Connect to ``signal`` instead of the one before (None: to nothing)."""
        if self._signal is not None:
            self._signal.disconnect(self._slot)
        self._signal = signal
        if signal is not None:
            signal.connect(self._slot)

    def _on_owner_destroyed(self, *_args) -> None:
        self.watch(None)
