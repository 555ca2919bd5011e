"""What a call did to its array arguments, read back after it from the grader's own memory: changed in place, or
returned itself (`Call.mark_returned`). Trial.call records either as a change, which grading.changed_arguments
charges once per function.
"""
from __future__ import annotations

import numpy as np

from autograder.authoring.protocol import RETURNED_MARK


def changed_argument(sent: tuple, after: tuple) -> int | None:
    """The place of the first array argument a call changed in place, or None. sent: the arguments as sent,
    positional then keyword in the call's order; after: the same arguments as the call left them."""
    for place, (before, now) in enumerate(zip(sent, after)):
        if isinstance(before, np.ndarray) and not (
                isinstance(now, np.ndarray) and now.dtype == before.dtype and now.shape == before.shape
                and (same_bytes(now, before) or np.array_equal(now, before, equal_nan=before.dtype.kind in "fc"))):
            return place
    return None


def changed_message(function: str, name: str) -> str:
    """What a student is told whose `function` changed its argument `name` ("S", or "argument 1" where no parameter
    name is known) in place."""
    first, later, code = _spoken(name)
    return (f"{function} (or a function it calls) changed its {first} in place (an in-place operation such "
            f"as `{code} -= 1`, `{code}[...] = ...` or `np.logical_not({code}, out={code})` on np.asarray({code}), or "
            f"a tensor method ending in `_`, works on the caller's array); compute into a new array so the caller's "
            f"{later} is left as it was")


def holds_returned_mark(before: np.ndarray, after) -> bool:
    """Whether an argument read back after a call with `mark_returned` holds the mark wherever it changed: the array
    returned was that argument (or a view of it), filled with the mark once the answer was taken, and the change is
    the grader's, not the function's. before: the argument as sent; after: as read back."""
    if not isinstance(after, np.ndarray) or after.shape != before.shape or after.dtype != before.dtype:
        return False
    same = after == before
    if after.dtype.kind in "fc":
        same |= np.isnan(after) & np.isnan(before)
    changed = ~same
    return bool(np.all(after[changed] == np.asarray(RETURNED_MARK).astype(after.dtype)))


def returned_message(function: str, name: str, called_for: str = "") -> str:
    """What a student is told whose `function` returned its argument `name` itself where a new array is promised.
    called_for: which call did, in words ("for a mask that hides no key"), or ""."""
    first, later, code = _spoken(name)
    which = f" {called_for}" if called_for else ""
    return (f"{function} returned {name if name.isidentifier() else f'its {first}'} itself (or a view of it){which}, "
            f"not a new array: the grader wrote into the array {function} returned, and the caller's {later} changed "
            f"with it, so whoever changes the answer changes {later}. Return a new array in every case, also where "
            f"there is nothing to change (`{code}.copy()`, or `np.where(...)`, which always makes one)")


def _spoken(name: str) -> tuple[str, str, str]:
    """How a message first says argument `name`, how it says it again, and how its code examples write it. A
    numbered argument ("argument 1": no parameter name known) is `x` in the code, which its first mention says."""
    if name.isidentifier():
        return f"argument {name}", name, name
    return f"{name} (`x` in the examples below)", name, "x"


_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Two arrays of one dtype and shape hold the same bytes: as bytes where they are small, else compared in
    place as integers of their size, which is ten times faster than comparing their values at T = 512."""
    unsigned = _UNSIGNED.get(a.dtype.itemsize)
    if unsigned is None or a.nbytes < 1 << 16 or a.dtype.hasobject:
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a.view(unsigned), b.view(unsigned)))
