"""Public checks for week 7: the lecture's worked example and the properties it states.

These are released with the assignment, so students can run them
(`autograder check attention.py`). They use no reference solution: expected
values are the slides' numbers (slides 14-17) or follow directly from the
definitions, and property checks test what the lecture says must hold
(slide 26: every permitted row sums to one, every future weight is zero).
Points live in course.yaml.
"""
import numpy as np

from autograder.checks import Check, CheckFailed, expect_raises, raise_for
from autograder.compare import (as_array, as_tensor, expect_close, expect_equal_mask, expect_exact_zeros,
                                expect_pair, expect_rows_sum_to_one, expect_shape)
from autograder.course import Tolerance
from autograder.inputs import allowed_mask, normal

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


def score_lecture_example(t):
    """score reproduces the worked example's scores (slide 15): [0.7071, 0, 0.7071]."""
    S = t.returned("score", Q_LECTURE, K_LECTURE)
    expect_close(S, SCORES_LECTURE, SLIDE_ROUNDING, "score(q, K) for the worked example")


def score_plain_dot_product(t):
    """With scale=1.0, score is the plain dot product q·k_j (slide 8)."""
    S = t.returned("score", Q_LECTURE, K_LECTURE, scale=1.0)
    expect_close(S, np.array([[1.0, 0.0, 1.0]]), t.tol(np.float64), "score(q, K, scale=1.0)")


def score_shape_rows_are_queries(t):
    """score of Q (2, 5, 4) and K (2, 6, 4) has shape (2, 5, 6): one row per query (slide 13)."""
    Q, K = normal(t.rng, (2, 5, 4)), normal(t.rng, (2, 6, 4))
    S = as_array(t.returned("score", Q, K), "score(Q, K)", (2, 5, 6))
    expect_shape(S, (2, 5, 6), "score(Q, K)")
    entry = Q[1, 3] @ K[1, 4] / 2.0  # q·k / √dk with dk = 4
    if not np.isclose(S[1, 3, 4], entry, rtol=1e-6, atol=1e-9):
        raise CheckFailed(f"score(Q, K)[1, 3, 4] is {S[1, 3, 4]:.6g}, but query 3 · key 4 / √4 is "
                          f"{entry:.6g}: S[..., i, j] compares query i with key j")


def additive_score_lecture_formula(t):
    """additive_score follows e_ij = vᵀ tanh(W_q q_i + W_k k_j + b) on a hand-checkable case (slide 9)."""
    Q, K = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    eye, v, b = np.eye(2), np.array([1.0, 1.0]), np.array([0.0, 0.0])
    # W_q = W_k = I, b = 0: e_0j = tanh(1 + k_j0) + tanh(k_j1)
    expected = np.array([[np.tanh(2.0), np.tanh(1.0) + np.tanh(1.0), np.tanh(1.0)]])
    e = t.returned("additive_score", Q, K, eye, eye, v, b)
    expect_close(e, expected, t.tol(np.float64), "additive_score with W_q = W_k = I, v = [1, 1], b = 0")


def causal_mask_future_is_hidden(t):
    """causal_mask(4) hides every future key: allowed[i, j] is False for j > i (slide 20)."""
    allowed = _causal(t, 4)
    future = np.triu(np.ones((4, 4), dtype=bool), k=1)
    if allowed[future].any():
        i, j = next(zip(*np.nonzero(future & allowed)))
        raise CheckFailed(f"causal_mask(4)[{i}, {j}] is True: query {i} can see key {j}, which is in its "
                          "future. Before softmax, keys j > i must be hidden (slide 20)")


def causal_mask_diagonal_visible(t):
    """causal_mask(4) lets every query see itself and the past: allowed[i, j] is True for j ≤ i."""
    allowed = _causal(t, 4)
    past = np.tril(np.ones((4, 4), dtype=bool))
    if not allowed[past].all():
        i, j = next(zip(*np.nonzero(past & ~allowed)))
        raise CheckFailed(f"causal_mask(4)[{i}, {j}] is False: query {i} cannot see key {j} ≤ {i}. "
                          "allowed(i, j) ⇔ j ≤ i, so the diagonal is visible (slide 20)")


def _causal(t, n):
    allowed = as_array(t.returned("causal_mask", n), f"causal_mask({n})", (n, n))
    expect_shape(allowed, (n, n), f"causal_mask({n})")
    if allowed.dtype != np.bool_:
        raise CheckFailed(f"causal_mask({n}) has dtype {allowed.dtype}; expected a boolean mask")
    return allowed


def padding_mask_lecture_lengths(t):
    """padding_mask([2, 4], 4) hides the padded keys of the first sequence only (slide 21)."""
    expected = np.array([[[True, True, False, False]], [[True, True, True, True]]])
    allowed = t.returned("padding_mask", np.array([2, 4]), 4)
    expect_equal_mask(allowed, expected, "padding_mask([2, 4], 4)")


