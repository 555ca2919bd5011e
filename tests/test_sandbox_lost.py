"""A sandbox ended from outside mid-submission (its zygote killed, as the kernel's out-of-memory killer does) is never
the student's crash: the file is graded again from the start in a fresh sandbox, or, ended twice, kept as an internal
error that the next run grades again. Real sandboxes, both kinds; the zygote is killed with SIGKILL from here while a
stream of the submission's calls is under way."""
from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from autograder.grading.grader import Grader
from autograder.grading.grader_faults import GRADED_AGAIN, LOST_TWICE
from autograder.grading.statuses import UNGRADED
from autograder.grading.submission import read_submission
from autograder.sandbox.protections import probe
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

from conftest import PLAIN, bwrap_works

pytestmark = pytest.mark.slow  # sandboxes of their own, started again after each kill
CALLS_BEFORE_THE_KILL = 5  # well into the first stream: the child has loaded and answered some calls


@pytest.fixture(scope="module", params=["bwrap", "fallback"])
def job(request, course, suite):
    """A Grader with a sandbox of its own, since its zygote is killed."""
    if request.param == "bwrap":
        if not bwrap_works():
            pytest.skip("bubblewrap is not installed or cannot start on this machine (apt-get install -y bubblewrap)")
        protections = probe("bwrap")
    else:
        protections = probe("fallback", python=request.getfixturevalue("public_python"))
    with Sandbox(protections, suite.assignment.preload) as box:
        yield Grader(course, suite, box)


def _kill_zygotes_in(monkeypatch, streams: int) -> list[int]:
    """The first `streams` streams of calls any Session sends kill their sandbox's zygote (SIGKILL, from here) once
    CALLS_BEFORE_THE_KILL calls are out; the pids killed."""
    killed: list[int] = []
    real_stream = Session.stream

    def stream(session, calls):
        if len(killed) >= streams:
            return real_stream(session, calls)
        return real_stream(session, _killing(session, calls))

    def _killing(session, calls):
        for sent, call in enumerate(calls):
            if sent == CALLS_BEFORE_THE_KILL and len(killed) < streams:
                killed.append(session.sandbox.zygote_pid())
                os.kill(killed[-1], signal.SIGKILL)
                _wait_until_dead(killed[-1])
            yield call

    monkeypatch.setattr(Session, "stream", stream)
    return killed


def _wait_until_dead(pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX":
                return
        except (OSError, IndexError):
            return
        time.sleep(0.01)
    raise AssertionError(f"the zygote {pid} outlived SIGKILL for 10 s")


def _no_crash(result) -> None:
    crashed = [(t.name, t.message) for t in result.tests if t.stopped == "crashed" or "worker process" in t.message]
    assert not crashed, crashed


def test_a_zygote_killed_mid_submission_has_it_graded_again_in_full(job, monkeypatch):
    """Before, the call under way read "stopped the worker process (it exited)" and the student lost that check as a
    crash of their own (98/100, no note, no regrade)."""
    killed = _kill_zygotes_in(monkeypatch, streams=1)
    result = job.grade(read_submission(PLAIN))
    assert len(killed) == 1, killed
    _no_crash(result)
    assert result.score == result.max_score == 100, [(t.name, t.message) for t in result.tests if t.score < t.max_score]
    assert GRADED_AGAIN in result.notes and not result.internal_error
    assert job.sandbox.zygote_pid() not in (0, killed[0])  # a fresh sandbox graded it
    monkeypatch.undo()
    after = job.grade(read_submission(PLAIN))
    assert after.score == 100 and GRADED_AGAIN not in after.notes


def test_a_zygote_killed_in_both_gradings_is_an_internal_error_graded_again_later(job, monkeypatch):
    """Ended again in the second grading: nothing is scored or charged to the student, the result is an internal
    error that says what happened and to grade again (the next `grade` does), and the next submission is graded."""
    killed = _kill_zygotes_in(monkeypatch, streams=2)
    result = job.grade(read_submission(PLAIN))
    assert len(set(killed)) == 2, killed
    _no_crash(result)
    assert LOST_TWICE in result.internal_error, result.internal_error
    assert {t.status for t in result.tests} == {UNGRADED} and result.score == 0
    monkeypatch.undo()
    after = job.grade(read_submission(PLAIN))
    assert after.score == 100 and not after.internal_error and GRADED_AGAIN not in after.notes


def test_a_sandbox_that_cannot_start_a_worker_is_never_stored_as_a_grade_of_the_file(job):
    """Every zygote killed as soon as it is seen, so the fresh sandbox cannot start a worker either. Before, a worker
    that could not start was stored as a grade: every check ungraded but the result no internal error, so the next
    `grade` skipped it as graded, and exports wrote a 0 for a file that never ran."""
    stop = threading.Event()

    def kill_every_zygote():
        while not stop.is_set():
            pid = job.sandbox.zygote_pid()
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)

    killer = threading.Thread(target=kill_every_zygote, daemon=True)
    killer.start()
    try:
        result = job.grade(read_submission(PLAIN))
    finally:
        stop.set()
        killer.join()
    _no_crash(result)
    # An internal error (nothing scored, graded again by the next run), or, where a child forked before a kill
    # outlived its zygote (the fallback has no PID namespace to end it with), the file's full grade: never a stored
    # grade of checks that never ran.
    if result.internal_error:
        assert {t.status for t in result.tests} == {UNGRADED} and result.score == 0
    else:
        assert result.score == 100 and UNGRADED not in {t.status for t in result.tests}, [
            (t.status, t.message) for t in result.tests]
    after = job.grade(read_submission(PLAIN))
    assert after.score == 100 and not after.internal_error
