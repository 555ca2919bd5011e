"""Whether weights' rows sum to 1, within the rounding of the precision they were computed in.

A row divided by its own sum misses 1 by the rounding of that sum and of each division, however imprecise its
exponentials were, so a small constant added to the denominator, which a value tolerance lets through, shows here.
Held to float32's flat tolerance, float32 weights with 2e-5 added to their denominator had kept full marks while
the same code in float64 lost 18 points.
"""
from __future__ import annotations

import numpy as np

from autograder.authoring.checks import CheckFailed, Tolerance
from autograder.authoring.compare import (
    HALF_ADVICE,
    as_index,
    holds_float16_only,
    rounded_to_lower_precision,
    tolerance_for_precision,
)
from autograder.authoring.protocol import chosen
from autograder.authoring.rounding import FLOAT32_UNIT

# In a precision other than float32, this many roundings per entry is the most a sum may miss 1 by: log-sum-exp
# weights of scores of ordinary size (tens) meet 1 only so closely.
SUM_ROUNDINGS = 64
# float32 weights: the sum of n terms rounds by up to n - 1 half units (2^-24), each division by one more: (n + 2)
# half units, times this for safety. 64 units per key, 21 times more for four keys, had let through 2e-5 added to the
# denominator. Weights exp(s - lse) also carry the rounding of the log-sum-exp at the scores' size, up to a half unit
# of it for each of the row's n - 1 additions (np.logaddexp.reduce adds the terms one at a time): a row of four scores
# near 19 missed 1 by 1.5e-6, three times the bound without it (`scores`).
FLOAT32_SUM_SAFETY = 4
NEAR_ONE = 0.01  # a row sum this close to 1 but not within rounding: a small constant added, not a wrong axis


def expect_rows_sum_to_one(got: np.ndarray, tol: Tolerance, what: str, advice: str = "",
                           scores: np.ndarray | None = None) -> None:
    """Every row (along the last axis) of weights `got` (..., N) sums to 1, within the value tolerance and within
    the rounding of the precision they were computed in (`allowed_miss`); `advice` adds the assignment's own words;
    `scores` (..., N), the scores the weights were computed from (-inf where hidden), where the check has them.
    Negative weights (log weights) are told to exponentiate: normalizing them is not what is missing."""
    advice = advice or "each row on its own"
    if got.dtype.kind == "f" and got.dtype.itemsize < 4:  # its rounding alone can miss 1 by more than any tolerance
        raise CheckFailed(f"{what} has dtype {got.dtype}; {HALF_ADVICE}", got=got)
    sums = got.astype(np.float64).sum(axis=-1)
    allowed = allowed_miss(got, tol, scores)
    bad = ~(np.abs(sums - 1.0) <= allowed)  # a NaN sum is no sum of 1
    if bad.any():
        where = as_index(next(zip(*np.nonzero(bad))))
        how = ("weights are never negative: exponentiate the shifted scores, then divide each by its row's sum"
               if got.dtype.kind == "f" and (got < 0).any() else "normalize over the last axis, " + advice)
        if np.all(np.abs(sums[bad] - 1.0) < NEAR_ONE):
            how = _near_one(got, float(np.broadcast_to(allowed, sums.shape)[where]), float(sums[where]))
        how = f"it holds NaN (look for inf - inf or 0 / 0 in the row); {how}" if np.isnan(sums[where]) else how
        if sums[where] == 0 and not np.any(got[where]):  # nothing was normalized at all: no axis to blame
            how = "every weight of the row is 0: exponentiate the shifted scores, then divide each by its row's sum"
        off = "" if not np.isfinite(sums[where]) else f", {chosen(f'{abs(sums[where] - 1.0):.2g}')} from 1"
        raise CheckFailed(f"{what}: {int(bad.sum())} of {bad.size} rows do not sum to 1, e.g. row {where} "
                          f"sums to {chosen(f'{sums[where]:.8g}')}{off}; {how}", got=got)


def allowed_miss(got: np.ndarray, tol: Tolerance, scores: np.ndarray | None = None) -> float | np.ndarray:
    """How far a row of `got` (..., N) may sum from 1: the value tolerance, and at most the rounding of the
    precision the weights were computed in, float32 if they are float32 or hold float32 numbers only. For float32,
    per row (...), from its count of weights other than 0 and the size of its largest finite score."""
    n = max(got.shape[-1], 1)
    precision = np.dtype(np.float64)
    if got.dtype.kind == "f":
        # Summed in float64: weights held more finely (longdouble) still meet 1 only to float64's rounding.
        tol, precision = tolerance_for_precision(tol, got.dtype, np.dtype(np.float64)), max(
            got.dtype, np.dtype(np.float64), key=lambda d: np.finfo(d).eps)
        if rounded_to_lower_precision(tol, got.reshape(-1)):  # the weights are few: looked at every time
            tol, precision = tol.coarser, np.dtype(np.float32)
    flat = tol.atol * 10 + tol.rtol
    if precision == np.float32:  # a 0 adds nothing to a sum's rounding: a row of one visible key sums to 1 exactly
        terms = np.count_nonzero(got, axis=-1)
        size = 0.0 if scores is None else _largest_finite(np.broadcast_to(scores, got.shape))
        # A lone visible key's log-sum-exp is its score exactly: the rounding at the scores' size needs two terms.
        return np.minimum(flat, FLOAT32_SUM_SAFETY * (terms + 2 + np.maximum(terms - 1, 0) * size) * (FLOAT32_UNIT / 2))
    return min(flat, SUM_ROUNDINGS * n * float(np.finfo(precision).eps))


def _largest_finite(scores: np.ndarray) -> np.ndarray:
    """Each row's largest |score| (...), hidden (-inf) ones left out; 0 for a row with none."""
    size = np.abs(np.asarray(scores, dtype=np.float64))
    return np.where(np.isfinite(size), size, 0.0).max(axis=-1, initial=0.0)


def _near_one(got: np.ndarray, allowed: float, total: float) -> str:
    """What to do about rows within 1 % of 1 but not within rounding (`total`: the first such row's sum): half
    precision's rounding where the weights hold float16 numbers only (computed in float16 and cast back), else
    something small that was added."""
    if holds_float16_only(got.reshape(-1)):
        return (f"its weights are all float16 numbers, though its dtype is {got.dtype}: they were computed in half "
                f"precision and cast back; {HALF_ADVICE}")
    # An epsilon in the denominator only ever makes a row sum less than 1.
    added = ("something small was added, such as an epsilon in the denominator, or the weights were rounded"
             if total < 1 else "the weights were rounded, or something small was added to them")
    return (f"each is within 1 % of 1, but misses it by more than rounding could (at most {allowed:.2g}): {added}; "
            "divide each weight by exactly its row's sum, and return it unrounded")
