"""Hidden checks for week 7: the student's functions against the reference.

Never released. Every check grades one function in isolation, on random
inputs that the reference computes (softmax gets reference scores, context
gets reference weights), so a bug costs only the checks of the function that
has it — and of compositions that call it. Inputs are drawn from the
student's seeded generator with the sizes in `t.sizes`, which the feedback's
shrinker may reduce. The reference is `t.ref`; PyTorch's own
scaled_dot_product_attention is the independent peer for the agreement and
gradient checks. Every check compares the whole answer (for attention_torch,
also the gradients autograd brings back), so an answer of the right shape
that computes nothing earns nothing. Points live in course.yaml.
"""
import inspect

import numpy as np
import torch
import torch.nn.functional as F

from autograder.authoring import (
    FLOAT32_UNIT,
    Check,
    CheckFailed,
    Inputs,
    Sizes,
    StudentError,
    additive_rounding,
    as_tensor,
    called_with,
    expect_close,
    expect_equal_mask,
    expect_error_path,
    expect_gradients,
    expect_pair,
    expect_within_rounding,
    invalid_first,
    mask_rows,
    normal,
    precision_of_factors,
    product_rounding,
    raise_for,
    rounding_terms,
)

DTYPES = (np.float64, np.float32)
PAIR = ("C", "A")  # attention returns the context, then the weights (slide 30)
ROWS_ARE_QUERIES = "rows should be queries and columns keys (slide 13)"
ALL_MASKED_ADVICE = "an all-masked row has no valid normalization (slide 22)"
VISIBLE_KEY_ADVICE = ("raise ValueError only when a query has no visible key; one visible key gives a valid "
                      "normalization (slides 20 and 22)")
# Slide 24: the quadratic score grid. Two heads of T = 512 tell a vectorized answer (a few ms) from a Python
# loop over the grid's 2 × 262,144 entries (a quarter of a second or more), within a limit calibrated from the
# reference (README: "Time limits"). Not one head: the reference would then take ~1.3 ms, 50 × that is under
# the 0.1 s floor, and the floor would let an element-by-element loop (~0.12 s) come within 25 % of passing.
LONG = Sizes.of(batch=(2,), nq=512, nk=512, dk=64, dv=64)
# The inputs have batch axes, so the advice transposes only K's last two (K.T would reverse them all).
VECTORIZE = ("compute the whole T × T grid with array operations (Q @ np.swapaxes(K, -1, -2), a softmax over the "
             "last axis, A @ V) instead of Python loops over queries and keys, and without an intermediate array "
             "larger than the grid, such as A[..., None] * V[..., None, :, :] (slide 24)")


def _qkv(t, dtype=np.float64):
    d = t.sizes
    return (normal(t.rng, (*d["batch"], d["nq"], d["dk"]), dtype),
            normal(t.rng, (*d["batch"], d["nk"], d["dk"]), dtype),
            normal(t.rng, (*d["batch"], d["nk"], d["dv"]), dtype))


def _f64(*arrays):
    return [a.astype(np.float64) for a in arrays]


def _name(dtype) -> str:
    return np.dtype(dtype).name


def _terms(A, V):
    """The magnitudes of the terms each entry of C = A V sums: Σⱼ |aᵢⱼ| |vⱼₖ| (slide 12), the scale of its rounding.

    A: (..., Nq, Nk) weights, V: (..., Nk, dv). Returns (..., Nq, dv) in float64.
    """
    return np.abs(np.asarray(A, dtype=np.float64)) @ np.abs(np.asarray(V, dtype=np.float64))


def _products_rounding(Q, K, scale):
    """float32's rounding of the scores scale·Q Kᵀ, entry by entry (..., Nq, Nk), whatever dtype Q and K have: each
    sums dk products, so up to dk float32 units (and two more for factors rounded first) of L = |scale| Σ_d |q_d k_d|
    (product_rounding). Q (..., Nq, dk), K (..., Nk, dk); scale None for 1/√dk."""
    return product_rounding(Q, np.swapaxes(K, -1, -2), 1 / np.sqrt(Q.shape[-1]) if scale is None else scale)


def _score_rounding(Q, K, scale, A):
    """How much a row's weights may err, relative, where its scores were computed in float32: exp turns an error δ in
    a score (or in the row's log-sum-exp) into a relative error δ in its weight. Per row, the largest: (..., Nq, 1).
    For float64 inputs, the scores' own rounding (_products_rounding), as float64's tolerance allows code that
    computes in float32. For float32 inputs, the row's rounding at its own magnitude (_row_rounding, as softmax's
    float32 rows are held to) over the keys that carry weight in A, the reference's weights (..., Nq, Nk): a masked
    key's score is no part of the row's log-sum-exp. A float32 query 100,000 below 0 has its log-sum-exp rounded to
    0.008 there, and right log-space code (torch.logsumexp) had lost attention_torch's points by the student's id.

    Q (..., Nq, dk), K (..., Nk, dk); scale None for 1/√dk."""
    if Q.dtype == np.float64:
        return _products_rounding(Q, K, scale).max(axis=-1, keepdims=True)
    scores = np.asarray(Q, dtype=np.float64) @ np.swapaxes(np.asarray(K, dtype=np.float64), -1, -2)
    scores = scores * (1 / np.sqrt(Q.shape[-1]) if scale is None else scale)
    return _row_rounding(np.where(np.asarray(A) > 0, scores, -np.inf))


def _weight_terms(A, rounding, tol):
    """What the weights A (..., Nq, Nk) are rounded in proportion to (expect_close's `terms`, under `tol`, the
    tolerance they are held to): |A| (tol.rtol + rounding), `rounding` their scores' (_score_rounding): scores in the
    thousands, computed in float32, had passed or failed by where a student's values rounded. That part is in the
    weight's own units whatever tolerance applies: as a multiple of tol.rtol it had grown 200-fold under float32's
    coarser tolerance, and weights 50 % off had passed where L is 100,000 (the query far below 0)."""
    return np.abs(A) * (1 + rounding / tol.rtol)


def _expect_attention(C, A, expected: tuple, inputs: tuple, scale, tol, what: str) -> None:
    """The context C and weights A of `what` against the expected (C, A), both float64; inputs: (Q, K, V)."""
    _expect_weighted(C, A, expected, inputs, scale, tol, (f"the context C of {what}", f"the weights A of {what}"))


def _expect_weighted(C, A, expected: tuple, inputs: tuple, scale, tol, what: tuple) -> None:
    """C and A against the expected (C, A), both float64, each under the tolerance its own precision sets: C = A V is
    held to the precision of the student's own A too, since weights computed in float32 and cast back (a float32
    softmax, as mixed-precision code runs it) bound C's precision to float32's, whatever dtype C is returned in.
    inputs: (Q, K, V); what: how the messages name C and A."""
    (C_exp, A_exp), (Q, K, V) = expected, inputs
    tol_C, tol_A = precision_of_factors(tol, A, C), precision_of_factors(tol, A)
    rounding = _score_rounding(Q, K, scale, A_exp)
    expect_close(C, C_exp, tol_C, what[0], terms=_terms(_weight_terms(A_exp, rounding, tol_C), V))
    expect_close(A, A_exp, tol_A, what[1], terms=_weight_terms(A_exp, rounding, tol_A))


# ------------------------------------------------------------------ score

BROADCAST_ADVICE = ("leading batch and head axes broadcast, as np.matmul's do: one head's keys or values (an axis "
                    "of length 1) serve every head of the other argument; use @ or np.matmul on the whole arrays, "
                    "not a reshape to (-1, N, d) or loops that index both arguments by the same batch position")


# For arguments with fewer leading axes than the others (keys with none, for batched queries).
FEWER_AXES_ADVICE = ("leading axes broadcast as np.matmul's do, and one argument may have fewer of them than "
                     "another: transpose only the last two axes (np.swapaxes(K, -1, -2)), whatever the number of "
                     "axes, and count no axes from the other argument")


# attention_torch's words for the same: torch.matmul broadcasts as np.matmul does.
TORCH_FEWER_AXES_ADVICE = ("leading axes broadcast as torch.matmul's do, and keys and values may have fewer of them "
                           "than the queries, or none: transpose only the last two axes (K.transpose(-2, -1)), and "
                           "read no axis of K or V counted from Q's (K.shape[-3] does not exist for a 2-D K)")


# For a mask with fewer axes than the scores: a causal (Nq, Nk) on (B, Nq, Nk), a row of keys (Nk,) on (Nq, Nk).
FEWER_MASK_AXES_ADVICE = ("a mask with fewer axes than the scores lines up with their last axes, as NumPy and PyTorch "
                          "broadcast it: an (Nq, Nk) mask serves every batch entry, an (Nk,) mask every query; leave "
                          "its axes as they are (np.where(allowed, S, -np.inf) or masked_fill broadcast it) instead "
                          "of inserting one after its first (slides 20 and 21)")


# For weight on a masked key where the query's visible scores all lie far below 0 (_far_below_float32).
FINITE_FILL_ADVICE = ("hide masked keys with −∞ whatever the dtype (np.where(allowed, S, -np.inf), "
                      "S.masked_fill(~allowed, float('-inf'))), not with a finite number such as −1e4: a query whose "
                      "visible scores all lie below it gives the masked keys the weight (slide 20)")


# For values with fewer leading axes than the weights: context's own code, not score's transpose.
VALUES_FEWER_AXES_ADVICE = ("leading axes broadcast as np.matmul's do, and the values may have fewer of them than the "
                            "weights, or none: in context, compute A @ V on the whole arrays and read no axis of V "
                            "counted from A's (V.shape[-3] does not exist for a 2-D V)")


