"""What the grader keeps between a check's planning and judging runs computes exactly what computing it
afresh would: the results a check asks its trial to reuse, and the reference's, as copies."""
from __future__ import annotations

import copy
import math
import types

import numpy as np
import pytest

from autograder.authoring.checks import Check, CheckFailed, Tolerance, Trial
from autograder.authoring.compare import expect_close
from autograder.authoring.protocol import Raised, Reply, TensorData
from autograder.authoring.seeds import check_rng
from autograder.grading.plan import MAX_KEPT_SETS, KeptPlans, Plan, ReferenceAnswers, Sent, _same, identical, plan_check
from autograder.grading.reference_cache import CachedReference, _fingerprint, copied
from autograder.grading.suite import SuiteCheck
from autograder.sandbox.replies import CallTimedOut, request_frame

TOLERANCE = {"float32": Tolerance(2e-3, 1e-5), "float64": Tolerance(1e-6, 1e-9)}


def _trial(remember=None) -> Trial:
    return Trial("f.x", check_rng(0, "f.x"), None, lambda call: None, {}, remember=remember)


def test_a_check_computes_what_it_asks_its_trial_to_reuse_once_per_input_and_gets_copies():
    ref = CachedReference(types.SimpleNamespace())
    computed = []

    def peer(x, scale):
        computed.append(scale)
        return x * scale, (x + scale,)

    x = np.arange(6.0).reshape(2, 3)
    first = _trial(ref.remembered).reused(peer, x, 2.0)
    first[0][:] = -1  # a caller changing what it got
    again = _trial(ref.remembered).reused(peer, x.copy(), 2.0)  # another trial (judging), the same values
    assert computed == [2.0] and np.array_equal(again[0], x * 2.0) and np.array_equal(again[1][0], x + 2.0)
    _trial(ref.remembered).reused(peer, x, -2.0)
    _trial(ref.remembered).reused(peer, x.astype(np.float32), 2.0)
    assert computed == [2.0, -2.0, 2.0]  # another argument or dtype is another input
    plain = _trial()  # no grader's cache (a student's own machine): computed every time
    plain.reused(peer, x, 2.0)
    plain.reused(peer, x, 2.0)
    assert len(computed) == 5


def test_kept_results_come_back_as_deepcopy_would_give_them():
    fortran = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    for value in (fortran, (fortran, [fortran[:, 1:], None, 3.5]), {"a": fortran}, np.float32(2.0)):
        mine, theirs = copied(value), copy.deepcopy(value)
        assert _fingerprint(mine) == _fingerprint(theirs) and type(mine) is type(theirs)
        for a, b in zip(_arrays(mine), _arrays(theirs), strict=True):
            assert a.strides == b.strides and a.dtype == b.dtype and a.flags.writeable
    kept = copied((fortran,))
    kept[0][0, 0] = 99
    assert fortran[0, 0] == 0  # a copy, not a view
    objects = np.empty(2, dtype=object)
    objects[:] = [[1], [2]]
    kept = copied(objects)
    assert kept.tolist() == [[1], [2]] and kept[0] is not objects[0]  # deep-copied, as deepcopy does


def _arrays(value) -> list:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for item in value for a in _arrays(item)]
    if isinstance(value, dict):
        return [a for item in value.values() for a in _arrays(item)]
    return []


def test_fingerprints_follow_content_whatever_the_layout():
    x = np.arange(24.0).reshape(4, 6)
    assert _fingerprint(x[:, ::2]) == _fingerprint(np.ascontiguousarray(x[:, ::2]))
    assert _fingerprint(x.T) == _fingerprint(x.T.copy()) != _fingerprint(x)
    assert _fingerprint(np.zeros((0, 3))) != _fingerprint(np.zeros((3, 0)))  # empty arrays are data too
    assert _fingerprint(x.astype(">f8")) != _fingerprint(x)  # the byte order is part of the dtype
    assert _fingerprint((1, 2.0, "a", None, True)) != _fingerprint([1, 2.0, "a", None, True])
    assert _fingerprint(np.float64(1.5)) == _fingerprint(np.array(1.5))


def test_a_planned_call_matches_equal_arrays_whatever_their_bytes():
    zeros = np.array([0.0, np.nan, 1.0])
    assert _same(zeros, np.array([-0.0, np.nan, 1.0]))  # -0.0 is 0.0, and NaN is NaN, as array_equal says
    assert _same(zeros, zeros.copy()) and _same(np.zeros((0, 2)), np.zeros((0, 2)))
    assert not _same(zeros, np.array([0.0, np.nan, 1.5])) and not _same(zeros, zeros.astype(np.float32))
    assert not _same(zeros, zeros.reshape(3, 1)) and not _same(zeros, list(zeros))
    boxes = np.array([1, [2]], dtype=object)
    assert _same(boxes, np.array([1, [2]], dtype=object))  # objects compared by value, not by address


# ------------------------------------------------------------------ judging from the plan


def _doubling(t):
    """double(x) is 2x; then the check writes over what it was given, as a check may."""
    x = t.rng.normal(size=4)
    got = t.returned("double", x)
    expect_close(got, 2 * x, t.tol(x.dtype), "double(x)")
    got[:] = 0


