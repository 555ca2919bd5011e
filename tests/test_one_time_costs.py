"""Issue 21: a one-time cost (a library's lazy import on a first call) is not slowness.

The zygote runs the assignment's warm-up (course.yaml `warmup`) before any submission, and a call
still importing at its limit is stopped and timed again warm in a fresh child, once a warm-up run on
other inputs (up to `one_time_seconds`) has paid the cost (sandbox.grace). A hang still costs only its
own checks, and saying "importing" buys a slow function nothing. Everything runs in the real sandbox.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from autograder.authoring.protocol import Call
from autograder.grading.course import CourseError, load_course
from autograder.grading.explain import stopped_advice
from autograder.grading.grader import Grader
from autograder.grading.stopped_functions import LARGE_WORK, StoppedFunctions, input_bytes
from autograder.grading.submission import read_submission
from autograder.sandbox.limits import Limits
from autograder.sandbox.protections import SandboxError, probe
from autograder.sandbox.replies import CallTimedOut
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

from conftest import ROOT, SUBMISSIONS, compose, module_spec

CORRECT = SUBMISSIONS / "correct"
STUDENTS = ("s0001", "s0002", "s0003")

# Modules whose import takes `seconds` of work, written in the child's scratch directory at load. Processor
# time, as a real import's work is: on a loaded machine, time spent waiting for a processor is given back to
# a call (sandbox.waiting), so a loop timed by the wall clock would finish early in processor time.
_SLOW_MODULES = '''
import os, sys, time
import numpy as np
import torch

def _write(name, seconds):
    with open(f"{name}.py", "w") as module:
        module.write(f"import time\\n_until = time.process_time() + {seconds}\\n"
                     "while time.process_time() < _until:\\n    pass\\n")

for _name in ("slow_a", "slow_b", "slow_c", "slow_d"):
    _write(_name, 0.6)
sys.path.insert(0, os.getcwd())

def imports_once(x):
    import slow_a
    return x + 1

def imports_then_hangs(x):
    import slow_b
    while True:
        pass

def imports_and_is_always_slow(x):
    import slow_c
    time.sleep(0.5)
    return x

def imports_with_an_int(n):
    import slow_d
    return n + 1

def hangs(x):
    while True:
        pass

_NUMPY_RANDOM_AT_LOAD = "numpy.random" in sys.modules  # NumPy 2 imports it on first use


def numpy_random_at_load(x):
    return np.array(_NUMPY_RANDOM_AT_LOAD)


_answers = {}


def says_it_imports_and_keeps_its_answers(x):
    # The worker's word is the student's: a failed import of a module that does not exist says "importing".
    key = x.tobytes()
    kept = f"/tmp/answer-{hash(key)}.npy"
    if key in _answers:
        return _answers[key]
    if os.path.exists(kept):
        return np.load(kept)
    try:
        import no_such_module_anywhere  # noqa: F401
    except ImportError:
        pass
    until = time.process_time() + 0.6
    while time.process_time() < until:
        pass
    _answers[key] = x + 1
    np.save(kept, x + 1)
    return x + 1


def first_broadcast(x):
    started = time.perf_counter()
    torch.broadcast_shapes((2, 1), (1, 3))
    return np.array(time.perf_counter() - started)
'''
LIMITS = Limits(call_seconds=0.3, one_time_seconds=1.5)
X = np.zeros(2)


def _spec(tmp_path: Path) -> dict:
    return module_spec(tmp_path, _SLOW_MODULES)


def _timed(session: Session, function: str):
    started = time.monotonic()
    try:
        return session.call(Call(function, (X,))), time.monotonic() - started
    except CallTimedOut as timeout:
        return timeout, time.monotonic() - started


@pytest.fixture(scope="module")
def cold_sandbox(suite):
    """A sandbox whose zygote runs no warm-up: what the safety net in Session.call alone must cover."""
    with Sandbox(probe("auto"), suite.assignment.preload) as box:
        yield box


def test_the_warm_up_loads_what_a_first_call_would(sandbox, cold_sandbox, tmp_path):
    spec = _spec(tmp_path)
    with Session(sandbox, spec, Limits()) as warm, Session(cold_sandbox, spec, Limits()) as cold:
        assert not warm.open().failure and not cold.open().failure
        warm_first = float(warm.call(Call("first_broadcast", (X,))).value)
        cold_first = float(cold.call(Call("first_broadcast", (X,))).value)
        random_loaded = [bool(s.call(Call("numpy_random_at_load", (X,))).value) for s in (warm, cold)]
    assert warm_first < 0.02 < 0.1 < cold_first  # sympy, imported in the zygote or on the first call
    # numpy.random: drawn from in the warm-up, and seeded in every zygote (sandbox.libraries.seed_random), so that
    # a file drawing from it gets the same numbers in every run
    assert random_loaded == [True, True]


def test_a_warm_up_that_fails_stops_grading_and_names_its_statement(suite):
    with pytest.raises(SandboxError) as raised:
        Sandbox(probe("auto"), suite.assignment.preload, warmup=("import torch", "import no_such_module_here")).start()
    assert "warmup[1]" in str(raised.value) and "no_such_module_here" in str(raised.value)
    assert "course.yaml" in str(raised.value)


def test_a_warm_up_line_that_is_not_python_is_a_course_error(tmp_path):
    text = (ROOT / "course.yaml").read_text().replace("      - import numpy as np\n", "      - import numpy as\n", 1)
    (tmp_path / "course.yaml").write_text(text)
    with pytest.raises(CourseError, match=r"assignments\.w07_attention\.warmup\[0\]: is not a Python statement"):
        load_course(tmp_path / "course.yaml")


def test_an_import_past_the_limit_is_timed_again_warm_and_a_restart_is_not_charged_again(cold_sandbox, tmp_path):
    with Session(cold_sandbox, _spec(tmp_path), LIMITS) as session:
        assert not session.open().failure
        reply, seconds = _timed(session, "imports_once")
        assert reply.value.tolist() == [1.0, 1.0] and 0.6 < seconds < 2.5  # stopped at 0.3 s, then 0.6 s warming up
        # A hang that imports nothing is stopped at its limit, as before, and restarts the child.
        timeout, seconds = _timed(session, "hangs")
        assert isinstance(timeout, CallTimedOut) and seconds < 1.0
        assert str(timeout) == "hangs did not return within 0.3 s and was stopped"
        # The new child pays the import again; the submission is not charged for it again.
        reply, seconds = _timed(session, "imports_once")
        assert reply.value.tolist() == [1.0, 1.0] and 0.6 < seconds < 2.5


def test_a_call_that_hangs_after_importing_uses_up_the_grace(cold_sandbox, tmp_path):
    with Session(cold_sandbox, _spec(tmp_path), LIMITS) as session:
        assert not session.open().failure
        timeout, seconds = _timed(session, "imports_then_hangs")
        assert isinstance(timeout, CallTimedOut) and 1.5 <= seconds < 5.0  # its limit, then the warm-up's 1.5 s
        assert str(timeout).startswith("imports_then_hangs did not return within its limit of 0.3 s. It was still "
                                       "importing modules then (a one-time cost), so a fresh process ran it on "
                                       "other inputs first, with up to 1.5 s")
        assert str(timeout).endswith("gave no reply either: imports_then_hangs did not return within 1.5 s and was "
                                     "stopped")
        assert not timeout.at_limit  # ends on the warm-up's 1.5 s: the grader compares no limit with the reference
        # Once used up, no call is given more time: an import past the limit now costs the call.
        timeout, seconds = _timed(session, "imports_once")
        assert isinstance(timeout, CallTimedOut) and seconds < 1.0
        assert str(timeout) == "imports_once did not return within 0.3 s and was stopped"


def test_a_call_slow_again_when_warm_is_slow_and_the_message_says_it_was_run_twice(cold_sandbox, tmp_path):
    with Session(cold_sandbox, _spec(tmp_path), LIMITS) as session:
        assert not session.open().failure
        timeout, _ = _timed(session, "imports_and_is_always_slow")
        assert isinstance(timeout, CallTimedOut)
        assert str(timeout) == ("imports_and_is_always_slow was still importing modules at its limit (a one-time "
                                "cost), so it was run again in a fresh process once that cost was paid; "
                                "imports_and_is_always_slow did not return within 0.3 s and was stopped")


def test_a_call_with_no_float_array_to_draw_afresh_is_not_warmed_up_and_says_why(cold_sandbox, tmp_path):
    """Its warm-up would be the call itself, whose answer the timed run could hand back: it is stopped at its limit,
    told to import at the top of the file (and nothing else to look for), and the grace stays for the submission's
    other calls."""
    with Session(cold_sandbox, _spec(tmp_path), LIMITS) as session:
        assert not session.open().failure
        started = time.monotonic()
        with pytest.raises(CallTimedOut) as stopped:
            session.call(Call("imports_with_an_int", (3,)))
        # Importing is the known cause: its advice alone, not also to look for a loop that never ends.
        assert stopped_advice(stopped.value) == ("import what the function needs at the top of the file, where "
                                                 "loading pays for it")
        assert time.monotonic() - started < 1.0
        assert str(stopped.value).startswith("imports_with_an_int did not return within 0.3 s and was stopped. It "
                                             "was still importing modules then (a one-time cost), but its arguments "
                                             "hold no floating-point array")
        assert session.grace.available
        reply, _ = _timed(session, "imports_once")
        assert reply.value.tolist() == [1.0, 1.0]


def test_saying_importing_buys_a_slow_function_nothing_however_it_keeps_its_answers(cold_sandbox, tmp_path):
    """A function that says it imports, works for 0.6 s, and keeps its answer in memory and in /tmp: the run that
    is timed is in a fresh child, after a warm-up on inputs it could not know, so it is as slow again. Each try
    costs the student time, and the grace goes with the first."""
    with Session(cold_sandbox, _spec(tmp_path), LIMITS) as session:
        assert not session.open().failure
        timeout, _ = _timed(session, "says_it_imports_and_keeps_its_answers")
        assert isinstance(timeout, CallTimedOut)
        assert str(timeout).startswith("says_it_imports_and_keeps_its_answers was still importing modules at its "
                                       "limit (a one-time cost), so it was run again in a fresh process")
        assert not session.grace.available
        timeout, seconds = _timed(session, "says_it_imports_and_keeps_its_answers")
        assert isinstance(timeout, CallTimedOut) and seconds < 1.0  # no grace left: stopped at its limit


# ------------------------------------------------------------------ graded with calibrated limits


def _lost(result):
    return [(t.name, t.message) for t in result.tests if t.status != "passed"]


@pytest.mark.slow  # the same grading under many seeds: make test runs it
def test_a_first_call_import_of_half_a_second_costs_nothing_under_every_seed(course, suite, sandbox, reference):
    grader = Grader(course, suite, sandbox, reference)
    for student in STUDENTS:
        result = grader.grade(read_submission(CORRECT / "first_call_import.py", student))
        assert _lost(result) == [], student


@pytest.mark.slow  # a subprocess or a sandbox of its own for one test: make test runs it
def test_broadcast_shapes_on_a_first_call_costs_nothing_even_without_the_warm_up(course, suite, cold_sandbox,
                                                                                 reference):
    grader = Grader(course, suite, cold_sandbox, reference)
    for student in STUDENTS:
        result = grader.grade(read_submission(CORRECT / "broadcast_shapes_mask.py", student))
        assert _lost(result) == [], student


def test_restarts_after_a_hang_do_not_charge_the_import_again(course, suite, sandbox, reference, tmp_path):
    """additive_score hangs on the hidden inputs only, after attention_torch paid its import; each hang restarts
    the child, which pays the import again at attention_torch's next call."""
    hang = tmp_path / "hang.py"
    hang.write_text("def additive_score(Q, K, W_q, W_k, v, b):\n"
                    "    while len(Q) > 1:\n"
                    "        pass\n"
                    "    return np.tanh((Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :] + b) @ v\n")
    text = (CORRECT / "first_call_import.py").read_text() + "\n\n" + hang.read_text()
    path = tmp_path / "s0004.py"
    path.write_text(text)
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path))
    lost = _lost(result)
    assert {name for name, _ in lost} == {"additive_score.matches_reference"}, lost
    assert "did not return within 0.1 s and was stopped" in lost[0][1]


