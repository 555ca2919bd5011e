"""A timeout counts only when the call used its limit (grading.confirm), through the real sandbox.

A call held up by the machine (here: stopped from outside, as a stall of the
machine stops it) uses no processor time and waits for none; it is graded
again in a fresh worker, and that run is the grade. A function asleep in
time.sleep at its deadline, or one that loops, is not graded again; one idle
some other way (waiting on a thread of its own) is, and still times out.
"""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from autograder.authoring.checks import UNENDING_HINT
from autograder.grading import confirm
from autograder.grading.attempt import Attempt
from autograder.grading.explain import Judged
from autograder.grading.grader import Grader
from autograder.grading.results import CheckResult
from autograder.grading.statuses import PASSED, TIMEOUT
from autograder.grading.submission import read_submission
from autograder.sandbox.load_report import LoadReport
from autograder.sandbox.processes import parent_map
from autograder.sandbox.replies import CallTimedOut

from conftest import SUBMISSIONS, compose

# softmax's first call in each child stops its own process; the test's Thaw resumes it from outside.
HELD_UP = '''
import os as _os, signal as _signal
_held = []
_plain_softmax = softmax


def softmax(S):
    if not _held:
        _held.append(True)
        _os.kill(_os.getpid(), _signal.SIGSTOP)
    return _plain_softmax(S)
'''


class Thaw(threading.Thread):
    """Resumes the sandbox's stopped processes: the first after `hold` seconds, the later ones at once."""

    def __init__(self, zygote: int, hold: float):
        super().__init__(daemon=True)
        self.zygote, self.hold, self.resumed = zygote, hold, 0
        self.first: tuple[int, float] | None = None  # the first process held up, and when it is let go
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            for pid in _descendants(self.zygote):
                if _state(pid) != "T":
                    continue
                if self.first is None:
                    self.first = (pid, time.monotonic() + self.hold)
                if pid != self.first[0] or time.monotonic() >= self.first[1]:
                    self._resume(pid)
            time.sleep(0.001)

    def _resume(self, pid: int) -> None:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass  # the grader stopped it for good at its deadline meanwhile
        self.resumed += 1


def _descendants(root: int) -> list[int]:
    parents = parent_map()
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


@pytest.mark.slow  # a sandbox and a thread watching it for one test: make test runs it
def test_a_call_held_up_from_outside_costs_nothing(course, suite, sandbox, reference, tmp_path):
    path = tmp_path / "s0001.py"
    path.write_text(compose(tmp_path, "plain").read_text() + HELD_UP)
    grader = Grader(course, suite, sandbox, reference)
    sandbox.start()
    thaw = Thaw(sandbox.zygote_pid(), hold=0.6)  # longer than softmax's limit, far shorter than its budget
    thaw.start()
    try:
        result = grader.grade(read_submission(path, "s0001"))
    finally:
        thaw.done.set()
        thaw.join()
    assert thaw.resumed >= 2  # held up once, then resumed at once in every later child
    assert all(test.status == PASSED for test in result.tests), [(t.name, t.message) for t in result.tests
                                                                   if t.status != PASSED]
    assert any("graded again in a fresh worker" in note and "softmax." in note for note in result.notes)


def test_a_function_asleep_in_time_sleep_is_charged_at_once(course, suite, sandbox, reference, tmp_path):
    path = compose(tmp_path, "s0002", SUBMISSIONS / "attacks" / "sleep_in_function.py")
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path, "s0002"))
    timed_out = {test.name: test for test in result.tests if test.status == TIMEOUT}
    assert "context.lecture_example" in timed_out
    says = timed_out["context.lecture_example"].message
    assert "it was asleep (time.sleep) when it was stopped: take the sleep out of your code" in says
    assert UNENDING_HINT not in says  # the sleep is the cause: no loop to look for
    assert all(test.status == PASSED for test in result.tests if "context" not in test.name and
               not test.name.startswith("attention")), [t.name for t in result.tests if t.status != PASSED]
    assert not any("graded again" in note for note in result.notes), result.notes


# context waits for a thread of its own that sleeps: idle, but not asleep in a timer itself.
SLEEPS_IN_A_THREAD = '''
import threading as _threading, time as _time


def context(A, V):
    helper = _threading.Thread(target=_time.sleep, args=(1000,), daemon=True)
    helper.start()
    helper.join()
'''


