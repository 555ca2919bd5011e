"""The untrusted side, in a worker child: what a notebook's graded functions read besides the names they look up,
as their check cells saw it: the libraries' switches (autograd, NumPy's error handling, the warnings filters) and
the plain data (a dict, list, set or NumPy array) under a global they read, which a later cell can change in place
(`CFG["axis"] = 0`).

sandbox.kept_names.KeptFunctions keeps it while the cells run. Shipped to the worker with `worker` (see
sandbox.boot.BOOT): standard library only; the switches are read by a function the worker passes in.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import operator
import types
from dataclasses import dataclass

# Plain data kept for a check cell is at most this big (array bytes, and ITEM for each item): it is copied as the
# check cell saw it, and compared after each later cell; anything bigger is graded as the notebook's cells leave it.
MAX_KEPT, ITEM = 4_000_000, 100
# The copying and comparing of a whole load, in the same units (about 2 s of the worker's time): a notebook that
# changes big data in every cell has the cells past it compared no more, and a change there is told as made in one
# of them, rather than its load spent on the grader's own work.
MAX_WORK = 25 * MAX_KEPT
# The library each switch belongs to: a later cell's change is told to the graded functions that read that library.
# A switch not here (the warnings filters, which any library's code meets) is told to every graded function.
LIBRARY = {"grad": "torch", "dtype": "torch", "errors": "numpy"}
SWITCH = "switch "  # KeptState.cells's key for a library's switch, before its name (a global's name has no space)
_MISSING = object()  # a dict's key that is not there


@dataclass(frozen=True)
class Kept:
    """Plain data under a global as a check cell saw it: the object, a copy then, and the copy's fingerprint."""
    value: object
    copy: object
    fingerprint: tuple