def test_a_hang_costs_no_more_time_than_before(course, suite, sandbox, reference, tmp_path):
    """A function that never returns, and imports nothing, is stopped at its limit: no grace is spent on it."""
    hang = tmp_path / "hang.py"
    hang.write_text("def softmax(S):\n    while True:\n        pass\n")
    limits = Grader(course, suite, sandbox, reference).time_limits
    result = Grader(course, suite, sandbox, reference).grade(read_submission(compose(tmp_path, "s0005", hang)))
    first = next(t for t in result.tests if t.function == "softmax" and t.status == "timeout" and t.seconds)
    assert first.seconds < limits[first.name].seconds + 0.5
    assert sum(t.seconds for t in result.tests if t.function == "softmax") < 1.5
    uses = {entry.name: set(entry.check.functions) for entry in suite.checks}
    assert all(uses[t.name] & {"softmax", "attention"} for t in result.tests if t.status != "passed")
    assert limits[first.name].seconds < 1  # calibrated, not call_seconds
    # Stopped on small work, it is called once more (it might hang on that input only); stopped again, it is not
    # called after that. The checks not run say so, and where, not the stopped calls' account again.
    stopped = [t for t in result.tests if t.function == "softmax" and t.status == "timeout"
               and not t.message.startswith("not run")]
    assert len(stopped) == 2, [(t.name, t.message) for t in stopped]
    skipped = [t.message for t in result.tests if t.function == "softmax" and t.message.startswith("not run")]
    assert skipped and all(m.startswith(f"not run: softmax was stopped at its time limit in {first.name} and again in "
                                        f"{stopped[1].name}, so it was not called again")
                           for m in skipped), skipped
    assert not any("processor time" in m for m in skipped)