def _planned(run=_doubling) -> tuple[Plan, np.ndarray]:
    """The check planned against a reference that doubles, and the input it drew."""
    entry = SuiteCheck(Check("double.x", run), "hidden", 1.0, None)
    x = check_rng(7, "double.x").normal(size=4)
    plan = plan_check(entry, Trial("double.x", check_rng(7, "double.x"), None, None, TOLERANCE),
                      ReferenceAnswers({"double": lambda value: value * 2}))
    return plan, x


def test_replies_the_reference_gave_bit_for_bit_pass_as_planned_and_no_others_do():
    plan, x = _planned()
    assert plan.passed and len(plan.calls) == len(plan.answers) == 1
    assert plan.answered_alike(Sent([Reply(value=2 * x)]))
    # The check wrote zeros over the reply it got: the plan kept the answer as it came, not those zeros.
    assert not plan.answered_alike(Sent([Reply(value=np.zeros(4))]))
    near = 2 * x
    near[0] = np.nextafter(near[0], np.inf)
    for other in (near, (2 * x).astype(np.float32), [*(2 * x)], 2 * x[:3]):
        assert not plan.answered_alike(Sent([Reply(value=other)]))
    assert not plan.answered_alike(Sent([Reply(value=2 * x, inputs=(x,))]))  # another field of the reply
    assert not plan.answered_alike(Sent([CallTimedOut("double took too long")]))
    assert not plan.answered_alike(Sent([]))


def test_a_check_that_fails_against_the_reference_is_always_judged():
    def wrong_check(t):
        t.returned("double", t.rng.normal(size=4))
        raise CheckFailed("the suite's own mistake")
    plan, x = _planned(wrong_check)
    assert not plan.passed and not plan.answered_alike(Sent([Reply(value=2 * x)]))


def test_identical_means_the_same_bits():
    assert identical(0.0, 0.0) and not identical(0.0, -0.0) and identical(math.nan, math.nan)
    assert not identical(np.array([0.0]), np.array([-0.0]))  # equal, but np.signbit tells them apart
    assert identical(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]))
    assert not identical(np.arange(3), np.arange(3.0)) and not identical(np.ones((2, 1)), np.ones((1, 2)))
    assert not identical((1, 2), [1, 2]) and not identical(1, 1.0) and not identical(True, 1)
    assert not identical({"a": 1, "b": 2}, {"b": 2, "a": 1})  # a check may read a dict's order
    tensor = TensorData(np.ones(2), True, "MulBackward0")
    assert identical(tensor, TensorData(np.ones(2), True, "MulBackward0"))
    assert not identical(tensor, TensorData(np.ones(2), False, None))
    assert identical(Reply(raised=Raised("ValueError", "no")), Reply(raised=Raised("ValueError", "no")))
    assert not identical(Reply(raised=Raised("ValueError", "no")), Reply(raised=Raised("ValueError", "no!")))
    assert not identical(np.array([1.0]), np.float64(1.0)) and not identical(np.float64(1.0), np.float64(1.0))


def test_plans_are_kept_per_seed_for_the_latest_sets_and_per_check_when_nothing_was_drawn():
    fixed = lambda t: t.returned("double", np.arange(3.0))  # noqa: E731 - draws nothing: the same for every seed
    entries = {run: SuiteCheck(Check(f"double.{run.__name__}", run), "hidden", 1.0, None)
               for run in (_doubling, fixed)}
    reference = ReferenceAnswers({"double": lambda value: value * 2})
    kept, made = KeptPlans(), []

    def plan(run, seed):
        trial = lambda: made.append((run, seed)) or Trial("double.x", check_rng(seed, "double.x"), None, None,  # noqa: E731
                                                           TOLERANCE)
        return kept.plan(entries[run], seed, trial, reference)

    first = plan(_doubling, 0)
    # Encoded once for the wire, as a fresh encoding would be: the set's students are sent these.
    assert first.to_send() is first.requests
    assert all(request.call is call for request, call in zip(first.requests, first.calls, strict=True))
    assert first.requests[0].frame(3)[0] == request_frame(first.calls[0], 3)[0] and "id" not in first.requests[0].header
    with pytest.raises(ValueError, match="read-only"):  # shared by the set's students from now on
        first.calls[0].args[0][0] = 0.0
    with pytest.raises(ValueError, match="read-only"):
        first.answers[0].value[0] = 0.0
    assert plan(_doubling, 0) is first and plan(_doubling, 1) is not first and len(made) == 2
    for seed in range(2, MAX_KEPT_SETS + 1):  # MAX_KEPT_SETS + 1 seeds in all: seed 0, the least recent, goes
        plan(_doubling, seed)
    plan(_doubling, 1)
    assert len(made) == MAX_KEPT_SETS + 1  # seed 1 was kept
    assert plan(_doubling, 0) is not first and len(made) == MAX_KEPT_SETS + 2  # planned again
    once = plan(fixed, 5)
    assert all(plan(fixed, seed) is once for seed in range(100)) and made[-1] == (fixed, 5)
