"""Public checks for week 7: the lecture's worked example and the properties it states.

These are released with the assignment, so students can run them
(`autograder check attention.py`). They use no reference solution: expected
values are the slides' numbers (slides 14-17) or follow directly from the
definitions on small cases that can be checked by hand. Every check compares
the whole answer with those values, so an answer of the right shape that
computes nothing (zeros, uniform weights, a mask of all True) earns nothing;
every fixed case is asked again changed, its keys in another order (each
student's own) or its values scaled; and every check asks a case of the
student's own too, drawn at random, whose answer follows from the definition
by arithmetic a student can redo by hand (weights from counts: s = log n gives
a = n / Σn), so an answer that looks the printed numbers up, in whatever order
or scale, earns nothing either (such a file had 34 points);
the properties the lecture states (slide 26: every permitted row sums to one,
every future weight is zero) are tested first, so their messages come first.
Points live in course.yaml.
"""
import numpy as np

from autograder.authoring import (
    Check,
    CheckFailed,
    Inputs,
    Tolerance,
    additive_rounding,
    as_array,
    as_tensor,
    expect_close,
    expect_equal_mask,
    expect_error_path,
    expect_exact_zeros,
    expect_floating,
    expect_gradients,
    expect_pair,
    expect_rows_sum_to_one,
    expect_shape,
    expect_within_rounding,
    mask_rows,
    normal,
    precision_of_factors,
    product_rounding,
    raise_for,
)