def apply_mask_hidden_become_neg_inf(t):
    """apply_mask puts −inf exactly where allowed is False and keeps every other score (slide 20)."""
    S = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -2.5]])
    allowed = np.array([[True, False, True], [False, True, True]])
    expected = np.array([[0.5, -np.inf, 2.0], [-np.inf, 0.0, -2.5]])
    masked = t.returned("apply_mask", S, allowed)
    expect_close(masked, expected, t.tol(np.float64), "apply_mask(S, allowed)")


def apply_mask_input_unchanged(t):
    """apply_mask returns the masked scores in a new array and leaves its input S unmodified."""
    S, allowed = normal(t.rng, (3, 4)), allowed_mask(t.rng, (3, 4))
    reply = t.call("apply_mask", S, allowed, return_inputs=True)
    if reply.raised is not None:
        raise_for("apply_mask", reply)
    if not np.array_equal(reply.inputs[0], S):
        raise CheckFailed("apply_mask changed its input S in place; work on a copy "
                          "(e.g. np.where(allowed, S, -np.inf)) so the caller's scores survive")
    # The masked copy is the definition of apply_mask (slide 20), so checking it needs no reference.
    expect_close(reply.value, np.where(allowed, S, -np.inf), t.tol(np.float64), "apply_mask(S, allowed)")


def softmax_lecture_example(t):
    """softmax of the worked example's scores gives weights ≈ [0.4011, 0.1978, 0.4011] (slide 15)."""
    A = t.returned("softmax", np.array([[1 / np.sqrt(2), 0.0, 1 / np.sqrt(2)]]))
    expect_close(A, WEIGHTS_LECTURE, SLIDE_ROUNDING, "softmax of the worked example's scores")


def softmax_rows_sum_to_one(t):
    """Every row of softmax(S) sums to 1: one unit of weight per query (slides 11, 26)."""
    S = normal(t.rng, (3, 4, 5), scale=3.0)
    A = as_array(t.returned("softmax", S), "softmax(S)", S.shape)
    expect_shape(A, S.shape, "softmax(S)")
    expect_rows_sum_to_one(A, t.tol(np.float64), "softmax(S)")


def softmax_masked_weights_are_zero(t):
    """A −inf score gets weight exactly 0, and the remaining weights still sum to 1 (slides 20, 26)."""
    allowed = allowed_mask(t.rng, (4, 6))
    S = np.where(allowed, normal(t.rng, (4, 6)), -np.inf)
    A = as_array(t.returned("softmax", S), "softmax(S) with masked keys", S.shape)
    expect_shape(A, S.shape, "softmax(S) with masked keys")
    expect_exact_zeros(A, ~allowed, "softmax(S) with masked keys", "slide 20")
    expect_rows_sum_to_one(A, t.tol(np.float64), "softmax(S) with masked keys")


def softmax_all_masked_raises(t):
    """softmax raises ValueError when a row has every key masked: no valid normalization (slide 22)."""
    S = np.array([[0.3, -np.inf, 1.2], [-np.inf, -np.inf, -np.inf]])
    expect_raises(t, "ValueError", "softmax", S, what="softmax of a row with every key masked",
                  advice=ALL_MASKED_ADVICE)


def softmax_large_scores_stable(t):
    """softmax stays finite and correct for scores in the thousands (subtract the row max first)."""
    S = np.array([[1000.0, 999.0, -1000.0], [-1000.0, -999.0, -998.0]])
    e1 = np.exp(-1.0)
    expected = np.array([[1 / (1 + e1), e1 / (1 + e1), 0.0],
                         [np.exp(-2.0), np.exp(-1.0), 1.0]])
    expected[1] /= expected[1].sum()
    A = t.returned("softmax", S)
    expect_close(A, expected, t.tol(np.float64), "softmax of scores near ±1000")


def context_lecture_example(t):
    """context combines the values with the worked example's weights: ≈ [8.0222, 5.9889] (slide 16)."""
    A = np.array([[0.40111209, 0.19777581, 0.40111209]])
    C = t.returned("context", A, V_LECTURE)
    expect_close(C, CONTEXT_LECTURE, SLIDE_ROUNDING, "context(A, V) for the worked example")


def context_shape(t):
    """context of A (2, 3, 4) and V (2, 4, 5) has shape (2, 3, 5): one context row per query."""
    A, V = normal(t.rng, (2, 3, 4)), normal(t.rng, (2, 4, 5))
    C = as_array(t.returned("context", A, V), "context(A, V)", (2, 3, 5))
    expect_shape(C, (2, 3, 5), "context(A, V)")


