"""Grading one submission: load it in a sandboxed worker, run every check, score.

The Grader lives in the trusted process with the suite (reference and hidden
checks) and a Sandbox; only calls and their plain-data replies cross over.
One broken function costs only the checks that call it: a missing function
fails its own checks, a hang or crash restarts the worker for the next one.
"""
from __future__ import annotations

import datetime
import sys
import time
import traceback

from autograder.checks import CheckFailed, StudentError, Trial, check_rng, student_seed
from autograder.course import Course
from autograder.results import CheckResult, SubmissionResult
from autograder.sandbox import Sandbox
from autograder.session import CallFailed, LoadReport, Session
from autograder.submission import Submission
from autograder.suite import Suite, SuiteCheck


class Grader:
    """Grades submissions of one assignment with one sandbox (one job's worth)."""

    def __init__(self, course: Course, suite: Suite, sandbox: Sandbox):
        self.course = course
        self.suite = suite
        self.sandbox = sandbox
        self._shared: dict = {}  # class-wide cases, see Trial.shared
        self._class_seed = student_seed(course.seed_salt, suite.assignment.name, "")

    def grade(self, submission: Submission) -> SubmissionResult:
        """Grade one file; never raises for anything the file does."""
        assignment = self.suite.assignment
        seed = student_seed(self.course.seed_salt, assignment.name, submission.student)
        started = time.monotonic()
        notes = [submission.note] if submission.note else []
        output, killed, problem = "", 0, submission.problem
        if problem:
            tests = self._all(submission.problem, "failed")
        else:
            with Session(self.sandbox, submission.worker_spec(assignment.module), assignment.limits) as session:
                load = session.open()
                notes += _load_notes(load)
                problem = load.failure
                if load.failure:
                    tests = self._all(f"your file could not be loaded: {load.failure}", "error")
                else:
                    tests = [self._run(entry, session, load, seed) for entry in self.suite.checks]
            output, killed = session.output.text(), session.killed_processes
        return SubmissionResult(
            student=submission.student, assignment=assignment.name, file=str(submission.path),
            sha256=submission.sha256, suite_version=self.suite.version, seed=seed,
            sandbox=self.sandbox.protections.mode, tests=tuple(tests),
            problem=problem,
            notes=tuple(notes), output=output, killed_processes=killed,
            seconds=time.monotonic() - started,
            graded_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))

    def _run(self, entry: SuiteCheck, session: Session, load: LoadReport, seed: int) -> CheckResult:
        missing = [name for name in entry.check.functions if name not in load.functions]
        if missing:
            return self._result(entry, "failed", f"your file does not define {missing[0]}(); keep the "
                                                 "function names of the stub")
        trial = Trial(name=entry.name, rng=check_rng(seed, entry.name), ref=self.suite.reference,
                      call_function=session.call, tolerance=self.suite.assignment.tolerance, dims=entry.check.dims,
                      seconds=entry.seconds, shared_cache=self._shared, class_seed=self._class_seed)
        started = time.monotonic()
        status, message, hint = run_trial(entry, trial)
        return self._result(entry, status, message, hint, time.monotonic() - started)

    def _result(self, entry: SuiteCheck, status: str, message: str, hint: str = "", seconds: float = 0.0):
        return CheckResult(name=entry.name, function=entry.function, visibility=entry.visibility, status=status,
                           score=entry.points if status == "passed" else 0.0, max_score=entry.points,
                           output=message, hint=hint, seconds=round(seconds, 4))

    def _all(self, message: str, status: str) -> list[CheckResult]:
        return [self._result(entry, status, message) for entry in self.suite.checks]


def run_trial(entry: SuiteCheck, trial: Trial) -> tuple[str, str, str]:
    """Run one check; (status, message, hint). A fault in the check itself is reported, not raised."""
    try:
        entry.check.run(trial)
    except CheckFailed as failure:
        return "failed", failure.message, failure.hint
    except StudentError as error:
        return "error", str(error), ""
    except CallFailed as failure:
        return failure.status, str(failure), ""
    except Exception:  # noqa: BLE001 - a bug in a check must not stop the batch
        traceback.print_exc(file=sys.stderr)
        return "error", (f"the grader failed while running {entry.name} (a fault in the check, not in your "
                         "code); your instructor has been shown the details"), ""
    return "passed", "", ""


def _load_notes(load: LoadReport) -> list[str]:
    notes = [f"{unit} raised {raised.describe()} while loading; the rest of the file still ran"
             for unit, raised in load.problems]
    notes += [f"{unit} {reason}; it was skipped and the rest of the file was graded" for unit, reason in load.stopped]
    return notes
