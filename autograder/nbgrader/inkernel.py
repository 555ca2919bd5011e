"""Checks inside a Jupyter kernel, for nbgrader's test cells.

nbgrader runs a notebook's tests in the student's own kernel: student code
and tests share one process and there is no sandbox (that is nbgrader's
design, not something this module can change). To give nbgrader the same
verdicts as `autograder grade`, the checks run here through the sandbox's
own message path (autograder.sandbox.inprocess), so arguments are fresh
copies, replies plain data, and every comparison and message the one
`autograder grade` produces; output printed by student functions is kept
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
import os
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.attempt import SuiteFault
from autograder.grading.course import Course, CourseError, find_course, load_course
from autograder.grading.grader import Grader
from autograder.grading.manifest import public_course
from autograder.grading.results import CheckResult
from autograder.grading.suite import Suite, load_public_suite, load_suite
from autograder.outputs import audience
from autograder.outputs.terminal import format_check
from autograder.sandbox.inprocess import CapturedText, InProcessSession
from autograder.sandbox.load_report import LoadReport

GRADING = "autograde"  # NBGRADER_EXECUTION's value while `nbgrader autograde` runs a notebook
COURSE_VARIABLE = "AUTOGRADER_COURSE"  # path to course.yaml when it is not above the notebook's folder


class ChecksFailed(AssertionError):
    """Public checks of a function failed: the test cell fails, as an nbgrader test cell does."""


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
    session = InProcessSession(namespace, suite.assignment.limits)
    defined = frozenset(name for name, value in namespace.items() if callable(value) and not name.startswith("__"))
    seed = suite.assignment.seed_for(course.seed_salt, student)
    try:
        with contextlib.redirect_stderr(CapturedText(session.output)):  # a check's own warnings, too
            results = Grader(course, suite, sandbox=None).run_checks(session, LoadReport(functions=defined), seed,
                                                                     entries, explain=False)
    except SuiteFault as fault:
        # The cell fails, never quietly scoring zero; without the traceback, which would show a hidden check's
        # code in the student's feedback. `autograder grade` keeps the traceback for the instructor.
        raise SuiteFault(fault.check, RuntimeError("a bug in the autograder's own check, not in your code; your "
                                                   "instructor has to fix it and grade again")) from None
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
        reasons = "".join(f"\n{r.name}: {r.message}" for r in ran.failed)
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
    # The test cell's output is the student's feedback (nbgrader generate_feedback): outputs.audience decides.
    printed = audience.printed_output(ran.output, audience.STUDENT,
                                      hidden_ran=any(r.visibility != "public" for r in ran.results))
    if printed.strip():
        lines.append("  printed during the checks (first lines): " + " | ".join(printed.strip().splitlines()[:3]))
    elif ran.output.strip():
        lines.append("  printed output is kept for your instructor: hidden checks ran meanwhile")
    return "\n".join(lines)