# The worked example of slides 14-17, as printed (four decimals).
Q_LECTURE = np.array([[1.0, 0.0]])
Q_CHANGED = np.array([[0.0, 1.0]])
K_LECTURE = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
V_LECTURE = np.array([[10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])
SCORES_LECTURE = np.array([[0.7071, 0.0, 0.7071]])
WEIGHTS_LECTURE = np.array([[0.4011, 0.1978, 0.4011]])
CONTEXT_LECTURE = np.array([[8.0222, 5.9889]])
# Slide 17 prints [8.022, 5.989] for the changed query, which is the first
# query's result; the value computed for q = [0, 1] is this one.
CONTEXT_CHANGED = np.array([[5.9889, 8.0222]])
SLIDE_ROUNDING = Tolerance(rtol=0.0, atol=2e-4)  # the slides round to four decimals
ALL_MASKED_ADVICE = ("an all-masked row has no valid normalization, so say so with "
                     "`raise ValueError(...)` (slide 22)")
VISIBLE_KEY_ADVICE = ("raise ValueError only for a row whose every key is masked; a row with one visible key "
                      "still has a valid normalization (slides 20 and 22)")
PAIR = ("C", "A")  # attention returns the context, then the weights (slide 30)
ROWS_ADVICE = "the keys, separately for each query (slide 11)"
ROWS_ARE_QUERIES = "rows should be queries and columns keys (slide 13)"
# The worked example's middle key scores exactly 0 (slide 15): a mask that hides no key must leave it its weight.
SHOWS_EVERY_KEY = np.ones((1, 3), dtype=bool)
ZERO_SCORE_RULE = ("A mask that hides no key changes no weight: the middle key's score is exactly 0, a score like any "
                   "other, and keeps its weight 0.1978 (slide 15). Hide the keys where allowed is False, not where a "
                   "score is 0 (a mask multiplied into the scores makes a visible zero look hidden)")


def key_order(t, n: int) -> np.ndarray:
    """A student's own order of `n` keys in which every key moves: the worked example asked again, reordered.

    Scores, weights and masks follow their keys (slides 11 and 20): with the keys (and their values) in this
    order, each row's answer comes in the same order, and the context is unchanged. Looking up the printed
    numbers cannot follow it."""
    return np.roll(np.arange(n), int(t.rng.integers(1, n)) if n > 1 else 0)


def scale_factor(t) -> float:
    """A student's own factor in [1.5, 3): values scaled by it scale the context by it (c_i = Σ_j a_ij v_j)."""
    return float(1.5 + 1.5 * t.rng.random())


def weights_from_counts(counts):
    """Scores with hand-checkable softmax weights: s = log(n) gives a_ij = n_ij / Σ_m n_im (slide 11).

    counts: (..., Nq, Nk) non-negative numbers; a count of 0 is a hidden key
    (score −∞, weight 0). Returns (scores, weights), both float64.
    """
    counts = np.asarray(counts, dtype=np.float64)
    with np.errstate(divide="ignore"):
        scores = np.log(counts)  # log(0) = −inf: the key is hidden
    return scores, counts / counts.sum(axis=-1, keepdims=True)


def own_counts(t, shape: tuple, hidden: bool = False) -> np.ndarray:
    """A student's own counts for weights_from_counts, shape (..., Nk): numbers from 1 to 6 with two decimals (too
    many to list answers for), and with `hidden` some of them 0 (a hidden key), one visible key or more in every
    row."""
    counts = np.round(1 + 5 * t.rng.random(shape), 2)
    if hidden:
        rows = counts.reshape(-1, shape[-1])  # a view: each row keeps a visible key at a place of the student's own
        keep = t.rng.integers(shape[-1], size=len(rows))
        rows[(t.rng.random(rows.shape) < 0.4) & (np.arange(shape[-1]) != keep[:, None])] = 0.0
    return counts


def mixture(A, V) -> np.ndarray:
    """c_i = Σ_j a_ij v_j, key by key (slide 12). A (..., Nq, Nk), V (Nk, dv) -> (..., Nq, dv)."""
    return sum(A[..., j, None] * V[j] for j in range(V.shape[0]))


def own_memory(t, q):
    """Keys and values of the student's own for the query q, one of [1, 0] and [0, 1] (dk = 2): the coordinate of
    each key that q reads is √2 log n_j, so q · k_j / √2 = log n_j and its weight is n_j / Σn (slide 11); the
    other coordinate is random and changes nothing. Returns K (3, 2), V (3, 2) and the weights (1, 3)."""
    counts = own_counts(t, (3,))
    K, V = normal(t.rng, (3, 2)), 10 * normal(t.rng, (3, 2))
    K[:, int(np.argmax(q[0]))] = np.sqrt(2) * np.log(counts)
    return K, V, (counts / counts.sum())[None, :]


def expect_weights(A, expected, tol, what: str, rule: str) -> None:
    """Weights whose rows already sum to 1 must also be the right weights; a failure of their values names `rule`."""
    expect_floating(A, expected, what)  # a wrong dtype is not a wrong rule
    try:
        expect_close(A, expected, tol, what)
    except CheckFailed as failure:
        failure.message += f". Every row sums to 1, but {rule}"
        raise


def score_lecture_example(t):
    """score reproduces the worked example's scores (slide 15): [0.7071, 0, 0.7071], and the same scores in
    another order when the keys come in that order; and q · k_j / √2 for a query and keys of the student's own."""
    S = t.returned("score", Q_LECTURE, K_LECTURE)
    expect_close(S, SCORES_LECTURE, SLIDE_ROUNDING, "score(q, K) for the worked example")
    order = key_order(t, 3)
    S = t.returned("score", Q_LECTURE, K_LECTURE[order])
    expect_close(S, SCORES_LECTURE[:, order], SLIDE_ROUNDING,
                 f"score(q, K) for the worked example's keys in the order {order.tolist()}")
    q, K = normal(t.rng, (1, 2)), normal(t.rng, (3, 2))  # s_j = q · k_j / √dk, dk = 2 (slides 8 and 10)
    expected = np.array([[(q[0, 0] * k[0] + q[0, 1] * k[1]) / np.sqrt(2) for k in K]])
    # Held to float32's rounding of the products too, whatever dtype the answer has (README: Grading).
    expect_within_rounding(t.returned("score", q, K), expected, t.tol(np.float64),
                           product_rounding(q, K.T, 1 / np.sqrt(2)),
                           f"score(q, K) for a query and keys of your own, q = {np.round(q, 4).tolist()}")


def score_plain_dot_product(t):
    """With scale=1.0, score is the plain dot product q·k_j (slide 8), for the worked example and for a query and
    keys of the student's own."""
    order = key_order(t, 3)
    for keys, what in ((np.arange(3), ""), (order, f" for the keys in the order {order.tolist()}")):
        S = t.returned("score", Q_LECTURE, K_LECTURE[keys], scale=1.0)
        expect_close(S, np.array([[1.0, 0.0, 1.0]])[:, keys], t.tol(np.float64), f"score(q, K, scale=1.0){what}")
    q, K = normal(t.rng, (1, 2)), normal(t.rng, (3, 2))
    expect_within_rounding(t.returned("score", q, K, scale=1.0),
                           np.array([[q[0, 0] * k[0] + q[0, 1] * k[1] for k in K]]), t.tol(np.float64),
                           product_rounding(q, K.T), "score(q, K, scale=1.0) for a query and keys of your own")


def score_shape_rows_are_queries(t):
    """score of Q (2, 5, 4) and K (2, 6, 4) is S (2, 5, 6) with S[b, i, j] = q_i · k_j / √4: one row per query
    (slide 13)."""
    Q, K = normal(t.rng, (2, 5, 4)), normal(t.rng, (2, 6, 4))
    # Entry by entry, as slide 13 reads the grid: query i (a row) against key j (a column), dk = 4.
    expected = np.array([[[Q[b, i] @ K[b, j] / 2.0 for j in range(6)] for i in range(5)] for b in range(2)])
    # Shape and a floating dtype precise enough to compare, as every check of values asks first.
    S = expect_floating(t.returned("score", Q, K), expected, "score(Q, K)", ROWS_ARE_QUERIES)
    # float64's tolerance plus float32's rounding of the products each score sums, whatever dtype the answer has,
    # as expect_within_rounding holds score's other answers (README: Grading)
    rounding = product_rounding(Q, np.swapaxes(K, -1, -2), 0.5)
    wrong = ~_within(S, expected, rounding, t.tol(np.float64))
    if wrong.any():
        b, i, j = (int(n) for n in next(zip(*np.nonzero(wrong))))
        raise CheckFailed(f"score(Q, K)[{b}, {i}, {j}] is {S[b, i, j]:.6g}, but query {i} · key {j} / √4 is "
                          f"{expected[b, i, j]:.6g} ({int(wrong.sum())} of {wrong.size} entries differ): "
                          + _what_differs(S, expected, rounding, t.tol(np.float64)), expected, S)


def _within(S, expected, rounding, tol) -> np.ndarray:
    """Where S is within tol (as np.isclose reads it) plus `rounding` of the expected scores; NaN is not."""
    return np.abs(S - expected) <= tol.atol + tol.rtol * np.abs(expected) + rounding


def _what_differs(S, expected, rounding, tol) -> str:
    """The likely cause of S ≠ expected: every entry off by one factor is a wrong scale, not a wrong grid."""
    factor = float(np.sum(S * expected) / np.sum(expected * expected))
    # A factor near 0 is no scale: scores that are all (nearly) zero compute nothing.
    if abs(factor) > 1e-3 and not np.isclose(factor, 1.0) and _within(S, factor * expected, abs(factor) * rounding,
                                                                        tol).all():
        return (f"every entry is {factor:.4g} × the right one, so the grid is right and its scale is not: with "
                "scale=None, divide by √dk, dk = Q.shape[-1] = 4 (slide 10)")
    return "S[..., i, j] compares query i with key j"


def additive_score_lecture_formula(t):
    """additive_score follows e_ij = vᵀ tanh(W_q q_i + W_k k_j + b) on two hand-checkable cases (slide 9): the
    identity weights, then weights, v and b that each change the answer (a missing b, a sum in place of v or an
    untransposed W gives other numbers); and the formula for queries, keys, v and b of the student's own."""
    Q, K = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    eye, v, b = np.eye(2), np.array([1.0, 1.0]), np.array([0.0, 0.0])
    # W_q = W_k = I, b = 0: e_0j = tanh(1 + k_j0) + tanh(k_j1)
    expected = np.array([[np.tanh(2.0), np.tanh(1.0) + np.tanh(1.0), np.tanh(1.0)]])
    order = key_order(t, 3)
    for keys, what in ((np.arange(3), ""), (order, f", the keys in the order {order.tolist()}")):
        e = t.returned("additive_score", Q, K[keys], eye, eye, v, b)
        expect_within_rounding(e, expected[:, keys], t.tol(np.float64), additive_rounding(Q, K[keys], eye, eye, v, b),
                               f"additive_score with W_q = W_k = I, v = [1, 1], b = 0{what}")
    # dq = 2, dk = 3, h = 2: W_q q = [q0 + q1, 0] = [3, 0], W_k k_j = [0, k_j0 - k_j2] = [0, ±1], b = [-1, 0.5],
    # so e_0j = 2 tanh(3 - 1) - tanh(±1 + 0.5).
    Q, K = np.array([[1.0, 2.0]]), np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    W_q, W_k = np.array([[1.0, 1.0], [0.0, 0.0]]), np.array([[0.0, 0.0, 0.0], [1.0, 0.0, -1.0]])
    v, b = np.array([2.0, -1.0]), np.array([-1.0, 0.5])
    expected = np.array([[2 * np.tanh(2.0) + np.tanh(0.5), 2 * np.tanh(2.0) - np.tanh(1.5)]])
    e = t.returned("additive_score", Q, K, W_q, W_k, v, b)
    expect_within_rounding(e, expected, t.tol(np.float64), additive_rounding(Q, K, W_q, W_k, v, b),
                           "additive_score with W_q = [[1, 1], [0, 0]], W_k = [[0, 0, 0], [1, 0, -1]], v = [2, -1], "
                           "b = [-1, 0.5] (dq = 2, dk = 3, h = 2)")
    # Queries, keys, v and b of the student's own, W_q = W_k = I: e_ij = Σ_h v_h tanh(q_ih + k_jh + b_h).
    Q, K, v, b = normal(t.rng, (1, 2)), normal(t.rng, (3, 2)), normal(t.rng, (2,)), normal(t.rng, (2,))
    expected = np.array([[sum(v[h] * np.tanh(q[h] + k[h] + b[h]) for h in range(2)) for k in K] for q in Q])
    expect_within_rounding(t.returned("additive_score", Q, K, eye, eye, v, b), expected, t.tol(np.float64),
                           additive_rounding(Q, K, eye, eye, v, b),
                           "additive_score with W_q = W_k = I and queries, keys, v and b of your own")


def causal_mask_lower_triangle(t):
    """causal_mask(4), causal_mask(1) and causal_mask(n) for a student's own n are True exactly where j ≤ i: future
    keys hidden, the diagonal and the past visible (slide 20)."""
    for n in (4, 1, int(t.rng.integers(5, 10))):
        allowed = as_array(t.returned("causal_mask", n), f"causal_mask({n})", (n, n))
        expect_shape(allowed, (n, n), f"causal_mask({n})")
        past = np.tril(np.ones((n, n), dtype=bool))  # allowed(i, j) ⇔ j ≤ i
        if allowed.dtype != np.bool_:  # as expect_equal_mask words it, with the mask to compare
            raise CheckFailed(f"causal_mask({n}) has dtype {allowed.dtype}; expected booleans (True = may attend). "
                              "Comparisons such as `a <= b` give booleans directly", past, allowed)
        if (allowed & ~past).any():
            i, j = next(zip(*np.nonzero(allowed & ~past)))
            raise CheckFailed(f"causal_mask({n})[{i}, {j}] is True: query {i} can see key {j}, which is in its "
                              "future. Before softmax, keys j > i must be hidden (slide 20)", past, allowed)
        if (past & ~allowed).any():
            i, j = next(zip(*np.nonzero(past & ~allowed)))
            raise CheckFailed(f"causal_mask({n})[{i}, {j}] is False: query {i} cannot see key {j} ≤ {i}. "
                              "allowed(i, j) ⇔ j ≤ i, so the diagonal and the past are visible (slide 20)",
                              past, allowed)


def padding_mask_lecture_lengths(t):
    """padding_mask([2, 4], 4) hides the padded keys of the first sequence only (slide 21), and padding_mask of a
    student's own lengths shows each sequence its own first keys."""
    expected = np.array([[[True, True, False, False]], [[True, True, True, True]]])
    allowed = t.returned("padding_mask", np.array([2, 4]), 4)
    expect_equal_mask(allowed, expected, "padding_mask([2, 4], 4)")
    lengths = t.rng.integers(1, 5, size=3)  # all shorter than n_k = 5: the mask is n_k wide, not as wide as the longest
    expected = np.array([[[j < n for j in range(5)]] for n in lengths])
    allowed = t.returned("padding_mask", lengths, 5)
    expect_equal_mask(allowed, expected, f"padding_mask({lengths.tolist()}, 5)")


def apply_mask_hidden_become_neg_inf(t):
    """apply_mask puts −inf exactly where allowed is False and keeps every other score (slide 20), for the printed
    case and for scores and a mask of the student's own."""
    S = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -2.5]])
    allowed = np.array([[True, False, True], [False, True, True]])
    expected = np.array([[0.5, -np.inf, 2.0], [-np.inf, 0.0, -2.5]])
    order = key_order(t, 3)
    for keys, what in ((np.arange(3), ""), (order, f" with the keys in the order {order.tolist()}")):
        masked = t.returned("apply_mask", S[:, keys], allowed[:, keys])
        expect_close(masked, expected[:, keys], t.tol(np.float64), f"apply_mask(S, allowed){what}")
    S, allowed = normal(t.rng, (3, 4)), mask_rows(t.rng, (3, 4))
    expect_close(t.returned("apply_mask", S, allowed), np.where(allowed, S, -np.inf), t.tol(np.float64),
                 "apply_mask of scores and a mask of your own")