class KeptState:
    """The switches and plain data each graded function's check cell saw, and the first later cell that changed
    them; a function without a check cell is graded as the notebook's cells leave it.

    Each global is copied and fingerprinted at most once a cell, however many functions read it, and only where it
    changed (lists and dicts are compared item by item by identity first, which costs next to nothing); the whole
    load's work is capped (MAX_WORK)."""

    def __init__(self, switches=None):
        """switches: () -> the libraries' switches now (sandbox.tensors.LibraryState), or None."""
        self._switches = switches
        self._at_check: dict = {}  # graded name -> the switches as its check cell saw them
        self._data: dict = {}  # graded name -> {global: Kept, as its check cell saw it}
        self._cells: dict = {}  # graded name -> {global: the label of the first later cell that changed it}
        self._moved: dict = {}  # graded name -> {switch: the label of the first later cell that changed it}
        self._libraries: dict = {}  # graded name -> the libraries it reads (numpy, torch), whose switches it is told of
        self._work = MAX_WORK  # what copying and comparing may still cost in this load
        self._last = ""  # the label of the last cell the data was compared after, while there was work left
        self._this_cell: dict = {}  # what this cell's looks found, by the ids of what they looked at (kept alive)

    def begin(self, label: str) -> None:
        """A cell `label` ended: what is looked at after it is looked at afresh, once for every function."""
        self._this_cell = {}
        if self._work >= MAX_KEPT:
            self._last = label

    def end(self) -> None:
        """The looks after a cell are over: nothing of them is kept (nor kept alive)."""
        self._this_cell = {}

    def before_check(self, name: str, reads: set, namespace: dict, now) -> None:
        """Keep what `name`'s check cell, still to come, will see: the switches `now` and the plain data under the
        globals it `reads`, as the cells so far left them (called after each cell until the check cell)."""
        self._at_check[name] = now
        earlier, kept, self._libraries[name] = self._data.get(name, {}), {}, set()
        for other in reads:
            value = namespace.get(other)
            if isinstance(value, types.ModuleType):
                self._libraries[name].add(str(getattr(value, "__name__", "")).split(".")[0])
            entry = earlier.get(other)
            if value is not None and not (entry is not None and entry.value is value
                                          and _same_items(entry.copy, value, grown=False)):
                entry = self._copied(value)
            if entry is not None:
                kept[other] = entry
        self._data[name] = kept

    def after_check(self, label: str, name: str, namespace: dict, now) -> None:
        """Note the cell `label` where it is the first after `name`'s check cell to change a switch, or to change or
        remove plain data the check saw (data only added to, a cache the function fills, is no cell's doing)."""
        if name in self._at_check and now is not None:
            moved = self._moved.setdefault(name, {})
            for switch in self._at_check[name].changes(now):
                if switch not in LIBRARY or LIBRARY[switch] in self._libraries.get(name, ()):
                    moved.setdefault(switch, label)
        cells = self._cells.setdefault(name, {})
        for other, entry in self._data.get(name, {}).items():
            value = namespace.get(other)
            if other in cells or value is not entry.value or _same_items(entry.copy, value, grown=True):
                continue
            if self._work < MAX_KEPT:  # compared no more: told at the end, if it changed (cells)
                continue
            if self._looked("part", (entry.copy, value), self._part_fingerprint) != entry.fingerprint:
                cells[other] = label

    def forget(self, name: str) -> None:
        """`name` is defined again: what its earlier definition's check cell saw is no longer what it is graded with."""
        for kept in (self._at_check, self._data, self._cells, self._moved, self._libraries):
            kept.pop(name, None)

    def now(self):
        """The switches as they are now, or None without a way to read them."""
        return self._switches() if self._switches is not None else None

    def switches(self) -> dict:
        """{graded name: the switches its calls start from, as its check cell saw them}."""
        return dict(self._at_check)

    def changed(self, name: str, namespace: dict) -> dict:
        """{global: a copy as `name`'s check cell saw it} for the plain data a later cell changed in place."""
        return {other: entry.copy for other, entry in self._data.get(name, {}).items()
                if namespace.get(other) is entry.value and not _same_items(entry.copy, entry.value, grown=False)
                and self._looked("whole", (entry.value,), _whole_fingerprint) != entry.fingerprint}

    def as_checked(self, name: str, other: str, value):
        """A copy of `value` as `name`'s check cell saw it, where `value` is the plain data kept under the global
        `other` then (a later cell bound the name to something else, and may have changed the old object too);
        `value` itself otherwise."""
        entry = self._data.get(name, {}).get(other)
        return entry.copy if entry is not None and entry.value is value else value

    def cells(self, name: str) -> dict:
        """{global or switch: the label of the first cell after `name`'s check cell that changed it}, for its note;
        data compared no more (MAX_WORK) is told as changed in a cell after the last one compared."""
        later = {} if self._work >= MAX_KEPT else {other: f"{self._last} or a cell after it"
                                                   for other in self._data.get(name, {})}
        return {**later, **self._cells.get(name, {}),
                **{SWITCH + switch: cell for switch, cell in self._moved.get(name, {}).items()}}

    def _copied(self, value) -> Kept | None:
        """`value` copied as it is now, with its fingerprint, once a cell; None for anything but plain data of at
        most MAX_KEPT, or where the load's work is spent."""
        return self._looked("copy", (value,), self._copy) if self._work >= MAX_KEPT else None

    def _copy(self, value) -> Kept | None:
        fingerprint = self._fingerprint(value, times=2)  # copying costs about what fingerprinting does
        return None if fingerprint is None else Kept(value, copy.deepcopy(value), fingerprint)

    def _part_fingerprint(self, kept, value):
        """The fingerprint of the part of `value` that must be as the copy `kept` (_part)."""
        return self._fingerprint(_part(kept, value))

    def _looked(self, kind: str, objects: tuple, look):
        """What `look(*objects)` finds (the look `kind`), looked for once a cell."""
        key = (kind, *map(id, objects))
        if key not in self._this_cell:
            self._this_cell[key] = (objects, look(*objects))  # kept alive: their ids are no others' this cell
        return self._this_cell[key][1]

    def _fingerprint(self, value, times: int = 1):
        """_fingerprint(value) within MAX_KEPT, its cost charged to the load's work `times` over."""
        budget = [MAX_KEPT]
        fingerprint = _fingerprint(value, budget)
        self._work -= (MAX_KEPT - max(budget[0], 0)) * times
        return fingerprint


