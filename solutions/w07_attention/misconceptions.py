"""Known wrong ideas for week 7, and the wrong answers each one produces.

Never released: the wrong answers are computed from the reference. The
grader's engine (`autograder.misconceptions`) compares a failing check's
replies with these answers; the first misconception (in list order) whose
wrong answer matches a reply the student got wrong is reported, with its
sentence. Ids equal the buggy fixture ids in tests/fixtures/submissions/buggy;
the last few name answers of the right shape that compute nothing (uniform
weights, a constant mask, a zero context), as tests/degenerate.py builds them.

A wrong idea about a part of attention (score, apply_mask, softmax, context)
also shows in `attention`, which plain implementations build from those
parts, so each part's wrong version is also run through the whole pipeline
(`_attention_with`); so is attention_torch's, where an idea lists it (its scale
or its mask written out again in torch). Shapes: Q (..., Nq, dk), K (..., Nk, dk),
V (..., Nk, dv), S and A (..., Nq, Nk), allowed broadcastable to S.
"""
import math
import re

import numpy as np

from autograder.authoring import Catalogue, Misconception, TensorData, holds_returned_mark

# ------------------------------------------------------------------ wrong parts


def _scale(seen, default):
    """The scale a call asked for, or `default(dk)` when it passed None."""
    scale = seen.args.get("scale")
    return default(np.shape(seen.args["Q"])[-1]) if scale is None else scale


def _score_unscaled(seen):
    return seen.ref.score(seen.args["Q"], seen.args["K"], _scale(seen, lambda dk: 1.0))


def _score_over_dk(seen):
    return seen.ref.score(seen.args["Q"], seen.args["K"], _scale(seen, lambda dk: 1.0 / dk))


def _score_times_sqrt_dk(seen):
    """√dk where 1/√dk belongs: the default scale the wrong way up (the same for dk = 1)."""
    return seen.ref.score(seen.args["Q"], seen.args["K"], _scale(seen, math.sqrt))


def _score_over_given_scale(seen):
    """A given scale read as the divisor (Q Kᵀ / scale), as if it were √dk; None where none is given, since
    the default then comes out right (Q Kᵀ / √dk)."""
    scale = seen.args.get("scale")
    return None if scale is None else seen.ref.score(seen.args["Q"], seen.args["K"], 1.0 / scale)


def _score_transposed(seen):
    Q, K = np.asarray(seen.args["Q"]), np.asarray(seen.args["K"])
    return (K @ np.swapaxes(Q, -1, -2)) * _scale(seen, lambda dk: 1.0 / math.sqrt(dk))


def _score_dk_from_axis_1(seen):
    """The default scale from Q.shape[1]: dk for a matrix (where this is the right answer), another axis with
    batch axes in front; nothing to show where the call gave its own scale."""
    Q, K = np.asarray(seen.args["Q"]), np.asarray(seen.args["K"])
    if seen.args.get("scale") is not None or Q.ndim < 3:
        return None
    return (Q @ np.swapaxes(K, -1, -2)) / math.sqrt(Q.shape[1])


def _score_all_axes_transposed(seen):
    """Q @ K.T: K.T reverses every axis of a batched K, so this raises (or mixes batch axes) where the
    reference gives scores; for one sequence it is the right answer and shows nothing."""
    Q, K = np.asarray(seen.args["Q"]), np.asarray(seen.args["K"])
    return (Q @ K.T) * _scale(seen, lambda dk: 1.0 / math.sqrt(dk))


def _score_dot_all_axes_transposed(seen):
    """np.dot(Q, K.T): as Q @ K.T, right for one sequence; with batch axes np.dot pairs every batch of Q with every
    batch of K.T (or raises that the shapes are not aligned)."""
    Q, K = np.asarray(seen.args["Q"]), np.asarray(seen.args["K"])
    return np.dot(Q, K.T) * _scale(seen, lambda dk: 1.0 / math.sqrt(dk))


def _score_einsum_for_matrices(seen):
    """einsum subscripts without "...": batched inputs raise einsum's ValueError; one sequence is right."""
    Q, K = np.asarray(seen.args["Q"]), np.asarray(seen.args["K"])
    return np.einsum("id,jd->ij", Q, K) * _scale(seen, lambda dk: 1.0 / math.sqrt(dk))


def _hide_allowed(S, allowed):
    """−∞ where the mask is True: the mask read the other way round, True as "masked" (nn.MultiheadAttention)."""
    S = np.asarray(S)
    return np.where(np.broadcast_to(np.asarray(allowed, dtype=bool), S.shape), -np.inf, S)


def _fill_zero(S, allowed):
    S = np.asarray(S)
    return np.where(np.broadcast_to(allowed, S.shape), S, 0.0)


def _hide_zero_scores(S, allowed):
    """The mask multiplied into the scores, then every 0 read as hidden (S * allowed; S[S == 0] = −∞): a visible key
    whose score is exactly 0 is hidden too."""
    S = np.asarray(S) * np.asarray(allowed, dtype=bool)
    return np.where(S == 0, -np.inf, S)


def _add_mask(S, allowed):
    """The boolean mask added to the scores, as if it were an additive mask (0 and −∞): True adds 1, False adds 0."""
    return np.asarray(S) + np.asarray(allowed, dtype=float)