def test_a_function_idle_otherwise_is_graded_again_and_still_times_out(course, suite, sandbox, reference, tmp_path):
    path = tmp_path / "s0004.py"
    path.write_text(compose(tmp_path, "plain").read_text() + SLEEPS_IN_A_THREAD)
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path, "s0004"))
    timed_out = {test.name: test for test in result.tests if test.status == TIMEOUT}
    assert "context.lecture_example" in timed_out
    assert "asleep" not in timed_out["context.lecture_example"].message
    # Waiting on its thread, it used little processor time: it is told it was waiting, not to look for a loop.
    message = timed_out["context.lecture_example"].message
    assert "it was waiting (for a thread or process it started, a lock or input)" in message
    assert UNENDING_HINT not in message
    assert any("graded again" in note and "context.lecture_example" in note for note in result.notes)


def test_a_function_that_loops_is_not_graded_again(course, suite, sandbox, reference, tmp_path):
    path = compose(tmp_path, "s0003", SUBMISSIONS / "attacks" / "infinite_loop_in_function.py")
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path, "s0003"))
    assert any(test.status == TIMEOUT for test in result.tests)
    assert not any("graded again" in note for note in result.notes), result.notes


def test_a_second_run_loaded_otherwise_decides_nothing_and_says_why(suite):
    entries = list(suite.checks[:5])
    first = LoadReport(frozenset({"softmax", "context"}))
    again = [object()]  # the second run's verdicts, passed through untouched when they count
    kept, note = confirm.decided(entries, first, LoadReport(frozenset({"softmax", "context"})), again)
    assert kept is again and note.endswith("were graded again in a fresh worker, and that run is your grade")
    assert "and 2 more checks" in note
    for second, why in [(LoadReport(frozenset(), failure="the worker could not start (no memory)"),
                         "could not load your file (the worker could not start (no memory))"),
                        (LoadReport(frozenset({"softmax"})), "did not define the same functions")]:
        kept, note = confirm.decided(entries, first, second, again)
        assert kept == [] and why in note and "the first run's verdicts stand" in note
        assert "that run is your grade" not in note


# Three functions wait on a thread of their own: a hold-up of the machine does not strike three functions' calls.
WAITS_IN_THREE_FUNCTIONS = SLEEPS_IN_A_THREAD + '''

def _waits():
    helper = _threading.Thread(target=_time.sleep, args=(1000,), daemon=True)
    helper.start()
    helper.join()


def softmax(S):
    _waits()


def score(Q, K, scale=None):
    _waits()
'''


def test_a_file_idle_in_many_functions_is_not_graded_again(course, suite, sandbox, reference, tmp_path):
    path = tmp_path / "s0007.py"
    path.write_text(compose(tmp_path, "plain").read_text() + WAITS_IN_THREE_FUNCTIONS)
    result = Grader(course, suite, sandbox, reference).grade(read_submission(path, "s0007"))
    assert {t.function for t in result.tests if t.status == TIMEOUT} >= {"score", "softmax", "context"}
    assert not any("graded again" in note for note in result.notes), result.notes
    assert confirm.HELD_UP_FUNCTIONS < 3


def test_calls_held_up_in_many_functions_are_graded_again_and_waits_of_their_own_are_not(suite):
    # A machine that stops a grading job's processes now and then (a paused virtual machine, swapping) leaves them
    # stopped, or in a disk wait, never asleep in a wait they asked for: such timeouts in three functions had cost a
    # correct file 5 and 7 points, told it was waiting for a thread of its own.
    entries = {entry.function: entry for entry in suite.checks}
    functions = ("score", "softmax", "context")

    def judged(resting: bool) -> list:
        found = []
        for function in functions:
            stopped = CallTimedOut(f"{function} did not return")
            stopped.idle, stopped.resting = True, resting
            found.append(Judged(entries[function], CheckResult(entries[function].name, function, "hidden", TIMEOUT,
                                                               0.0, 1.0), Attempt(TIMEOUT, stopped=stopped)))
        return found
    assert [entry.function for entry in confirm.to_run_again(judged(resting=False))] == list(functions)
    assert confirm.to_run_again(judged(resting=True)) == []
    assert [e.function for e in confirm.to_run_again(judged(resting=True)[:2])] == list(functions[:2])