def apply_mask_input_unchanged(t):
    """apply_mask returns the masked scores in a new array and leaves its input S unmodified, also for a mask that
    hides no key, where the answer equals S but must not be S itself (returning S had full marks). It carries
    apply_mask's arguments changed in place, whichever check's call showed the change (a fill in place for a mask
    that broadcasts only)."""
    S, allowed = normal(t.rng, (3, 4)), mask_rows(t.rng, (3, 4))
    # The grader reads S back after every call (course.yaml `arguments_unchanged`; grading.changed_arguments). The
    # masked copy is the definition of apply_mask (slide 20), so checking it needs no reference.
    expect_close(t.returned("apply_mask", S, allowed), np.where(allowed, S, -np.inf), t.tol(np.float64),
                 "apply_mask(S, allowed), which left S unchanged as it should,")
    # Every key visible: the grader marks the array returned once the answer is taken, and reads S back from its own
    # memory; S holding the mark was returned itself (Trial.call).
    every_key = np.ones(S.shape, dtype=bool)
    expect_close(t.returned("apply_mask", S, every_key, mark_returned=True, called_for="for a mask that hides no key"),
                 S, t.tol(np.float64),
                 "apply_mask(S, allowed), every key visible, which returned a new array as it should,")


def softmax_lecture_example(t):
    """softmax of the worked example's scores gives weights ≈ [0.4011, 0.1978, 0.4011] (slide 15), and the same
    weights in another order for the scores in that order, and n / Σn for scores log n of the student's own."""
    scores = np.array([[1 / np.sqrt(2), 0.0, 1 / np.sqrt(2)]])
    order = key_order(t, 3)
    for keys, what in ((np.arange(3), ""), (order, f" in the order {order.tolist()}")):
        A = t.returned("softmax", scores[:, keys])
        expect_close(A, WEIGHTS_LECTURE[:, keys], SLIDE_ROUNDING, f"softmax of the worked example's scores{what}")
    counts = own_counts(t, (1, 3))
    S, expected = weights_from_counts(counts)
    expect_close(t.returned("softmax", S), expected, t.tol(np.float64),
                 f"softmax of scores of your own, log({counts[0].tolist()})")