def _returned_broadcasting(t, function: str, *args, advice: str = BROADCAST_ADVICE, raised_in: dict | None = None,
                           **kwargs):
    """t.returned for a call whose arguments' batch axes differ; a raise says that they broadcast, in the words of
    `raised_in` (the student's function the exception was raised in -> advice) where it names that function: advice
    about score's transpose misleads where attention raised inside context. Where it was raised is the worker's word,
    used for the advice only. kwargs go to the function."""
    reply = t.call(function, *args, **kwargs)
    if reply.raised is None:
        return reply.value
    said = (raised_in or {}).get(reply.raised.within, advice)
    try:
        raise_for(function, reply, called_with(t.ref, function, args, kwargs), t.stub(function))
    except StudentError as error:
        raise StudentError(f"{error}; {said}") from None


def _told(advice: str, compare, *args, **kwargs):
    """compare(*args, **kwargs), whose failure's message ends with `advice`: what to do about that case. An empty
    advice adds nothing."""
    try:
        return compare(*args, **kwargs)
    except CheckFailed as failure:
        if advice:
            failure.message += f"; {advice}"
        raise


def _mask_advice(A, allowed) -> str:
    """FEWER_MASK_AXES_ADVICE where the weights A hide other keys than `allowed` does, broadcast as NumPy broadcasts
    it (weight 0 exactly where the mask says False), else "": a wrong answer whose hidden keys are the right ones
    (a scale kept from an earlier call, say) had been told to leave the mask's axes alone, which it had done."""
    seen = _weights_and_hidden(A, allowed)
    if seen is None:  # weights of another shape or no numbers: the mask may well explain them
        return FEWER_MASK_AXES_ADVICE
    weights, hidden = seen
    return FEWER_MASK_AXES_ADVICE if np.any((weights == 0) != hidden) else ""


def _fill_advice(A, allowed) -> str:
    """FINITE_FILL_ADVICE where the weights A give a key that `allowed` hides some weight, else "": what a finite
    fill (−1e4) gives a query whose visible scores all lie below it. Right log-space code, whose weights were off by
    float32's rounding alone, had been told to hide masked keys with −∞, which it did."""
    seen = _weights_and_hidden(A, allowed)
    return FINITE_FILL_ADVICE if seen is not None and np.any(seen[1] & (np.abs(seen[0]) > 0)) else ""


def _weights_and_hidden(A, allowed):
    """(A as float64, where `allowed` hides a key, broadcast to A's shape as NumPy broadcasts it), or None for weights
    of another shape or of no numbers."""
    try:
        weights = np.asarray(A, dtype=np.float64)
        return weights, ~np.broadcast_to(allowed, weights.shape)
    except (TypeError, ValueError):
        return None


def _shared_by_heads(array):
    """`array` (..., N, d) with its last batch axis cut to length 1: one set of keys or values for every head, as
    in multi-query attention, which broadcasts against the queries' heads (the stub: "leading batch/head axes
    that broadcast"). None where there is no batch axis to share."""
    return array[..., :1, :, :] if array.ndim > 2 else None


def _expect_scores(t, got, Q, K, scale, what: str, shape_hint: str = "") -> None:
    """score's answer `got` for Q and K (scale None for 1/√dk) against the reference's, held to float64's tolerance
    plus float32's rounding of the products each score sums (_products_rounding), in the scores' own units, whatever
    dtype the inputs or the answer have. Right code computed in float32 and then multiplied by a float64 scale holds
    no float32 numbers only, and had lost its points under float64's tolerance alone; a float32 answer had been held
    to float32's flat tolerance (rtol 2e-4), which passed a default scale rounded to four decimals or to float16."""
    expect_within_rounding(got, t.ref.score(*_f64(Q, K), scale), t.tol(np.float64), _products_rounding(Q, K, scale),
                           what, shape_hint=shape_hint)


def score_matches_reference(t):
    """score matches the reference on batched cross-attention inputs (Nq ≠ Nk), float32 and float64, on keys
    or queries shared by every head (broadcast), and on keys or queries with no leading axes at all (broadcast as
    in np.matmul), and leaves Q and K unchanged."""
    for dtype in DTYPES:
        Q, K, _ = _qkv(t, dtype)
        _expect_scores(t, t.returned("score", Q, K), Q, K, None, f"score(Q, K) for {_name(dtype)} inputs",
                       shape_hint=ROWS_ARE_QUERIES)
    shared = _shared_by_heads(K)
    if shared is not None:
        _expect_scores(t, _returned_broadcasting(t, "score", Q, shared), Q, shared, None,
                       f"score(Q, K) with keys of shape {shared.shape}, shared by every head of queries of shape "
                       f"{Q.shape} (batch axes broadcast)", shape_hint=ROWS_ARE_QUERIES)
        one_query = _shared_by_heads(Q)  # and the other way round: K broadcast to Q's batch shape fails here
        _expect_scores(t, _returned_broadcasting(t, "score", one_query, K), one_query, K, None,
                       f"score(Q, K) with queries of shape {one_query.shape}, shared by every head of keys of shape "
                       f"{K.shape} (batch axes broadcast)", shape_hint=ROWS_ARE_QUERIES)
        # Fewer leading axes broadcast as in np.matmul: transposing by axes counted from the queries' own fails.
        for q, k in ((Q, K[(0,) * (K.ndim - 2)]), (Q[(0,) * (Q.ndim - 2)], K)):
            got = _returned_broadcasting(t, "score", q, k, advice=FEWER_AXES_ADVICE)
            _expect_scores(t, got, q, k, None, f"score(Q, K) with queries of shape {q.shape} and keys of shape "
                           f"{k.shape} (the missing leading axes broadcast, as in np.matmul)",
                           shape_hint=ROWS_ARE_QUERIES)


def _in_stub_order(t, function: str) -> str:
    """What a message adds for a call that passes every parameter by position, as the stub orders them (the
    reference's signature is the stub's: tests/test_release.py), where the function returned a wrong value: every
    other call passes the optional parameters by keyword, where a signature in another order (`scale=None,
    allowed=None`) had kept its points."""
    return f"{_called_in_stub_order(t, function)}; keep them in that order"


def _called_in_stub_order(t, function: str) -> str:
    """How a call that passes every parameter by position was made, for a message about what it raised: the
    raise's own advice says what to change (for a call that did not fit, which of the stub's ways to take a
    parameter the function lacks), which a plain "keep them in that order" contradicted where the order was the
    stub's."""
    call = f"{function}({', '.join(inspect.signature(getattr(t.ref, function)).parameters)})"
    return f"called as {call}: parameters in the stub's order"


def _returned_in_stub_order(t, function: str, *args):
    """t.returned for a call that passes every parameter by position, in the stub's order; a raise says so."""
    try:
        return t.returned(function, *args)
    except StudentError as error:
        raise StudentError(f"{error}; {_called_in_stub_order(t, function)}") from None


ZERO_SCALE = "0.0 multiplies every score by 0, and only None means 1/√dk (`scale or 1/√dk` takes 0.0 for None)"


def _scaled(call: str, scale) -> str:
    """`call` with its explicit scale, and for 0.0 what it means: a falsy scale is still a scale."""
    return f"{call} with scale={scale}" + (f" ({ZERO_SCALE})" if scale == 0 else "")


def score_explicit_scale(t):
    """score multiplies by an explicitly given scale (1.0, -0.25, 0.0, then the int 2 with a fifth axis, then -0.25
    for float32 inputs: no dtype takes a path of its own that drops it) instead of 1/√dk, and leaves Q and K
    unchanged. 0.0 is a scale, not "none given" (`scale or 1/√dk` takes it for None), a
    negative one keeps its sign, one above 1 multiplies too (it is no temperature to divide by), an int is a
    scale as a float is, and any number of leading axes broadcast (the stub's `...`). The float64 −0.25 goes by
    position, as the stub orders the parameters; every other call names it."""
    Q, K, _ = _qkv(t)
    cases = [(Q, K, 1.0, ""), (Q, K, -0.25, ""), (Q, K, 0.0, ""), (Q[None], K[None], 2, " for 5-D inputs"),
             (Q.astype(np.float32), K.astype(np.float32), -0.25, " for float32 inputs")]
    for number, (q, k, scale, what) in enumerate(cases):
        what = _scaled(f"score(Q, K){what}", scale)
        if number == 1:  # once by position, in the stub's order: every other call names the scale
            got, what = _returned_in_stub_order(t, "score", q, k, scale), f"{what} ({_in_stub_order(t, 'score')})"
        else:
            got = t.returned("score", q, k, scale=scale)
        _expect_scores(t, got, q, k, scale, what)


def score_long_sequence(t):
    """score at T = 512 (two heads, d = 64) finishes within its time limit: vectorize, no Python loops."""
    Q, K, expected, terms = t.shared(_long_score_case)
    expect_within_rounding(t.returned("score", Q, K), expected, t.tol(np.float64), None, "score(Q, K) at T = 512",
                           terms=terms)


def _long_score_case(t):
    """The inputs, the reference's scores and what they are held to (their float32 rounding, _products_rounding, as
    expect_within_rounding's terms), once for the class."""
    Q, K, _ = _qkv(t, np.float32)
    expected = t.ref.score(*_f64(Q, K))
    return Q, K, expected, rounding_terms(expected, _products_rounding(Q, K, None), t.tol(np.float64))


# ------------------------------------------------------------------ additive_score

def additive_score_matches_reference(t):
    """additive_score matches the reference for Nq ≠ Nk, dq ≠ dk and a hidden width h, and leaves its arguments
    unchanged. Held to float64's tolerance plus float32's rounding of v · tanh(W_q q + W_k k + b)
    (additive_rounding), whatever dtype the inputs or the answer have, as score's answers are (_expect_scores). Then
    queries whose hidden sums run into the thousands, where tanh is ±1: tanh written out as (e^2a − 1) / (e^2a + 1)
    overflows to inf / inf there, and had full marks on ordinary inputs."""
    d = t.sizes
    h = d["h"]
    for dtype in DTYPES:
        args = [normal(t.rng, shape, dtype) for shape in ((d["nq"], d["dk"] + 1), (d["nk"], d["dk"]), (h, d["dk"] + 1),
                                                          (h, d["dk"]), (h,), (h,))]
        expect_within_rounding(t.returned("additive_score", *args), t.ref.additive_score(*_f64(*args)),
                               t.tol(np.float64), additive_rounding(*args), f"additive_score for {_name(dtype)} inputs")
    args = [args[0].astype(np.float64) * SATURATING, *_f64(*args[1:])]
    expect_within_rounding(t.returned("additive_score", *args), t.ref.additive_score(*args), t.tol(np.float64),
                           additive_rounding(*args), f"additive_score for queries {SATURATING:g} times larger "
                           "(hidden sums in the thousands, where tanh is ±1)")


