"""`autograder replay`: one check of one stored student re-run as it was graded, beside the stored verdict."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from autograder.cli import options
from autograder.cli.grading import INTERNAL_ERROR_STATUS
from autograder.cli.retract import retracted_first
from autograder.grading.attempts import choose, counted_result
from autograder.grading.boundary import Lost, grade_apart
from autograder.grading.calibration import cached_reference_times
from autograder.grading.course import CourseError, find_course, load_course
from autograder.grading.grader import Grader
from autograder.grading.handin import FileBytes
from autograder.grading.history import attempts
from autograder.grading.ids import as_stored
from autograder.grading.station import Setup, protect
from autograder.grading.store import Store, stored_history, stored_results
from autograder.grading.submission import read_submission, submission_from_bytes
from autograder.grading.suite import load_suite
from autograder.outputs.replay import format_replay
from autograder.text import safe


def add_commands(commands) -> None:
    replay = commands.add_parser("replay", help="re-run one check for one student as graded and print its "
                                                "verdict beside the stored one, then the inputs, the expected "
                                                "and the returned values")
    replay.add_argument("student", help="student id, as stored by `grade`")
    replay.add_argument("check", help="check name, <function>.<aspect> (`autograder checks` lists them)")
    replay.add_argument("--assignment", help="assignment (default: the only one in the database)")
    options.results_db(replay)
    replay.add_argument("--file", type=Path, help="the student's file, if it moved since grading")
    replay.add_argument("--full", action="store_true", help="print every call and every array entry (default: "
                                                           "abbreviated to fit a screen)")
    options.course(replay)
    options.sandbox(replay)
    replay.set_defaults(run=_replay)


def _replay(args) -> int:
    course = load_course(args.course or find_course())
    assignment, results = stored_results(options.db_path(args), args.assignment)
    student = as_stored([args.student], {r.student for r in results}).get(args.student, args.student)  # case folded
    stored = next((r for r in results if r.student == student), None)
    if stored is None:
        raise CourseError(retracted_first(options.db_path(args), assignment, [args.student], "replay") or
                          f"no stored result for student {args.student!r} in {assignment}; grade the "
                          "submission first, or check the id with `autograder export csv`")
    stored = _counted(stored, course.assignment(assignment), options.db_path(args))
    suite = load_suite(course, assignment)
    suite.check(args.check)  # a mistyped name says so here, listing where the names are, before any sandbox starts
    path = args.file or Path(stored.file)
    submission = _replayed_submission(path, stored, options.db_path(args), given=args.file is not None)
    changed = submission.sha256 != stored.sha256 or suite.version != stored.suite_version
    if changed:
        print(f"note: the file or the suite changed since {student} was graded; the replay uses the "
              "current ones", file=sys.stderr)
    protections = protect(args.sandbox, suite.secret_paths(course) + [path, options.db_path(args)])
    with Store.for_reading(options.db_path(args)) as store:
        reference = cached_reference_times(course, suite, store)
    replayed = grade_apart(Setup(course, suite, protections, reference, command="replay"), _replay_one, submission,
                           args.check)
    if isinstance(replayed, Lost):
        print(safe(f"autograder: could not replay {args.check} for {student}: internal error in the grader (not "
                   f"in the student's code). Why:\n{replayed.cause}\nFix that (or report it with this message), then "
                   "run the replay again"), file=sys.stderr)
        return INTERNAL_ERROR_STATUS
    was = next((test for test in stored.tests if test.name == args.check), None)
    print(safe(format_replay(student, args.check, stored.seed, replayed, was, comparable=not changed,
                             full=args.full)))
    return 0


def _counted(latest, settings, db: Path):
    """The result of the hand-in every output counts for the student of `latest` (their result graded last):
    that one where it is their last hand-in, else the earlier one the submissions policy counts, said."""
    _, found = stored_history(db, settings.name)
    tries = attempts([entry for entry in found if entry.result.student == latest.student]).get(latest.student, [])
    if len(tries) < 2:
        return latest
    choice = choose(tries, settings.submissions, settings.late)
    print(f"note: replaying hand-in {choice.counted.number} of {latest.student}'s {choice.handed_in}, the one that "
          f"counts (policy: {settings.submissions.policy})", file=sys.stderr)
    return latest if choice.counted is tries[-1] else counted_result(choice)


def _replayed_submission(path: Path, stored, db: Path, given: bool):
    """The hand-in to replay: the file at `path`; where the graded file is gone (a zip's temporary folder, a class
    folder moved) or holds another hand-in now (a later one, where an earlier one counts), the bytes the store
    kept of it (grading.history), read as if from `path`."""
    kept = [] if given else [data for _, data in _kept(db, stored.sha256)]
    if path.is_file():
        current = read_submission(path)
        if given or current.sha256 == stored.sha256 or not kept:
            return dataclasses.replace(current, student=stored.student)
    if not kept:
        unkept = "" if given else ", and the database kept no copy of it (it keeps hand-ins up to 16 MB)"
        raise CourseError(f"{path} (the file graded for {stored.student}) is gone{unkept}; pass --file with its new "
                          "path")
    return submission_from_bytes(path, stored.student, FileBytes(kept[0], len(kept[0]), stored.sha256))


def _kept(db: Path, sha256: str) -> list[tuple[str, bytes]]:
    with Store.for_reading(db) as store:
        return list(store.handins([sha256])) if sha256 else []


def _replay_one(grader: Grader, submission, check: str):
    """Runs in the grading process (grading.boundary)."""
    return grader.replay(submission, check)