def softmax_rows_sum_to_one(t):
    """Every row of softmax(S) sums to 1, one unit of weight per query, split as exp(s_ij) / Σ_m exp(s_im)
    (slides 11, 26)."""
    counts = np.array([[[1, 2, 5, 2], [3, 3, 1, 1], [1, 1, 1, 1]],
                       [[4, 1, 2, 1], [1, 6, 1, 2], [2, 2, 3, 3]]])
    S, expected = weights_from_counts(counts)
    S = S + np.array([[[0.0], [7.5], [-3.0]], [[2.0], [0.0], [-6.5]]])  # a shift per row changes no weight
    S_own, expected_own = weights_from_counts(own_counts(t, (2, 3, 4)))
    order = key_order(t, 4)
    cases = [(S, expected, np.arange(4), "softmax(S)"),
             (S, expected, order, f"softmax(S) with the keys in the order {order.tolist()}"),
             (S_own + normal(t.rng, (2, 3, 1), scale=5.0), expected_own, np.arange(4),
              "softmax(S) for scores of your own, log(counts) plus a shift per row")]
    for S, expected, keys, what in cases:
        A = as_array(t.returned("softmax", S[..., keys]), what, S.shape)
        expect_shape(A, S.shape, what)
        expect_rows_sum_to_one(A, t.tol(np.float64), what, ROWS_ADVICE, scores=S[..., keys])
        expect_weights(A, expected[..., keys], t.tol(np.float64), what,
                       "each weight must be exp(s_ij) / Σ_m exp(s_im), so a higher score gets more weight (slide 11)")


