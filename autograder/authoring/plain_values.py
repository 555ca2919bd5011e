"""Trusted comparison of plain values a student's function returned: `expect_equal`.

str, int, bool, None, floats, and lists, tuples and dicts of them, arrays
inside. The message names where the first difference is; the arrays and
floats inside are compared as `compare` compares them.
"""
from __future__ import annotations

import numpy as np

from autograder.authoring.checks import CheckFailed, Tolerance
from autograder.authoring.compare import (
    allowed_error,
    as_array,
    as_index,
    distinct_digits,
    expect_close,
    expect_shape,
    opaque_kind,
    returned_shape,
    shown,
    told,
)
from autograder.authoring.exact import expect_equal_mask
from autograder.authoring.protocol import Opaque, TensorData, chosen, unmarked


def expect_equal(got, expected, what: str, tol: Tolerance | None = None) -> None:
    """The returned plain value equals the trusted `expected`, all the way down; CheckFailed names where not.

    str, int, bool and None must be equal, and of the same type (True is not 1, 3.0 is not 3); lists and
    tuples item by item, with the same type and length; dicts key by key, with the same keys. Floats match
    within `tol` (exactly, NaN matching NaN, when `tol` is None); arrays inside are compared as
    `expect_close` (float), `expect_equal_mask` (bool) or exactly (integers). A NumPy scalar the function
    returned counts as the Python number it holds. The message says where the first difference is, as in
    "stats(x) differs at key 'mean': got 2.5, expected 3".
    """
    _expect_equal(got, expected, what, tol, ())


def _expect_equal(got, expected, what: str, tol: Tolerance | None, path: tuple[str, ...]) -> None:
    where = f" at {', '.join(path)}" if path else ""
    if isinstance(expected, np.ndarray):
        _expect_array(got, expected, f"{what}{where}", tol)
        return
    got, expected = _scalar(got), _scalar(expected)
    if isinstance(expected, float) and type(got) is int:
        got = float(got)  # an int is an exact real number
    if _kind(got) != _kind(expected):
        raise CheckFailed(f"{what}{where} is {_described(got)}; expected {unmarked(_described(expected))}")
    if isinstance(expected, (list, tuple)):
        if len(got) != len(expected):
            raise CheckFailed(f"{what}{where} has {chosen(str(len(got)))} items; expected {len(expected)}")
        for index, (item, want) in enumerate(zip(got, expected)):
            _expect_equal(item, want, what, tol, (*path, f"index {index}"))
    elif isinstance(expected, dict):
        _expect_same_keys(got, expected, f"{what}{where}")
        for key, want in expected.items():
            _expect_equal(got[key], want, what, tol, (*path, f"key {told(key)}"))
    elif isinstance(expected, float):
        _expect_float(got, expected, f"{what}{where}", tol)
    elif got != expected:
        raise CheckFailed(f"{what}{where}: got {shown(got)}, expected {told(expected)}"
                          + _first_difference(got, expected))


def _scalar(value):
    """A NumPy scalar (a 0-d array, as one travels) as the Python value it holds; anything else as it is."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return value.item()
    return value


def _expect_array(got, expected: np.ndarray, what: str, tol: Tolerance | None) -> None:
    """An array inside a plain value: floats within `tol` (when given), masks as masks, the rest exactly."""
    if expected.dtype.kind == "f" and tol is not None:
        expect_close(got, expected, tol, what)
        return
    if expected.dtype.kind == "b":
        expect_equal_mask(got, expected, what)
        return
    got = as_array(got, what, expected.shape)
    expect_shape(got, expected.shape, what)
    if got.dtype.kind not in "biufc":
        raise CheckFailed(f"{what} has dtype {got.dtype}; expected {expected.dtype}", expected, got)
    same = ((got == expected) | (np.isnan(got) & np.isnan(expected))).reshape(-1)
    if not same.all():
        index = as_index(np.unravel_index(int(np.argmin(same)), expected.shape))
        raise CheckFailed(f"{what} is wrong at {int((~same).sum())} of {same.size} positions, e.g. index {index}: "
                          f"got {shown(got[index].item())}, expected {told(expected[index].item())}", expected, got)


def _expect_same_keys(got: dict, expected: dict, what: str) -> None:
    missing = [key for key in expected if key not in got]
    if missing:
        raise CheckFailed(f"{what} has no key {told(missing[0])}" + (f" (nor {len(missing) - 1} other keys)"
                                                                        if len(missing) > 1 else ""))
    extra = [key for key in got if key not in expected]
    if extra:
        raise CheckFailed(f"{what} has a key {shown(extra[0])} that it should not have"
                          + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""))


def _expect_float(got: float, expected: float, what: str, tol: Tolerance | None) -> None:
    if np.isnan(expected) or np.isnan(got) or np.isinf(expected) or np.isinf(got) or tol is None:
        if got == expected or (np.isnan(got) and np.isnan(expected)):
            return
        raise CheckFailed(f"{what}: got {shown(got)}, expected {told(expected)}")
    error, allowed = abs(got - expected), float(allowed_error(np.array([expected]), tol)[0])
    if error > allowed:
        shown_got, shown_expected = distinct_digits(got, expected)
        raise CheckFailed(f"{what}: got {chosen(shown_got)}, expected {shown_expected} (differs by "
                          f"{chosen(f'{error:.1e}')}, allowed "
                          f"{allowed:.1e})")


def _kind(value) -> str:
    """What a plain value is, in words: values of one kind are compared, values of two kinds differ."""
    if value is None:
        return "None"
    if isinstance(value, TensorData):
        return "a torch tensor"
    if isinstance(value, Opaque):
        return opaque_kind(value)
    if isinstance(value, np.ndarray):
        return f"a NumPy array of shape {returned_shape(value.shape)}"
    name = type(value).__name__
    if isinstance(value, (list, tuple, dict)) or type(value) in (bool, int, float, str):
        return f"an {name}" if name[0] in "aeiou" else f"a {name}"
    return f"a {name}"


def _described(value) -> str:
    """Its kind and, where that does not say it all, the value: "an int (3)", "None", "a numpy.ufunc object"."""
    if value is None or isinstance(value, (Opaque, TensorData, np.ndarray)):
        return _kind(value)
    return f"{_kind(value)} ({shown(value)})"


def _first_difference(got, expected) -> str:
    """For two strings: where they first differ, which a long string's shown start may not reach."""
    if not (isinstance(got, str) and isinstance(expected, str)):
        return ""
    first = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    return f"; they first differ at character {first} (got {shown(got[first:first + 20])}, expected " \
           f"{told(expected[first:first + 20])})"
