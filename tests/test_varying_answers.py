"""A function whose answers are random (dropout, noise) or depend on earlier calls: named as such, and graded the
same way in every run (grading.varying, sandbox.libraries.seed_random)."""
from __future__ import annotations

import numpy as np
import pytest

from autograder.authoring.protocol import Call, Raised, Reply, TensorData
from autograder.grading.grader import Grader
from autograder.grading.submission import read_submission
from autograder.grading.varying import answers_vary, differ
from autograder.sandbox.protections import probe
from autograder.sandbox.replies import CallFailed
from autograder.sandbox.zygote import Sandbox

from conftest import PLAIN

# Dropout left on in attention_torch: F.dropout trains by default, as nn.MultiheadAttention's copy would.
DROPOUT_IN_TORCH = '''
def attention_torch(Q, K, V, allowed=None, scale=None):
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[-1])
    S = (Q @ K.transpose(-2, -1)) * scale
    if allowed is not None:
        S = S.masked_fill(~torch.as_tensor(allowed, dtype=torch.bool), float("-inf"))
    A = torch.nn.functional.dropout(torch.softmax(S, dim=-1), p=0.1)
    return A @ V, A
'''

# Noise from NumPy's global generator and Python's, which nothing in the file seeds, and from a string's hash (as
# a set's order of strings would give).
NOISE_IN_SOFTMAX = '''
import random as _random


def softmax(S):
    S = np.asarray(S)
    if not np.all(np.any(np.isfinite(S), axis=-1)):
        raise ValueError("softmax: some query has every key masked")
    e = np.exp(S - np.max(S, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True) + 1e-4 * np.random.rand(*S.shape)


def context(A, V):
    return np.asarray(A) @ np.asarray(V) + 1e-4 * (_random.random() + hash("context") % 7)
'''


def _with(tmp_path, name: str, snippet: str):
    path = tmp_path / f"{name}.py"
    path.write_text(PLAIN.read_text() + "\n\n" + snippet)
    return path


def test_dropout_is_named_on_the_function_that_has_it(grade, tmp_path):
    result = grade(_with(tmp_path, "dropout", DROPOUT_IN_TORCH))
    failed = [t for t in result.tests if t.status != "passed"]
    assert failed and {t.function for t in failed} == {"attention_torch"}, [(t.name, t.status) for t in failed]
    named = [t for t in failed if t.misconception == "answers_vary"]
    assert named, [(t.name, t.misconception, t.message) for t in failed]
    assert "same inputs" in named[0].explanation and "dropout" in named[0].explanation


def test_random_answers_grade_alike_in_two_sandboxes(grader, course, suite, tmp_path):
    # Each sandbox's zygote imports NumPy afresh, whose global generator would be seeded from the system.
    submission = read_submission(_with(tmp_path, "noise", NOISE_IN_SOFTMAX))
    first = grader.grade(submission)
    with Sandbox(probe("auto"), suite.assignment.preload, warmup=suite.assignment.warmup) as box:
        second = Grader(course, suite, box).grade(submission)
    assert first.score < first.max_score
    assert [(t.name, t.status, t.message, t.example) for t in first.tests] == [
        (t.name, t.status, t.message, t.example) for t in second.tests]
    assert "answers_vary" in {t.misconception for t in first.tests if t.function == "softmax"}
    assert any(t.function == "context" and t.status != "passed" for t in first.tests)


def test_a_repeated_call_that_fails_or_raises_names_nothing():
    call = Call("softmax", (np.zeros((2, 3)),))
    first = Reply(value=np.full((2, 3), 1 / 3))

    def stopped(_):
        raise CallFailed("stopped at its limit")
    assert not answers_vary([(call, first)], stopped)
    assert not answers_vary([(call, first)], lambda _: Reply(raised=Raised("ValueError", "no")))
    assert answers_vary([(call, first)], lambda _: Reply(value=np.zeros((2, 3))))
    assert not answers_vary([(call, Reply(raised=Raised("ValueError", "no")))], lambda _: Reply(value=np.zeros(1)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rounding_of_a_repeated_computation_is_not_a_different_answer(dtype):
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 5)).astype(dtype) * 100
    nudged = np.nextafter(a, np.inf, dtype=dtype)  # one unit in the last place
    assert not differ(a, nudged)
    assert not differ((TensorData(a, False, None), a), (TensorData(nudged, False, None), a))
    assert differ(a, a + dtype(1e-3) * np.abs(a).max())
    assert differ(a, a.astype(np.float16 if dtype is np.float32 else np.float32))
    assert differ((a, a), (a,))
    inf = a.copy()
    inf[0, 0] = np.inf
    assert not differ(inf, inf.copy()) and differ(inf, a)
