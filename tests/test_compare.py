"""Issue 23: comparing a plain value a student's function returned (str, numbers, lists, dicts, arrays inside)
with the reference's, with a message that names where they differ."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.authoring import CheckFailed, Opaque, Tolerance, expect_equal
from autograder.authoring.protocol import unmarked

TOL = Tolerance(rtol=1e-6, atol=1e-9)


def _message(got, expected, tol=TOL) -> str:
    with pytest.raises(CheckFailed) as failed:
        expect_equal(got, expected, "f(x)", tol)
    return unmarked(failed.value.message)  # the code's own text is marked where the message quotes it


@pytest.mark.parametrize("got, expected, message", [
    ({"n": 3, "mean": 2.0}, {"n": 4, "mean": 2.0}, "f(x) at key 'n': got 3, expected 4"),
    ({"a": [1, 2]}, {"a": [1, 3]}, "f(x) at key 'a', index 1: got 2, expected 3"),
    ({"a": 1}, {"a": 1, "b": 2}, "f(x) has no key 'b'"),
    ({"a": 1, "c": 2}, {"a": 1}, "f(x) has a key 'c' that it should not have"),
    ("hello world", "hello World", "f(x): got 'hello world', expected 'hello World'; they first differ at character 6"),
    (1, True, "f(x) is an int (1); expected a bool (True)"),
    (3.0, 3, "f(x) is a float (3.0); expected an int (3)"),
    ((1, 2), [1, 2], "f(x) is a tuple ((1, 2)); expected a list ([1, 2])"),
    ([1], [1, 2], "f(x) has 1 items; expected 2"),
    (None, "x", "f(x) is None; expected a str ('x')"),
    (Opaque("builtins.set"), {"a": 1}, "f(x) is a builtins.set object; expected a dict ({'a': 1})"),
    ({"p": 0.5}, {"p": 0.6}, "f(x) at key 'p': got 0.5, expected 0.6 (differs by 1.0e-01"),
    ({"w": np.array([1.0, 2.0])}, {"w": np.array([1.0, 2.5])}, "f(x) at key 'w' differs from the expected values"),
    ({"m": np.array([True])}, {"m": np.array([False])}, "f(x) at key 'm' is wrong at 1 of 1 positions"),
    ({"k": np.array([1, 2])}, {"k": np.array([1, 3])}, "f(x) at key 'k' is wrong at 1 of 2 positions, e.g. index (1,)"),
    ({"k": [1, 2]}, {"k": np.array([1, 2])}, "f(x) at key 'k' is a list of 2 items, not a NumPy array"),
    ("x" * 500, "y", "f(x): got 'xxxxxxxx"),
])
def test_the_message_names_where_the_values_differ(got, expected, message):
    assert _message(got, expected).startswith(message)


def test_a_long_value_is_shown_cut():
    assert len(_message("x" * 10_000, "y")) < 300


@pytest.mark.parametrize("got, expected", [
    ({"n": np.array(3), "mean": np.array(2.5)}, {"n": 3, "mean": 2.5}),  # NumPy scalars, as they travel
    ({"mean": 2}, {"mean": 2.0}),  # an int is an exact float
    ({"mean": 2.0 + 1e-9}, {"mean": 2.0}),
    ([math.nan, "a", None, (True,)], [math.nan, "a", None, (True,)]),
    ({"w": np.array([1.0, np.nan])}, {"w": np.array([1.0, np.nan])}),
])
def test_equal_values_pass(got, expected):
    expect_equal(got, expected, "f(x)", TOL)


def test_without_a_tolerance_floats_must_be_equal():
    expect_equal(0.1 + 0.2, 0.1 + 0.2, "f(x)")
    assert _message(0.1 + 0.2, 0.3, None) == "f(x): got 0.30000000000000004, expected 0.3"


plain = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
                     lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
                                             st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=20)


@settings(max_examples=100, deadline=None)
@given(value=plain)
def test_every_plain_value_equals_itself(value):
    expect_equal(value, value, "f(x)", TOL)


# expect_close decides the common case (a finite reference) block by block, and leaves anything else to the
# full account that also words the message. The two must agree on every input: the block-by-block pass may
# only ever say "within" where the full account passes too, and must say it for every right answer it sees.
SPECIAL = st.sampled_from([np.nan, np.inf, -np.inf])
# An entry: the reference's value, and how far the answer is from it in units of the tolerance (so most cases
# lie near the limit, on either side of it), or a non-finite value in either.
ENTRIES = st.tuples(st.one_of(st.floats(-1e3, 1e3), SPECIAL), st.one_of(st.floats(-3, 3), SPECIAL))


def _full_account_passes(got, expected, tol, terms) -> bool:
    from autograder.authoring.compare import _explain_difference
    magnitude = None if terms is None else terms.reshape(-1)
    try:
        _explain_difference(got.reshape(-1), expected.reshape(-1), tol, magnitude, "f(x)", expected, got)
    except CheckFailed:
        return False
    return True


def _full_account(got, expected, tol, terms, block) -> str:
    from autograder.authoring.compare import _explain_difference
    try:
        _explain_difference(got.reshape(-1), expected.reshape(-1), tol, None if terms is None else terms.reshape(-1),
                            "f(x)", expected, got, block)
    except CheckFailed as failed:
        return str(failed)
    return ""


@settings(max_examples=300, deadline=None)
@given(values=st.lists(ENTRIES, min_size=1, max_size=40), float32=st.booleans(), with_terms=st.booleans(),
       block=st.sampled_from([1, 2, 3, 7]), ties=st.booleans())
def test_the_full_account_says_the_same_whatever_its_blocks(values, float32, with_terms, block, ties):
    # Counted over every block, the first non-finite entry and the first of equal largest differences named.
    expected = np.array([e for e, _ in values], dtype=np.float64)
    got = np.where(np.isfinite(expected), expected, 0.0) + np.array([o for _, o in values]) * 1e-3
    if ties:
        got = np.where(np.isfinite(expected), expected + 1.0, got)
    got = got.astype(np.float32 if float32 else np.float64)
    terms = np.abs(np.where(np.isfinite(expected), expected, 0.0))[::-1] * 10 if with_terms else None
    tol = Tolerance(rtol=1e-4, atol=1e-6)
    assert _full_account(got, expected, tol, terms, block) == _full_account(got, expected, tol, terms, 1 << 15)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(ENTRIES, min_size=1, max_size=40), float32=st.booleans(),
       with_terms=st.booleans(), block=st.sampled_from([1, 3, 64]))
def test_the_fast_comparison_agrees_with_the_full_account(values, float32, with_terms, block):
    from autograder.authoring import compare
    tol = Tolerance(rtol=1e-4, atol=1e-6)
    expected = np.array([e for e, _ in values], dtype=np.float64)
    finite = np.where(np.isfinite(expected), expected, 0.0)
    terms = np.abs(finite[::-1]) * 10 if with_terms else None
    unit = tol.atol * max(1.0, np.abs(finite).max()) + tol.rtol * (np.abs(finite) if terms is None else
                                                                  np.maximum(np.abs(finite), terms))
    offsets = np.array([o for _, o in values])
    answer = np.where(np.isfinite(offsets), expected + np.where(np.isfinite(offsets), offsets, 0.0) * unit,
                      offsets)
    got = answer.astype(np.float32 if float32 else np.float64)
    fast = compare._all_within(got, expected, tol, terms, block)  # several blocks, the last one cut short
    full = _full_account_passes(got, expected, tol, terms)
    assert not fast or full
    if np.isfinite(expected).all():
        assert fast == full
    passed = True
    try:
        compare.expect_close(got, expected, tol, "f(x)", terms=terms)
    except CheckFailed:
        passed = False
    assert passed == full


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.tuples(st.floats(-1e3, 1e3), st.floats(-3, 3)), min_size=1, max_size=40),
       float32=st.booleans(), with_terms=st.booleans(), block=st.sampled_from([1, 3, 64]), ties=st.booleans())
def test_finite_values_are_accounted_for_as_with_the_masks_for_non_finite_ones(values, float32, with_terms, block,
                                                                              ties):
    # Where nothing is NaN or infinite, the account skips the masks that leave such entries out: the same
    # count, the same first of the largest differences, the same allowance.
    from autograder.authoring import compare
    expected = np.array([e for e, _ in values])
    got = expected + np.array([o for _, o in values]) * 1e-3
    if ties:
        got = expected + 1.0
    got = got.astype(np.float32 if float32 else np.float64)
    terms = np.abs(expected[::-1]) * 10 if with_terms else None
    tol = Tolerance(rtol=1e-4, atol=1e-6)
    assert compare._all_finite(expected) and compare._all_finite(got)
    peak = float(np.abs(expected).max())
    assert (compare._finite_differences(got, expected, tol, terms, peak, block)
            == compare._differences(got, expected, tol, terms, block))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_one_non_finite_entry_is_seen_among_finite_ones(bad):
    from autograder.authoring import compare
    values = np.linspace(-5.0, 5.0, 101)
    values[37] = bad
    assert not compare._all_finite(values) and not compare._all_finite(values.astype(np.float32))
    assert compare._all_finite(np.linspace(-5.0, 5.0, 101))


def test_only_a_float64_answer_of_float32_numbers_is_held_to_float32s_tolerance():
    from autograder.authoring import expect_close, holds_float32_only
    exact = np.random.default_rng(0).standard_normal(1000)
    assert not holds_float32_only(exact) and not holds_float32_only(np.array([1e300]))  # float64's own numbers
    assert holds_float32_only(exact.astype(np.float32).astype(np.float64))
    tol = Tolerance(rtol=1e-9, atol=1e-12, coarser=Tolerance(rtol=1e-5, atol=1e-7))
    off = exact + 1e-7 * np.abs(exact)  # within float32's tolerance, not within float64's
    with pytest.raises(CheckFailed):
        expect_close(off, exact, tol, "x")
    expect_close(off.astype(np.float32).astype(np.float64), exact, tol, "x")
    with pytest.raises(CheckFailed):  # float32 numbers, wrong by more than float32's tolerance
        expect_close((exact * 1.001).astype(np.float32).astype(np.float64), exact, tol, "x")


def test_an_error_just_over_its_allowance_is_shown_apart_from_it():
    """A score rounded to 4 decimals was told "differs by 5.0e-05, allowed 5.0e-05": no reason to fail shown."""
    from autograder.authoring import expect_close
    tol = Tolerance(rtol=0.0, atol=5e-5)
    with pytest.raises(CheckFailed) as failed:
        expect_close(np.array([-0.0026]), np.array([-0.002650048]), tol, "score")
    shown = unmarked(failed.value.message).split("(differs by ")[1].rstrip(")").split(", allowed ")
    assert shown[0] != shown[1] and float(shown[0]) > float(shown[1]), failed.value.message


def test_products_computed_in_float32_are_held_to_their_rounding_whatever_dtype_the_answer_has():
    """Scores computed in float32 and then multiplied by a float64 scale hold no float32 numbers only: float64's
    tolerance alone had failed them (score.matches_reference, 3 points). Returned in float32, float32's flat
    tolerance had passed a scale 1.2e-4 off (rounded to four decimals). Both are held to float64's tolerance plus
    float32's rounding of the products now; additive scores computed in float32 too."""
    from autograder.authoring import additive_rounding, expect_close, expect_within_rounding, product_rounding
    rng = np.random.default_rng(0)
    tol = Tolerance(rtol=1e-6, atol=1e-9, coarser=Tolerance(rtol=2e-4, atol=1e-5))
    Q, K = rng.standard_normal((2, 3, 50, 6)), rng.standard_normal((2, 3, 70, 6))
    scale = 1 / np.sqrt(6)
    expected = Q @ np.swapaxes(K, -1, -2) * scale
    rounding = product_rounding(Q, np.swapaxes(K, -1, -2), scale)
    products = Q.astype(np.float32) @ np.swapaxes(K.astype(np.float32), -1, -2)
    with pytest.raises(CheckFailed):  # the fault: float64's tolerance alone
        expect_close(products * scale, expected, tol, "S")
    expect_within_rounding(products * scale, expected, tol, rounding, "S")
    expect_within_rounding((Q.astype(np.float32) * np.float32(scale)) @ np.swapaxes(K.astype(np.float32), -1, -2),
                           expected, tol, rounding, "S")
    rounded_scale = products * np.float32(round(scale, 4))
    expect_close(rounded_scale, expected, tol, "S")  # the fault: float32's flat tolerance passes a wrong scale
    with pytest.raises(CheckFailed, match="allowed"):
        expect_within_rounding(rounded_scale, expected, tol, rounding, "S")
    Q, K, W_q, W_k, v, b = (rng.standard_normal(shape) for shape in ((40, 4), (60, 3), (5, 4), (5, 3), (5,), (5,)))
    expected = np.tanh((Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :] + b) @ v
    f32 = [a.astype(np.float32) for a in (Q, K, W_q, W_k, b)]
    hidden = np.tanh((f32[0] @ f32[2].T)[:, None, :] + (f32[1] @ f32[3].T)[None, :, :] + f32[4])
    expect_within_rounding(hidden @ v, expected, tol, additive_rounding(Q, K, W_q, W_k, v, b), "e")
    expect_within_rounding(hidden @ v.astype(np.float32), expected, tol, additive_rounding(Q, K, W_q, W_k, v, b), "e")
    with pytest.raises(CheckFailed):
        expect_within_rounding(hidden @ (v * (1 + 1e-4)), expected, tol, additive_rounding(Q, K, W_q, W_k, v, b), "e")