# ------------------------------------------------------------------ masks

def causal_mask_rectangular(t):
    """causal_mask(n_q, n_k) with n_q ≠ n_k is True exactly where j ≤ i, small and past any table of positions
    kept at the top level and sliced: a GPT-2-style `bias` buffer of 10 or 64 positions (520 × 523), or one of
    GPT-2's whole context, 1024 (a few queries and PAST_CONTEXT keys)."""
    small = ((t.sizes["nq"], t.sizes["nk"]), (t.sizes["nk"], t.sizes["nq"]))
    for n_q, n_k in (*small, (WIDE, WIDE + 3), (3, PAST_CONTEXT)):
        # Past the small sizes a wrong shape is a size cap: say so, instead of only printing the two shapes.
        hint = "" if (n_q, n_k) in small else SLICED_TABLE
        expect_equal_mask(t.returned("causal_mask", n_q, n_k), t.ref.causal_mask(n_q, n_k),
                          f"causal_mask({n_q}, {n_k})", shape_hint=hint)


def padding_mask_matches_reference(t):
    """padding_mask matches the reference for random lengths, including a full-length sequence and an empty one
    (no key exists: a row of False, not a last key kept), and for a batch padded past its longest sequence (n_k
    fixed elsewhere, so the mask is n_k wide, not max(lengths)), for a length past n_k (every key exists), for the
    same lengths at two widths one after the other (a mask kept by the lengths alone has the first width), for a
    batch of one sequence and for one key (the mask keeps its axes of length 1), and leaves the lengths unchanged."""
    n_k = t.sizes["nk"]
    lengths = t.rng.integers(1, n_k + 1, size=4)
    lengths[0] = n_k
    lengths[1] = max(1, min(lengths[1], n_k - 1))  # and a padded one (n_k > 1), so all True is wrong too
    lengths[2] = 0
    expect_equal_mask(t.returned("padding_mask", lengths, n_k),
                      t.ref.padding_mask(lengths, n_k),
                      f"padding_mask(lengths, {n_k}) (lengths: {len(lengths)} random ones, one of them 0)")
    if n_k > 1:  # as many lengths as before, and as wide: a mask kept by (B, n_k) alone comes back wrong
        shorter = t.rng.integers(1, n_k, size=len(lengths))
        expect_equal_mask(t.returned("padding_mask", shorter, n_k), t.ref.padding_mask(shorter, n_k),
                          f"padding_mask(lengths, {n_k}) for {len(shorter)} random lengths, all shorter than {n_k}")
    wide = t.rng.integers(0, WIDE + 1, size=2)
    wide[1] = WIDE + 2  # a sequence longer than the keys kept: every key exists (a table of n_k + 1 rows raised)
    expect_equal_mask(t.returned("padding_mask", wide, WIDE), t.ref.padding_mask(wide, WIDE),
                      f"padding_mask(lengths, {WIDE}) for lengths {wide.tolist()}, one past {WIDE}")
    # The same lengths at another width, next: a mask kept by the lengths alone comes back at WIDE keys.
    expect_equal_mask(t.returned("padding_mask", wide, n_k), t.ref.padding_mask(wide, n_k),
                      f"padding_mask(lengths, {n_k}) for the same lengths just asked at {WIDE} keys",
                      shape_hint="the mask is n_k keys wide at every call: a mask kept from an earlier call with the "
                                 "same lengths must be looked up by n_k too, or built again")
    # A batch of one sequence, and a single key: squeezing the lengths or the mask drops an axis of length 1.
    one = t.rng.integers(0, n_k + 1, size=1)
    for lengths, keys in ((one, n_k), (np.array([1, 0]), 1)):
        expect_equal_mask(t.returned("padding_mask", lengths, keys), t.ref.padding_mask(lengths, keys),
                          f"padding_mask(lengths, {keys}) for lengths = {lengths.tolist()} (axes of length 1 are "
                          f"kept: the mask's shape is (B, 1, n_k))")


