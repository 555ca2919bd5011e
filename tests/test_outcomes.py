"""Issue 23: how a call stopped is a value (sandbox.replies.Stopped) carried on its exception, and each
status word means one thing (grading.statuses). Every outcome here comes from a real sandboxed call.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from autograder.authoring.protocol import Call
from autograder.grading.grader import Grader
from autograder.grading.grader_faults import internal_error_result
from autograder.grading.statuses import ERROR, MEANINGS, STATUSES, TIMEOUT, UNGRADED
from autograder.grading.submission import read_submission
from autograder.outputs.gradescope import gradescope_results
from autograder.sandbox.limits import Limits
from autograder.sandbox.replies import CallFailed, Stopped
from autograder.sandbox.session import Session

from conftest import compose

# One function per way a call can end without a usable reply.
_STOPS = '''
import os, time
import numpy as np

def hangs(x):
    while True:
        pass

def exits(x):
    os._exit(3)

def floods(x):
    while True:
        print("x" * 4096)

def answers_too_much(x):
    return np.zeros(5 << 20)  # 40 MB, past any reply to a call this small

def leaves_a_process(x):
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
    return x
'''
LIMITS = Limits(call_seconds=0.5, max_output_mib=1)
X = np.zeros(2)


def _stopped(session: Session, function: str, seconds: float | None = None) -> CallFailed:
    with pytest.raises(CallFailed) as raised:
        session.call(Call(function, (X,), seconds=seconds))
    return raised.value


@pytest.fixture
def spec(tmp_path: Path, suite) -> dict:
    path = tmp_path / "stops.py"
    path.write_text(_STOPS)
    return read_submission(path).worker_spec(suite.assignment.module)


def test_each_way_a_call_stops_is_the_value_on_its_exception(sandbox, spec):
    with Session(sandbox, spec, LIMITS) as session:
        assert not session.open().failure
        cases = {"hangs": (Stopped.TIMEOUT, None), "exits": (Stopped.CRASHED, ("exit", 3)),
                 "floods": (Stopped.CRASHED, None), "answers_too_much": (Stopped.REJECTED, None),
                 "leaves_a_process": (Stopped.LEFT_RUNNING, None)}
        seen = {function: (stopped.how, stopped.ended)
                for function, stopped in ((f, _stopped(session, f)) for f in cases)}
    assert seen == cases
    assert not Stopped.CRASHED.timed_out and Stopped.TIMEOUT.timed_out


def test_a_call_the_submissions_budget_stops_is_told_apart_from_one_past_its_own_limit(sandbox, spec):
    with Session(sandbox, spec, LIMITS, budget=1.5) as session:
        assert not session.open().failure
        stopped = _stopped(session, "hangs", seconds=5.0)
    assert stopped.how is Stopped.BUDGET and stopped.how.timed_out
    assert "budget" in str(stopped)


@pytest.fixture
def quick(course, suite, sandbox):
    """The real grader on two functions' first checks, each call limited to 0.3 s."""
    limits = dataclasses.replace(suite.assignment.limits, call_seconds=0.3, max_output_mib=1)
    checks = [next(e for e in suite.checks if e.function == f) for f in ("softmax", "score")]
    return Grader(course, dataclasses.replace(suite, checks=checks,
                                              assignment=dataclasses.replace(suite.assignment, limits=limits)),
                  sandbox)


def test_the_grader_classifies_a_timeout_by_its_value_and_stores_the_values_word(quick, tmp_path):
    hang = tmp_path / "hang.py"
    hang.write_text("def softmax(S):\n    while True:\n        pass\n")
    result = quick.grade(read_submission(compose(tmp_path, "s1", hang)))
    check = next(t for t in result.tests if t.function == "softmax")
    assert (check.status, check.stopped) == (TIMEOUT, Stopped.TIMEOUT.value)
    assert quick.time_limits[check.name].seconds == 0.3  # the Grader's limits are time limits, by name


def test_a_flood_on_every_check_is_the_codes_own_and_not_blamed_on_the_environment(quick, tmp_path):
    """Only a death the worker had on its own, alike on every check, points at the environment."""
    flood = tmp_path / "flood.py"
    flood.write_text("def softmax(S):\n    while True:\n        print('x' * 4096)\n\n"
                     "def score(Q, K, scale=None):\n    return softmax(Q)\n")
    result = quick.grade(read_submission(compose(tmp_path, "s2", flood)))
    assert not result.internal_error, result.internal_error
    assert [(t.status, t.stopped) for t in result.tests] == [(ERROR, Stopped.CRASHED.value)] * 2


def test_a_check_the_grader_could_not_run_is_ungraded_not_an_error_of_the_students(suite):
    """An "error" is the student's code's; a grader's own failure has a word of its own, and says nothing
    to the student about their code."""
    result = internal_error_result("s3", suite, "s3.py", "", "Traceback: a bug", 0.1, "fallback")
    assert {t.status for t in result.tests} == {UNGRADED}
    summary = gradescope_results(result)["output"]
    assert "error in your code" not in summary
    assert set(STATUSES) == set(MEANINGS) and len(set(MEANINGS.values())) == len(STATUSES)