def test_rows_that_do_not_sum_to_one_are_told_what_is_missing():
    from autograder.authoring.row_sums import expect_rows_sum_to_one
    tol = Tolerance(rtol=1e-6, atol=1e-9)
    S = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 1.0]])
    log_weights = S - S.max(axis=-1, keepdims=True) - np.log(np.exp(S - S.max(axis=-1, keepdims=True)).sum(-1,
                                                                                                          keepdims=True))
    for weights, told in ((log_weights, "weights are never negative: exponentiate"),  # log-softmax: normalized already
                          (np.exp(S), "normalize over the last axis, per query"),
                          (np.zeros_like(S), "every weight of the row is 0: exponentiate")):  # nothing normalized
        with pytest.raises(CheckFailed) as failed:
            expect_rows_sum_to_one(weights, tol, "softmax(S)", "per query")
        assert told in failed.value.message, failed.value.message


def test_weights_held_in_longdouble_sum_to_one_within_the_rounding_of_their_float64_sum():
    """Rows are summed in float64: a right softmax returned as np.longdouble had been held to longdouble's rounding
    (2.8e-17) while its float64 sum missed 1 by 1.1e-16, and lost two checks as 'an epsilon in the denominator'."""
    from autograder.authoring.row_sums import expect_rows_sum_to_one
    rng = np.random.default_rng(3)
    S = rng.standard_normal((4, 5, 7)).astype(np.longdouble)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    assert (np.abs(weights.astype(np.float64).sum(-1) - 1) > 64 * 7 * np.finfo(np.longdouble).eps).any()
    tol = Tolerance(rtol=1e-6, atol=1e-9)
    expect_rows_sum_to_one(weights, tol, "softmax(S)")
    with pytest.raises(CheckFailed, match="an epsilon"):
        expect_rows_sum_to_one(e / (e.sum(axis=-1, keepdims=True) + 1e-4), tol, "softmax(S)")


