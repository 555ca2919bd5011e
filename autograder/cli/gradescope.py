"""Grading on Gradescope: the `gradescope-run` command, and the bundle's run_autograder that calls it.

Gradescope runs run_autograder once per submission, as root, in its own
container; it grades the one submission under ROOT/submission through a
grading station (grading.station), as `grade` does, and writes
ROOT/results/results.json (outputs.gradescope). ROOT is an option so the
same command and script run anywhere.
"""
from __future__ import annotations

import dataclasses
import datetime
import shlex
import sys
from pathlib import Path
from typing import TextIO

from autograder.cli import options
from autograder.cli.grading import INTERNAL_ERROR_STATUS
from autograder.grading.boundary import grade_submission
from autograder.grading.calibration import time_reference
from autograder.grading.course import Course, find_course, load_course
from autograder.grading.gradescope_export import Picked, pick_submission_file
from autograder.grading.gradescope_handin import (
    LOCAL_STUDENT,
    METADATA_FILE,
    MetadataError,
    gradescope_due,
    gradescope_extension,
    gradescope_student,
    gradescope_time,
)
from autograder.grading.late import assess_result, with_extension
from autograder.grading.probe import EnvironmentRefused
from autograder.grading.results import SubmissionResult
from autograder.grading.station import SandboxError, Setup, protect
from autograder.grading.submission import Submission, read_submission
from autograder.grading.suite import load_suite
from autograder.outputs.gradescope import gradescope_results, not_graded_results, write_json

GRADESCOPE_ROOT = Path("/autograder")

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this once per submission, as root, from /autograder.
# GRADESCOPE_ROOT, AUTOGRADER_PYTHON and AUTOGRADER_SANDBOX exist so the same script can be tried
# outside Gradescope.
set -euo pipefail
ROOT="${GRADESCOPE_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
# Workers run under their own uid when the grader is root: keep the course (the reference, the
# hidden checks, course.yaml's seed salt) unreadable to them even where bubblewrap cannot start.
# The grader checks this before it grades, and refuses to grade where it does not hold.
chmod -R go-rwx "$ROOT/source"
mkdir -p "$ROOT/results"
cd "$ROOT/source"
exec "$PYTHON" -m autograder gradescope-run @ASSIGNMENT@ --root "$ROOT" --course "$ROOT/source/course.yaml" \\
    --sandbox "${AUTOGRADER_SANDBOX:-auto}"
"""


def add_commands(commands) -> None:
    run = commands.add_parser("gradescope-run", help="grade the one submission in a Gradescope container and "
                                                     "write results/results.json (the bundle's run_autograder)")
    run.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    run.add_argument("--root", type=Path, default=GRADESCOPE_ROOT,
                     help="Gradescope's folder holding submission/ and results/ (default: %(default)s)")
    options.course(run)
    options.sandbox(run)
    run.set_defaults(run=_gradescope_run)


def run_script(assignment: str) -> str:
    """The bundle's run_autograder for `assignment`: `gradescope-run` with the folders Gradescope gives."""
    return RUN_AUTOGRADER.replace("@ASSIGNMENT@", shlex.quote(assignment))


def _gradescope_run(args) -> int:
    result = grade_for_gradescope(load_course(args.course or find_course()), args.assignment, args.root,
                                  args.sandbox)
    return INTERNAL_ERROR_STATUS if result.internal_error else 0


def grade_for_gradescope(course: Course, assignment: str, root: Path = GRADESCOPE_ROOT,
                         sandbox: str = "auto", log: TextIO = sys.stderr) -> SubmissionResult:
    """Grade the one submission under ROOT/submission and write ROOT/results/results.json.

    Where it cannot grade (the metadata names no submitter, the sandbox
    refuses, the environment cannot grade the reference), results.json tells
    the student it did not run, and the error says why and what to do.
    """
    root = Path(root)
    suite = load_suite(course, assignment)
    picked = pick_submission_file(root / "submission", suite.assignment.module)
    try:
        student = gradescope_student(root / METADATA_FILE)
        at, source = gradescope_time(root / METADATA_FILE, picked.path)
    except MetadataError:
        _did_not_run(root, "it could not tell who handed this submission in (Gradescope's record of it is "
                           "malformed), and your checks' inputs depend on who you are")
        raise
    if student == LOCAL_STUDENT:
        print(f"autograder: no {root / METADATA_FILE}, so this is graded as the test student {LOCAL_STUDENT!r} "
              "(on Gradescope the file names the submitters)", file=log)
    try:
        protections = protect(sandbox, suite.secret_paths(course), log=log)
    except SandboxError:
        _did_not_run(root, "on this machine its sandbox could not keep the solutions from your code")
        raise
    print(f"autograder: sandbox {protections.kind.label}" + (f" ({protections.reason})" if protections.reason else ""),
          file=log)
    submission = _submission(root, picked, student, suite.assignment.module)
    try:
        # The grading process probes first: its environment must grade the reference before this file.
        result = grade_submission(Setup(course, suite, protections, time_reference(course, suite),
                                        command="gradescope-run"), submission)
    except EnvironmentRefused:
        _did_not_run(root, "its environment could not grade the reference solution")
        raise
    result = dataclasses.replace(result, submitted_at=at, submitted_at_source=source)
    _say_if_due_differs(suite.assignment.late, gradescope_due(root / METADATA_FILE), log)
    late = assess_result(with_extension(suite.assignment.late, student, gradescope_extension(root / METADATA_FILE)),
                         result)
    write_json(root / "results" / "results.json", gradescope_results(result, late))
    if result.internal_error:
        print(f"autograder: {student} could not be graded (internal error, not the student's code); results.json "
              f"says so. Why:\n{result.internal_error}\nFix that, then run the autograder again "
              "(on Gradescope: Regrade Submission)", file=log)
    print(f"autograder: {student}: {late.total:g} / {result.max_score:g}"
          + (f" after a late penalty of {late.penalty:g}" if late.penalty else "")
          + f"; wrote {(root / 'results' / 'results.json').resolve()}", file=log)
    return result


def _submission(root: Path, picked: Picked, student: str, module: str) -> Submission:
    """The picked file read as `student`'s hand-in, or a hand-in that says why there is none."""
    if picked.path is None:
        return Submission(student, root / "submission" / f"{module}.py", "py", "", problem=picked.problem)
    submission = read_submission(picked.path, student, root=root / "submission")
    if picked.note:
        submission = dataclasses.replace(submission, note="; ".join(n for n in (picked.note, submission.note) if n))
    return submission


def _did_not_run(root: Path, why: str) -> None:
    write_json(root / "results" / "results.json", not_graded_results(why))


def _say_if_due_differs(rule, gradescope: datetime.datetime | None, log: TextIO) -> None:
    """A warning in the autograder's log where Gradescope's due time for the whole assignment is not course.yaml's:
    the late rule follows course.yaml (and a submitter's own extension on Gradescope), so a due time moved on
    Gradescope for everyone would otherwise change nothing, without a word."""
    if gradescope is not None and rule.due is not None and gradescope != rule.due:
        print(f"autograder: warning: Gradescope's due time for this assignment is "
              f"{gradescope.astimezone(rule.due.tzinfo).isoformat()}, "
              f"course.yaml's is {rule.due.isoformat()}; the late rule uses course.yaml's. If the due time moved, "
              "set `due` in course.yaml, build the bundle again (autograder gradescope-bundle) and upload it",
              file=log)
