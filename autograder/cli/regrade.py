"""`autograder regrade`: grade every stored hand-in again under the current suite, or preview whom that moves."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from autograder.cli import options
from autograder.cli.retract import retracted_first
from autograder.cli.workdir import command_workdir
from autograder.grading.batch import default_db, grade_batch
from autograder.grading.class_imports import class_imports
from autograder.grading.course import CourseError, find_course, load_course
from autograder.grading.discover import find_submissions
from autograder.grading.history import attempts
from autograder.grading.ids import as_stored, near_ids
from autograder.grading.regrade import Collector, commit, hand_ins, moves, regraded
from autograder.grading.sole_writer import SoleWriter
from autograder.grading.station import protect
from autograder.grading.store import Store, StoreError
from autograder.grading.suite import load_suite
from autograder.outputs.attempts import format_moves, move_lines
from autograder.outputs.progress import Progress, starting
from autograder.text import command, counted, safe


def add_commands(commands) -> None:
    regrade = commands.add_parser("regrade", help="grade every stored hand-in again under the current suite; "
                                                  "--preview shows whom that moves, committing nothing")
    regrade.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    regrade.add_argument("paths", nargs="*", type=Path,
                         help="class folders to find hand-ins in that the store did not keep (as `grade` takes)")
    regrade.add_argument("--preview", action="store_true", help="grade, compare and print; store nothing")
    regrade.add_argument("--json", action="store_true", help="one JSON object per moved student")
    regrade.add_argument("--students", nargs="+", metavar="STUDENT", help="regrade only these students")
    regrade.add_argument("--no-decrease", action="store_true",
                         help="keep a student's earlier result where the new total is lower (their feedback says so)")
    regrade.add_argument("--jobs", type=options.count, default=0, help="parallel graders (default: number of cores)")
    options.results_db(regrade)
    options.course(regrade)
    options.sandbox(regrade)
    regrade.set_defaults(run=_regrade)


def _regrade(args) -> int:
    course = load_course(args.course or find_course())
    settings = course.assignment(args.assignment)
    db = (args.db or default_db(course)).resolve()
    if not db.is_file():
        raise StoreError(f"there is no results database at {db}; grade first, or pass --db with the database")
    suite = load_suite(course, args.assignment)
    with Store(db) as store, SoleWriter(db, "regrade", starting), command_workdir("regrade") as workdir:
        stored = store.students(settings.name)
        asked = args.students and [as_stored([s], stored).get(s, s) for s in args.students]  # case folded too
        before = _chosen(attempts(store.history(settings.name, asked)), asked, db, settings.name, stored)
        class_files = _class_files(args.paths, settings, workdir / "found")
        todo, lost = hand_ins(store, before, workdir / "handins", settings.module, class_files)
        for line in lost:
            print(safe(f"autograder: not regraded: {line}", 2000), file=sys.stderr)
        protections = protect(args.sandbox, suite.secret_paths(course) + [db] + [item.found.path for item in todo],
                              sys.stderr)
        starting(f"regrading {counted(len(todo), 'hand-in')} of {counted(len(before), 'student')} of {settings.name} "
                 f"under suite {suite.version}" + (" (preview: nothing is stored)" if args.preview else ""))
        found, jobs = [item.found for item in todo], args.jobs or os.cpu_count() or 1
        imports = class_imports(found, min(jobs, len(found)), settings)
        for note in imports.notes():
            starting(note)
        collector, progress = Collector(store), Progress(len(todo))
        grade_batch(course, suite, protections, found, collector, jobs, progress.update,
                    class_imports=imports.modules)
        progress.finish()
        after, failed = regraded(before, todo, collector.results)
        for line in failed:
            print(safe(f"autograder: not regraded (internal error in the grader, not in the student's code; the "
                       f"earlier result stands): {line}", 2000), file=sys.stderr)
        final, moved = moves(before, after, settings.submissions, settings.late, args.no_decrease)
        if not args.preview:
            added = commit(store, before, final)
    lines = move_lines(moved) if args.json else [format_moves(moved)]
    print("\n".join(safe(line) for line in lines))
    if args.preview:
        print(f"preview: {len(moved)} of {len(before)} students would move; nothing was stored. `{_committing(args)}` "
              "commits it (earlier results are kept)", file=sys.stderr)
        # A TA who moved the due time asks this first: that change shows in every export at once, and not here.
        print("preview: the totals before and after both apply course.yaml's due time, late rule, extensions and "
              "policy as they are now, which every report and export applies to the stored results without a "
              "regrade; to see what a change to those does, compare `autograder export csv` before and after it",
              file=sys.stderr)
    else:
        print(f"regraded: {added} results added, {len(moved)} of {len(before)} students moved; earlier results are "
              f"kept (`autograder history {settings.name} STUDENT`)", file=sys.stderr)
    return 1 if lost or failed else 0


def _chosen(by_student: dict, students: list[str] | None, db: Path, assignment: str, stored: set[str]) -> dict:
    if not students:
        if not by_student:
            raise StoreError(f"{db} holds no results of {assignment} to regrade; grade the class first (`autograder "
                             f"grade {assignment} PATH... --db {db}`), or pass --db with the database the grades went "
                             "to")
        return by_student
    unknown = [s for s in students if s not in by_student]
    if unknown:
        raise CourseError(retracted_first(db, assignment, unknown, "regrade") or f"no stored hand-in of "
                          f"{', '.join(unknown)}; {meant(unknown, stored)}check the ids (`autograder export csv` "
                          "lists the students graded)")
    return {s: by_student[s] for s in students}


def meant(unknown: list[str], stored: set[str]) -> str:
    """"did you mean …? " for the stored ids near those asked for, "" where there are none."""
    near = sorted({s for student in unknown for s in near_ids(student, stored)})
    return f"did you mean {', '.join(near)}? " if near else ""


def _class_files(paths: list[Path], settings, workdir: Path) -> dict[str, list[Path]]:
    if not paths:
        return {}
    workdir.mkdir()
    found: dict[str, list[Path]] = {}
    for item in find_submissions(paths, settings.name, settings.module, workdir):
        found.setdefault(item.student, []).append(item.path)
    return found


def _committing(args) -> str:
    """The preview's own command without --preview, shell-quoted: the one that commits just what it showed (the same
    students, --no-decrease, database and course), not a regrade of everyone in the default database."""
    kept = [*(["--students", *args.students] if args.students else []),
            *(["--no-decrease"] if args.no_decrease else []), *(["--json"] if args.json else []),
            *(["--jobs", str(args.jobs)] if args.jobs else []), *(["--db", str(args.db)] if args.db else []),
            *(["--course", str(args.course)] if args.course else []),
            *(["--sandbox", args.sandbox] if args.sandbox != "auto" else [])]
    return command("regrade", [args.assignment, *(str(path) for path in args.paths)], kept)