def softmax_masked_weights_are_zero(t):
    """A −inf score gets weight exactly 0, and the visible keys share the row's unit of weight (slides 20, 26)."""
    fixed = np.array([[2, 0, 1, 1, 0, 4], [0, 3, 0, 1, 0, 0], [1, 1, 1, 5, 1, 1], [0, 0, 0, 0, 2, 0]])
    own = own_counts(t, fixed.shape, hidden=True)
    order = key_order(t, 6)
    for counts, keys, order_said in ((fixed, np.arange(6), ""), (fixed, order, f", the keys in the order "
                                                                               f"{order.tolist()}"),
                                     (own, np.arange(6), ", for counts of your own")):
        S, expected = weights_from_counts(counts)
        what = f"softmax(S) with masked keys{order_said}"
        A = as_array(t.returned("softmax", S[:, keys]), what, S.shape)
        expect_shape(A, S.shape, what)
        expect_exact_zeros(A, counts[:, keys] == 0, what, "a masked key must get weight exactly 0 (slide 20)")
        expect_rows_sum_to_one(A, t.tol(np.float64), what, ROWS_ADVICE, scores=S[:, keys])
        expect_weights(A, expected[:, keys], t.tol(np.float64), what,
                       "the visible keys' weights must be exp(s_ij) / Σ_m exp(s_im), the sum running over the "
                       "visible keys (slides 11 and 20)")


def softmax_all_masked_raises(t):
    """softmax raises ValueError when a row has every key masked (slide 22), and gives the right weights once one of
    its keys is visible, and for masked scores of the student's own."""
    S = np.array([[0.3, -np.inf, 1.2], [-np.inf, -np.inf, -np.inf]])
    neighbour = S.copy()
    neighbour[1, 1] = 0.5  # the same scores with one key of the masked row visible: a valid input
    e = np.exp(1.2 - 0.3)
    expected = np.array([[1 / (1 + e), 0.0, e / (1 + e)], [0.0, 1.0, 0.0]])
    counts = own_counts(t, (2, 4), hidden=True)
    own, own_expected = weights_from_counts(counts)
    # Asked first, and judged last: the error path's calls are the same whatever its answers (expect_error_path).
    own_reply = t.call("softmax", own)
    what = "softmax of the same scores with key 1 of row 1 unmasked"
    A = expect_error_path(t, "ValueError", "softmax", Inputs((S,)), Inputs((neighbour,)),
                          what="softmax of a row with every key masked", advice=ALL_MASKED_ADVICE,
                          valid_what=what, valid_advice=VISIBLE_KEY_ADVICE)
    expect_close(A, expected, t.tol(np.float64), what)
    if own_reply.raised is not None:
        raise_for("softmax", own_reply)
    expect_close(own_reply.value, own_expected, t.tol(np.float64),
                 f"softmax of masked scores of your own, log({counts.tolist()})")