def test_float32_weights_sum_to_one_within_the_rounding_of_their_row():
    """float32 weights are held to float32's rounding of a row sum, (nonzero weights + 2) half units times 4, not to
    float32's flat tolerance: 2e-5, and 1e-6 where a row has one visible key, added to the denominator had passed."""
    from autograder.authoring.row_sums import expect_rows_sum_to_one
    rng = np.random.default_rng(7)
    tol = Tolerance(rtol=1e-6, atol=1e-9, coarser=Tolerance(rtol=2e-4, atol=1e-5))
    S = (rng.standard_normal((200, 3, 9)) * 5).astype(np.float32)
    S[:, 0, 1:] = -np.inf  # one visible key
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    lse = S.max(axis=-1, keepdims=True) + np.log(e.sum(axis=-1, keepdims=True))
    for right in (e / e.sum(axis=-1, keepdims=True), np.exp(S - lse)):  # divided by its sum, or a log-sum-exp
        expect_rows_sum_to_one(right, tol, "softmax(S)")
        expect_rows_sum_to_one(right.astype(np.float64), tol, "softmax(S)")  # computed in float32, cast back
    for epsilon in (2e-5, 1e-6):
        with pytest.raises(CheckFailed, match="an epsilon"):
            expect_rows_sum_to_one((e / (e.sum(axis=-1, keepdims=True) + np.float32(epsilon))).astype(np.float64),
                                   tol, "softmax(S)")


