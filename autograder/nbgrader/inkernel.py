"""Checks inside a Jupyter kernel, for nbgrader's test cells.

nbgrader runs a notebook's tests in the student's own kernel: student code
and tests share one process and there is no sandbox (that is nbgrader's
design, not something this module can change). To give nbgrader the same
verdicts as `autograder grade`, the checks run here through the sandbox's
own message path: each Call is encoded by `session.request_frame` and framed
by `wire.pack`, answered by `worker._call` against the notebook's globals,
and the reply framed back and decoded by `session.read_reply`. Arguments are
therefore fresh copies, replies are plain data, and every comparison and
message is the one `autograder grade` produces. A per-call alarm stands in
for the sandbox's deadline, and output printed by student functions is kept
out of the cell (nbgrader scores a test cell 0 if anything reaches stderr).

What this cannot do is protect the checks from the student's code, which can
patch anything in this process; `autograder grade` is the trustworthy grade
(README, "Instructors", says where the two can differ).

A notebook test cell has two parts:
- `check_function(function, globals())`: the public checks, read from the
  released folder; raises when one fails, so students and `nbgrader
  validate` see the cell fail (except while nbgrader autogrades);
- `grade_function(assignment, function, globals())`, in the cell's hidden
  region: every check of the function for this student, with the seed
  `autograder grade` uses; returns the points earned, which nbgrader records
  as the cell's partial credit.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

from autograder.authoring.checks import student_seed
from autograder.authoring.protocol import Call, Reply
from autograder.grading.course import Course, CourseError, find_course, load_course
from autograder.grading.grader import Grader
from autograder.grading.manifest import public_course
from autograder.grading.results import CheckResult
from autograder.grading.suite import Suite, load_public_suite, load_suite
from autograder.outputs.terminal import format_check
from autograder.sandbox import wire, worker
from autograder.sandbox.replies import CallTimedOut, read_reply, reply_limit, request_frame, too_large
from autograder.sandbox.session import CapturedOutput, Limits, LoadReport

GRADING = "autograde"  # NBGRADER_EXECUTION's value while `nbgrader autograde` runs a notebook
COURSE_VARIABLE = "AUTOGRADER_COURSE"  # path to course.yaml when it is not above the notebook's folder
WORKER_FRAME_LIMIT = 1 << 30  # what worker._serve accepts from the grader


class ChecksFailed(AssertionError):
    """Public checks of a function failed: the test cell fails, as an nbgrader test cell does."""


class _Deadline(BaseException):
    """Raised into a student function at its time limit (BaseException, so `except Exception` lets it pass)."""


@dataclass
class _Alarm:
    """A one-shot per-call deadline by SIGALRM: in the main thread on POSIX; elsewhere there is none.

    One-shot on purpose: once it has rung it cannot ring again, so a ring
    that lands while it is being disarmed is absorbed by a second disarm and
    never escapes into the kernel's own code, which would kill the kernel.
    A function that catches the alarm and runs on is left to nbgrader's cell
    timeout; its call still counts as timed out.
    """

    seconds: float
    rang: bool = False
    _previous: object = None
    _installed: bool = False

    def arm(self) -> None:
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            return
        self._previous = signal.signal(signal.SIGALRM, self._ring)
        self._installed = True
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def disarm(self) -> None:
        if not self._installed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        self._installed = False

    def _ring(self, _signum, _frame):
        self.rang = True
        raise _Deadline()


class _CapturedText(io.TextIOBase):
    """A text stream into a CapturedOutput: keeps the first bytes, counts the rest."""

    def __init__(self, output: CapturedOutput):
        super().__init__()
        self._output = output

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._output.add(str(text).encode(errors="replace"))
        return len(text)


@dataclass
class KernelSession:
    """Calls functions of a notebook's namespace in this process, through the sandbox's message code.

    namespace: the notebook's globals(). limits: the assignment's (call_seconds, output_kib).
    Has the one method of `session.Session` that checks use, `call`.
    """

    namespace: dict
    limits: Limits
    output: CapturedOutput | None = None  # None: a new one, capped at limits.output_kib
    calls: int = 0

    def __post_init__(self):
        if self.output is None:
            self.output = CapturedOutput(self.limits.output_kib * 1024)

    def call(self, call: Call) -> Reply:
        """Run one call; raises CallTimedOut past its limit, as `Session.call` does."""
        self.calls += 1
        header, buffers = _through_wire(*request_frame(call, self.calls), limit=WORKER_FRAME_LIMIT)
        seconds = call.seconds or self.limits.call_seconds
        alarm = _Alarm(seconds)
        try:
            with contextlib.redirect_stdout(_CapturedText(self.output)), \
                    contextlib.redirect_stderr(_CapturedText(self.output)):
                alarm.arm()
                try:
                    answer = worker._call(header, buffers, self.namespace)
                finally:
                    alarm.disarm()
        except _Deadline:
            alarm.disarm()  # it rang outside the function, perhaps inside disarm; spent, it cannot ring again
        if alarm.rang:
            raise CallTimedOut(f"{call.function} did not return within {seconds:g} s and was stopped")
        # The function worked on these buffers in place, as a sandboxed one works on shared memory.
        inputs = tuple(wire.decode(tree, buffers) for tree in header["args"]) if call.return_inputs else None
        reply_header, reply_buffers = answer
        if (reply_header.get("raised") or {}).get("type") == "KeyboardInterrupt":
            raise KeyboardInterrupt  # the cell was interrupted (e.g. nbgrader's cell timeout): stop it
        try:
            reply_header, reply_buffers = _through_wire(reply_header, reply_buffers, limit=reply_limit(call))
        except wire.FrameTooLarge as big:
            raise too_large(call.function, big) from None
        return read_reply(reply_header, reply_buffers, call, inputs)


def _through_wire(header: dict, buffers: list, limit: int) -> tuple[dict, list]:
    """One frame packed and parsed exactly as it crosses a sandbox's socket."""
    parser = wire.FrameParser(limit)
    frames = parser.feed(b"".join(wire.pack(header, buffers)))
    return frames[0]