def _softmax_along(S, axis):
    S = np.asarray(S)
    e = np.exp(S - S.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_over_queries(S):
    return _softmax_along(S, -2)


def _softmax_along_axis_1(S):
    """axis=1, the last axis of a matrix: right for (Nq, Nk), the queries for (B, Nq, Nk) (which
    softmax_over_queries, listed first, names), the heads for (B, H, Nq, Nk)."""
    return _softmax_along(S, 1)


def _softmax_unshifted(S):
    e = np.exp(np.asarray(S))  # in the input's dtype, so it overflows where the student's does
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_without_keepdims(S):
    """The row maxima and sums taken without keepdims=True, in the input's dtype: they line up with the keys, which
    broadcasts (to wrong weights, or overflowing ones) only where there are as many queries as keys."""
    S = np.asarray(S)
    e = np.exp(S - S.max(axis=-1))
    return e / e.sum(axis=-1)


def _softmax_global_max(S):
    """Shifted by the whole array's maximum, not each row's, in the input's dtype: a row whose scores all lie far
    below another row's maximum underflows to exp = 0 everywhere, and 0/0 = NaN, where the student's does."""
    S = np.asarray(S)
    e = np.exp(S - S.max())
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_matrix_max(S):
    """Shifted by each matrix's maximum (axis=(-2, -1)), not each row's: a row whose scores all lie far below the
    largest of its matrix underflows to exp = 0 everywhere, and 0/0 = NaN, where the student's does."""
    S = np.asarray(S)  # of one matrix, the whole array's maximum: softmax_global_max, listed first, names it
    e = np.exp(S - S.max(axis=(-2, -1), keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_min_shifted(S):
    """Shifted by each row's minimum, in the input's dtype: the row's largest score then lies far above 0 and
    overflows where the student's does, and a masked key's −∞ minimum turns the whole row into ∞ − ∞ = NaN."""
    S = np.asarray(S)
    e = np.exp(S - S.min(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_shift_per_key(S):
    """Shifted by each key's maximum over the queries (axis -2), then normalized over the keys: a shift that is not
    the same along a row does not cancel, and a key masked for every query gives −∞ − (−∞) = NaN."""
    S = np.asarray(S)
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(S - S.max(axis=-2, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def _softmax_global_sum(S):
    """Each row shifted by its own maximum, then every entry divided by the sum over the whole array (e / e.sum()),
    not by its row's sum: the rows keep their proportions but no longer each sum to one."""
    S = np.asarray(S)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum()


def _sums_to_one_along(axis, least_ndim):
    """Weights (softmax's answer, attention's A) that sum to one along `axis` but not along the keys: normalized
    over another axis, whatever was subtracted before exp (e.g. each row's maximum, then the sum over axis=1).
    Only slices without NaN count: a key hidden from every query is 0/0 there. Along an axis of length 1 every
    weight is 1 whichever axis was summed over (an answer of all ones too), so that shows nothing."""
    def shows(seen):
        value = seen.value
        A = value if seen.function == "softmax" else value[1] if isinstance(value, tuple) and len(value) == 2 else None
        if not isinstance(A, np.ndarray) or A.ndim < least_ndim or A.dtype.kind != "f" or A.shape[axis] < 2:
            return False
        return _sum_to_one(A, axis) and not _sum_to_one(A, -1)
    return shows


def _sum_to_one(A, axis) -> bool:
    finite = np.isfinite(A).all(axis=axis)
    return bool(finite.any() and np.allclose(A.sum(axis=axis)[finite], 1.0, atol=1e-6))


def _softmax_without_check(S):
    return _softmax_along(S, -1)  # an all −inf row becomes −inf − (−inf) = NaN


def _softmax_uniform_dead_rows(S):
    S = np.asarray(S)
    dead = ~np.isfinite(S).any(axis=-1, keepdims=True)
    return _softmax_along(np.where(dead, 0.0, S), -1)


def _softmax_zero_dead_rows(S):
    """A row with every key masked given weights of zero, where the contract raises ValueError."""
    S = np.asarray(S)
    dead = ~np.isfinite(S).any(axis=-1, keepdims=True)
    return np.where(dead, 0.0, _softmax_along(np.where(dead, 0.0, S), -1))


def _context_transposed(A, V):
    return np.swapaxes(np.asarray(A), -1, -2) @ np.asarray(V)


def _context_dot(A, V):
    """np.dot(A, V): A @ V for matrices; with batch axes it pairs every batch of A with every batch of V,
    (..., Nq, ..., dv), where C is (..., Nq, dv)."""
    return np.dot(np.asarray(A), np.asarray(V))


def _context_einsum_for_matrices(A, V):
    """einsum subscripts without "...": batched weights and values raise einsum's ValueError; one sequence is right."""
    return np.einsum("ij,jk->ik", np.asarray(A), np.asarray(V))


def _uniform_weights(S):
    """Weights that ignore the scores: 1/Nk for every key, hidden or not."""
    S = np.asarray(S)
    return np.full(S.shape, 1.0 / S.shape[-1])


def _zero_context(A, V):
    """A context that never combines the values: zeros of C's shape (..., Nq, dv)."""
    A, V = np.asarray(A), np.asarray(V)
    return np.zeros(np.broadcast_shapes(A.shape[:-2], V.shape[:-2]) + (A.shape[-2], V.shape[-1]))


def _attention_with(seen, score=None, apply_mask=None, softmax=None, context=None):
    """attention(Q, K, V, allowed, scale) with some parts replaced by wrong versions: (C, A)."""
    ref, args = seen.ref, seen.args
    S = score(seen) if score else ref.score(args["Q"], args["K"], args["scale"])
    if S is None:
        return None  # the wrong score does not apply to this call
    if args["allowed"] is not None:
        S = (apply_mask or ref.apply_mask)(S, args["allowed"])
    # torch.softmax never raises: a row left with no visible key is NaN there, where NumPy's contract raises.
    A = (softmax or (_softmax_without_check if seen.function == "attention_torch" else ref.softmax))(S)
    return (context or ref.context)(A, args["V"]), A


def _part(wrong_part, **pipeline_part):
    """A wrong answer for calls of the function itself (`wrong_part`) and for attention built on it
    (attention with `pipeline_part`, e.g. score=..., in place of the reference's part; attention_torch too,
    where the idea lists it, as its calls take attention's arguments and the answers compare as arrays)."""
    def wrong(seen):
        if seen.function in ("attention", "attention_torch"):
            return _attention_with(seen, **pipeline_part)
        return wrong_part(seen)
    return wrong


def _wrong_softmax(variant):
    """A wrong softmax: `variant(S)` on softmax's own scores, and inside attention."""
    return _part(lambda seen: variant(seen.args["S"]), softmax=variant)


# ------------------------------------------------------------------ behaviour


def _has_all_masked_row(seen) -> bool:
    if seen.function == "softmax":
        return not np.isfinite(np.asarray(seen.args["S"])).any(axis=-1).all()
    allowed = seen.args.get("allowed")
    if allowed is None:
        return False
    Q, K = np.asarray(seen.args["Q"]), np.asarray(seen.args["K"])
    shape = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]) + (Q.shape[-2], K.shape[-2])
    return not np.broadcast_to(allowed, shape).any(axis=-1).all()


# Exceptions a student raises on purpose for a bad row, or gets from dividing by its zero sum.
# Others (MemoryError, ImportError, ...) have causes that have nothing to do with the row.
_ROW_EXCEPTIONS = ("RuntimeError", "Exception", "AssertionError", "ArithmeticError", "FloatingPointError",
                   "ZeroDivisionError")


def _raises_other_than_value_error(seen) -> bool:
    return seen.raised is not None and seen.raised[0] in _ROW_EXCEPTIONS and _has_all_masked_row(seen)


# NumPy's ValueError for two shapes that do not broadcast (an error of the code, not one it raised itself).
_BROADCAST = re.compile(r"operands could not be broadcast together with shapes \(([\d,]*)\) \(([\d,]*)\)")


def _masked_maximum(seen) -> bool:
    """NaN or ∞ weights (attention's or attention_torch's A) where the reference's are finite, only in rows whose
    visible scores are all of ordinary size and a masked score lies past exp's range (745) above them: no exp of a
    visible score overflows there, but a maximum that takes the masked key in (or weights masked after the softmax,
    then renormalized) leaves every visible exponent 0, and 0/0."""
    masked = _masked_weights(seen)
    if masked is None:
        return False
    got, S, allowed = masked
    visible = np.where(allowed, S, -np.inf).max(axis=-1)
    hidden = np.where(allowed, -np.inf, S).max(axis=-1)
    bad = ~np.isfinite(got).all(axis=-1)
    ordinary = visible < math.log(np.finfo(got.dtype).max) / 2  # no visible exponent could overflow
    return bool(bad.any() and (ordinary & (hidden - visible > 745))[bad].all())


def _finite_fill_outweighed(seen) -> bool:
    """Weight (attention's or attention_torch's A, softmax's answer) on masked keys, finite, and only where a masked
    score lies past exp's range (745) above its row's visible ones, or every visible score of its row lies that far
    below 0: what a finite fill gives (−1e4 added, or written in, or a clip of the scores), which a masked key
    scoring further above outweighs, and which lies above a row of scores further below; −∞ never does."""
    masked = _masked_weights(seen)
    if masked is None or not np.isfinite(masked[0]).all():
        return False
    got, S, allowed = masked
    leaked = ~allowed & (got > 0)
    visible = np.where(allowed, S, -np.inf).max(axis=-1, keepdims=True)
    if leaked.any():
        return bool(((S - visible > 745) | (visible < -745))[leaked].all())
    return _clipped_even(got, np.asarray(_right(seen)[1], dtype=float), allowed, (visible < -745)[..., 0])


def _clipped_even(got: np.ndarray, right: np.ndarray, allowed: np.ndarray, far: np.ndarray) -> bool:
    """Whether each row of `far` (every visible score far below 0) has even weights over its visible keys where the
    right ones are not: what a clip of the scores before masking gives (its visible scores all clipped to one value),
    with no weight on a masked key. got, right, allowed (..., Nq, Nk); far (..., Nq)."""
    telling = 0
    for weights, wanted, shown in zip(got[far], right[far], allowed[far]):
        seen, should = weights[shown], wanted[shown]
        if seen.size < 2 or np.ptp(should) < 1e-2 * should.max():
            continue  # one visible key, or right weights nearly even themselves: such a row tells nothing
        if np.ptp(seen) > 1e-6 * seen.max():
            return False
        telling += 1
    return telling > 0


def _masked_weights(seen) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(A, the scores, the mask at their shape) of a masked attention call whose A (..., Nq, Nk) is a float array
    of the scores' shape, where the reference's weights are finite; None otherwise. For softmax, the scores it was
    given, masked where they are −∞ (np.nan_to_num or a clip in softmax is a finite fill too)."""
    value, args = seen.value, seen.args
    got = value if seen.function == "softmax" else value[1] if isinstance(value, tuple) and len(value) == 2 else None
    got = got.array if isinstance(got, TensorData) else got
    if not isinstance(got, np.ndarray) or got.dtype.kind != "f":
        return None
    if seen.function == "softmax":
        S = np.asarray(args["S"], dtype=float)
        allowed = S != -np.inf
    elif args.get("allowed") is None:
        return None
    else:
        S = np.asarray(seen.ref.score(args["Q"], args["K"], args["scale"]), dtype=float)
        allowed = np.broadcast_to(np.asarray(args["allowed"], dtype=bool), S.shape)
    right = _right(seen)
    right = right if seen.function == "softmax" else right[1]
    if S.shape != got.shape or not np.isfinite(np.asarray(right, dtype=float)).all():
        return None
    return got, S, allowed


def _overflows(seen) -> bool:
    """NaN or ∞ among the weights (softmax's answer, attention's and attention_torch's A) where the reference's are all
    finite: what exp of a large score gives, whatever was subtracted first (nothing, the row's first score, its
    mean). The specific shifts, listed before, keep their names."""
    value = seen.value
    got = value if seen.function == "softmax" else value[1] if isinstance(value, tuple) and len(value) == 2 else None
    got = got.array if isinstance(got, TensorData) else got
    if not isinstance(got, np.ndarray) or got.dtype.kind != "f":
        return False
    right = _right(seen)
    right = np.asarray(right if seen.function == "softmax" else right[1], dtype=float)
    return (got.shape == right.shape and bool(np.isfinite(right).all()) and not bool(np.isfinite(got).all())
            and _exp_can_overflow(seen, got))


def _exp_can_overflow(seen, got: np.ndarray) -> bool:
    """Whether, in every row of weights `got` (..., Nq, Nk) that is not finite, exp of the row's finite scores,
    shifted by any other score of the row, can pass `got`'s dtype's largest number (log of it: 709 for float64,
    88 for float32): scores of size 3 with NaN weights are another mistake (a shift by a maximum over the wrong
    axis, say, which meets -inf - -inf, or a mask multiplied in, 0 × -inf), also where other rows' scores are large."""
    args = seen.args
    S = args["S"] if seen.function == "softmax" else seen.ref.score(args["Q"], args["K"], args["scale"])
    S = np.asarray(S, dtype=float)
    if seen.function != "softmax" and args.get("allowed") is not None:  # a masked score is no exponent
        S = np.where(np.broadcast_to(np.asarray(args["allowed"], dtype=bool), S.shape), S, -np.inf)
    largest = np.where(np.isfinite(S), np.abs(S), 0.0).max(axis=-1)
    if largest.shape != got.shape[:-1]:
        return False
    return bool((2 * largest > math.log(np.finfo(got.dtype).max))[~np.isfinite(got).all(axis=-1)].all())


def _raises_on_valid_rows(seen) -> bool:
    """ValueError, the all-masked row's exception, for scores where every row has a visible key (not NumPy's own
    ValueError for shapes that do not broadcast, which the student did not raise)."""
    return (seen.raised is not None and seen.raised[0] == "ValueError" and not _has_all_masked_row(seen)
            and _BROADCAST.search(seen.raised[1]) is None)


def _reduced_without_keepdims(seen) -> bool:
    """NumPy's broadcast error between an array and the same array reduced over its last axis: a row maximum or
    sum taken without keepdims=True, which lines up with the keys instead of the queries (and fails to broadcast
    unless there are as many of each)."""
    found = _BROADCAST.search(seen.raised[1]) if seen.raised is not None and seen.raised[0] == "ValueError" else None
    if found is None:
        return False
    first, second = (tuple(int(n) for n in group.split(",") if n) for group in found.groups())
    return (len(first) >= 2 and second == first[:-1]) or (len(second) >= 2 and first == second[:-1])


def _constant_mask(seen) -> bool:
    """A boolean mask that is all True or all False where the right mask depends on the positions."""
    def constant(mask):
        return bool(mask.all() or not mask.any())
    got = seen.value
    if not isinstance(got, np.ndarray) or got.dtype != np.bool_ or got.size == 0:
        return False
    right = np.asarray(getattr(seen.ref, seen.function)(**seen.args))
    return got.shape == right.shape and constant(got) and not constant(right)


def _fills_finite_negative(seen) -> bool:
    """apply_mask put a finite number far below every score where −∞ belongs: one fill (-1e9, -1e4, the dtype's
    minimum), or one such number added to each hidden score (S + (1 - allowed) * -1e9, an additive mask). Each
    student picks their own number, so it is recognised rather than computed as a wrong answer."""
    got, S = seen.value, np.asarray(seen.args["S"])
    if not isinstance(got, np.ndarray) or got.shape != S.shape or got.dtype.kind != "f":
        return False
    hidden = ~np.broadcast_to(np.asarray(seen.args["allowed"], dtype=bool), S.shape)
    if not hidden.any():
        return False
    shift = got[hidden] - S[hidden]
    one_fill = np.unique(got[hidden]).size == 1
    one_shift = bool(np.isfinite(shift).all()) and np.ptp(shift) <= 1e-6 * max(1.0, float(np.abs(shift).max()))
    finite = S[np.isfinite(S)]
    return ((one_fill or one_shift) and bool(np.isfinite(got[hidden]).all()) and got[hidden].max() <= -100
            and (finite.size == 0 or got[hidden].max() < finite.min()))


def _scores_off_by_a_factor(seen) -> bool:
    """Every score is the right one times one factor (not 1): the grid is right and its scale is not, as with a
    dk fixed in the code (a module constant) or read from a list of sizes. The specific scales come first."""
    got = seen.value
    if not isinstance(got, np.ndarray) or got.dtype.kind != "f":
        return False
    right = np.asarray(_right(seen), dtype=float)
    if got.shape != right.shape or not np.isfinite(got).all() or not np.any(right):
        return False
    factor = float(np.sum(got * right) / np.sum(right * right))
    # A factor of 0 is no scale: scores of all zeros compute nothing (and shift nothing after softmax).
    return (abs(factor) > 1e-6 and not np.isclose(factor, 1.0, rtol=1e-3)
            and bool(np.allclose(got, factor * right, rtol=1e-3, atol=1e-9)))


def _asked_truth_of_mask(seen) -> bool:
    """`if allowed:` on an array: NumPy and PyTorch refuse the truth value of more than one element."""
    return seen.raised is not None and seen.args.get("allowed") is not None and any(
        words in seen.raised[1] for words in ("truth value of an array", "Boolean value of Tensor"))


def _indexed_with_a_broadcast_mask(seen) -> bool:
    """`S[~allowed] = -inf` with a mask of fewer or length-1 axes than the scores: boolean indexing refuses it
    (NumPy's IndexError "boolean index did not match", PyTorch's "The shape of the mask ... does not match")."""
    allowed = seen.args.get("allowed")
    return (seen.raised is not None and seen.raised[0] == "IndexError" and allowed is not None
            and any(words in seen.raised[1] for words in ("boolean index did not match", "The shape of the mask")))


def _additive_rows_added(seen):
    """Q W_qᵀ + K W_kᵀ added as they are, without the axes that pair every query with every key: query i meets key
    i alone, a single query meets every key but gives (Nk,), and other lengths do not broadcast (`_pairs_refused`
    recognises that error in either order of the two)."""
    Q, K, W_q, W_k, v, b = (np.asarray(seen.args[n]) for n in ("Q", "K", "W_q", "W_k", "v", "b"))
    return np.tanh(Q @ W_q.T + K @ W_k.T + b) @ v


def _pairs_refused(seen) -> bool:
    """additive_score raised NumPy's broadcast error between the projected queries (Nq, h) and keys (Nk, h), in
    either order: the two added without the axes that pair them."""
    found = _BROADCAST.search(seen.raised[1]) if seen.raised is not None else None
    if found is None:
        return False
    Q, K, W_q = (np.asarray(seen.args[n]) for n in ("Q", "K", "W_q"))
    shapes = {tuple(int(n) for n in group.split(",") if n) for group in found.groups()}
    return shapes == {(Q.shape[0], W_q.shape[0]), (K.shape[0], W_q.shape[0])} and Q.shape[0] != K.shape[0]


def _attention_unmasked(seen):
    """attention as if no mask were given: the keys allowed hides are attended to anyway."""
    args = seen.args
    if args["allowed"] is None:
        return None
    return seen.ref.attention(args["Q"], args["K"], args["V"], None, args["scale"])


def _projection_shapes_refused(seen) -> bool:
    """additive_score raised a shape mismatch where W_q (h, dq) is not square: the projection written q_i W_q, the
    weights untransposed, which fits only when h = dq (not a swap of W_q and W_k, `_swap_refused`)."""
    W_q = np.asarray(seen.args["W_q"])
    return (seen.raised is not None and seen.raised[0] == "ValueError" and W_q.shape[0] != W_q.shape[-1]
            and any(words in seen.raised[1] for words in ("mismatch", "not aligned", "could not be broadcast"))
            and not _swap_refused(seen))


_MISMATCH = re.compile(r"size (\d+) is different from (\d+)|\((\d+),(\d+)\) and \((\d+),(\d+)\) not aligned")


def _swap_refused(seen) -> bool:
    """additive_score raised NumPy's mismatch of the queries' width dq with the keys' weights' width dk: Q @ W_k.T,
    the two weights swapped, which fits only when dq = dk (matmul names the two sizes, dot the two shapes)."""
    found = _MISMATCH.search(seen.raised[1]) if seen.raised is not None else None
    if found is None:
        return False
    dq, dk = np.asarray(seen.args["Q"]).shape[-1], np.asarray(seen.args["K"]).shape[-1]
    if found.group(1) is not None:  # matmul: (size <operand 1's rows> is different from <operand 0's width>)
        return dq != dk and (int(found.group(1)), int(found.group(2))) == (dk, dq)
    return dq != dk and (int(found.group(4)), int(found.group(5))) == (dq, dk)


def _additive_weights_swapped(seen):
    """Queries projected with W_k and keys with W_q: what a student returns where dq = dk (else `_swap_refused`)."""
    Q, K, W_q, W_k, v, b = (np.asarray(seen.args[n]) for n in ("Q", "K", "W_q", "W_k", "v", "b"))
    if Q.shape[-1] != W_k.shape[-1] or K.shape[-1] != W_q.shape[-1]:
        return None
    return np.tanh((Q @ W_k.T)[:, None, :] + (K @ W_q.T)[None, :, :] + b) @ v


def _changed_input(name):
    def shows(seen):
        after = seen.args_after
        if after is None or np.array_equal(after[name], seen.args[name], equal_nan=True):
            return False
        # The grader's own mark in an argument that was returned itself: no change the function made.
        return not (seen.call.mark_returned and holds_returned_mark(seen.args[name], after[name]))
    return shows


def _detached(seen) -> bool:
    """Gradients were asked for, but a returned tensor has no autograd history."""
    value = seen.reply.value
    tensors = value if isinstance(value, (tuple, list)) else (value,)
    return seen.call.backward is not None and any(
        isinstance(t, TensorData) and t.grad_fn is None and not t.requires_grad for t in tensors)


def _torch_default_scale(seen):
    if seen.args["scale"] is None:
        return None  # ignoring scale is invisible when none is given
    args = seen.args
    return seen.ref.attention(args["Q"], args["K"], args["V"], args["allowed"], None)


def _attention_default_scale(seen):
    """attention with the scale it was given dropped: 1/√dk always."""
    if seen.args["scale"] is None:
        return None  # dropping a scale is invisible when none is given
    args = seen.args
    return seen.ref.attention(args["Q"], args["K"], args["V"], args["allowed"], None)


def _mask_after_softmax(seen):
    """Softmax of the unmasked scores, then hidden weights set to 0 without renormalizing: (C, A)."""
    ref, args = seen.ref, seen.args
    if args["allowed"] is None:
        return None
    A = ref.softmax(ref.score(args["Q"], args["K"], args["scale"])) * np.asarray(args["allowed"], dtype=bool)
    return ref.context(A, args["V"]), A


def _scaled_after_masking(seen):
    """The scores masked to −∞ first and multiplied by the scale after: (C, A). Only a scale ≤ 0 shows it: −∞ × 0 is
    NaN, and −∞ times a negative scale is +∞."""
    ref, args = seen.ref, seen.args
    if args["allowed"] is None or args["scale"] is None or args["scale"] > 0:
        return None
    S = ref.apply_mask(ref.score(args["Q"], args["K"], 1.0), args["allowed"]) * args["scale"]
    A = _softmax_without_check(S)
    return ref.context(A, args["V"]), A


def _returns_a_c(seen):
    args = seen.args
    C, A = seen.ref.attention(args["Q"], args["K"], args["V"], args["allowed"], args["scale"])
    return A, C


def _causal(seen, allowed_if):
    n_q = seen.args["n_q"]
    n_k = n_q if seen.args["n_k"] is None else seen.args["n_k"]
    return allowed_if(np.arange(n_k)[None, :], np.arange(n_q)[:, None])


def _causal_bottom_right(seen):
    """np.tril(ones, k=n_k - n_q): the queries aligned with the last n_q keys, as when decoding with a key cache."""
    n_q = seen.args["n_q"]
    shift = 0 if seen.args["n_k"] is None else seen.args["n_k"] - n_q
    return _causal(seen, lambda j, i: j <= i + shift)


def _padding_one_too_many(seen):
    lengths = np.asarray(seen.args["lengths"])
    return (np.arange(seen.args["n_k"])[None, :] <= lengths[:, None])[:, None, :]


def _padding_inverted(seen):
    """True for the padded keys (j ≥ L), as nn.MultiheadAttention's key_padding_mask marks them."""
    lengths = np.asarray(seen.args["lengths"])
    return (np.arange(seen.args["n_k"])[None, :] >= lengths[:, None])[:, None, :]


def _padding_without_query_axis(seen):
    """(B, Nk) where the mask is (B, 1, Nk): without the query axis it lines the sequences up with the queries."""
    lengths = np.asarray(seen.args["lengths"])
    return np.arange(seen.args["n_k"])[None, :] < lengths[:, None]


def _additive_without_tanh(seen):
    Q, K, W_q, W_k, v, b = (np.asarray(seen.args[n]) for n in ("Q", "K", "W_q", "W_k", "v", "b"))
    return ((Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :] + b) @ v


def _additive_without_bias(seen):
    """tanh(W_q q_i + W_k k_j) without b: the right answer where b = 0 (slide 9's formula with its bias left out)."""
    Q, K, W_q, W_k, v = (np.asarray(seen.args[n]) for n in ("Q", "K", "W_q", "W_k", "v"))
    return np.tanh((Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :]) @ v


def _right(seen):
    """The reference's answer; attention_torch's is the NumPy attention's (same contract)."""
    name = "attention" if seen.function == "attention_torch" else seen.function
    return getattr(seen.ref, name)(**seen.args)


# ------------------------------------------------------------------ the catalogue

_SOFTMAX = ("softmax", "attention")
# A part of attention that attention_torch writes out again (its scale, its mask) can hold the same wrong idea;
# attention_torch's calls take attention's arguments, so `_part` runs them through the same wrong pipeline.
_SCORE_ALL = ("score", "attention", "attention_torch")
_MASK_ALL = ("apply_mask", "attention", "attention_torch")

MISCONCEPTIONS = (
    Misconception(
        "attention_returns_a_c",
        "attention and attention_torch return the context first and the weights second, (C, A) — slide 30.",
        ("attention", "attention_torch"), wrong=_returns_a_c),
    Misconception(
        "attention_ignores_scale",
        "attention passes its scale on to score: an explicitly given scale replaces 1/√dk, which is used only "
        "when scale is None — slide 10.",
        ("attention",), wrong=_attention_default_scale),
    Misconception(
        "attention_ignores_mask",
        "attention must hide the keys that allowed marks False: apply the mask to the scores before softmax "
        "(score → apply_mask → softmax → context). Here the hidden keys were attended to as if no mask were "
        "given (allowed not passed on, or an apply_mask that returns the scores unchanged) — slides 20 and 30.",
        ("attention", "attention_torch"), wrong=_attention_unmasked),
    Misconception(
        "mask_after_softmax",
        "Mask the scores before softmax (hidden scores become −∞); zeroing weights after softmax leaves "
        "rows that no longer sum to 1 — slide 20.",
        ("attention", "attention_torch"), wrong=_mask_after_softmax),
    Misconception(
        "score_missing_scale",
        "Dot-product scores are divided by √dk (scale=None means 1/√dk), so high-dimensional dot products "
        "do not saturate softmax — slide 10.",
        ("score", "attention"), wrong=_part(_score_unscaled, score=_score_unscaled)),
    Misconception(
        "score_divides_by_dk",
        "The default scale is 1/√dk, not 1/dk: divide the dot products by the square root of the key "
        "width — slide 10.",
        _SCORE_ALL, wrong=_part(_score_over_dk, score=_score_over_dk)),
    Misconception(
        "score_multiplies_by_sqrt_dk",
        "The default scale is 1/√dk: divide the dot products by √dk (S = Q Kᵀ / √dk), do not multiply by it; "
        "multiplying makes high-dimensional scores larger still, so softmax saturates — slide 10.",
        _SCORE_ALL, wrong=_part(_score_times_sqrt_dk, score=_score_times_sqrt_dk)),
    Misconception(
        "score_divides_by_scale",
        "`scale` multiplies the dot products, S = Q Kᵀ · scale (the stub's docstring), and its default is 1/√dk: "
        "a given scale of 0.25 makes every score a quarter of its dot product. Dividing by it (Q Kᵀ / scale) reads "
        "it as the √dk of slide 10, which only the default gets right — slide 10.",
        _SCORE_ALL, wrong=_part(_score_over_given_scale, score=_score_over_given_scale)),
    Misconception(
        "score_transposed",
        "Scores are Q Kᵀ: rows are queries and columns are keys, so S has shape (Nq, Nk), not K Qᵀ's "
        "(Nk, Nq) — slide 13.",
        ("score", "attention"), wrong=_part(_score_transposed, score=_score_transposed)),
    Misconception(
        "score_dk_from_wrong_axis",
        "dk is the width of each query and key, the last axis: Q.shape[-1]. With batch or head axes in front, "
        "Q.shape[1] is another axis (the queries, or the heads), so the default scale 1/√dk comes out wrong "
        "— slides 10 and 13.",
        ("score", "attention", "attention_torch"), wrong=_part(_score_dk_from_axis_1, score=_score_dk_from_axis_1)),
    Misconception(
        "score_transposes_batch_axes",
        "Inputs may carry batch or head axes, (..., Nk, dk): K.T reverses every axis of K, not just the last "
        "two, so Q @ K.T breaks (or mixes the batch axes) once there is a batch; transpose only the last two "
        "axes, np.swapaxes(K, -1, -2) — slide 13.",
        ("score", "attention", "attention_torch"),
        wrong=_part(_score_all_axes_transposed, score=_score_all_axes_transposed)),
    Misconception(
        "score_dot_transposes_batch_axes",
        "Inputs may carry batch or head axes, (..., Nk, dk): np.dot(Q, K.T) works for one sequence only, as K.T "
        "reverses every axis of K and np.dot pairs every batch of Q with every batch of K.T; transpose the last "
        "two axes and multiply batch by batch, Q @ np.swapaxes(K, -1, -2) — slide 13.",
        ("score", "attention"), wrong=_part(_score_dot_all_axes_transposed, score=_score_dot_all_axes_transposed)),
    Misconception(
        "score_einsum_without_ellipsis",
        "Inputs may carry batch or head axes, (..., Nq, dk): einsum subscripts written for matrices "
        "('id,jd->ij') have no letter for them; let '...' stand for the leading axes, "
        "np.einsum('...id,...jd->...ij', Q, K) — slide 13.",
        ("score", "attention"), wrong=_part(_score_einsum_for_matrices, score=_score_einsum_for_matrices)),
    Misconception(
        "score_wrong_scale",
        "Every score is the right dot product times one wrong factor: the default scale is 1/√dk with dk the "
        "width of each query, Q.shape[-1], read from the input (not a constant fixed in the code), and an "
        "explicitly given scale replaces it — slide 10.",
        ("score",), shows=_scores_off_by_a_factor),
    Misconception(
        "mask_fills_zero",
        "A hidden key needs the score −∞, not 0: a zero score still gets positive weight after softmax "
        "(slide 15's zero dot product gets 0.1978) — slides 15 and 20.",
        _MASK_ALL,
        wrong=_part(lambda seen: _fill_zero(seen.args["S"], seen.args["allowed"]),
                    apply_mask=_fill_zero)),
    Misconception(
        "mask_added",
        "allowed is a boolean mask, not an additive one: S + allowed adds 1 to every visible score and hides "
        "nothing. Put −∞ where allowed is False (np.where(allowed, S, -np.inf)); an additive mask would hold 0 and "
        "−∞, not True and False — slide 20.",
        _MASK_ALL,
        wrong=_part(lambda seen: _add_mask(seen.args["S"], seen.args["allowed"]), apply_mask=_add_mask)),
    Misconception(
        "mask_inverted",
        "In the mask, True means the key may be attended to and False means hidden: hide the keys where allowed "
        "is False (S[~allowed] = −∞). nn.MultiheadAttention's key_padding_mask means the opposite, True for "
        "masked — slides 20 and 21.",
        _MASK_ALL,
        wrong=_part(lambda seen: _hide_allowed(seen.args["S"], seen.args["allowed"]), apply_mask=_hide_allowed)),
    Misconception(
        "mask_hides_zero_scores",
        "Hide the keys where allowed is False, and only those: a visible key whose score is exactly 0 is a key like "
        "any other (slide 15's zero dot product gets 0.1978). Multiplying the mask into the scores and then hiding "
        "every 0 hides it too; use np.where(allowed, S, -np.inf) (masked_fill(~allowed, -inf) in torch) — slides 15 "
        "and 20.",
        _MASK_ALL,
        wrong=_part(lambda seen: _hide_zero_scores(seen.args["S"], seen.args["allowed"]),
                    apply_mask=_hide_zero_scores)),
    Misconception(
        "mask_fills_finite_negative",
        "A hidden key needs the score −∞, not a large negative number such as −1e9 (filled in or added): its "
        "weight is 0 only while another key of the row is visible, and a row whose every key is hidden then gets "
        "even weights instead of the ValueError softmax owes it — slides 20 and 22.",
        ("apply_mask",), shows=_fills_finite_negative),
    Misconception(
        "apply_mask_modifies_input",
        "apply_mask returns a masked copy of the scores; writing −∞ into the caller's array destroys "
        "scores the caller still needs — slide 20.",
        ("apply_mask",), shows=_changed_input("S")),
    Misconception(
        "all_masked_wrong_exception",
        "An all-masked row is an invalid input, and the contract asks for ValueError there, not another "
        "exception type — slide 22.",
        _SOFTMAX, shows=_raises_other_than_value_error),
    Misconception(
        "all_masked_nan",
        "A row with every key masked has no valid normalization, so softmax should raise ValueError "
        "instead of returning NaN — slide 22.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_without_check)),
    Misconception(
        "all_masked_uniform",
        "A row with every key masked has no valid normalization; raise ValueError instead of spreading "
        "its weight evenly over keys that are all hidden (in attention, a mask filled with a large finite "
        "number instead of −∞ gives such a row even weights too) — slide 22.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_uniform_dead_rows), also_from=("apply_mask",)),
    Misconception(
        "all_masked_zeros",
        "A row with every key masked has no valid normalization (its weights cannot sum to one); raise ValueError "
        "instead of returning zeros, which hides the error from the caller — slide 22.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_zero_dead_rows)),
    Misconception(
        "softmax_over_queries",
        "Softmax normalizes over the keys of each query (the last axis, dim=-1 in torch), not over the queries "
        "(axis=-2, which for scores with a batch axis, (B, Nq, Nk), is also axis=1) — slide 11.",
        (*_SOFTMAX, "attention_torch"),
        wrong=_wrong_softmax(_softmax_over_queries), shows=_sums_to_one_along(-2, least_ndim=2)),
    Misconception(
        "softmax_axis_1",
        "Softmax normalizes over the last axis, axis=-1 (the keys of each query): axis=1 is that axis only for a "
        "single matrix (Nq, Nk); with a batch axis in front it is the queries, and with heads too it is the heads. "
        "The same holds for the test that a row has every key masked (and for torch.softmax's dim) — slide 11.",
        (*_SOFTMAX, "attention_torch"),
        wrong=_wrong_softmax(_softmax_along_axis_1), shows=_sums_to_one_along(1, least_ndim=3)),
    Misconception(
        "softmax_no_max_subtraction",
        "Subtract each row's maximum before exponentiating: exp of a score near 1000 overflows, while "
        "the shifted scores give the same weights — slide 11.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_unshifted)),
    Misconception(
        "softmax_without_keepdims",
        "S.max(axis=-1) and e.sum(axis=-1) drop the last axis, so S - S.max(axis=-1) lines each query's maximum up "
        "with the keys, not with its own row (and does not broadcast unless there are as many queries as keys): "
        "keep the axis, S.max(axis=-1, keepdims=True) and e.sum(axis=-1, keepdims=True) — slide 11.",
        _SOFTMAX, wrong=_wrong_softmax(_softmax_without_keepdims), shows=_reduced_without_keepdims),
    Misconception(
        "softmax_global_max",
        "Subtract each row's own maximum, S.max(axis=-1, keepdims=True), not the maximum of the whole array: "
        "each query is normalized separately, and a row whose scores all lie far below another row's maximum "
        "underflows to exp(...) = 0 everywhere and gives 0/0 = NaN — slide 11.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_global_max)),
    Misconception(
        "softmax_matrix_max",
        "Subtract each row's own maximum, S.max(axis=-1, keepdims=True), not each matrix's, S.max(axis=(-2, -1)): "
        "each query is normalized separately, and a row whose scores all lie far below the largest score of its "
        "batch entry underflows to exp(...) = 0 everywhere and gives 0/0 = NaN — slide 11.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_matrix_max)),
    Misconception(
        "softmax_global_sum",
        "Divide each row by its own sum, e.sum(axis=-1, keepdims=True), not by the sum over the whole array: "
        "each query's weights must add up to one on their own — slide 11.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_global_sum)),
    Misconception(
        "softmax_shift_per_key",
        "Subtract each row's own maximum, S.max(axis=-1, keepdims=True): the shift must be the same for every "
        "key of a query's row to cancel in its normalization. The maximum over the queries (axis=-2) shifts "
        "each key by a different amount, which changes the weights (and a key hidden from every query gives "
        "−∞ − (−∞) = NaN) — slide 11.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_shift_per_key)),
    Misconception(
        "softmax_min_shift",
        "Subtract each row's maximum, not its minimum or its mean: after S - S.min(...) (or S.mean(...)) the "
        "largest score of a row lies far above 0, so exp overflows for scores near ±1000, and a masked key's −∞ "
        "makes the whole row ∞ or NaN. Shifting by the maximum keeps every exponent ≤ 0 — slide 11.",
        _SOFTMAX,
        wrong=_wrong_softmax(_softmax_min_shifted)),
    Misconception(
        "masked_key_in_the_maximum",
        "Masked keys take no part in the softmax: mask the scores first (slide 20), then subtract each row's "
        "maximum over its visible keys. A maximum taken before masking, or weights masked after the softmax and "
        "renormalized, let a masked key that scores far above the visible ones make every visible exp 0, and "
        "0/0 is NaN.",
        ("attention", "attention_torch"), shows=_masked_maximum),
    Misconception(
        "masked_with_a_finite_fill",
        "Hide a masked key with −∞, np.where(allowed, S, -np.inf) (PyTorch: S.masked_fill(~allowed, "
        "float('-inf'))), not with a finite number added or written in (−1e4), and clip no scores: a masked key "
        "whose score lies further above the visible ones than that number, or a row whose visible scores all lie "
        "below it, still gives the masked key the weight — slide 20.",
        ("attention", "attention_torch", "softmax"), shows=_finite_fill_outweighed),
    Misconception(
        "softmax_overflows",
        "A softmax must stay finite for finite scores: exp of a score in the hundreds overflows to ∞ (and ∞/∞ is "
        "NaN), and a row whose scores all lie hundreds below 0 underflows to 0 (and 0/0 is NaN), unless each row's "
        "maximum is subtracted first, in every row and on every call, S - S.max(axis=-1, keepdims=True), which "
        "keeps every exponent ≤ 0, the largest of each row 0, and gives the same weights (torch.softmax does it "
        "for you) — slide 11.",
        (*_SOFTMAX, "attention_torch"), shows=_overflows),
    Misconception(
        "softmax_modifies_input",
        "Subtracting the row maximum must make a new array (S - S.max(...)); `S -= ...` overwrites the "
        "caller's scores — slide 11.",
        ("softmax",), shows=_changed_input("S")),
    Misconception(
        "context_transposed_weights",
        "The context is C = A V with A's rows (the queries) kept as rows: each query's weights combine "
        "the values, so A is not transposed — slides 12 and 13.",
        ("context", "attention"),
        wrong=_part(lambda seen: _context_transposed(seen.args["A"], seen.args["V"]),
                    context=_context_transposed)),
    Misconception(
        "context_dot_mixes_batches",
        "Weights and values may carry batch or head axes, (..., Nq, Nk) and (..., Nk, dv): np.dot pairs every "
        "batch of A with every batch of V, giving (..., Nq, ..., dv); A @ V (np.matmul) combines each batch's "
        "values with that batch's weights, C of shape (..., Nq, dv) — slides 12 and 13.",
        ("context", "attention"),
        wrong=_part(lambda seen: _context_dot(seen.args["A"], seen.args["V"]), context=_context_dot)),
    Misconception(
        "context_einsum_without_ellipsis",
        "Weights and values may carry batch or head axes, (..., Nq, Nk) and (..., Nk, dv): einsum subscripts "
        "written for matrices ('ij,jk->ik') have no letter for them; let '...' stand for the leading axes, "
        "np.einsum('...ij,...jk->...ik', A, V), or write A @ V — slides 12 and 13.",
        ("context",), wrong=lambda seen: _context_einsum_for_matrices(seen.args["A"], seen.args["V"])),
    Misconception(
        "mask_truth_value",
        "A mask is an array, not a yes or no: test whether one was given with `if allowed is not None:`; "
        "`if allowed:` asks for the truth value of the whole array, which NumPy and PyTorch refuse — slide 20.",
        ("attention", "attention_torch"), shows=_asked_truth_of_mask),
    Misconception(
        "mask_indexed_at_full_shape",
        "A mask only has to broadcast to the scores (..., Nq, Nk): a padding mask is often (..., 1, Nk), a causal "
        "one (Nq, Nk) for every batch entry. Boolean indexing, S[~allowed] = -np.inf, needs the mask at the "
        "scores' own shape; np.where(allowed, S, -np.inf) (PyTorch: S.masked_fill(~allowed, float('-inf'))) "
        "broadcasts it — slides 20 and 21.",
        _MASK_ALL, shows=_indexed_with_a_broadcast_mask),
    Misconception(
        "causal_hides_diagonal",
        "A causal mask hides only future keys (j > i); each query still sees its own position, so the "
        "diagonal stays True — slide 20.",
        ("causal_mask",), wrong=lambda seen: _causal(seen, lambda j, i: j < i)),
    Misconception(
        "causal_hides_past",
        "A causal mask hides the future and keeps the past: allowed(i, j) ⇔ j ≤ i, the lower triangle "
        "(np.tril); j ≥ i, its transpose, hides every earlier key and shows every later one — slide 20.",
        ("causal_mask",), wrong=lambda seen: _causal(seen, lambda j, i: j >= i)),
    Misconception(
        "causal_mask_inverted",
        "The mask is True where a key may be attended to: the lower triangle, j ≤ i (np.tril). True for the future "
        "keys, np.triu(..., k=1), is the mask of hidden keys (PyTorch's boolean attn_mask means that), the "
        "opposite of allowed — slide 20.",
        ("causal_mask",), wrong=lambda seen: _causal(seen, lambda j, i: j > i)),
    Misconception(
        "causal_shows_future",
        "A causal mask must hide every future key: allowed(i, j) is True only for j ≤ i — slide 20.",
        ("causal_mask",), wrong=lambda seen: np.ones_like(_causal(seen, lambda j, i: j <= i))),
    Misconception(
        "causal_bottom_right",
        "A causal mask counts queries and keys from the same first position: allowed(i, j) ⇔ j ≤ i, so in "
        "causal_mask(n_q, n_k) query 0 sees key 0 alone whatever n_k is (np.tril(np.ones((n_q, n_k)))). "
        "np.tril(..., k=n_k − n_q) lines the queries up with the last n_q keys instead, as when decoding with a "
        "cache of earlier keys: the same for a square mask, another mask whenever n_q ≠ n_k — slide 20.",
        ("causal_mask",), wrong=_causal_bottom_right),
    Misconception(
        "score_python_loops",
        "score is right on small inputs but too slow at T = 512: dense attention has a T × T score grid "
        "(quadratic in T), so vectorize it as one matrix product, Q @ Kᵀ over the last two axes: not with Python "
        "loops over queries and keys, nor through every product at once, (Q[..., :, None, :] * "
        "K[..., None, :, :]).sum(-1), an array dk times the grid's size — slide 24.",
        ("score",), too_slow=("score.long_sequence",)),
    Misconception(
        "padding_off_by_one",
        "A sequence of length L has keys 0 … L−1, so its padding mask is True for j < L, not j ≤ L "
        "— slide 21.",
        ("padding_mask",), wrong=_padding_one_too_many),
    Misconception(
        "padding_mask_inverted",
        "The padding mask is True where a key exists and may be attended to, j < L, and False for the padding: "
        "True for the padded keys is PyTorch's key_padding_mask, which marks what to hide, the opposite of "
        "allowed — slide 21.",
        ("padding_mask",), wrong=_padding_inverted),
    Misconception(
        "padding_without_query_axis",
        "The padding mask has shape (B, 1, Nk): the axis of length 1 stands for the queries, so one sequence's "
        "mask broadcasts over all of its queries' rows of (B, Nq, Nk) scores. Without it, a (B, Nk) mask lines "
        "the sequences up with the queries instead — slide 21.",
        ("padding_mask",), wrong=_padding_without_query_axis),
    Misconception(
        "additive_no_tanh",
        "Additive attention passes W_q q_i + W_k k_j + b through tanh before the dot product with v "
        "— slide 9.",
        ("additive_score",), wrong=_additive_without_tanh),
    Misconception(
        "additive_rows_not_paired",
        "e_ij compares query i with key j for every pair: give the projected queries and keys each an axis for "
        "the other, (Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :], shape (Nq, Nk, h), before tanh and v. "
        "Added as they are, query i meets key i alone, and shapes of different lengths do not broadcast — slide 9.",
        ("additive_score",), wrong=_additive_rows_added, shows=_pairs_refused),
    Misconception(
        "additive_weights_swapped",
        "Each side has its own weights: W_q projects the queries and W_k the keys, (Q @ W_q.T)[:, None, :] + "
        "(K @ W_k.T)[None, :, :]; swapped, the shapes fit only when dq = dk, and the scores are another "
        "model's — slide 9.",
        ("additive_score",), wrong=_additive_weights_swapped, shows=_swap_refused),
    Misconception(
        "additive_weights_not_transposed",
        "W_q has shape (h, dq) and multiplies each query as a column, W_q q_i: for the rows of Q that is "
        "Q @ W_q.T (and K @ W_k.T), not Q @ W_q, whose shapes fit only when h = dq — slide 9.",
        ("additive_score",), shows=_projection_shapes_refused),
    Misconception(
        "additive_no_bias",
        "Additive attention adds the bias inside the tanh: e_ij = vᵀ tanh(W_q q_i + W_k k_j + b), so b shifts "
        "every hidden unit before it saturates — slide 9.",
        ("additive_score",), wrong=_additive_without_bias),
    Misconception(
        "torch_missing_scale",
        "attention_torch scales its scores like the NumPy score: with scale=None, multiply Q Kᵀ by 1/√dk, as "
        "scaled_dot_product_attention does; only an explicitly given scale replaces it — slides 10 and 27.",
        ("attention_torch",), wrong=_part(_score_unscaled, score=_score_unscaled)),
    Misconception(
        "torch_ignores_scale",
        "attention_torch must use the scale it is given and fall back to 1/√dk only when scale is None, "
        "like the NumPy attention — slides 10 and 27.",
        ("attention_torch",), wrong=_torch_default_scale),
    Misconception(
        "scaled_after_masking",
        "Scale the scores, then mask them: A = softmax(QKᵀ/√dk + mask). Masked first, a hidden score's −∞ is "
        "multiplied by the scale, which for a scale of 0 gives NaN (0 × −∞) and for a negative one +∞, so the "
        "hidden key takes the weight — slides 20 and 30.",
        ("attention", "attention_torch"), wrong=_scaled_after_masking),
    # Answers of the right shape that compute nothing (issue 11). Last, so the specific ideas above
    # keep their names where both would match (an all-True causal mask is causal_shows_future).
    Misconception(
        "weights_ignore_scores",
        "The weights must depend on the scores: a_ij = exp(s_ij) / Σ_m exp(s_im) gives a better-matching "
        "key more weight, while uniform weights 1/Nk ignore the comparison altogether — slides 11 and 15.",
        (*_SOFTMAX, "attention_torch"), wrong=_wrong_softmax(_uniform_weights)),
    Misconception(
        "mask_ignores_positions",
        "A mask depends on the positions: causal_mask compares key j with query i (True for j ≤ i) and "
        "padding_mask compares j with each length (True for j < L); a mask that is the same everywhere "
        "hides every key or none — slides 20 and 21.",
        ("causal_mask", "padding_mask"), shows=_constant_mask),
    Misconception(
        "context_ignores_values",
        "Retrieval is a weighted sum of the values, c_i = Σ_j a_ij v_j: the context must be computed from "
        "the weights and the values, not left at zero — slide 12.",
        ("context", "attention"),
        wrong=_part(lambda seen: _zero_context(seen.args["A"], seen.args["V"]), context=_zero_context)),
    Misconception(
        "raises_on_valid_rows",
        "Raise ValueError only for a row whose every key is masked: a row with at least one visible key has "
        "a valid normalization, and its hidden keys simply get weight 0 — slides 20 and 22.",
        ("softmax",), shows=_raises_on_valid_rows),
    # Last: weights that ignore the scores (uniform, a constant) have no autograd history either, and their wrong
    # values are what to fix first. A detached answer is named here where no idea above explains its values.
    Misconception(
        "torch_detached",
        "attention_torch must stay in torch operations on the input tensors so autograd can follow; "
        ".detach(), .numpy() or re-wrapping cuts the gradient path, and torch.no_grad() or "
        "torch.set_grad_enabled(False) records none — slide 27.",
        ("attention_torch",), shows=_detached),
)

CATALOGUE = Catalogue(misconceptions=MISCONCEPTIONS, right=_right)
