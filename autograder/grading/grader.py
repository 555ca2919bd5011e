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

from autograder.authoring.checks import Sizes, Trial, check_rng, student_seed
from autograder.authoring.misconceptions import Misconception
from autograder.grading import calibration, loading
from autograder.grading.attempt import Attempt, attempt
from autograder.grading.course import Course
from autograder.grading.diagnosis import diagnose
from autograder.grading.examples import example_json
from autograder.grading.results import NOT_LOADED, CheckResult, SubmissionResult
from autograder.grading.shrink import ShrinkBudget, Shrunk, input_size, shrink
from autograder.grading.submission import Submission
from autograder.grading.suite import Suite, SuiteCheck
from autograder.sandbox.session import LoadReport, Session
from autograder.sandbox.zygote import Sandbox


class Grader:
    """Grades submissions of one assignment with one sandbox (one job's worth).

    sandbox: None for a Grader that only runs checks against a session it is
    given (`run_checks`), as nbgrader's in-kernel test cells do.
    """

    def __init__(self, course: Course, suite: Suite, sandbox: Sandbox | None,
                 reference: dict[str, calibration.ReferenceTime] | None = None):
        """reference: the reference's time on each check (calibration.time_reference), which sets the call
        limits and the submission's budget; None grades with course.yaml's plain call_seconds."""
        self.course = course
        self.suite = suite
        self.sandbox = sandbox
        self.limits = calibration.call_limits(suite, reference)
        self.budget = calibration.budget(suite, reference, self.limits)
        self._shared: dict = {}  # class-wide cases, see Trial.shared
        self._class_seed = student_seed(course.seed_salt, suite.assignment.name, "")

    def grade(self, submission: Submission) -> SubmissionResult:
        """Grade one file; never raises for anything the file does.

        The one boundary per submission: a fault in the grader itself (a bug,
        something no check foresaw) becomes this submission's result, "could
        not grade: internal error", with the traceback kept for the
        instructor, and the sandbox is restarted so the next file starts clean.
        """
        started = time.monotonic()
        try:
            return self._grade(submission, started)
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - SystemExit from a check must not end the batch either
            details = traceback.format_exc()
            traceback.print_exc(file=sys.stderr)
            if self.sandbox is not None:
                self.sandbox.close()
            return internal_error_result(submission.student, self.suite, str(submission.path), submission.sha256,
                                         details, time.monotonic() - started,
                                         self.sandbox.protections.mode if self.sandbox is not None else "")

    def _grade(self, submission: Submission, started: float) -> SubmissionResult:
        assignment = self.suite.assignment
        seed = student_seed(self.course.seed_salt, assignment.name, submission.student)
        notes = [submission.note] if submission.note else []
        output, killed = "", 0
        # A file that cannot be read does not load either: one flag, the reason first (grading.loading).
        problem = f"{NOT_LOADED}: {submission.problem}" if submission.problem else ""
        if problem:
            tests = self._all(loading.NOT_RUN, "failed")
        else:
            with Session(self.sandbox, submission.worker_spec(assignment.module), assignment.limits,
                         self.budget) as session:
                load = session.open()
                problem = load.failure or loading.not_loaded(submission, load, self._graded_functions())
                notes += loading.load_notes(load, loaded=not problem)
                if load.failure:
                    tests = self._all(f"your file could not be loaded: {load.failure}", "error")
                elif problem:
                    tests = self._all(loading.NOT_RUN, "failed")
                else:
                    tests = self.run_checks(session, load, seed)
            output, killed = session.output.text(), session.killed_processes
            notes += session.notes
        return SubmissionResult(
            student=submission.student, assignment=assignment.name, file=str(submission.path),
            sha256=submission.sha256, suite_version=self.suite.version, seed=seed,
            sandbox=self.sandbox.protections.mode, tests=tuple(tests),
            problem=problem,
            notes=tuple(notes), output=output, killed_processes=killed,
            seconds=time.monotonic() - started, graded_at=_now())

    def replay(self, submission: Submission, check_name: str) -> Attempt:
        """Run one check for one student again, exactly as graded, keeping every call it makes."""
        entry = self.suite.check(check_name)
        seed = student_seed(self.course.seed_salt, self.suite.assignment.name, submission.student)
        if submission.problem:
            return Attempt("failed", submission.problem)
        with Session(self.sandbox, submission.worker_spec(self.suite.assignment.module),
                     self.suite.assignment.limits, self.budget) as session:
            load = session.open()
            if load.failure:
                return Attempt("error", f"the file could not be loaded: {load.failure}")
            missing = [name for name in entry.check.functions if name not in load.functions]
            if missing:
                return Attempt("failed", f"the file does not define {missing[0]}()")
            return attempt(entry, self._trial(entry, session, seed, entry.check.sizes, self.limits[entry.name].seconds))

    def run_checks(self, session, load: LoadReport, seed: int, entries=None, explain: bool = True) -> list[CheckResult]:
        """Run `entries` (default: the whole suite) in order against a loaded submission.

        session: anything with Session's `call`. explain: diagnose and shrink
        failures (in-kernel grading skips it: the points are the same).
        A function that timed out is not called again on work as large:
        otherwise one hanging function would spend the submission's budget
        on its remaining checks and take honest functions' points with it.
        Checks the reference finishes in well under the time still run, so
        a function that is merely slow on the largest input keeps its other points.
        """
        budget = ShrinkBudget.for_submission(self.budget)
        hung: dict[str, tuple[float, str]] = {}  # function -> (the reference's time where it timed out, message)
        results = []
        for entry in self.suite.checks if entries is None else entries:
            size = self.limits[entry.name].reference  # how much work the check is, in the reference's seconds
            # Timings wobble, so only work well under half of what timed out counts as smaller.
            stuck = next((f for f in entry.check.functions
                          if f in hung and (size is None or size >= hung[f][0] / 2)), None)
            if stuck:
                results.append(self._result(entry, "timeout", f"not run: {hung[stuck][1]}"))
                continue
            result = self._run(entry, session, load, seed, budget, explain)
            if result.status == "timeout":
                hung[entry.function] = (size or 0.0, result.output)
            results.append(result)
        return results

    def _run(self, entry: SuiteCheck, session: Session, load: LoadReport, seed: int,
             budget: ShrinkBudget, explain: bool) -> CheckResult:
        """One check; a failure is diagnosed, shrunk (randomized checks) and given an example."""
        missing = [name for name in entry.check.functions if name not in load.functions]
        if missing:
            return self._result(entry, "failed", f"your file does not define {missing[0]}(); keep the "
                                                 "function names of the stub")
        started = time.monotonic()
        first = attempt(entry, self._trial(entry, session, seed, entry.check.sizes, self.limits[entry.name].seconds))
        seconds = time.monotonic() - started
        if first.status == "timeout":
            return self._result(entry, first.status, self._too_slow(entry, first.message), first.hint, seconds,
                                stopped=first.stopped)
        if first.status == "passed" or first.stopped or not explain:
            # A stopped call left no reply to diagnose or show; the message says what the sandbox did.
            return self._result(entry, first.status, first.message, first.hint, seconds, stopped=first.stopped)
        # Diagnosed on the graded run only: at the tiny shrunk sizes different ideas (and plain
        # garbage such as all zeros) can give the same numbers.
        idea = self._diagnose(first)
        shrunk = self._shrink(entry, session, seed, first, seconds, budget)
        example = example_json(entry.visibility, shrunk.attempt if shrunk else first, self.suite.reference,
                               shrunk_from=first.sizes if shrunk else None)
        return self._result(entry, first.status, first.message, first.hint, seconds, idea=idea, example=example)

    def _trial(self, entry: SuiteCheck, session: Session, seed: int, sizes: Sizes | None,
               seconds: float | None) -> Trial:
        """A fresh Trial of `entry` for this student: the same seed gives the same inputs at the same sizes."""
        return Trial(name=entry.name, rng=check_rng(seed, entry.name), ref=self.suite.reference,
                     call_function=session.call, tolerance=self.suite.assignment.tolerance, sizes=sizes,
                     seconds=seconds, shared_cache=self._shared, class_seed=self._class_seed)

    def _shrink(self, entry: SuiteCheck, session: Session, seed: int, first: Attempt, seconds: float,
                budget: ShrinkBudget) -> Shrunk | None:
        """The smallest sizes at which a failed randomized check still fails, re-run in the same session.

        Not for errors (a raise is already small), nor for checks with their
        own time limit in course.yaml: those time a fixed large case.
        """
        if first.status != "failed" or entry.check.sizes is None or entry.seconds is not None:
            return None
        # Smaller inputs take no longer than the failing run did, so its limit is the re-runs' limit too.
        limit = self.limits[entry.name].seconds
        return shrink(entry.check.sizes, input_size(first.calls),
                      lambda sizes: attempt(entry, self._trial(entry, session, seed, sizes, limit)), budget)

    def _too_slow(self, entry: SuiteCheck, message: str) -> str:
        """A timeout's message, with how the limit compares with the reference and the check's own advice."""
        limit = self.limits[entry.name]
        if limit.reference and "did not return within" in message:
            ratio = limit.seconds / max(limit.reference, 1e-9)
            message += f" ({ratio:.0f}× the reference's {limit.reference * 1000:.2g} ms)"
        return message + (f"; {entry.check.slow_hint}" if entry.check.slow_hint else "")

    def _diagnose(self, tried: Attempt) -> Misconception | None:
        return diagnose(self.suite.misconceptions, tried.calls, self.suite.reference,
                        self.suite.assignment.tolerance)

    def _result(self, entry: SuiteCheck, status: str, message: str, hint: str = "", seconds: float = 0.0,
                idea: Misconception | None = None, example: str = "", stopped: str = ""):
        return CheckResult(name=entry.name, function=entry.function, visibility=entry.visibility, status=status,
                           score=entry.points if status == "passed" else 0.0, max_score=entry.points,
                           output=message, hint=hint, seconds=round(seconds, 4),
                           misconception=idea.id if idea else None, explanation=idea.sentence if idea else "",
                           example=example, stopped=stopped)

    def _graded_functions(self) -> set[str]:
        return {name for entry in self.suite.checks for name in entry.check.functions}

    def _all(self, message: str, status: str) -> list[CheckResult]:
        return [self._result(entry, status, message) for entry in self.suite.checks]



INTERNAL_ERROR = ("internal error: the grader failed on this submission (not because of your code); your "
                  "instructor has the details and will grade it again")


def internal_error_result(student: str, suite: Suite, file: str, sha256: str, details: str, seconds: float,
                          sandbox: str) -> SubmissionResult:
    """The result of a submission the grader itself failed on: zero, flagged, with the traceback kept."""
    tests = tuple(CheckResult(name=e.name, function=e.function, visibility=e.visibility, status="error", score=0.0,
                              max_score=e.points, output=INTERNAL_ERROR) for e in suite.checks)
    return SubmissionResult(
        student=student, assignment=suite.assignment.name, file=file, sha256=sha256,
        suite_version=suite.version, seed=0, sandbox=sandbox, tests=tests, problem=INTERNAL_ERROR,
        seconds=seconds, graded_at=_now(), internal_error=details or "(no traceback)")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
