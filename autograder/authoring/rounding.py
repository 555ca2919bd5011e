"""How far a right answer computed in float32 may be from the exact one: float32's rounding of the sums it is made of.

A sum of n products computed in float32 errs by up to about n float32 units in the last place of the sum of the
products' magnitudes, whatever dtype it is returned in and however small cancellation leaves the sum itself. An
answer held to float64's tolerance plus that rounding, in its own units, passes whatever precision it was computed in
and whatever its random inputs (`expect_within_rounding`), while a wrong factor, such as a scale rounded to four
decimals, errs in proportion to the answer itself and fails. float32's flat tolerance (rtol 2e-4) had passed such a
scale for an answer returned in float32, and float64's had failed a right one computed in float32 and then multiplied
by a float64 number (which holds no float32 numbers only, so `holds_float32_only` did not apply).
"""
import numpy as np

from autograder.authoring.checks import Tolerance
from autograder.authoring.compare import expect_close

FLOAT32_UNIT = float(np.finfo(np.float32).eps)  # a float32 unit in the last place, relative


def _magnitudes(*arrays):
    return [np.abs(np.asarray(a, dtype=np.float64)) for a in arrays]


def product_rounding(A, B, scale=1.0) -> np.ndarray:
    """float32's rounding of scale · (A @ B), entry by entry, A (..., m, n) and B (..., n, p) broadcast as np.matmul
    does: each entry sums n products, so up to n float32 units of |scale| Σ_k |a_ik b_kj|, and two more for factors
    rounded to float32 first (float64 inputs cast, or the scale multiplied into A). Returns (..., m, p) in float64."""
    magnitude_A, magnitude_B = _magnitudes(A, B)
    return (np.shape(A)[-1] + 2) * FLOAT32_UNIT * abs(float(scale)) * (magnitude_A @ magnitude_B)


def additive_rounding(Q, K, W_q, W_k, v, b) -> np.ndarray:
    """float32's rounding of additive scores e_ij = vᵀ tanh(W_q q_i + W_k k_j + b), entry by entry: (Nq, Nk) in
    float64 for Q (Nq, dq), K (Nk, dk), W_q (h, dq), W_k (h, dk), v (h,), b (h,).

    The pre-activation a_ijh sums dq + dk + 1 terms, so errs by up to dq + dk + 1 float32 units of the sum of their
    magnitudes (a unit is twice a step's rounding, which leaves room for the inputs cast to float32 too); tanh's
    derivative is at most 1, so tanh(a) errs by no more, plus its own rounding; the score sums h terms v_h tanh(a_h),
    so errs by Σ_h |v_h| times its tanh's error, plus h + 2 units of Σ_h |v_h tanh(a_h)| (the sum, v cast, and
    tanh's own rounding of a unit or two)."""
    Q, K, W_q, W_k, v, b = (np.asarray(a, dtype=np.float64) for a in (Q, K, W_q, W_k, v, b))
    terms = (np.abs(Q) @ np.abs(W_q).T)[:, None, :] + (np.abs(K) @ np.abs(W_k).T)[None, :, :] + np.abs(b)
    activation = np.abs(np.tanh((Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :] + b))
    h, counted = v.shape[-1], Q.shape[-1] + K.shape[-1] + 1
    return FLOAT32_UNIT * (np.abs(v) * (counted * terms + (h + 2) * activation)).sum(axis=-1)


def rounding_terms(expected: np.ndarray, rounding: np.ndarray, tol: Tolerance) -> np.ndarray:
    """expect_close's `terms` for an answer allowed `tol` plus `rounding`: |expected| + rounding / tol.rtol, so that
    the relative part of the allowed error, rtol · terms, is rtol · |expected| + rounding."""
    return np.abs(expected) + rounding / tol.rtol


def expect_within_rounding(got, expected: np.ndarray, tol: Tolerance, rounding: np.ndarray | None, what: str,
                           shape_hint: str = "", terms: np.ndarray | None = None) -> np.ndarray:
    """expect_close, allowing `tol` (float64's) plus `rounding` (float32's rounding of the sums the answer is made of,
    in the answer's own units, broadcastable to `expected`: product_rounding, additive_rounding), whatever dtype the
    inputs or the answer have: an answer computed in float32 is held to its computation's rounding, not to float32's
    flat tolerance (`tol.coarser` is not used). terms: rounding_terms(expected, rounding, tol) computed once, in
    place of `rounding`, for a large case the class shares (at T = 512 building them took as long as comparing)."""
    tol = Tolerance(rtol=tol.rtol, atol=tol.atol)
    if terms is None:
        terms = rounding_terms(expected, rounding, tol)
    return expect_close(got, expected, tol, what, shape_hint, terms=terms)