def test_float32_log_sum_exp_weights_of_large_scores_are_held_to_the_rounding_at_their_size():
    """exp(s - lse) carries the log-sum-exp's rounding at the scores' size: np.logaddexp.reduce of four scores near 19
    gave a row summing to 1.0000015, over (nonzero weights + 2) half units times 4, and a right answer lost its
    check. With the scores given, the row is allowed a half unit of its largest score per term more."""
    from autograder.authoring.row_sums import expect_rows_sum_to_one
    tol = Tolerance(rtol=1e-6, atol=1e-9, coarser=Tolerance(rtol=2e-4, atol=1e-5))
    S = np.array([[19.43814444, 19.32307511, 19.21137112, 18.59966427]], dtype=np.float32)
    right = np.exp(S - np.logaddexp.reduce(S, axis=-1, keepdims=True))
    assert abs(right.astype(np.float64).sum() - 1) > 1e-6  # what the bound without the scores' size refused
    with pytest.raises(CheckFailed, match="rounded, or something small was added to them"):
        expect_rows_sum_to_one(right, tol, "softmax(S)")  # above 1: no epsilon in a denominator says so
    expect_rows_sum_to_one(right, tol, "softmax(S)", scores=S)
    expect_rows_sum_to_one(right.astype(np.float64), tol, "softmax(S)", scores=S)
    # A row of small scores keeps the bound tight: 1e-6 added to a lone visible key's denominator is still found.
    with np.errstate(divide="ignore"):
        small = np.log(np.array([[1.0, 0.0, 0.0, 0.0]], dtype=np.float32))
    e = np.exp(small - small.max())
    with pytest.raises(CheckFailed, match="an epsilon"):
        expect_rows_sum_to_one((e / (e.sum() + np.float32(1e-6))).astype(np.float64), tol, "softmax(S)", scores=small)


def test_weights_computed_in_half_precision_and_cast_back_are_told_so():
    """Rows of float16 numbers in a float64 array miss 1 by half precision's rounding: the message says so, as for a
    float16 answer, not that an epsilon was added."""
    from autograder.authoring.row_sums import expect_rows_sum_to_one
    h = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float16)
    e = np.exp(h - h.max(axis=-1, keepdims=True))
    with pytest.raises(CheckFailed, match="computed in half precision and cast back; compute in float32") as failed:
        expect_rows_sum_to_one((e / e.sum(axis=-1, keepdims=True)).astype(np.float64),
                               Tolerance(rtol=1e-6, atol=1e-9), "softmax(S)")
    assert "epsilon" not in failed.value.message
