"""Random user gestures as xdotool commands, for the X11 soak (tests/gui/test_x11_soak.py).

`Gestures.batch` turns the application's last reported state (where nodes, links,
groups and the scenario fields are on screen; see `tests.gui.x11_app.Probe`) into one
chained xdotool command line of random gestures: drags, Shift-drag links, deletes,
undo/redo bursts, groups, collapse by double-click or context menu, what-if fail and
restore from the context menu, scenario edits in the dock, saves, reopening the design
and replacing it (Open) with a selection active.  xdotool runs a chain in one process,
so a batch costs one process start, not one per event.

Every choice comes from one seeded `random.Random`.  Positions are those of the batch's
start, so a gesture after an edit may land elsewhere than aimed (on empty canvas, on
another node): that is a gesture too, and what the checks after the batch must survive.
"""

from __future__ import annotations

import random
from collections import Counter

#: Gesture -> relative weight.
WEIGHTS: dict[str, float] = {
    "drag": 10, "link": 8, "delete": 5, "undo": 10, "redo": 6, "group": 3, "collapse": 3,
    "fail_restore": 5, "scenario": 4, "rubber_band": 3, "nudge": 3, "duplicate": 2,
    "save": 2, "reopen": 0.4, "replace": 0.4,
}
#: Gestures that end a batch: they open a dialog the test answers (`Gestures.then`).
ENDS_BATCH = ("group", "reopen", "replace")
#: Pause after events the application answers with a new window or a menu (ms).
MENU_WAIT_MS = 250
#: In a dialog's answer: close the completer list a typed path opened, if any (the
#: test asks the application whether a popup is open).
CLOSE_POPUP = "<close popup>"


def _ms(ms: int) -> list[str]:
    return ["sleep", f"{ms / 1000:.3f}"]