def softmax_large_scores_stable(t):
    """softmax stays finite and correct for scores in the thousands (subtract the row max first), the printed ones
    and the student's own (log n + 1000, then a row of log n beside one of log n − 1000: a row far below 0 with none
    above to overflow)."""
    # Row 3 puts its smallest score first: subtracting a row's first score instead of its max overflows there.
    S = np.array([[1000.0, 999.0, -1000.0], [-1000.0, -999.0, -998.0], [-1000.0, 1000.0, 999.0]])
    e1 = np.exp(-1.0)
    expected = np.array([[1 / (1 + e1), e1 / (1 + e1), 0.0],
                         [np.exp(-2.0), np.exp(-1.0), 1.0],
                         [0.0, 1 / (1 + e1), e1 / (1 + e1)]])
    expected[1] /= expected[1].sum()
    order = key_order(t, 3)
    for keys, what in ((np.arange(3), ""), (order, f", the keys in the order {order.tolist()}")):
        A = t.returned("softmax", S[:, keys])
        expect_close(A, expected[:, keys], t.tol(np.float64), f"softmax of scores near ±1000{what}")
    S, expected = weights_from_counts(own_counts(t, (2, 3)))
    expect_close(t.returned("softmax", S + 1000.0), expected, t.tol(np.float64),
                 "softmax of scores of your own near +1000, log(counts) + 1000")
    # A row far below 0 beside an ordinary one, and none in the thousands: a shift taken only when exp would
    # overflow, or only when the whole call's largest score is far from 0, leaves that row exp = 0 everywhere,
    # 0/0 (slide 11's shift is for every row, on every call).
    expect_close(t.returned("softmax", S + np.array([[0.0], [-1000.0]])), expected, t.tol(np.float64),
                 "softmax of scores of your own, row 0 log(counts) and row 1 log(counts) − 1000")


def context_lecture_example(t):
    """context combines the values with the worked example's weights: ≈ [8.0222, 5.9889] (slide 16), and
    weights and values of the student's own: c_i = Σ_j a_ij v_j."""
    A = np.array([[0.40111209, 0.19777581, 0.40111209]])
    C = t.returned("context", A, V_LECTURE)
    expect_close(C, CONTEXT_LECTURE, SLIDE_ROUNDING, "context(A, V) for the worked example")
    order, factor = key_order(t, 3), scale_factor(t)
    C = t.returned("context", A[:, order], V_LECTURE[order] * factor)
    expect_close(C, CONTEXT_LECTURE * factor, SLIDE_ROUNDING, f"context(A, V) for the worked example's keys in the "
                 f"order {order.tolist()} and values times {factor:.4g}")
    _, A = weights_from_counts(own_counts(t, (2, 3)))
    V = normal(t.rng, (3, 2))
    expect_close(t.returned("context", A, V), mixture(A, V), t.tol(np.float64),
                 "context(A, V) for weights and values of your own", terms=np.abs(A) @ np.abs(V))


def context_batch_axes(t):
    """context of A (2, 3, 4) and V (2, 4, 5) combines each batch's values with that batch's weights:
    C (2, 3, 5), c_i = Σ_j a_ij v_j."""
    A, V = normal(t.rng, (2, 3, 4)), normal(t.rng, (2, 4, 5))
    C = as_array(t.returned("context", A, V), "context(A, V)", (2, 3, 5))
    expect_shape(C, (2, 3, 5), "context(A, V)", "one context row per query, one column per value dimension")
    expected = sum(A[:, :, j, None] * V[:, None, j, :] for j in range(4))  # slide 12, key by key
    expect_close(C, expected, t.tol(np.float64),
                 "context(A, V) with batch axes (row i of batch b should be Σ_j A[b, i, j] V[b, j])",
                 terms=np.abs(A) @ np.abs(V))  # rounding scales with the terms summed, Σ_j |a_ij| |v_jk|


def attention_lecture_example(t):
    """attention on the worked example returns the pair (C, A), in that order:
    C ≈ [8.0222, 5.9889], A ≈ [0.4011, 0.1978, 0.4011], the same with a mask that hides no key (the middle key's
    score is exactly 0, and keeps its weight); and the same query with keys and values of the student's own
    (own_memory)."""
    C, A = expect_pair(t.returned("attention", Q_LECTURE, K_LECTURE, V_LECTURE), "attention(q, K, V)", PAIR)
    expect_context_first(C, A, "attention")
    expect_close(C, CONTEXT_LECTURE, SLIDE_ROUNDING, "the context C of attention(q, K, V)")
    expect_close(A, WEIGHTS_LECTURE, SLIDE_ROUNDING, "the weights A of attention(q, K, V)")
    C, A = expect_pair(t.returned("attention", Q_LECTURE, K_LECTURE, V_LECTURE, allowed=SHOWS_EVERY_KEY),
                       "attention(q, K, V, allowed) with a mask that hides no key", PAIR)
    expect_zero_score_kept(A, "the weights A of attention(q, K, V, allowed) with a mask that hides no key")
    expect_memory_reordered(t, Q_LECTURE, CONTEXT_LECTURE, "attention(q, K, V)")
    expect_own_memory(t, Q_LECTURE, "attention(q, K, V)")


def expect_zero_score_kept(A, what: str) -> None:
    """The worked example's weights A (1, 3) asked with a mask that hides no key: the same as without one. The rule
    about zero scores is told only where the middle key, whose score is 0, got no weight: other bugs get the plain
    comparison."""
    A = expect_floating(A, WEIGHTS_LECTURE, what)
    try:
        expect_close(A, WEIGHTS_LECTURE, SLIDE_ROUNDING, what)
    except CheckFailed as failure:
        if A[0, 1] == 0 and np.isfinite(A).all():
            failure.message += f". {ZERO_SCORE_RULE}"
        raise