def test_a_score_looping_in_python_is_named_on_its_scale_check_only(course, suite, sandbox, reference, tmp_path):
    """A timeout has no values: the idea is named where score's small checks all passed and its scale check timed
    out, and nowhere else (attention's scale check times out too, for a reason attention's checks cannot see)."""
    path = compose(tmp_path, "s0006", SUBMISSIONS / "slow" / "score_grid_loop.py")
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path))
    named = {t.name: t.misconception for t in result.tests if t.misconception}
    assert named == {"score.long_sequence": "score_python_loops"}
    check = next(t for t in result.tests if t.name == "score.long_sequence")
    assert check.status == "timeout" and "did not return within" in check.message
    assert "vectorize" in check.explanation and "not with Python loops" in check.explanation
    assert check.explanation.endswith("slide 24.")


_SAYS_IT_IMPORTS = '''
import hashlib
_slow_score, _answers = score, {}


def score(Q, K, scale=None):
    """The Python loop of score_grid_loop.py, saying "importing" (a module that does not exist) on every new call
    and keeping every answer, so that a run again of the same call would be answered at once."""
    key = (hashlib.sha256(np.ascontiguousarray(Q).tobytes() + np.ascontiguousarray(K).tobytes()).hexdigest(),
           repr(scale))
    if key not in _answers:
        try:
            import no_such_module_anywhere  # noqa: F401
        except ImportError:
            pass
        _answers[key] = _slow_score(Q, K, scale)
    return _answers[key].copy()
'''


