"""Results for a submission whose grading failed through no fault of the file's own.

Either the grader itself failed on it (a bug, something no check foresaw), or the
environment broke every call the same way (a memory limit the libraries' build
exceeds, a broken library), which a plain file's call confirms. Either way the result says nothing about the student:
it scores nothing, is flagged with the details for the instructor, and the next
run grades the file again.
"""
from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable

from autograder.grading.echo_child import preload_in_child
from autograder.grading.explain import Judged
from autograder.grading.results import CheckResult, SubmissionResult
from autograder.grading.statuses import UNGRADED
from autograder.grading.suite import Suite
from autograder.sandbox.load_report import LoadReport
from autograder.sandbox.protections import Protections
from autograder.sandbox.replies import SandboxLost, Stopped, how_it_ended
from autograder.sandbox.zygote import Sandbox

INTERNAL_ERROR = ("internal error: the grader failed on this submission (not because of your code); your "
                  "instructor has the details and will grade it again")

GRADED_AGAIN = ("the sandbox this file was being graded in was ended from outside (the machine ran short of memory, "
                "or it was killed), not by your code: the file was graded again from the start in a fresh sandbox, "
                "and these are the results of that grading")
LOST_TWICE = ("the sandbox was ended from outside, or could not start a worker, twice while this file was graded "
              "(its zygote died with a call under way, which the kernel's out-of-memory killer does when the machine "
              "runs out of memory, or something killed it); nothing was charged to the student. See what ended it "
              "(`dmesg` names what the out-of-memory killer ended), leave the machine more memory (fewer --jobs, "
              "fewer other programs), then run `autograder grade` again: it grades this file again")


def again_if_sandbox_lost(grade: Callable[[], SubmissionResult], sandbox: Sandbox | None,
                          lost: Callable[[str], SubmissionResult]) -> SubmissionResult:
    """What `grade` gives, graded once more from the start in a fresh sandbox where the first grading's sandbox died
    under it (sandbox.replies.SandboxLost), with a note that says so. A second such death gives `lost(why)`, an
    internal error that the next run grades again: never the student's crash, which it had read as before."""
    try:
        return grade()
    except SandboxLost:
        if sandbox is not None:
            sandbox.close()  # started afresh by the next session (Sandbox.spawn)
    try:
        result = grade()
    except SandboxLost as again:
        return lost(f"{LOST_TWICE}. ({again})")
    return dataclasses.replace(result, notes=(*result.notes, GRADED_AGAIN))


def started(load: LoadReport) -> LoadReport:
    """`load`, unless no child of the sandbox began it through the sandbox's failure (LoadReport.started): then
    SandboxLost, so the file is graded again in a fresh sandbox (`again_if_sandbox_lost`), never stored as a
    grade of the file."""
    if not load.started:
        raise SandboxLost(load.failure)
    return load


def sandbox_fields(protections: Protections | None) -> dict:
    """A result's `sandbox` and `isolated` for code run under `protections` (None: no sandbox started).

    The one place grading decides whether a sandbox isolated strongly; outputs read `isolated`.
    """
    if protections is None:
        return {"sandbox": "", "isolated": False}
    return {"sandbox": protections.kind.name, "isolated": protections.kind.strong_isolation}


def internal_error_result(student: str, suite: Suite, file: str, sha256: str, details: str, seconds: float,
                          sandbox: str, isolated: bool = False) -> SubmissionResult:
    """The result of a submission the grader itself failed on: zero, flagged, with the traceback kept."""
    tests = tuple(CheckResult(name=e.name, function=e.function, visibility=e.visibility, status=UNGRADED,
                              score=0.0, max_score=e.points, message=INTERNAL_ERROR) for e in suite.checks)
    return SubmissionResult(
        student=student, assignment=suite.assignment.name, file=file, sha256=sha256,
        suite_version=suite.version, seed=0, sandbox=sandbox, isolated=isolated, tests=tests, problem=INTERNAL_ERROR,
        seconds=seconds, graded_at=now(), internal_error=details or "(no traceback)")


def now() -> str:
    """The time a result is stamped with (UTC, to the second)."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def blame_environment(result: SubmissionResult, suite: Suite, judged: list[Judged],
                      sandbox: Sandbox | None = None) -> SubmissionResult:
    """An internal error instead of `result` when the worker died on every check (`judged`), the same way,
    and the sandbox cannot run a plain file's call either.

    No file makes every function fail identically by accident; a worker that cannot map a call's arguments
    (a memory limit the libraries' build exceeds) or a broken library does. Such a result says nothing
    about the student, so it is kept for the instructor and graded again by the next run. Only a death
    the worker had on its own counts (CallFailed.ended): a flood or processes left running are the code's.
    But a file can do it on purpose (every function calling os._exit), so the environment is asked first:
    a child of `sandbox` that imports the preload and answers a call (grading.echo_child). If it answers,
    the sandbox runs calls, and the deaths were the file's own: `result` stands, with a note that says so.
    """
    ways = {_death(one) for one in judged}
    functions = {one.entry.function for one in judged}
    if len(functions) < 2 or len(ways) != 1 or None in ways:
        return result
    how = how_it_ended(ways.pop())
    control = ""
    if sandbox is not None:
        _, problem = preload_in_child(suite, sandbox)
        if not problem:
            note = (f"every call of your functions ended the worker process the same way ({how}), while a plain "
                    "file's call in the same sandbox was answered: your code ended the process (os._exit, or a "
                    "crash in the functions it calls)")
            return dataclasses.replace(result, notes=(*result.notes, note))
        control = f"; a plain file's call failed too ({problem})"
    details = (f"the worker died on all {len(judged)} checks, in {len(functions)} functions, the same way "
               f"({how}){control}: the grading environment, not this file, is the likely cause. Run "
               f"`autograder doctor`. The worker's output:\n{result.printed}")
    return internal_error_result(result.student, suite, result.file, result.sha256, details, result.seconds,
                                 result.sandbox, result.isolated)


def _death(one: Judged) -> tuple | None:
    """How the worker died on its own on the check's calls (CallFailed.ended), or None if it did not."""
    stopped = one.tried.stopped if one.tried is not None else None
    return stopped.ended if stopped is not None and stopped.how is Stopped.CRASHED else None