def expect_own_memory(t, q, what: str) -> None:
    """attention of the query q with keys and values of the student's own (own_memory): A = n / Σn, C = Σ_j a_j v_j."""
    K, V, weights = own_memory(t, q)
    what = f"{what} with keys and values of your own"
    C, A = expect_pair(t.returned("attention", q, K, V), what, PAIR)
    A = expect_floating(A, weights, f"the weights A of {what}")
    expect_close(A, weights, t.tol(np.float64), f"the weights A of {what}")
    expect_close(C, mixture(weights, V), precision_of_factors(t.tol(np.float64), A), f"the context C of {what}",
                 terms=weights @ np.abs(V))


def expect_context_first(C, A, function: str) -> None:
    """The worked example's pair returned the other way round, (A, C), told as such, not as a wrong shape."""
    shapes = [getattr(getattr(value, "array", value), "shape", None) for value in (C, A)]  # an array or a tensor's
    if shapes == [WEIGHTS_LECTURE.shape, CONTEXT_LECTURE.shape]:
        raise CheckFailed(f"{function} returned (A, C): its first value has the weights' shape (1, 3) and its "
                          "second the context's (1, 2); return the context first: (C, A)")


def expect_memory_reordered(t, q, context, what: str) -> None:
    """The worked example's memory asked again, its keys (with their values) in the student's order and the values
    scaled: C scales with the values and keeps no order, A follows its keys."""
    order, factor = key_order(t, 3), scale_factor(t)
    what = f"{what} with the keys and values in the order {order.tolist()} and the values times {factor:.4g}"
    C, A = expect_pair(t.returned("attention", q, K_LECTURE[order], V_LECTURE[order] * factor), what, PAIR)
    expect_close(C, context * factor, SLIDE_ROUNDING, f"the context C of {what}")
    if q is Q_LECTURE:
        expect_close(A, WEIGHTS_LECTURE[:, order], SLIDE_ROUNDING, f"the weights A of {what}")


def attention_changed_query(t):
    """With the changed query q = [0, 1], the same memory gives C ≈ [5.9889, 8.0222] (slide 17); and that query
    with keys and values of the student's own (own_memory)."""
    C, _ = expect_pair(t.returned("attention", Q_CHANGED, K_LECTURE, V_LECTURE), "attention([0, 1], K, V)", PAIR)
    expect_close(C, CONTEXT_CHANGED, SLIDE_ROUNDING, "the context C for q = [0, 1]")
    expect_memory_reordered(t, Q_CHANGED, CONTEXT_CHANGED, "attention([0, 1], K, V)")
    expect_own_memory(t, Q_CHANGED, "attention([0, 1], K, V)")


def attention_causal_rows(t):
    """With a causal mask, every future weight is exactly 0, every row sums to 1, and C and A are right (slide 26)."""
    counts, powers = own_counts(t, (5,)), t.rng.permutation([1.0, 2.0, 1.0, 2.0, 1.0])  # the student's own
    # dk = 4, q_i = p_i (1, 1, 1, 1) and k_j = log(counts[j]) / 2 (1, 1, 1, 1), so s_ij = q_i · k_j / √4 =
    # p_i log(counts[j]): query i weighs its keys j ≤ i as counts[j]^p_i / Σ_{m≤i} counts[m]^p_i. The queries differ
    # and dk is not 1, so scores that leave out the queries or the √dk give other weights.
    Q, K = powers[:, None] * np.ones((5, 4)), (np.log(counts) / 2)[:, None] * np.ones((5, 4))
    V = normal(t.rng, (5, 2))
    allowed = np.tril(np.ones((5, 5), dtype=bool))
    _, A_expected = weights_from_counts(np.where(allowed, counts[None, :] ** powers[:, None], 0.0))
    C, A = expect_pair(t.returned("attention", Q, K, V, allowed=allowed), "causal attention", PAIR)
    A = as_array(A, "the weights A of causal attention", (5, 5))
    expect_shape(A, (5, 5), "the weights A of causal attention")
    expect_exact_zeros(A, ~allowed, "the weights A of causal attention",
                       "a future key must get weight exactly 0 (slides 20 and 26)")
    expect_rows_sum_to_one(A, t.tol(np.float64), "the weights A of causal attention", ROWS_ADVICE,
                           scores=np.where(allowed, Q @ K.T / 2, -np.inf))  # dk = 4: the scale is 1 / 2
    expect_weights(A, A_expected, t.tol(np.float64), "the weights A of causal attention",
                   "the visible keys' weights must be the softmax of their scores q_i · k_j / √dk (slide 30)")
    expect_close(C, A_expected @ V, t.tol(np.float64), "the context C of causal attention",
                 terms=A_expected @ np.abs(V))  # Σ_j a_ij |v_jk|: rounding scales with the terms summed