def test_a_python_loop_that_says_it_imports_still_times_out_at_scale(course, suite, sandbox, reference, tmp_path):
    """score_grid_loop.py with the trick above loses the same scale checks as without it, and only those."""
    path = compose(tmp_path, "s0007", SUBMISSIONS / "slow" / "score_grid_loop.py")
    path.write_text(path.read_text() + "\n\n" + _SAYS_IT_IMPORTS)
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path))
    lost = {t.name: t for t in result.tests if t.status != "passed"}
    assert set(lost) == {"score.long_sequence", "attention.long_sequence"}, _lost(result)
    assert all(t.status == "timeout" for t in lost.values())
    assert "run again in a fresh process once that cost was paid" in lost["score.long_sequence"].message


def test_a_warm_up_cannot_read_the_call_it_warms_up(course, suite, sandbox, reference, tmp_path):
    """tests/fixtures/submissions/grace/peek_ahead.py reads the socket, during its warm-up, for the call behind it:
    nothing is sent while a warm-up runs, so it loses the scale checks a plain Python loop loses (it had full marks
    while the call was sent right behind its warm-up)."""
    path = compose(tmp_path, "s0008", SUBMISSIONS / "slow" / "score_grid_loop.py")
    path.write_text(path.read_text() + "\n\n" + (SUBMISSIONS / "grace" / "peek_ahead.py").read_text())
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path))
    lost = {t.name: t.status for t in result.tests if t.status != "passed"}
    assert lost == {"score.long_sequence": "timeout", "attention.long_sequence": "timeout"}, _lost(result)