@dataclass
class FunctionResults:
    """The checks of one function, run in this kernel. output: what the function printed (capped)."""

    function: str
    results: list[CheckResult] = field(default_factory=list)
    output: str = ""

    @property
    def score(self) -> float:
        return round(sum(r.score for r in self.results), 6)

    @property
    def max_score(self) -> float:
        return round(sum(r.max_score for r in self.results), 6)

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status != "passed"]


def run_checks(course: Course, suite: Suite, function: str, namespace: dict, student: str) -> FunctionResults:
    """Every check of `function` in `suite`, against `namespace`, with `student`'s seed.

    The checks run through `grading.Grader.run_checks`, as in `autograder
    grade`, against this kernel's namespace instead of a sandboxed worker.
    """
    entries = [entry for entry in suite.checks if entry.function == function]
    if not entries:
        raise CourseError(f"{suite.assignment.name} has no checks of {function!r} (it has: "
                          f"{', '.join(suite.functions)}); fix the function name in this cell")
    for module in suite.assignment.preload:
        importlib.import_module(module)  # as the sandbox's zygote does; torch calls need it loaded
    session = KernelSession(namespace, suite.assignment.limits)
    defined = frozenset(name for name, value in namespace.items() if callable(value) and not name.startswith("__"))
    seed = student_seed(course.seed_salt, suite.assignment.name, student)
    with contextlib.redirect_stderr(_CapturedText(session.output)):  # a check's own warnings, too
        results = Grader(course, suite, sandbox=None).run_checks(session, LoadReport(functions=defined), seed,
                                                                 entries, explain=False)
    return FunctionResults(function, results, session.output.text())


def check_function(function: str, namespace: dict, folder: Path | None = None) -> None:
    """Run the public checks of `function` on the notebook's `namespace` and print a table.

    folder: the released assignment folder (public_checks.py, public_manifest.json);
    default the working directory, which is the notebook's in Jupyter and in nbgrader.
    Raises ChecksFailed when a check fails, except while `nbgrader autograde`
    runs the notebook: there the cell's hidden part decides the points, and
    an error here would zero them.
    """
    folder = Path(folder or Path.cwd())
    suite = load_public_suite(folder)
    course = public_course(suite.assignment, folder)
    ran = run_checks(course, suite, function, namespace, student=suite.assignment.module)
    print(format_function(ran, "public checks"))
    if ran.failed and os.environ.get("NBGRADER_EXECUTION") != GRADING:
        # One line per failure: nbgrader's validate shows this message, not the table.
        reasons = "".join(f"\n{r.name}: {r.output}" for r in ran.failed)
        raise ChecksFailed(f"{len(ran.failed)} of {len(ran.results)} public checks of {function} failed; fix "
                           f"{function}, run its cell, then this one again.{reasons}")


def grade_function(assignment: str, function: str, namespace: dict, student: str | None = None) -> float:
    """Grade `function` with every check (public and hidden) and return the points earned.

    The course is $AUTOGRADER_COURSE or the nearest course.yaml above the
    working directory. student: default the nbgrader student id, the name of
    the folder above the notebook's (nbgrader runs it in
    `<course>/autograded/<student>/<assignment>/`), so the seed is the one
    `autograder grade` uses for `submitted/<student>/<assignment>/`.
    The returned number is the cell's value; nbgrader takes it as partial credit.
    """
    course = load_course(_course_file())
    suite = load_suite(course, assignment)
    student = student or nbgrader_student(assignment)
    ran = run_checks(course, suite, function, namespace, student)
    print(format_function(ran, f"graded for {student}"))
    return ran.score


def nbgrader_student(assignment: str, cwd: Path | None = None) -> str:
    """The student id nbgrader is grading, from its `<step>/<student>/<assignment>/` working directory."""
    cwd = Path(cwd or Path.cwd()).resolve()
    if cwd.name != assignment:
        raise CourseError(f"grade_function runs where nbgrader autogrades: in <course>/autograded/<student>/"
                          f"{assignment}/, but the working directory is {cwd}. Grade with `nbgrader autograde "
                          f"{assignment}` or `autograder grade`, or pass student=...")
    return cwd.parent.name


def _course_file() -> Path:
    given = os.environ.get(COURSE_VARIABLE)
    if given:
        return Path(given)
    try:
        return find_course()
    except CourseError:
        raise CourseError(f"no course.yaml above {Path.cwd()}: run `nbgrader autograde` in the course "
                          f"repository (where course.yaml is), or set {COURSE_VARIABLE}=/path/to/course.yaml") from None


def format_function(ran: FunctionResults, what: str) -> str:
    """A short table: one line per check, with its points and, when it did not pass, why."""
    lines = [f"{ran.function} ({what}): {ran.score:g} / {ran.max_score:g} points, "
             f"{len(ran.results) - len(ran.failed)} of {len(ran.results)} checks passed"]
    lines += [format_check(result) for result in ran.results]
    if ran.output.strip():
        lines.append("  printed during the checks (first lines): " + " | ".join(ran.output.strip().splitlines()[:3]))
    return "\n".join(lines)
