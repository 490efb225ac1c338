"""The events a `Topology` emits: one psygnal `SignalGroup`, no Qt.

Each signal is named after what changed and is emitted only when something did:
``node_added(node)``, ``node_removed(node)``, ``node_changed(old, new)``,
``node_moved(node)``, ``link_added(link)``, ``link_removed(link)``,
``link_changed(old, new)``, ``group_added(group)``, ``group_removed(group)``,
``group_changed(old, new)``, ``settings_changed(key, value)``.  ``changed(edit)``
follows them and carries an `Edit`: the item events it stands for, in order.

A listener connects to one signal (``topology.events.node_added.connect(slot)``) or to
every one at once (``topology.events.connect(slot)``, called with psygnal's
``EmissionInfo``).  A bulk edit (a paste, a delete of many items, a macro's undo) runs
inside `TopologyEvents.paused`: the item signals still fire one by one for the listeners
that want each, but ``changed`` fires once at the end, carrying the whole edit, so a view
that follows ``changed`` alone (the canvas, the solve runner) is told once per edit and
still learns exactly which items came and went.

Example
-------
>>> events = TopologyEvents()
>>> seen = []
>>> _ = events.changed.connect(lambda edit: seen.append(edit.names()))
>>> with events.paused():
...     events.record("node_moved", "n0")
...     events.record("node_moved", "n1")
>>> seen
[('node_moved', 'node_moved')]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from psygnal import Signal, SignalGroup

from designer.model.elements import Group, Link, Node

__all__ = ["Edit", "TopologyEvents"]


class Edit:
    """The item events of one edit of a design, in the order they happened.

    Iterating gives ``(name, args)`` pairs, ``name`` one of the item signals of
    `TopologyEvents` and ``args`` what that signal carried; replaying them in order onto
    a mirror of the design before the edit gives the design after it.

    Parameters
    ----------
    events : iterable of (str, tuple)
        The events, oldest first.
    """

    __slots__ = ("events",)

    def __init__(self, events: Iterable[tuple[str, tuple]] = ()):
        self.events: tuple[tuple[str, tuple], ...] = tuple(events)

    def __iter__(self) -> Iterator[tuple[str, tuple]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"Edit({len(self.events)} events)"

    def names(self) -> tuple[str, ...]:
        """The signal name of each event, in order."""
        return tuple(name for name, _ in self.events)

    def touches(self, *prefixes: str) -> bool:
        """Whether an event's name starts with one of ``prefixes`` (``"group_"``...)."""
        return any(name.startswith(prefixes) for name, _ in self.events)

    @classmethod
    def join(cls, edits: Iterable[Edit]) -> Edit:
        """One edit made of ``edits`` one after the other."""
        return cls(event for edit in edits for event in edit.events)


def _join_queued(queue: list[tuple]) -> tuple[Edit]:
    """psygnal reducer for a paused ``changed``: the queued edits' args -> one edit."""
    return (Edit.join(args[0] for args in queue),)


class TopologyEvents(SignalGroup):
    """The signals of one `Topology` (see the module docstring for what each carries)."""

    node_added = Signal(Node)
    node_removed = Signal(Node)
    node_changed = Signal(Node, Node)  # old, new (anything but position)
    node_moved = Signal(Node)
    link_added = Signal(Link)
    link_removed = Signal(Link)
    link_changed = Signal(Link, Link)  # old, new
    group_added = Signal(Group)
    group_removed = Signal(Group)
    group_changed = Signal(Group, Group)  # old, new
    settings_changed = Signal(str, object)
    changed = Signal(Edit)

    def __init__(self, instance: Any = None) -> None:
        super().__init__(instance)
        self._depth = 0  # nesting of `paused` blocks

    @property
    def is_paused(self) -> bool:
        """Whether a `paused` block is open (``changed`` waits for its end)."""
        return self._depth > 0

    def record(self, name: str, *args: Any) -> None:
        """Emit the item signal ``name`` with ``args``, then ``changed`` with an `Edit`
        of that one event (held back while `paused`).

        Each is skipped when nothing is connected to it: a psygnal emission costs a few
        microseconds even with no slot, seconds over a large design being built.
        """
        signal = self[name]
        if len(signal):
            signal.emit(*args)
        if len(self.changed):
            self.changed.emit(Edit(((name, args),)))

    def record_many(self, events: Iterable[tuple[str, tuple]]) -> None:
        """`record` for many events, with one ``changed`` for all of them (a bulk load).

        ``events`` is consumed only if some slot listens."""
        items = {name: self[name] for name in _ITEM_SIGNALS}
        wanted = len(self.changed) or any(len(s) for s in items.values())
        if not wanted:
            return
        events = list(events)
        for name, args in events:
            signal = items[name]
            if len(signal):
                signal.emit(*args)
        if events and len(self.changed):
            self.changed.emit(Edit(events))

    @contextmanager
    def paused(self) -> Iterator[None]:  # type: ignore[override]
        """Hold ``changed`` for the duration, then emit it once with every event of the
        block joined into one `Edit` (psygnal's ``paused`` with a reducer).

        Blocks nest: only the outermost one emits.  The item signals are not held.  An
        exception inside the block still ends in the ``changed`` of what was done (a
        command that undid its own half-done work leaves an edit that nets to nothing).

        (`SignalGroup.paused` holds only the relay behind ``events.connect``, and its
        psygnal versions do not queue the relayed emissions; this holds ``changed``.)
        """
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._depth = 1
        self.changed.pause()
        try:
            yield
        finally:
            self._depth = 0
            self.changed.resume(_join_queued)


_ITEM_SIGNALS = (
    "node_added",
    "node_removed",
    "node_changed",
    "node_moved",
    "link_added",
    "link_removed",
    "link_changed",
    "group_added",
    "group_removed",
    "group_changed",
    "settings_changed",
)
