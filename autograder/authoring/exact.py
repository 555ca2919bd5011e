"""Answers that must hold exactly, with no tolerance: a boolean mask, and zeros where the assignment says 0."""
from __future__ import annotations

import numpy as np

from autograder.authoring.checks import CheckFailed
from autograder.authoring.compare import as_array, as_index, expect_shape
from autograder.authoring.protocol import chosen


def expect_equal_mask(got, expected: np.ndarray, what: str, shape_hint: str = "") -> np.ndarray:
    """Boolean mask comparison: array → shape → bool dtype → values; `shape_hint` says what a wrong shape means."""
    got = as_array(got, what, expected.shape)
    expect_shape(got, expected.shape, what, shape_hint)
    if got.dtype != np.bool_:
        raise CheckFailed(f"{what} has dtype {got.dtype}; expected booleans. Comparisons such as `a <= b` give "
                          "booleans directly", expected, got)
    wrong = got != expected
    if wrong.any():
        where = as_index(next(zip(*np.nonzero(wrong))))
        raise CheckFailed(f"{what} is wrong at {int(wrong.sum())} of {wrong.size} positions, e.g. index "
                          f"{where}: got {bool(got[where])}, expected {bool(expected[where])}", expected, got)
    return got


def expect_exact_zeros(got: np.ndarray, zero: np.ndarray, what: str, why: str) -> None:
    """Every position where `zero` is True must hold exactly 0; `why` says so in the assignment's words."""
    leaks = zero & (got != 0)
    if leaks.any():
        where = as_index(next(zip(*np.nonzero(leaks))))
        raise CheckFailed(f"{what}: {int(leaks.sum())} positions that must be exactly 0 are not, e.g. index "
                          f"{where} has {chosen(f'{got[where]:.3g}')}; {why}", got=got)