def _whole_fingerprint(value):
    """_fingerprint(value) within MAX_KEPT, whatever the load's work: once for each global, after the last cell."""
    return _fingerprint(value, [MAX_KEPT])


def _same_items(kept, value, grown: bool) -> bool:
    """Whether the list or dict `value` still holds the very objects the copy `kept` holds, in order (grown: a list
    may have more after them, a dict more keys). The copy shares only what copying leaves as it is (numbers,
    strings, tuples of them): the same object there is the same value. False where that cannot tell."""
    if type(kept) is not type(value) or type(kept) not in (list, dict):
        return False
    if not grown and len(value) != len(kept):
        return False
    if type(kept) is list:
        return len(value) >= len(kept) and all(map(operator.is_, kept, value))
    if not grown:
        return all(map(operator.is_, kept, value)) and all(map(operator.is_, kept.values(), value.values()))
    return all(map(operator.is_, map(value.get, kept, itertools.repeat(_MISSING)), kept.values()))


def _part(kept, value):
    """The part of `value` that must be as `kept` (a copy as the check cell saw it): a list's first items, a dict's
    entries under its keys, a set's members; all of anything else."""
    if type(kept) is not type(value):
        return value
    if type(kept) is list:
        return value[:len(kept)]
    if type(kept) is dict:
        return {key: value[key] for key in kept if key in value}
    if type(kept) is set:
        return {member for member in value if member in kept}
    return value


def _fingerprint(value, budget: list):
    """A comparable summary of plain data (dicts, lists, sets, tuples, NumPy arrays of numbers, and plain values in
    them: NumPy's numbers, dtypes and scalar types among them); None for anything else, or for more than
    `budget[0]` bytes and items together (spent as it goes)."""
    kind = type(value)
    budget[0] -= ITEM
    if budget[0] < 0:
        return None
    if kind in (int, float, complex, str, bytes, bool, type(None)):
        return (kind.__name__, repr(value))  # repr: NaN is NaN again
    if kind in (list, tuple, dict, set, frozenset):
        items = []
        for part in (_pairs(value) if kind is dict else value):  # stopped at the first that is not plain, or over
            items.append(_fingerprint(part, budget))  # budget: a list of millions had each item visited in vain
            if items[-1] is None:
                return None
        return (kind.__name__, frozenset(items) if kind in (set, frozenset) else tuple(items))
    if kind.__name__ == "ndarray" and kind.__module__ == "numpy" and not value.dtype.hasobject:
        budget[0] -= value.nbytes
        return None if budget[0] < 0 else ("ndarray", str(value.dtype), value.shape,
                                             hashlib.blake2b(value.tobytes()).digest())
    return _numpy_value(value, kind)


def _numpy_value(value, kind: type):
    """The fingerprint of a NumPy number (`np.finfo(float).eps`, a bool), dtype or scalar type (`np.float64`), a
    plain value in a config dict as much as a float is; None for anything else. NumPy is known by its classes'
    module and name: this module imports the standard library only."""
    if kind.__module__ == "numpy" and _numpy(kind, "generic") and value.dtype.kind in tuple("biufc"):
        return ("numpy", kind.__name__, repr(value))
    if kind.__module__.split(".")[0] == "numpy" and _numpy(kind, "dtype"):
        return ("dtype", str(value))
    if kind is type and value.__module__ == "numpy" and _numpy(value, "generic"):
        return ("numpy type", value.__name__)
    return None


def _numpy(kind: type, name: str) -> bool:
    """Whether the class `kind` is NumPy's class `name`, or one made from it (np.float64 from np.generic)."""
    return any(getattr(base, "__module__", "") == "numpy" and base.__name__ == name
               for base in getattr(kind, "__mro__", ()))


def _pairs(mapping: dict) -> list:
    """A dict's items as tuples, which _fingerprint reads as plain data in order."""
    return [tuple(item) for item in mapping.items()]