def apply_mask_matches_reference(t):
    """apply_mask matches the reference on random float32 and float64 scores and masks, one query of which has
    every key hidden (a row of −inf: softmax, not apply_mask, says that no key is left), and leaves the mask
    unchanged."""
    d = t.sizes
    for dtype in DTYPES:
        S = normal(t.rng, (*d["batch"], d["nq"], d["nk"]), dtype, scale=5.0)
        allowed = mask_rows(t.rng, S.shape)
        if d["nq"] > 1:  # beside queries with keys to see (shrunk to one query, the case is left out)
            allowed[(0,) * len(d["batch"]) + (d["nq"] // 2,)] = False  # a row left as it was had full marks
        expect_close(t.returned("apply_mask", S, allowed),
                     t.ref.apply_mask(S.astype(np.float64), allowed),
                     t.tol(dtype), f"apply_mask(S, allowed) for {_name(dtype)} scores, one query with every key "
                     "hidden")


def apply_mask_broadcasts(t):
    """apply_mask broadcasts a padding mask (B, 1, 1, Nk), a causal mask (Nq, Nk) and one row of keys (Nk,) over
    batch and heads, and a padding mask (B, 1, Nk) over the queries of 3-D scores (B, Nq, Nk), and leaves S and the
    mask unchanged (a fill in place only where the mask broadcasts had full marks). A 1-D mask is a row of keys,
    as NumPy broadcasts it: read as one entry per query, it had full marks. Last, masks of one axis fewer than the
    scores: a causal mask (Nq, Nk) on 3-D scores of B = Nq sequences, and a row of keys (Nk,) on 2-D scores; an
    axis inserted after a smaller mask's first (`allowed[:, None]`, as if it were one mask per sequence for
    multi-head scores) hides the wrong keys there (and raises for B ≠ Nq), and had full marks."""
    d = t.sizes
    S = normal(t.rng, (3, 2, d["nq"], d["nk"]), scale=5.0)
    S3 = S.reshape(-1, d["nq"], d["nk"])  # a batch and no heads, as slide 21's padding mask is used
    cases = {"a padding mask of shape (3, 1, 1, Nk)": (S, mask_rows(t.rng, (3, 1, 1, d["nk"]))),
             "a causal mask of shape (Nq, Nk)": (S, t.ref.causal_mask(d["nq"], d["nk"])),
             "a mask of shape (Nk,), the same keys visible to every query": (S, mask_rows(t.rng, (d["nk"],))),
             f"3-D scores of shape {S3.shape} and a padding mask of shape ({len(S3)}, 1, Nk)":
                 (S3, mask_rows(t.rng, (len(S3), 1, d["nk"])))}
    for what, (scores, allowed) in cases.items():
        expect_close(t.returned("apply_mask", scores, allowed),
                     t.ref.apply_mask(scores, allowed), t.tol(S.dtype), f"apply_mask(S, allowed) with {what}")
    causal = t.ref.causal_mask(d["nq"], d["nk"])
    # B = Nq: an inserted axis broadcasts there and hides the wrong keys (for B ≠ Nq it raises: one case finds both)
    fewer = [(normal(t.rng, (d["nq"], d["nq"], d["nk"])), causal, f"a causal mask of shape (Nq, Nk) = {causal.shape}")]
    fewer.append((fewer[0][0][0], mask_rows(t.rng, (d["nk"],)), f"a mask of shape (Nk,) = ({d['nk']},)"))
    for scores, allowed, mask in fewer:
        what = f"apply_mask(S, allowed) with scores of shape {scores.shape} and {mask}, one axis fewer"
        got = _returned_broadcasting(t, "apply_mask", scores, allowed, advice=f"{what}: {FEWER_MASK_AXES_ADVICE}")
        _told(FEWER_MASK_AXES_ADVICE, expect_close, got, t.ref.apply_mask(scores, allowed), t.tol(S.dtype), what)


# ------------------------------------------------------------------ softmax

def softmax_last_axis(t):
    """softmax normalizes over the last axis (keys) of batched rectangular scores (Nq ≠ Nk)."""
    d = t.sizes
    S = normal(t.rng, (*d["batch"], d["nq"], d["nk"]), scale=2.0)
    expect_close(t.returned("softmax", S), t.ref.softmax(S), t.tol(S.dtype), "softmax(S)")


def softmax_matches_reference(t):
    """softmax matches the reference on masked scores up to ±1000, float32 and float64, on every other row far below
    0 beside ordinary ones (none in the thousands to overflow: a shift taken only when exp would overflow leaves them
    0/0), on float32 scores in the hundreds, and on single scores (1×1). Right after two of the masked calls, the same
    scores with one more key visible (`_one_key_shown`), and with one more key masked (`_one_key_hidden`)."""
    d = t.sizes
    # Every other query's row far below 0, beside ordinary ones and none in the thousands: a shift taken only when exp
    # would overflow, or when the call's largest score is far from 0, leaves those rows 0/0. In float32, FAR below:
    # a finite number written over the masked -inf (np.nan_to_num, -1e4) lies above those rows' scores and takes
    # their weight; a float32 row's weights are held to float32's rounding at its magnitude (_row_rounding). Float64
    # scores stay BIG below: FAR's would make right code that computes in float32 lose, rounding them by 0.008. And
    # float32 scores in the hundreds, past float32's exp range (88) and within float64's (709): a threshold of 700
    # misses them.
    for dtype in DTYPES:
        far = FAR if dtype == np.float32 else BIG
        below = np.where(np.arange(d["nq"]) % 2 == 1, -far, 0.0)[:, None]
        cases = [(3.0, 0.0, ""), (1000.0, 0.0, ""), (3.0, below, f", every other row {far:,.0f} below 0")]
        for magnitude, shift, what in cases + ([(50.0, 0.0, "")] if dtype == np.float32 else []):
            scores = t.ref.score(*_f64(*_qkv(t)[:2]), scale=magnitude) + shift
            S = t.ref.apply_mask(scores, mask_rows(t.rng, (*d["batch"], d["nq"], d["nk"]))).astype(dtype)
            decoys = dtype == np.float64 and magnitude == 3.0 and what == "" and d["nk"] > 1
            if decoys:
                key = _visible_beside(t, S, (*(n // 2 for n in d["batch"]), d["nq"] // 2))
            expected = t.ref.softmax(S.astype(np.float64))
            rounded = _weight_terms(expected, _row_rounding(S), t.tol(dtype)) if dtype == np.float32 else None
            expect_close(t.returned("softmax", S), expected, t.tol(dtype), f"softmax(S) for masked {_name(dtype)} "
                         f"scores of size up to {magnitude:g}{what}", terms=rounded)
            # Right after a masked call, the same call one entry from it, as an error path's pair is: one more key
            # masked, then one more visible, so raising on a call one entry from the one before it costs this check.
            if decoys:
                _one_key_shown(t, _one_key_hidden(t, S, key), key)
    # A single key takes the whole weight, 1, whatever its score; alone this case cannot tell a right
    # softmax from an array of ones, so it only counts together with the cases above.
    for S in (np.array([[t.rng.normal() * 10]]), normal(t.rng, (3, 1, 1))):
        expect_close(t.returned("softmax", S), t.ref.softmax(S), t.tol(S.dtype), f"softmax of shape {S.shape}")


def _visible_beside(t, S, row: tuple) -> tuple:
    """Make `S`'s `row` as softmax_all_masked_anywhere's valid neighbour has it, but for one more visible key: a key
    drawn as that check draws its own, given 0.5 as it is there, and another visible key beside it. Returns the
    drawn key's index. The decoys (`_one_key_hidden`, `_one_key_shown`) then change that key, so that neither its
    row, its place, its value nor the call's dtype tells them from the error path's pair. S (..., Nq, Nk) float64,
    Nk ≥ 2, changed in place."""
    key = row + (int(t.rng.integers(S.shape[-1])),)
    S[key] = 0.5
    if np.isfinite(S[row]).sum() < 2:
        S[row + ((key[-1] + 1) % S.shape[-1],)] = 0.0
    return key


def _one_key_hidden(t, S, key: tuple):
    """softmax of `S` again with the key at `key` masked, right after `S` itself: the two calls differ in one entry,
    0.5 become −∞, as an error path's neighbour and its all-masked input do when the neighbour is asked first. Code
    that raises on such a call, rather than looking for a row with every key masked, raises here and loses this
    check; a right softmax returns, the row keeping another visible key (`_visible_beside`). Returns the scores
    asked. S (..., Nq, Nk) float64."""
    hidden = S.copy()
    hidden[key] = -np.inf
    expect_close(t.returned("softmax", hidden), t.ref.softmax(hidden), t.tol(S.dtype),
                 "softmax(S) for the same masked scores with one more key masked")
    return hidden


def _one_key_shown(t, S, not_key: tuple):
    """softmax of `S` again with one masked key other than `not_key` given 0.5, right after `S` itself: the other
    direction of `_one_key_hidden`, as an error path's pair is when its all-masked input is asked first. Nothing is
    drawn; nothing where no other key is masked. S (..., Nq, Nk) float64."""
    hidden = [tuple(i) for i in np.argwhere(np.isneginf(S)) if tuple(i) != not_key]
    if hidden:
        shown = S.copy()
        shown[hidden[-1]] = 0.5
        expect_close(t.returned("softmax", shown), t.ref.softmax(shown), t.tol(S.dtype),
                     "softmax(S) for the same masked scores with one more key visible")


def _row_rounding(S):
    """How much a float32 row's weights may err, relative, computed in float32 at the row's own magnitude: a
    log-sum-exp of scores 100,000 below 0 is rounded to float32's spacing there (0.008), and exp turns an error δ in
    it into a relative error δ in every weight. Two float32 units of the row's largest finite |score|: (..., N, 1)
    for S (..., N, Nk)."""
    return 2 * FLOAT32_UNIT * np.where(np.isfinite(S), np.abs(S), 0.0).max(axis=-1, keepdims=True)


def softmax_all_masked_anywhere(t):
    """softmax raises ValueError for batched scores where one row in their midst, not the last and not alone in its
    batch entry, has every key masked (slide 22), and gives the right weights once one of its keys is visible."""
    d = t.sizes
    S = t.ref.apply_mask(normal(t.rng, (*d["batch"], d["nq"], d["nk"]), scale=3.0),
                         mask_rows(t.rng, (*d["batch"], d["nq"], d["nk"])))
    row = (*(n // 2 for n in d["batch"]), d["nq"] // 2)
    S[row] = -np.inf
    neighbour = S.copy()
    neighbour[row + (int(t.rng.integers(d["nk"])),)] = 0.5
    where = ", ".join(map(str, row))
    what = f"softmax of scores of shape {S.shape} whose row [{where}] has every key masked"
    valid = f"softmax of the same scores with one key of row [{where}] visible"
    A = expect_error_path(t, "ValueError", "softmax", Inputs((S,)), Inputs((neighbour,)), what=what,
                          advice=f"{ALL_MASKED_ADVICE}; look at every row, in every batch entry", valid_what=valid,
                          valid_advice=VISIBLE_KEY_ADVICE)
    expect_close(A, t.ref.softmax(neighbour), t.tol(S.dtype), valid)


def softmax_input_unchanged(t):
    """softmax returns the right weights and leaves its input S unmodified: batched scores, so that a loop over the
    batch writing each entry's weights back (`S[i] = softmax(S[i])`) is seen as well as `S -= S.max(...)`. It
    carries softmax's arguments changed in place, whichever check's call showed the change (a shift done in place
    for large scores only)."""
    d = t.sizes
    shape = (*d["batch"], d["nq"], d["nk"])
    S = t.ref.apply_mask(normal(t.rng, shape, scale=3.0), mask_rows(t.rng, shape))
    # The grader reads S back after every call (course.yaml `arguments_unchanged`; grading.changed_arguments).
    expect_close(t.returned("softmax", S), t.ref.softmax(S), t.tol(S.dtype), "softmax(S), which left S unchanged as "
                 "it should,")


# ------------------------------------------------------------------ context

def context_matches_reference(t):
    """context matches the reference on reference weights with batch axes and dk ≠ dv, on values shared by every
    head, on weights shared by every head of the values (batch axes broadcast either way: V broadcast to A's
    batch axes alone had full marks), on values with no leading axes (as np.matmul broadcasts them, and as
    attention is asked them), on square weights, and last on PAST_A_BLOCK keys (a sum over blocks of keys misses
    none), and leaves A and V unchanged."""
    d = t.sizes
    rows = "C has one row per query and one column per value dimension"
    for dtype in DTYPES:
        A = t.ref.softmax(normal(t.rng, (*d["batch"], d["nq"], d["nk"]), scale=2.0)).astype(dtype)
        V = normal(t.rng, (*d["batch"], d["nk"], d["dv"]), dtype)
        expect_close(t.returned("context", A, V), t.ref.context(*_f64(A, V)), t.tol(dtype),
                     f"context(A, V) for {_name(dtype)} inputs", shape_hint=rows, terms=_terms(A, V))
    shared = _shared_by_heads(V)
    if shared is not None:
        expect_close(_returned_broadcasting(t, "context", A, shared), t.ref.context(*_f64(A, shared)), t.tol(A.dtype),
                     f"context(A, V) with values of shape {shared.shape}, shared by every head of weights of shape "
                     f"{A.shape} (batch axes broadcast)", shape_hint=rows, terms=_terms(A, shared))
        one = _shared_by_heads(A)
        expect_close(_returned_broadcasting(t, "context", one, V), t.ref.context(*_f64(one, V)), t.tol(A.dtype),
                     f"context(A, V) with weights of shape {one.shape}, shared by every head of values of shape "
                     f"{V.shape} (batch axes broadcast)", shape_hint=rows, terms=_terms(one, V))
        # Values with no leading axes, as attention passes them on: repeat_kv that reads V.shape[-3] raised there.
        flat = V[(0,) * (V.ndim - 2)]
        got = _returned_broadcasting(t, "context", A, flat, advice=f"values of shape {flat.shape}, with no leading "
                                     f"axes, against weights of shape {A.shape}: {VALUES_FEWER_AXES_ADVICE}")
        expect_close(got, t.ref.context(*_f64(A, flat)), t.tol(A.dtype), f"context(A, V) with values of shape "
                     f"{flat.shape} for weights of shape {A.shape} (the missing leading axes broadcast, as in "
                     "np.matmul)", shape_hint=rows, terms=_terms(A, flat))
    # Square weights (Nq = Nk) of either sign, rows not summing to 1: C = A V whatever A holds. A transposed only
    # when square, or weights normalized (or their magnitudes taken) again inside context, had full marks.
    A, V = normal(t.rng, (d["nk"], d["nk"])), normal(t.rng, (d["nk"], d["dv"]))
    expect_close(t.returned("context", A, V), t.ref.context(A, V), t.tol(A.dtype), f"context(A, V) for square "
                 f"weights of shape {A.shape} of either sign, whose rows do not sum to 1 (C = A V whatever A holds)",
                 shape_hint=rows, terms=_terms(A, V))
    # Last, so every case above keeps its draws: PAST_A_BLOCK keys, where a sum over blocks of 64 or 128 keys that
    # forgot the last partial one had full marks (every other case has a handful of keys, or T = 512).
    A = t.ref.softmax(normal(t.rng, (2, d["nq"], PAST_A_BLOCK), scale=2.0))
    V = normal(t.rng, (2, PAST_A_BLOCK, d["dv"]))
    expect_close(t.returned("context", A, V), t.ref.context(A, V), t.tol(A.dtype), f"context(A, V) for "
                 f"{PAST_A_BLOCK} keys (weights of shape {A.shape}: every key's weight counts, however the keys are "
                 "split into blocks)", shape_hint=rows, terms=_terms(A, V))


# ------------------------------------------------------------------ attention

def attention_matches_reference(t):
    """attention matches the reference with and without a mask, default and explicit scale (0.0 among them, with
    no mask: uniform weights; and a negative one with a mask, the scores scaled before they are masked), on keys
    and values shared by every head (broadcast) or with no leading axes (as np.matmul broadcasts them), and with one
    query's scores in the thousands, for a batch of one sequence and a single key, and leaves Q, K, V and the mask
    unchanged. Right after each masked call, the same call with one more key visible (float64) or one more key
    masked (float32)."""
    d = t.sizes
    for dtype in DTYPES:
        Q, K, V = _qkv(t, dtype)
        # ±0.3: no default scale of RANDOM's sizes, so a dropped scale fails. Negative in float64: a mask applied
        # before the scale turns −∞ into +∞ (slide 30: softmax(QKᵀ/√dk + mask)).
        masked_scale = 0.3 if dtype == np.float32 else -0.3
        cases = [(None, None), (mask_rows(t.rng, (*d["batch"], d["nq"], d["nk"])), masked_scale)]
        # 0.0 (uniform weights) in one dtype is enough; float32 gets a scale with no mask too, so that no dtype takes
        # a path of its own that drops it.
        cases += [(None, 0.0)] if dtype == np.float64 else [(None, -2.0)]
        for allowed, scale in cases:
            C_exp, A_exp = t.ref.attention(*_f64(Q, K, V), allowed=allowed, scale=scale)
            what = f"attention for {_name(dtype)} inputs" + (" with a mask" if allowed is not None else "")
            what = what if scale is None else _scaled(what, scale)
            C, A = expect_pair(t.returned("attention", Q, K, V, allowed=allowed,
                                                   scale=scale), what, PAIR)
            _expect_attention(C, A, (C_exp, A_exp), (Q, K, V), scale, t.tol(dtype), what)
    K, V = _shared_by_heads(K), _shared_by_heads(V)
    if K is not None:
        what = f"attention with keys and values of shapes {K.shape} and {V.shape}, shared by every head of queries " \
               f"of shape {Q.shape} (batch axes broadcast)"
        C, A = expect_pair(_returned_broadcasting(t, "attention", Q, K, V), what, PAIR)
        _expect_attention(C, A, t.ref.attention(*_f64(Q, K, V)), (Q, K, V), None, t.tol(Q.dtype), what)
        # No leading axes at all, as np.matmul broadcasts them: axes counted from Q's for K's transpose fail here.
        K, V = K[(0,) * (K.ndim - 2)], V[(0,) * (V.ndim - 2)]
        what = f"attention with keys and values of shapes {K.shape} and {V.shape} for queries of shape {Q.shape} " \
               f"(the missing leading axes broadcast, as in np.matmul)"
        C, A = expect_pair(_returned_broadcasting(t, "attention", Q, K, V, advice=FEWER_AXES_ADVICE,
                                                  raised_in={"context": VALUES_FEWER_AXES_ADVICE}), what, PAIR)
        _expect_attention(C, A, t.ref.attention(*_f64(Q, K, V)), (Q, K, V), None, t.tol(Q.dtype), what)
    # A batch of one sequence and a single key: axes of length 1 stay (a batch of one squeezed away had full marks),
    # and a lone key takes the whole weight, 1 (exp of its score, left unnormalized, had full marks too).
    Q, K, V = (x[:1, :n] for x, n in zip(_as_3d(*_qkv(t)), (d["nq"], 1, 1)))
    what = f"attention for a batch of one sequence and a single key (Q, K and V of shapes {Q.shape}, {K.shape} and " \
           f"{V.shape})"
    C, A = expect_pair(t.returned("attention", Q, K, V), what, PAIR)
    _expect_attention(C, A, t.ref.attention(Q, K, V), (Q, K, V), None, t.tol(Q.dtype), what)
    if d["nk"] > 1 and d["nq"] > 1:
        _attention_large_scores(t)
    _decoy_masks(t)


def _decoy_masks(t):
    """A masked call asked as attention_all_masked_raises asks its pair (float64 inputs, the mask by name, no scale,
    its first query with a key drawn as that check draws its own visible), then the same call with that key masked,
    then one more key visible: the first change is the one from that check's neighbour to its all-masked input,
    but the query keeps another visible key. Raising on a call whose mask is one entry from the one before it,
    rather than looking for a query with every key masked, costs this check. Last in the check, so its draws leave
    the cases before it as they were."""
    Q, K, V = _qkv(t)
    nk = t.sizes["nk"]
    if nk < 2:
        return
    allowed = mask_rows(t.rng, (*t.sizes["batch"], t.sizes["nq"], nk))
    query = (0,) * len(t.sizes["batch"]) + (0,)
    key = query + (int(t.rng.integers(nk)),)
    allowed[key] = True
    if allowed[query].sum() < 2:
        allowed[query + ((key[-1] + 1) % nk,)] = True
    _expect_attention_for_mask(t, (Q, K, V), allowed, "a mask")
    hidden = allowed.copy()
    hidden[key] = False
    _expect_attention_for_mask(t, (Q, K, V), hidden, "the same mask but one more key masked")
    shown_key = next((tuple(i) for i in np.argwhere(~hidden)[::-1] if tuple(i) != key), None)
    if shown_key is not None:
        shown = hidden.copy()
        shown[shown_key] = True
        _expect_attention_for_mask(t, (Q, K, V), shown, "the same mask but one more key visible")


def _expect_attention_for_mask(t, inputs: tuple, allowed, change: str) -> None:
    """attention's answer for `inputs` (Q, K, V) with `allowed` and no scale against the reference's; `change` says
    what the mask is."""
    what = f"attention for {_name(inputs[0].dtype)} inputs with {change}"
    C, A = expect_pair(t.returned("attention", *inputs, allowed=allowed), what, PAIR)
    _expect_attention(C, A, t.ref.attention(*_f64(*inputs), allowed=allowed), inputs, None, t.tol(inputs[0].dtype),
                      what)


def _attention_large_scores(t):
    """The first query's scores in the thousands, past exp's 709: an exponential taken before subtracting the row's
    max overflows, and the second query's far below 0, under a finite fill written over the masked scores
    (`_far_below`). First, a masked key far above every visible one (`_masked_far_above`): a maximum taken over the
    masked keys too, or weights masked after the softmax and renormalized, give 0/0 there (slide 20 masks first).
    Last, every other query's scores far below 0 and none in the thousands (`_some_below`)."""
    d = t.sizes
    Q, K, V = _qkv(t)  # first: where scores stay small, a NaN can only come from the masked key
    cases = {"the second query's masked key scoring 100,000 above its visible ones":
             _masked_far_above(t, Q, K, 1 / np.sqrt(d["dk"]))}
    Q2, K2, V2 = _as_3d(*_qkv(t))  # and 3-D, with slide 21's padding mask: (B, 1, Nk) broadcast over the queries
    Q2[..., 0, :] *= BIG
    _far_below(Q2, K2, 1 / np.sqrt(d["dk"]))
    cases["the first query's scores in the thousands (past exp's range, 709) and the second query's every key "
          "100,000 below 0, in 3-D inputs with a padding mask of shape (B, 1, Nk)"] = \
        mask_rows(t.rng, (len(Q2), 1, d["nk"]))
    Q3, K3, V3 = _qkv(t)
    _some_below(Q3, K3, 1 / np.sqrt(d["dk"]))
    cases[f"every other query's scores {BIG:g} below 0, none in the thousands"] = mask_rows(
        t.rng, Q3.shape[:-1] + (d["nk"],))
    for (what, allowed), (q, k, v) in zip(cases.items(), ((Q, K, V), (Q2, K2, V2), (Q3, K3, V3))):
        what = f"attention with a mask and {what}"
        C_exp, A_exp = t.ref.attention(q, k, v, allowed=allowed)
        C, A = expect_pair(t.returned("attention", q, k, v, allowed=allowed), what, PAIR)
        _expect_attention(C, A, (C_exp, A_exp), (q, k, v), None, t.tol(q.dtype), what)


def _some_below(Q, K, scale: float) -> None:
    """Q and K changed in place so that every other query's scores (1, 3, ...) lie BIG below 0 and the others' stay
    ordinary: exp of the first underflows to 0 (past −745), and with no score in the thousands to set one off, nor
    a largest score of the call far from 0, a shift taken only when exp would overflow leaves those rows 0/0.
    Their last coordinate is made 1 and the others' 0, and each key's last is lowered by BIG / scale, so each of
    their scores drops by BIG and no other changes. Q (..., Nq, dk), K (..., Nk, dk)."""
    Q[..., :, -1] = 0.0
    Q[..., 1::2, -1] = 1.0
    K[..., -1] -= BIG / scale


def _as_3d(*arrays):
    """Each array (..., N, d) with its batch axes made one: (B, N, d), a batch and no heads."""
    return [a.reshape(-1, *a.shape[-2:]) for a in arrays]


def _masked_far_above(t, Q, K, scale: float) -> np.ndarray:
    """A mask (..., Nq, Nk) hiding the last key from every query, with K changed in place so that the second query
    scores it FAR above each of its visible keys, whose scores stay of ordinary size: exp of a visible score less
    that masked one is 0 for every visible key. Q (..., Nq, dk), K (..., Nk, dk), with Nq ≥ 2 and Nk ≥ 2."""
    q = Q[..., 1, :]
    visible = scale * np.einsum("...d,...kd->...k", q, K[..., :-1, :]).max(axis=-1)  # (...,)
    wanted = visible + FAR - scale * np.einsum("...d,...d->...", q, K[..., -1, :])
    K[..., -1, :] += (wanted / (scale * np.einsum("...d,...d->...", q, q)))[..., None] * q
    allowed = mask_rows(t.rng, Q.shape[:-1] + (K.shape[-2],))
    allowed[..., -1] = False
    allowed[..., 0] = True  # every query keeps a visible key
    return allowed


def _far_below(Q, K, scale: float) -> None:
    """Q and K changed in place so that the second query scores every key FAR below 0, and the others' scores stay as
    they are: a finite fill written over the masked scores (−1e4, GPT-2's masked_bias; −65504) lies far above them
    all, and takes the weight, as does a clip of the scores (±1e4). One number c added to every key's last
    coordinate adds q·c to each of a query's scores, which the softmax ignores: no weight changes. Every query but
    the second has its last coordinate made 0, so its products with c are exactly 0 and its scores' rounding stays
    ordinary: a c merely at right angles to the first query had made |q|·|k|, and so the rounding its weights are
    held to (_weight_terms), a hundred thousand times larger, and weights 5 % off had passed. With dk = 1 (as
    shrinking tries) c is along the second query. Q (..., Nq, dk), K (..., Nk, dk), with Nq ≥ 2."""
    if Q.shape[-1] > 1:
        Q[..., :, -1] = 0.0
        Q[..., 1, -1] = 1.0
        K[..., :, -1] -= FAR / scale
        return
    K -= FAR / (scale * Q[..., 1:2, :])  # dk = 1: the second query times this shift is −FAR


def attention_all_masked_raises(t):
    """attention raises ValueError when a query has every key masked (slide 22), and matches the reference once one of
    its keys is visible; and raises it for a mask that hides every key."""
    Q, K, V = _qkv(t)
    allowed = mask_rows(t.rng, (*t.sizes["batch"], t.sizes["nq"], t.sizes["nk"]))
    query = (0,) * len(t.sizes["batch"]) + (0,)
    allowed[query] = False
    neighbour = allowed.copy()
    neighbour[query + (int(t.rng.integers(t.sizes["nk"])),)] = True  # the same input, one key of that query visible
    what = "attention with the same mask but one key of that query visible"
    # The mask hiding every key is asked before the pair or after it, as drawn: always right after the pair, with
    # the same Q, K, V, "raise again after a raise" passed it without a look at the mask.
    hidden_first = invalid_first(t)
    nothing = t.call("attention", Q, K, V, allowed=np.zeros_like(allowed)) if hidden_first else None
    C, A = expect_pair(expect_error_path(t, "ValueError", "attention", Inputs((Q, K, V), {"allowed": allowed}),
                                         Inputs((Q, K, V), {"allowed": neighbour}),
                                         what="attention with a fully masked query", advice=ALL_MASKED_ADVICE,
                                         valid_what=what, valid_advice=VISIBLE_KEY_ADVICE), what, PAIR)
    C_exp, A_exp = t.ref.attention(Q, K, V, allowed=neighbour)
    _expect_attention(C, A, (C_exp, A_exp), (Q, K, V), None, t.tol(Q.dtype), what)
    # A mask hiding every key: `if allowed is not None and allowed.any():` skipped masking and returned weights.
    if not hidden_first:
        nothing = t.call("attention", Q, K, V, allowed=np.zeros_like(allowed))
    if nothing.raised is None or not nothing.raised.is_a("ValueError"):
        got = "returned" if nothing.raised is None else f"raised {nothing.raised.describe(called='attention')}"
        raise CheckFailed(f"attention with a mask that hides every key from every query {got} instead of raising "
                          f"ValueError; {ALL_MASKED_ADVICE}: apply the mask whatever it holds")


def attention_agrees_with_sdpa(t):
    """attention agrees with torch's scaled_dot_product_attention (C) and the reference (A) for the same inputs, scale
    and mask (slide 27). The float32 inputs' mask is a padding mask's shape, (..., 1, Nk), one row broadcast over
    every query: `allowed` is broadcastable to (..., Nq, Nk), as attention's docstring says. The scales are 1.0
    (slide 8's plain dot product, not "none given") and the int 2 (a scale above 1 multiplies the scores). The
    float64 call passes the mask and the scale by position, in the stub's order (every other call names them: a
    signature `scale=None, allowed=None` had full marks). Then 3-D inputs of B = Nq sequences with one causal mask
    (Nq, Nk), one axis fewer than the scores (_fewer_mask_axes). Last, float32 inputs with one (Nq, Nk) mask whose
    second query scores every key far below 0, one of them masked (_far_below_float32): a −1e4 fill kept for float32
    alone, whose every far-below case was float64, had full marks. Its weights are held to float32's rounding at the
    row's magnitude (_score_rounding), which right float32 and log-space code reaches."""
    d = t.sizes
    for dtype, rows, scale in ((np.float64, d["nq"], 1.0), (np.float32, 1, 2)):
        Q, K, V = _qkv(t, dtype)
        allowed = mask_rows(t.rng, (*d["batch"], rows, d["nk"]))
        inputs = f"{_name(dtype)}, scale={scale}" + ("" if rows == d["nq"] else ", the mask of shape (..., 1, Nk) "
                                                    "broadcast over the queries")
        if dtype == np.float64:
            C, A = expect_pair(_returned_in_stub_order(t, "attention", Q, K, V, allowed, scale), "attention", PAIR)
            inputs += f"; {_in_stub_order(t, 'attention')}"
        else:
            C, A = expect_pair(t.returned("attention", Q, K, V, allowed=allowed, scale=scale), "attention", PAIR)
        _expect_sdpa(t, C, A, (Q, K, V), allowed, scale, inputs)
    for Q, K, V, allowed, what in _fewer_mask_axes(t):
        got = _returned_broadcasting(t, "attention", Q, K, V, advice=f"attention {what}: {FEWER_MASK_AXES_ADVICE}",
                                     allowed=allowed)
        C, A = expect_pair(got, "attention", PAIR)
        _told(_mask_advice(A, allowed), _expect_sdpa, t, C, A, (Q, K, V), allowed, None, what)
    if d["nq"] > 1 and d["nk"] > 1:  # last: the cases before it draw what they drew before it was added
        Q, K, V = _qkv(t, np.float32)
        allowed = mask_rows(t.rng, (d["nq"], d["nk"]))
        Q, K = _far_below_float32(Q, K, allowed)
        what = f"float32, one (Nq, Nk) mask broadcast over the batch axes, {FAR_BELOW_FLOAT32}"
        C, A = expect_pair(t.returned("attention", Q, K, V, allowed=allowed), "attention", PAIR)
        _told(_fill_advice(A, allowed), _expect_sdpa, t, C, A, (Q, K, V), allowed, None, what)


def _expect_sdpa(t, C, A, inputs: tuple, allowed, scale, what: str) -> None:
    """attention's C against scaled_dot_product_attention's and its A against the reference's, for `inputs` (Q, K,
    V) with `allowed` and `scale`; `what` says what the inputs were."""
    Q, K, V = inputs
    A_exp = t.ref.attention(*_f64(Q, K, V), allowed=allowed, scale=scale)[1]
    _expect_weighted(C, A, (t.reused(_sdpa, Q, K, V, allowed, scale), A_exp), inputs, scale, t.tol(Q.dtype),
                     (f"attention's C compared with scaled_dot_product_attention ({what})",
                      f"attention's A for the inputs given to scaled_dot_product_attention ({what})"))


def _fewer_mask_axes(t):
    """Tiny 3-D inputs (B, N, d) of B = Nq sequences with one causal mask (Nq, Nk): one axis fewer than the scores,
    so it serves every sequence. An axis inserted after its first, as for one mask per sequence
    (`allowed[:, None]`), broadcasts there and hides the wrong keys; for B ≠ Nq it raises, so one case finds both,
    and every call costs each submission its time. Yields (Q, K, V, allowed, what)."""
    d = t.sizes
    allowed = t.ref.causal_mask(d["nq"], d["nk"])
    for batch in (d["nq"],):
        Q, K, V = (normal(t.rng, (batch, n, d[width])) for n, width in ((d["nq"], "dk"), (d["nk"], "dk"),
                                                                        (d["nk"], "dv")))
        yield Q, K, V, allowed, (f"for 3-D inputs of {batch} sequences, Q of shape {Q.shape}, and one causal mask "
                                 f"of shape {allowed.shape}, one axis fewer than the scores")


def attention_long_sequence(t):
    """attention at T = 512 (two heads, d = 64) finishes within its time limit: vectorize, no Python loops."""
    Q, K, V, (C_exp, A_exp), C_terms = t.shared(_long_attention_case)
    C, A = expect_pair(t.returned("attention", Q, K, V), "attention at T = 512", PAIR)
    expect_close(C, C_exp, t.tol(np.float32), "the context C of attention at T = 512", terms=C_terms)
    expect_close(A, A_exp, t.tol(np.float32), "the weights A of attention at T = 512")


def _long_attention_case(t):
    Q, K, V = _qkv(t, np.float32)
    C, A = t.ref.attention(*_f64(Q, K, V))
    return Q, K, V, (C, A), _terms(A, V)


# ------------------------------------------------------------------ attention_torch
# Every check asks for gradients and compares them with PyTorch's own: right values computed outside
# autograd (NumPy results wrapped as tensors) are not what attention_torch is for, so they earn nothing.

def attention_torch_agrees_with_sdpa(t):
    """attention_torch agrees with scaled_dot_product_attention (C and the gradients of C with respect to Q, K and V)
    and the reference (A), with a mask. The float32 tensors' mask is (Nq, Nk), one mask for every batch entry, as
    a causal mask is: it broadcasts, as scaled_dot_product_attention's attn_mask does; and their second query
    scores every key far below 0 (_far_below_float32) with one of them masked. Then keys and values shared by every head
    (broadcast), and keys and values with no leading axes at all, as attention is asked them."""
    d = t.sizes
    for dtype, shape in ((np.float64, (*d["batch"], d["nq"], d["nk"])), (np.float32, (d["nq"], d["nk"]))):
        Q, K, V = _qkv(t, dtype)
        allowed = mask_rows(t.rng, shape)
        mask = "a mask" if len(shape) == len(Q.shape) else "one (Nq, Nk) mask broadcast over the batch axes"
        q, k, what = Q, K, f"attention_torch for {_name(dtype)} tensors with {mask}"
        if dtype == np.float32 and d["nq"] > 1 and d["nk"] > 1:
            q, k = _far_below_float32(Q, K, allowed)
            what += f", {FAR_BELOW_FLOAT32}"
        _torch_checked(t, q, k, V, allowed, None, what, advise=_fill_advice)
    K, V = _shared_by_heads(K), _shared_by_heads(V)
    if K is not None:  # a reshape to (-1, N, d) for torch.bmm fails here, and indexing with a padding mask
        allowed = mask_rows(t.rng, (*d["batch"], 1, d["nk"]))
        _torch_checked(t, Q, K, V, allowed, None, f"attention_torch with keys and values of shapes {tuple(K.shape)} "
                       f"and {tuple(V.shape)}, shared by every head of queries of shape {tuple(Q.shape)}, and a "
                       f"padding mask of shape {allowed.shape} (batch axes broadcast, as in "
                       f"scaled_dot_product_attention; {BROADCAST_ADVICE})")
        # No leading axes at all, as attention is asked them: repeat_kv guarded on Q's axes alone reads K.shape[-3].
        K, V = K[(0,) * (K.ndim - 2)], V[(0,) * (V.ndim - 2)]
        what = f"attention_torch with keys and values of shapes {tuple(K.shape)} and {tuple(V.shape)} for queries " \
               f"of shape {tuple(Q.shape)} (the missing leading axes broadcast, as in torch.matmul)"
        try:
            _torch_checked(t, Q, K, V, None, None, what)
        except StudentError as error:
            raise StudentError(f"{error}; {what}: {TORCH_FEWER_AXES_ADVICE}") from None
    for Q, K, V, allowed, what in _fewer_mask_axes(t):
        try:
            _torch_checked(t, Q, K, V, allowed, None, f"attention_torch {what}", advise=_mask_advice)
        except StudentError as error:
            raise StudentError(f"{error}; attention_torch {what}: {FEWER_MASK_AXES_ADVICE}") from None


def _far_below_float32(Q, K, allowed):
    """Copies of float32 Q and K whose second query scores every key FAR below 0 at the default scale, and `allowed`
    (Nq, Nk) changed in place so that it hides the last of those keys and shows the first: a finite fill (−1e4)
    kept for dtypes other than float64, whose far-below cases it had passed, lies above them and takes the weight.
    Not _far_below: float32 cannot tell apart scores 100,000 below 0 that differ by ordinary amounts (its step
    there is 0.008), so that query's scores are made all alike, its weights uniform over its visible keys. Every
    other query's last coordinate is made 0, so its scores stay as they were. The copies leave Q and K to the
    cases after this one. That query's log-sum-exp, computed in float32, is rounded by 0.008 too, which changes its
    weights by up to 0.4 %: _score_rounding allows it, and a fill's error, a whole weight, stays far past it. Used
    by attention_torch.agrees_with_sdpa and attention.agrees_with_sdpa alike."""
    Q, K = Q.copy(), K.copy()
    Q[..., :, -1] = 0.0
    Q[..., 1, :] = 0.0
    Q[..., 1, -1] = 1.0
    K[..., -1] = -FAR * np.sqrt(Q.shape[-1])  # times the default scale 1/√dk: −FAR
    allowed[1, -1], allowed[1, 0] = False, True
    return Q, K


def attention_torch_respects_scale(t):
    """attention_torch uses an explicitly given scale (−1.5: its sign kept, and above 1 it multiplies; −20 for float32
    tensors with a mask, scores past float32's exp range; then 0.0 with a mask: uniform weights over the visible
    keys, not "none given") instead of 1/√dk, in C, A and the gradients. The float32 call passes the mask and the
    scale by position, in the stub's order (every other call names them: a signature `scale=None, allowed=None`
    had full marks). The −1.5 call has PAST_A_BLOCK keys, where every other case has a handful.
    The scores are scaled before they are masked (slide 30: softmax(QKᵀ/√dk + mask)): masked first, 0.0 × −∞ is
    NaN."""
    Q, K, V = _qkv(t)
    # Two sequences of one head: the whole batch at PAST_A_BLOCK keys would pass the bytes a wrong answer is diagnosed
    # on (grading.diagnosis.MAX_DIAGNOSED_BYTES), and (A, C) returned for (C, A) went unnamed. Two, not one: a batch
    # of one is agrees_with_numpy's case.
    first = (slice(0, 2),) + (slice(0, 1),) * (len(t.sizes["batch"]) - 1)
    more = (*K[first].shape[:-2], PAST_A_BLOCK - t.sizes["nk"])
    keys, values = (np.concatenate([x[first], normal(t.rng, (*more, x.shape[-1]))], axis=-2) for x in (K, V))
    _torch_checked(t, Q[first], keys, values, None, -1.5, _scaled(f"attention_torch for {PAST_A_BLOCK} keys", -1.5))
    allowed = mask_rows(t.rng, (*t.sizes["batch"], t.sizes["nq"], t.sizes["nk"]))
    # Large enough that float32 scores pass exp's range (88): an unshifted softmax in float32 overflows.
    # By position, in the stub's order: every other call names the mask and the scale.
    _torch_checked(t, *(x.astype(np.float32) for x in (Q, K, V)), allowed, -20.0,
                   f"{_scaled('attention_torch for float32 tensors with a mask', -20.0)} "
                   f"({_in_stub_order(t, 'attention_torch')})", by_position=True)
    _torch_checked(t, Q, K, V, allowed, 0.0, _scaled("attention_torch with a mask", 0.0))


def attention_torch_agrees_with_numpy(t):
    """attention_torch gives the NumPy attention's C and A (the reference's) for the same inputs, with a mask and a
    scale together (slide 27), and the same gradients as scaled_dot_product_attention. The first query's scores
    run into the thousands, where the NumPy attention's softmax stays finite (softmax.large_scores_stable) and so
    must this one, and the second query's lie far below 0 (`_far_below`), under a finite fill written over the
    masked scores. First, a masked key scores far above the visible ones (_masked_far_above), where weights masked
    after the softmax are 0/0. Then every other query's scores far below 0 and none in the thousands (`_some_below`).
    Last, a batch of one sequence and a single key, as attention is asked: axes of length 1 stay.

    The student's own NumPy attention is not asked: where it is wrong, its own checks say so, and a right
    attention_torch must not lose points for it."""
    d = t.sizes
    if d["nq"] > 1 and d["nk"] > 1:  # first: where scores stay small, a NaN can only come from the masked key
        Q, K, V = _qkv(t)
        _torch_checked(t, Q, K, V, _masked_far_above(t, Q, K, 1.0), 1.0, "attention_torch with scale=1.0 and the "
                       "second query's masked key scoring 100,000 above its visible ones, which the NumPy attention "
                       "answers with the same C and A (mask before the softmax: slides 20 and 27)")
    Q, K, V = _as_3d(*_qkv(t))
    Q[..., 0, :] *= BIG
    if d["nq"] > 1:
        _far_below(Q, K, 2)
    allowed = mask_rows(t.rng, (len(Q), 1, d["nk"]))
    _torch_checked(t, Q, K, V, allowed, 2, "attention_torch with 3-D tensors, a padding mask of shape (B, 1, Nk), "
                   "scale=2, the first query's scores in the thousands and the second query's every key 100,000 "
                   "below 0, which the NumPy attention answers with the same C and A (hide masked keys with −∞: "
                   "slides 20 and 27)")
    Q, K, V = _qkv(t)
    _some_below(Q, K, 1.0)
    _torch_checked(t, Q, K, V, None, 1.0, f"attention_torch with scale=1.0 and every other query's scores {BIG:g} "
                   "below 0, none in the thousands, which the NumPy attention answers with the same C and A (subtract "
                   "each row's maximum, in every row and on every call: slide 11)")
    # A batch of one sequence and a single key, as attention is asked: a batch axis of length 1 squeezed away (to
    # undo one added to 2-D inputs) had full marks.
    Q, K, V = (x[:1, :n] for x, n in zip(_as_3d(*_qkv(t)), (d["nq"], 1, 1)))
    _torch_checked(t, Q, K, V, None, None, f"attention_torch for a batch of one sequence and a single key (Q, K and "
                   f"V of shapes {Q.shape}, {K.shape} and {V.shape}; axes of length 1 stay), which the NumPy "
                   "attention answers with the same C and A")


def _torch_checked(t, Q, K, V, allowed, scale, what, by_position: bool = False, advise=None):
    """Call attention_torch with gradients asked for; C, A and the gradients must all be right. The mask and the
    scale go by keyword, or `by_position` in the stub's order (a raise then says that order). `advise(A, allowed)`,
    if given, says what wrong C or A should do, from the student's weights A (_mask_advice, _fill_advice): advice
    given whatever the weights had blamed the mask for answers whose mask was right.

    Q (..., Nq, dk), K (..., Nk, dk), V (..., Nk, dv), allowed bool (..., Nq, Nk) or None.
    C is compared with scaled_dot_product_attention's, A with the reference's, and the gradients of
    Σ G·C + Σ H·A with sdpa's for G plus softmax's chain rule for H: both outputs must stay connected
    to autograd, so an A made in NumPy and wrapped as a tensor earns nothing.
    Returns the expected (C, A) as float64 arrays, which the student's matched.
    """
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    nq, nk, dv = Q.shape[-2], K.shape[-2], V.shape[-1]  # from the inputs: a case may have a single key
    upstream = normal(t.rng, (*batch, nq, dv), Q.dtype)
    upstream_A = normal(t.rng, (*batch, nq, nk), Q.dtype)
    args, kwargs = ((Q, K, V, allowed, scale), {}) if by_position else ((Q, K, V), {"allowed": allowed, "scale": scale})
    reply = t.call("attention_torch", *args, as_tensors=True, backward=(upstream, upstream_A), **kwargs)
    if reply.raised is not None:
        given = called_with(t.ref, "attention_torch", args, {**kwargs, "as_tensors": True})
        try:
            raise_for("attention_torch", reply, given, t.stub("attention_torch"))
        except StudentError as error:
            order = f"; {_called_in_stub_order(t, 'attention_torch')}" if by_position else ""
            raise StudentError(f"{error}{order}") from None
    C, A = expect_pair(reply.value, "attention_torch", PAIR)
    C = as_tensor(C, f"the context C of {what}", (*batch, nq, dv))
    A = as_tensor(A, f"the weights A of {what}", (*batch, nq, nk))
    C_exp, grads = t.reused(_sdpa, Q, K, V, allowed, scale, upstream)
    A_exp = t.ref.attention(*_f64(Q, K, V), allowed=allowed, scale=scale)[1]
    _told(advise(A.array, allowed) if advise else "", _expect_attention, C.array, A.array,
          (C_exp, A_exp), (Q, K, V), scale, t.tol(Q.dtype), what)
    through_A = _weights_gradients(Q, K, A_exp, upstream_A, scale)
    shapes = {"Q": Q.shape, "K": K.shape, "V": V.shape}
    tol = precision_of_factors(t.tol(Q.dtype), A.array)
    rounded = _weight_terms(A_exp, _score_rounding(Q, K, scale, A_exp), tol)  # carried into every gradient
    terms = _gradient_terms(Q, K, V, rounded, upstream, scale, upstream_A)
    expect_gradients(reply, {name: grad + _summed_to(through_A.get(name, 0.0), shapes[name])
                             for name, grad in zip("QKV", grads)}, tol, f"C and A in {what}",
                     terms={name: _summed_to(term, shapes[name]) for name, term in terms.items()})
    return C_exp, A_exp


def _summed_to(gradient, shape: tuple):
    """A gradient (or its terms) over the broadcast shape, summed back to the shape of the argument it is for: keys
    shared by every head (..., 1, Nk, dk) get the sum over the heads. A scalar stays one."""
    gradient = np.asarray(gradient)
    if gradient.ndim == 0 or gradient.shape == tuple(shape):
        return gradient
    gradient = gradient.sum(axis=tuple(range(gradient.ndim - len(shape))))
    return gradient.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1 and gradient.shape[i] != 1),
                        keepdims=True)


def _weights_gradients(Q, K, A, H, scale):
    """The gradients of Σ H·A through A = softmax(S), S = scale Q Kᵀ (masked keys have a = 0, so none flows there).

    Q (..., Nq, dk), K (..., Nk, dk), A (..., Nq, Nk) float64, H (..., Nq, Nk). Returns {"Q": ..., "K": ...}.
    """
    Q, K, H = (np.asarray(x, dtype=np.float64) for x in (Q, K, H))
    scale = 1.0 / np.sqrt(Q.shape[-1]) if scale is None else scale
    dS = A * (H - (A * H).sum(axis=-1, keepdims=True))  # softmax's Jacobian
    return {"Q": scale * dS @ K, "K": scale * np.swapaxes(dS, -1, -2) @ Q}


def _gradient_terms(Q, K, V, A, G, scale, H):
    """The magnitudes of the terms each gradient of Σ G·C + Σ H·A sums, through C = A V, A = softmax(S), S = scale Q Kᵀ.

    Q (..., Nq, dk), K (..., Nk, dk), V (..., Nk, dv), A (..., Nq, Nk: the weights, or what they are rounded in
    proportion to, `_weight_terms`), G (..., Nq, dv), H (..., Nq, Nk); scale
    None is 1/√dk. dV = Aᵀ G; dA = G Vᵀ + H; dS = A ⊙ (dA − Σⱼ aᵢⱼ dAᵢⱼ); dQ = scale dS K; dK = scale dSᵀ Q: each
    sum is bounded by the same sum of absolute values, which is what rounding inside it scales with.
    """
    Q, K, V, A, G, H = (np.abs(np.asarray(x, dtype=np.float64)) for x in (Q, K, V, A, G, H))
    scale = 1.0 / np.sqrt(Q.shape[-1]) if scale is None else abs(scale)
    dA = G @ np.swapaxes(V, -1, -2) + H
    dS = A * (dA + (A * dA).sum(axis=-1, keepdims=True))
    return {"Q": scale * dS @ K, "K": scale * np.swapaxes(dS, -1, -2) @ Q, "V": np.swapaxes(A, -1, -2) @ G}


def _sdpa(Q, K, V, allowed, scale, upstream=None):
    """PyTorch's scaled_dot_product_attention in float64, with gradients for `upstream` if given.

    Q: (..., Nq, dk), K: (..., Nk, dk), V: (..., Nk, dv), allowed: bool (..., Nq, Nk) or None.
    """
    q, k, v = (torch.tensor(x, dtype=torch.float64, requires_grad=upstream is not None) for x in (Q, K, V))
    mask = None if allowed is None else torch.from_numpy(np.ascontiguousarray(allowed))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    if upstream is None:
        return out.detach().numpy()
    # The same gradients as out.backward(upstream); a scalar backward skips torch's lazy sympy import (~1 s).
    (out * torch.from_numpy(upstream.astype(np.float64))).sum().backward()
    return out.detach().numpy(), (q.grad.numpy(), k.grad.numpy(), v.grad.numpy())


# dk = 6 is no other size and no axis count, so no wrong default scale equals 1/√dk here: dk = 4 let a scale
# of 1/2, 2/dk or 1/√(Q.ndim) (4 axes with the batch) pass every default-scale check.
# No two sizes alike, so a size taken from the wrong axis shows, and is named for the axis it came from.
RANDOM = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=6, dv=8)
# A mask builder's largest size: past any table of positions a student keeps at the top level and slices (10, 64,
# 512); a mask of it is a quarter of a megabyte.
WIDE = 520
# Keys past the context of the model whose table of positions a student most often copies and slices: GPT-2's
# block_size, 1024. Not past 2048 or 4096: a right mask built square and then sliced (np.tril(np.ones((n_k, n_k))))
# takes 0.05 s at 2100 keys and 0.5 s at 4100, at or past the time limit's 0.1 s floor. 1100 takes about 0.015 s.
PAST_CONTEXT = 1100
SLICED_TABLE = ("a mask has a row for each query and a column for each key, however many: a table of positions built "
                "once and sliced ([:n_q, :n_k]) stops at the table's own size, so build the mask from n_q and n_k at "
                "each call (slide 20)")
# A query times BIG has scores of about BIG · √dk · scale: in the thousands at RANDOM's dk, past exp's 709.
BIG = 1000.0
# How far above every visible score a masked one is put (_masked_far_above): past exp's range from each (745), and
# past a finite fill added to masked scores (-1e4, an old Hugging Face constant; -65504, float16's largest), which
# left such a key the whole weight. A fill of -1e9 or of the dtype's smallest number still hides it.
FAR = 1e5
# How messages name _far_below_float32's case.
FAR_BELOW_FLOAT32 = f"the second query's every key {FAR:,.0f} below 0 and one of them masked"
# Keys past a block of 128 and a multiple of no block size (a prime), for attention_torch.respects_scale and one case
# of context: code that runs through the keys in blocks of 64 or 128 (common tiles) and forgets the last partial one
# had full marks, every other case having a handful, or 512, a multiple of both (100 keys caught a tile of 64 only).
# Small: attention_torch's case of two sequences stays under the bytes a wrong answer is diagnosed on
# (grading.diagnosis.MAX_DIAGNOSED_BYTES; 211 keys is the most that fits there), and small d keeps the calls cheap.
PAST_A_BLOCK = 151
SATURATING = 3000.0  # queries scaled so that W_q q reaches the thousands, past exp(2a)'s range (a > 355)

CHECKS = [
    # An explicit scale first, then none at the same d_k: a scale kept from an earlier call (per d_k or not) for the
    # next default one shows, as in attention_torch's checks below.
    Check("score.explicit_scale", score_explicit_scale, sizes=RANDOM),
    Check("score.matches_reference", score_matches_reference, sizes=RANDOM),
    Check("score.long_sequence", score_long_sequence, sizes=LONG, slow_hint=VECTORIZE),
    Check("additive_score.matches_reference", additive_score_matches_reference, sizes=Sizes.of(nq=4, nk=6, dk=3, h=5)),
    Check("causal_mask.rectangular", causal_mask_rectangular, sizes=Sizes.of(nq=4, nk=7)),
    Check("padding_mask.matches_reference", padding_mask_matches_reference, sizes=Sizes.of(nk=7)),
    Check("apply_mask.matches_reference", apply_mask_matches_reference, sizes=RANDOM),
    Check("apply_mask.broadcasts", apply_mask_broadcasts, sizes=RANDOM),
    Check("softmax.last_axis", softmax_last_axis, sizes=RANDOM),
    Check("softmax.matches_reference", softmax_matches_reference, sizes=RANDOM),
    Check("softmax.input_unchanged", softmax_input_unchanged, sizes=RANDOM, charges_changes=True),
    Check("softmax.all_masked_anywhere", softmax_all_masked_anywhere, sizes=RANDOM),
    Check("context.matches_reference", context_matches_reference, sizes=RANDOM),
    Check("attention.matches_reference", attention_matches_reference, sizes=RANDOM),
    Check("attention.all_masked_raises", attention_all_masked_raises, sizes=RANDOM),
    Check("attention.agrees_with_sdpa", attention_agrees_with_sdpa, sizes=RANDOM),
    Check("attention.long_sequence", attention_long_sequence, sizes=LONG, slow_hint=VECTORIZE),
    # An explicit scale first, then none: a scale kept from an earlier call for the next default one shows.
    Check("attention_torch.respects_scale", attention_torch_respects_scale, sizes=RANDOM),
    Check("attention_torch.agrees_with_sdpa", attention_torch_agrees_with_sdpa, sizes=RANDOM),
    Check("attention_torch.agrees_with_numpy", attention_torch_agrees_with_numpy, sizes=RANDOM),
]