def attention_lecture_example(t):
    """attention on the worked example returns C ≈ [8.0222, 5.9889] and A ≈ [0.4011, 0.1978, 0.4011]."""
    C, A = expect_pair(t.returned("attention", Q_LECTURE, K_LECTURE, V_LECTURE), "attention(q, K, V)")
    expect_close(C, CONTEXT_LECTURE, SLIDE_ROUNDING, "the context C of attention(q, K, V)")
    expect_close(A, WEIGHTS_LECTURE, SLIDE_ROUNDING, "the weights A of attention(q, K, V)")


def attention_changed_query(t):
    """With the changed query q = [0, 1], the same memory gives C ≈ [5.9889, 8.0222] (slide 17)."""
    C, _ = expect_pair(t.returned("attention", Q_CHANGED, K_LECTURE, V_LECTURE), "attention([0, 1], K, V)")
    expect_close(C, CONTEXT_CHANGED, SLIDE_ROUNDING, "the context C for q = [0, 1]")


def attention_returns_context_and_weights(t):
    """attention returns (C, A) in that order: C (..., Nq, dv) first, then A (..., Nq, Nk)."""
    Q, K, V = normal(t.rng, (2, 3, 4)), normal(t.rng, (2, 5, 4)), normal(t.rng, (2, 5, 6))
    C, A = expect_pair(t.returned("attention", Q, K, V), "attention(Q, K, V)")
    C = as_array(C, "the first value attention returns (C)", (2, 3, 6))
    if C.shape == (2, 3, 5):
        raise CheckFailed("attention returned (A, C); return the context first: (C, A)")
    expect_shape(C, (2, 3, 6), "the first value attention returns (C)")
    expect_shape(as_array(A, "the second value (A)", (2, 3, 5)), (2, 3, 5), "the second value attention returns (A)")


def attention_causal_rows(t):
    """With a causal mask, every future weight is exactly 0 and every row sums to 1 (slide 26)."""
    Q, K, V = normal(t.rng, (5, 3)), normal(t.rng, (5, 3)), normal(t.rng, (5, 2))
    allowed = np.tril(np.ones((5, 5), dtype=bool))
    _, A = expect_pair(t.returned("attention", Q, K, V, allowed=allowed), "causal attention")
    A = as_array(A, "the weights A of causal attention", (5, 5))
    expect_shape(A, (5, 5), "the weights A of causal attention")
    expect_exact_zeros(A, ~allowed, "the weights A of causal attention", "slides 20 and 26")
    expect_rows_sum_to_one(A, t.tol(np.float64), "the weights A of causal attention")


def attention_torch_lecture_example(t):
    """attention_torch on the worked example (as float64 tensors) returns C ≈ [8.0222, 5.9889]."""
    C, A = expect_pair(t.returned("attention_torch", Q_LECTURE, K_LECTURE, V_LECTURE, as_tensors=True),
                 "attention_torch(q, K, V)")
    C = as_tensor(C, "the context C of attention_torch", (1, 2))
    A = as_tensor(A, "the weights A of attention_torch", (1, 3))
    expect_close(C.array, CONTEXT_LECTURE, SLIDE_ROUNDING, "the context C of attention_torch(q, K, V)")
    expect_close(A.array, WEIGHTS_LECTURE, SLIDE_ROUNDING, "the weights A of attention_torch(q, K, V)")


CHECKS = [
    Check("score.lecture_example", score_lecture_example),
    Check("score.plain_dot_product", score_plain_dot_product),
    Check("score.shape_rows_are_queries", score_shape_rows_are_queries),
    Check("additive_score.lecture_formula", additive_score_lecture_formula),
    Check("causal_mask.future_is_hidden", causal_mask_future_is_hidden),
    Check("causal_mask.diagonal_visible", causal_mask_diagonal_visible),
    Check("padding_mask.lecture_lengths", padding_mask_lecture_lengths),
    Check("apply_mask.hidden_become_neg_inf", apply_mask_hidden_become_neg_inf),
    Check("apply_mask.input_unchanged", apply_mask_input_unchanged),
    Check("softmax.lecture_example", softmax_lecture_example),
    Check("softmax.rows_sum_to_one", softmax_rows_sum_to_one),
    Check("softmax.masked_weights_are_zero", softmax_masked_weights_are_zero),
    Check("softmax.all_masked_raises", softmax_all_masked_raises),
    Check("softmax.large_scores_stable", softmax_large_scores_stable),
    Check("context.lecture_example", context_lecture_example),
    Check("context.shape", context_shape),
    Check("attention.lecture_example", attention_lecture_example),
    Check("attention.changed_query", attention_changed_query),
    Check("attention.returns_context_and_weights", attention_returns_context_and_weights),
    Check("attention.causal_rows", attention_causal_rows),
    Check("attention_torch.lecture_example", attention_torch_lecture_example),
]
