"""The untrusted side, in a worker child: what a notebook's graded functions read besides the names they look up,
as their check cells saw it: the libraries' switches (autograd, NumPy's error handling) and the plain data (a dict,
list, set or NumPy array) under a global they read, which a later cell can change in place (`CFG["axis"] = 0`).

sandbox.kept_names.KeptFunctions keeps it while the cells run. Shipped to the worker with `worker` (see
sandbox.boot.BOOT): standard library only; the switches are read by a function the worker passes in.
"""
from __future__ import annotations

import copy
import hashlib
import types

# Plain data kept for a check cell is at most this big (array bytes, and ITEM for each item): it is copied once,
# and compared after each later cell; anything bigger is graded as the notebook's cells leave it.
MAX_KEPT, ITEM = 4_000_000, 100
# The library each switch belongs to: a later cell's change is told to the graded functions that read that library.
LIBRARY = {"grad": "torch", "dtype": "torch", "errors": "numpy"}
SWITCH = "switch "  # KeptState.cells's key for a library's switch, before its name (a global's name has no space)


class KeptState:
    """The switches and plain data each graded function's check cell saw, and the first later cell that changed
    them; a function without a check cell is graded as the notebook's cells leave it."""

    def __init__(self, switches=None):
        """switches: () -> the libraries' switches now (sandbox.tensors.LibraryState), or None."""
        self._switches = switches
        self._at_check: dict = {}  # graded name -> the switches as its check cell saw them
        self._data: dict = {}  # graded name -> {global: [its object, a copy as the check cell saw it, cell or None]}
        self._moved: dict = {}  # graded name -> {switch: the label of the first later cell that changed it}
        self._libraries: dict = {}  # graded name -> the libraries it reads (numpy, torch), whose switches it is told of

    def before_check(self, name: str, reads: set, namespace: dict, now) -> None:
        """Keep what `name`'s check cell, still to come, will see: the switches `now` and the plain data under the
        globals it `reads`, as the cells so far left them (called after each cell until the check cell)."""
        self._at_check[name] = now
        kept, self._libraries[name] = {}, set()
        for other in reads:
            value = namespace.get(other)
            if isinstance(value, types.ModuleType):
                self._libraries[name].add(str(getattr(value, "__name__", "")).split(".")[0])
            if value is not None and _fingerprint(value, [MAX_KEPT]) is not None:
                kept[other] = [value, copy.deepcopy(value), None]
        self._data[name] = kept

    def after_check(self, label: str, name: str, namespace: dict, now) -> None:
        """Note the cell `label` where it is the first after `name`'s check cell to change a switch, or to change or
        remove plain data the check saw (data only added to, a cache the function fills, is no cell's doing)."""
        if name in self._at_check and now is not None:
            moved = self._moved.setdefault(name, {})
            for switch in self._at_check[name].changes(now):
                if LIBRARY.get(switch) in self._libraries.get(name, ()):
                    moved.setdefault(switch, label)
        for other, entry in self._data.get(name, {}).items():
            if entry[2] is None and namespace.get(other) is entry[0] and not _kept_within(entry[1], entry[0]):
                entry[2] = label

    def forget(self, name: str) -> None:
        """`name` is defined again: what its earlier definition's check cell saw is no longer what it is graded with."""
        for kept in (self._at_check, self._data, self._moved, self._libraries):
            kept.pop(name, None)

    def now(self):
        """The switches as they are now, or None without a way to read them."""
        return self._switches() if self._switches is not None else None

    def switches(self) -> dict:
        """{graded name: the switches its calls start from, as its check cell saw them}."""
        return dict(self._at_check)

    def changed(self, name: str, namespace: dict) -> dict:
        """{global: a copy as `name`'s check cell saw it} for the plain data a later cell changed in place."""
        return {other: entry[1] for other, entry in self._data.get(name, {}).items()
                if namespace.get(other) is entry[0] and _fingerprint(entry[0], [MAX_KEPT]) != _fingerprint(
                    entry[1], [MAX_KEPT])}

    def cells(self, name: str) -> dict:
        """{global or switch: the label of the first cell after `name`'s check cell that changed it}, for its note."""
        data = {other: entry[2] for other, entry in self._data.get(name, {}).items() if entry[2] is not None}
        return {**data, **{SWITCH + switch: cell for switch, cell in self._moved.get(name, {}).items()}}


def _fingerprint(value, budget: list):
    """A comparable summary of plain data (dicts, lists, sets, tuples, NumPy arrays of numbers, and plain values in
    them); None for anything else, or for more than `budget[0]` bytes and items together (spent as it goes)."""
    kind = type(value)
    budget[0] -= ITEM
    if budget[0] < 0:
        return None
    if kind in (int, float, complex, str, bytes, bool, type(None)):
        return (kind.__name__, repr(value))  # repr: NaN is NaN again
    if kind in (list, tuple, dict, set, frozenset):
        items = [_fingerprint(part, budget) for part in (_pairs(value) if kind is dict else value)]
        if None in items:
            return None
        return (kind.__name__, frozenset(items) if kind in (set, frozenset) else tuple(items))
    if kind.__name__ == "ndarray" and kind.__module__ == "numpy" and not value.dtype.hasobject:
        budget[0] -= value.nbytes
        return None if budget[0] < 0 else ("ndarray", str(value.dtype), value.shape,
                                             hashlib.blake2b(value.tobytes()).digest())
    return None


def _pairs(mapping: dict) -> list:
    """A dict's items as tuples, which _fingerprint reads as plain data in order."""
    return [tuple(item) for item in mapping.items()]


def _kept_within(kept, value) -> bool:
    """Whether everything in `kept` (a copy as the check cell saw it) is still in `value`: the same array, a dict's
    entries, a list's first items, a set's members; more may have been added."""
    same = lambda a, b: _fingerprint(a, [MAX_KEPT]) == _fingerprint(b, [MAX_KEPT])  # noqa: E731
    if type(kept) is not type(value):
        return False
    if isinstance(kept, dict):
        return all(key in value and same(part, value[key]) for key, part in kept.items())
    if isinstance(kept, list):
        return len(value) >= len(kept) and same(kept, value[:len(kept)])
    if isinstance(kept, set):
        return same(kept, kept & value)
    return same(kept, value)