def attention_torch_lecture_example(t):
    """attention_torch on the worked example (float64 tensors) returns C ≈ [8.0222, 5.9889] and A, and
    autograd carries C's gradient back to q, K and V; A stays the same with a mask that hides no key (the middle
    key's score is exactly 0); and so for keys, values and an upstream gradient of the student's own."""
    upstream = np.array([[1.0, -1.0]])  # the gradient of a loss with respect to C
    reply = t.call("attention_torch", Q_LECTURE, K_LECTURE, V_LECTURE, as_tensors=True, backward=(upstream, None))
    if reply.raised is not None:
        raise_for("attention_torch", reply, stub=t.stub("attention_torch"))
    C, A = expect_pair(reply.value, "attention_torch(q, K, V)", PAIR)
    expect_context_first(C, A, "attention_torch")
    C = as_tensor(C, "the context C of attention_torch", (1, 2))
    A = as_tensor(A, "the weights A of attention_torch", (1, 3))
    expect_close(C.array, CONTEXT_LECTURE, SLIDE_ROUNDING, "the context C of attention_torch(q, K, V)")
    expect_close(A.array, WEIGHTS_LECTURE, SLIDE_ROUNDING, "the weights A of attention_torch(q, K, V)")
    a = np.exp(K_LECTURE @ Q_LECTURE[0] / np.sqrt(2))  # the unrounded weights of slide 15
    expect_gradients(reply, lecture_gradients(Q_LECTURE[0], K_LECTURE, V_LECTURE, a / a.sum(), upstream[0]),
                     t.tol(np.float64), "attention_torch(q, K, V)")
    what = "attention_torch(q, K, V, allowed) with a mask that hides no key"
    reply = t.call("attention_torch", Q_LECTURE, K_LECTURE, V_LECTURE, allowed=SHOWS_EVERY_KEY, as_tensors=True)
    if reply.raised is not None:
        raise_for("attention_torch", reply, stub=t.stub("attention_torch"))
    A = as_tensor(expect_pair(reply.value, what, PAIR)[1], f"the weights A of {what}", (1, 3))
    expect_zero_score_kept(A.array, f"the weights A of {what}")
    # Keys and values of the student's own (own_memory), and an upstream gradient of their own too.
    K, V, weights = own_memory(t, Q_LECTURE)
    upstream = normal(t.rng, (1, 2))
    what = "attention_torch(q, K, V) with keys and values of your own"
    reply = t.call("attention_torch", Q_LECTURE, K, V, as_tensors=True, backward=(upstream, None))
    if reply.raised is not None:
        raise_for("attention_torch", reply, stub=t.stub("attention_torch"))
    C, A = expect_pair(reply.value, what, PAIR)
    A = as_tensor(A, f"the weights A of {what}", (1, 3)).array
    expect_close(A, weights, t.tol(np.float64), f"the weights A of {what}")
    tol = precision_of_factors(t.tol(np.float64), A)  # weights computed in float32 make C and its gradients so
    expect_close(as_tensor(C, f"the context C of {what}", (1, 2)).array, mixture(weights, V), tol,
                 f"the context C of {what}", terms=weights @ np.abs(V))
    expect_gradients(reply, lecture_gradients(Q_LECTURE[0], K, V, weights[0], upstream[0]), tol, what)


def lecture_gradients(q, K, V, a, g):
    """The gradients of g · c by the chain rule through slides 10-12, for c = Σ_j a_j v_j, a = softmax(s) and
    s_j = q · k_j / √2.

    q: (2,), K: (3, 2), V: (3, 2), a: (3,) the weights, g: (2,) the upstream gradient of c.
    Returns {"Q": (1, 2), "K": (3, 2), "V": (3, 2)}.
    """
    scale = 1 / np.sqrt(2)
    c = mixture(a[None, :], V)[0]
    ds = a * (V @ g - c @ g)  # ∂(g·c)/∂s_j = a_j (g·v_j − g·c), softmax's Jacobian
    return {"Q": (scale * ds @ K)[None, :], "K": scale * np.outer(ds, q), "V": np.outer(a, g)}


CHECKS = [
    Check("score.lecture_example", score_lecture_example),
    Check("score.plain_dot_product", score_plain_dot_product),
    Check("score.shape_rows_are_queries", score_shape_rows_are_queries),
    Check("additive_score.lecture_formula", additive_score_lecture_formula),
    Check("causal_mask.lower_triangle", causal_mask_lower_triangle),
    Check("padding_mask.lecture_lengths", padding_mask_lecture_lengths),
    Check("apply_mask.hidden_become_neg_inf", apply_mask_hidden_become_neg_inf),
    Check("apply_mask.input_unchanged", apply_mask_input_unchanged, charges_changes=True),
    Check("softmax.lecture_example", softmax_lecture_example),
    Check("softmax.rows_sum_to_one", softmax_rows_sum_to_one),
    Check("softmax.masked_weights_are_zero", softmax_masked_weights_are_zero),
    Check("softmax.all_masked_raises", softmax_all_masked_raises),
    Check("softmax.large_scores_stable", softmax_large_scores_stable),
    Check("context.lecture_example", context_lecture_example),
    Check("context.batch_axes", context_batch_axes),
    Check("attention.lecture_example", attention_lecture_example),
    Check("attention.changed_query", attention_changed_query),
    Check("attention.causal_rows", attention_causal_rows),
    Check("attention_torch.lecture_example", attention_torch_lecture_example),
]