_IMPORTS_THEN_HANGS = '''
def softmax(S):
    try:
        import no_such_module_at_all  # noqa: F401 - the worker reports the import: the call is "importing"
    except ImportError:
        pass
    while True:
        pass
'''


def test_a_warm_up_that_runs_out_of_time_is_not_compared_with_the_reference(course, suite, sandbox, reference,
                                                                            tmp_path):
    """Its message ends on the warm-up's own time (5 s), so the limit's ratio to the reference's time, which the
    grader adds to a timeout at the call's limit, would read as that of the 5 s: it is left out."""
    path = compose(tmp_path, "s0006", CORRECT / "plain.py")
    path.write_text(path.read_text() + "\n\n" + _IMPORTS_THEN_HANGS)
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path))
    first = next(t for t in result.tests if t.function == "softmax" and t.status == "timeout")
    assert "that run gave no reply either" in first.message and "× the reference's" not in first.message, first.message


def test_a_function_that_hangs_on_one_input_only_keeps_its_other_checks(course, suite, sandbox, reference, tmp_path):
    """A softmax that loops for ever looking for a visible key, which an all-masked row has none of: stopped on that
    small input, it is called again on its other checks, which it passes. Its other checks had been not run, as
    if it hung everywhere: 79 points where returning NaN there gets 95."""
    hang = tmp_path / "hang_all_masked.py"
    hang.write_text("def softmax(S):\n    S = np.asarray(S)\n    rows = S.reshape(-1, S.shape[-1])\n"
                    "    for row in rows:\n        j = 0\n        while not np.isfinite(row[j]):\n"
                    "            j = (j + 1) % row.shape[0]\n"
                    "    e = np.exp(S - S.max(axis=-1, keepdims=True))\n    return e / e.sum(axis=-1, keepdims=True)\n")
    result = Grader(course, suite, sandbox, reference).grade(read_submission(compose(tmp_path, "s0007", hang)))
    lost = {t.name for t in result.tests if t.status != "passed"}
    assert lost == {"softmax.all_masked_raises", "softmax.all_masked_anywhere", "attention.all_masked_raises"}, lost


def test_which_checks_a_stopped_function_still_runs_is_decided_by_sizes_not_timings():
    # Small work is a few kilobytes and large work (T = 512) half a megabyte: the same in every run, where the
    # reference's timings had put attention_torch's checks (0.7-1.3 ms) on either side of the line.
    small, large = 2_000, 600_000
    hang = StoppedFunctions()
    hang.record("softmax", small, "softmax.lecture_example")
    assert hang.not_run(("softmax",), small) == "" and hang.not_run(("softmax",), 10) == ""  # may hang there only
    hang.record("softmax", 5_000, "softmax.last_axis")
    assert all(hang.not_run(("attention", "softmax"), size).startswith("not run: softmax was stopped at its time "
                                                                       "limit in softmax.lecture_example and again")
               for size in (10, small, large, None))
    slow = StoppedFunctions()
    slow.record("score", large, "score.long_sequence")
    assert slow.not_run(("score",), small) == ""  # a loop over the grid is quick on small inputs
    assert "on work at least as large" in slow.not_run(("score",), large)
    assert slow.not_run(("score",), None) != "" and slow.not_run(("softmax",), large) == ""
    assert input_bytes([Call("score", (np.zeros((2, 512, 64), np.float32), np.zeros((2, 512, 64), np.float32)))]) \
        == 2 * 2 * 512 * 64 * 4 > LARGE_WORK > input_bytes([Call("score", (np.zeros((2, 3, 5, 6)),))])