class Gestures:
    """Seeded gestures; ``counts`` says how many of each a run made.

    ``files`` are the two designs the soak opens in turn ("replace" opens the other one
    with everything selected; "reopen" opens the current one again).
    """

    def __init__(self, seed: int, files: tuple[str, str]):
        self.rng = random.Random(seed)
        self.files = files
        self.counts: Counter = Counter()
        self.wid = 0
        self.root = 0  # the X root window, set by the test
        self.then: tuple[str, list[str]] | None = None

    # ------------------------------------------------------------ primitives
    def _click(self, x, y, button=1, keys=()) -> list[str]:
        out = ["mousemove", str(x), str(y)]
        out += [w for k in keys for w in ("keydown", k)]
        out += ["click", str(button)]
        out += [w for k in reversed(keys) for w in ("keyup", k)]
        return out

    def _drag(self, a, b, keys=(), steps=4) -> list[str]:
        out = ["mousemove", str(a[0]), str(a[1])]
        out += [w for k in keys for w in ("keydown", k)]
        out += ["mousedown", "1", *_ms(20)]
        for i in range(1, steps + 1):
            t = i / steps
            out += ["mousemove", str(round(a[0] + (b[0] - a[0]) * t)),
                    str(round(a[1] + (b[1] - a[1]) * t)), *_ms(15)]
        out += ["mouseup", "1"]
        out += [w for k in reversed(keys) for w in ("keyup", k)]
        return out + _ms(30)

    def _key(self, *keys: str) -> list[str]:
        return ["key", "--clearmodifiers", *keys]

    def _focus(self) -> list[str]:
        """Give the main window the keyboard again: with no window manager, a closed
        dialog leaves the X input focus nowhere."""
        if not self.wid:
            return []
        # Away and back: focusing the window X already focuses sends Qt no FocusIn.
        return ["windowfocus", str(self.root), "windowfocus", str(self.wid)]

    def _empty_point(self, state) -> tuple[int, int]:
        x, y, w, h = state["viewport"]
        return (x + self.rng.randint(10, max(11, w - 10)),
                y + self.rng.randint(10, max(11, h - 10)))

    def _node(self, state):
        nodes = state["nodes_on_screen"]
        return self.rng.choice(nodes)[1:] if nodes else self._empty_point(state)

    # ------------------------------------------------------------ gestures
    def g_drag(self, s):
        a = self._node(s)
        b = (a[0] + self.rng.randint(-60, 60), a[1] + self.rng.randint(-40, 40))
        return self._drag(a, b, ("alt",) if self.rng.random() < 0.2 else ())

    def g_link(self, s):
        return self._drag(self._node(s), self._node(s), ("shift",), steps=5)

    def g_delete(self, s):
        target = self.rng.choice(s["links_on_screen"])[1:] if s["links_on_screen"] and \
            self.rng.random() < 0.4 else self._node(s)
        return self._click(*target) + self._key("Delete")

    def g_undo(self, s):
        return [w for _ in range(self.rng.choice([1, 1, 2, 3, 5])) for w in self._key("ctrl+z")]

    def g_redo(self, s):
        key = self.rng.choice(["ctrl+y", "ctrl+shift+z"])
        return [w for _ in range(self.rng.choice([1, 1, 2, 3])) for w in self._key(key)]

    def g_rubber_band(self, s):
        a = self._empty_point(s)
        b = (a[0] + self.rng.randint(-200, 200), a[1] + self.rng.randint(-150, 150))
        return self._drag(a, b)

    def g_group(self, s):
        out = self.g_rubber_band(s) if self.rng.random() < 0.5 else \
            [w for _ in range(3) for w in self._click(*self._node(s), keys=("ctrl",))]
        # Ctrl+G asks for the group's kind: the test answers the dialog with Return.
        self.then = ("Group", ["key", "Return"])
        return out + self._key("ctrl+g")

    def g_collapse(self, s):
        if s["groups_on_screen"] and self.rng.random() < 0.7:
            p = self.rng.choice(s["groups_on_screen"])[1:]
        else:
            p = self._node(s)
        if self.rng.random() < 0.5:
            return ["mousemove", str(p[0]), str(p[1]), "click", "--repeat", "2",
                    "--delay", "60", "1", *_ms(60)]
        return self._context_menu(p, self.rng.randint(1, 3))

    def _context_menu(self, p, item: int) -> list[str]:
        out = self._click(*p, button=3) + _ms(MENU_WAIT_MS)
        out += [w for _ in range(item) for w in self._key("Down")]
        return out + self._key("Return") + _ms(60)

    def g_fail_restore(self, s):
        if s["links_on_screen"] and self.rng.random() < 0.5:
            p = self.rng.choice(s["links_on_screen"])[1:]
        else:
            p = self._node(s)
        return self._context_menu(p, 1)

    def g_scenario(self, s):
        fields = s["scenario_fields"]
        if not fields:  # the dock is a tab behind the inspector: bring it forward
            tab = s["tabs"].get("Scenario")
            return self._click(*tab) if tab else self._key("Escape")
        name = self.rng.choice(sorted(fields))
        kind, x, y = fields[name]
        if kind == "QComboBox":
            out = self._click(x, y) + _ms(MENU_WAIT_MS)
            out += [w for _ in range(self.rng.randint(0, 4)) for w in
                    self._key(self.rng.choice(["Down", "Up"]))]
            return out + self._key("Return") + _ms(60)
        value = str(self.rng.randint(0, 64) if name == "dp" else
                    round(self.rng.uniform(0, 400), 1))
        return (self._click(x, y) + self._key("ctrl+a") + ["type", "--delay", "5", value]
                + self._key("Return") + _ms(60))

    def g_nudge(self, s):
        return self._click(*self._node(s)) + self._key(
            self.rng.choice(["Left", "Right", "Up", "Down", "shift+Left", "shift+Down"]))

    def g_duplicate(self, s):
        return self._click(*self._node(s)) + self._key("ctrl+d")

    def g_save(self, s):
        return self._key("ctrl+s") + _ms(300)

    def _open(self, path: str) -> list[str]:
        # Save first so Open does not ask about unsaved changes; the test types the path
        # into the file dialog's name field.
        self.then = ("Open design", ["key", "ctrl+a", "type", "--delay", "2", path,
                                     CLOSE_POPUP, "key", "Return"])
        return self._key("ctrl+s") + _ms(300) + self._key("ctrl+o")

    def g_reopen(self, s):
        return self._open(s["path"] or self.files[0])

    def g_replace(self, s):
        other = self.files[1] if s["path"] == self.files[0] else self.files[0]
        return self.g_rubber_band(s) + self._key("ctrl+a") + self._open(other)

    # ------------------------------------------------------------ batches
    def batch(self, state: dict, size: int) -> tuple[list[str], list[str], tuple | None]:
        """Up to ``size`` gestures from ``state``: xdotool arguments, gesture names, and
        the dialog the last one opens with the keys that answer it (or None)."""
        self.then = None
        names, weights = zip(*WEIGHTS.items(), strict=True)
        args: list[str] = []
        done: list[str] = []
        # The canvas takes the keyboard: click an empty corner of it first.
        self.wid = state["wid"]
        x, y, w, h = state["viewport"]
        args += [*self._focus(), "mousemove", str(x + w - 12), str(y + h - 12), "click", "1"]
        for _ in range(size):
            name = self.rng.choices(names, weights)[0]
            args += getattr(self, f"g_{name}")(state) + _ms(10)
            done.append(name)
            self.counts[name] += 1
            if name in ENDS_BATCH:
                break
        return args, done, self.then
