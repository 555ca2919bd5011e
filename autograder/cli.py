"""The `autograder` command line."""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path

from autograder import exports
from autograder.batch import default_db, grade_batch, plan_batch
from autograder.course import CourseError, find_course, load_course
from autograder.discover import LayoutError, find_submissions
from autograder.grading import Grader
from autograder.inkernel import format_check
from autograder.progress import Progress
from autograder.public import public_course
from autograder.release import ReleaseError, release
from autograder.replay import format_replay
from autograder.results import SubmissionResult
from autograder.sandbox import Sandbox, SandboxError, probe, refuse_readable
from autograder.submission import SUFFIXES, read_submission
from autograder.store import Store, StoreError, stored_results
from autograder.suite import load_public_suite, load_suite
from autograder.text import safe


INTERNAL_ERROR_STATUS = 3  # `grade` finished, but the grader failed on some submissions


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (CourseError, SandboxError, LayoutError, StoreError, ReleaseError, exports.ExportError) as error:
        print(f"autograder: {safe(error)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `autograder export csv | head`: the reader has all it wanted
        # Python's documented remedy: point stdout at devnull so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:
        print(f"autograder: {safe(error.strerror or error)} ({safe(error.filename or 'no file name')}); check that path "
              "and its permissions, then run again", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autograder: interrupted; results already stored are kept", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autograder", description="Grade attention assignments safely.")
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade student files against the hidden suite")
    grade.add_argument("assignment", help="assignment name from course.yaml, e.g. w07_attention")
    grade.add_argument("paths", nargs="+", type=Path,
                       help=".py/.ipynb files, a folder of them, an nbgrader course or submitted/ folder, or a zip")
    grade.add_argument("--jobs", type=int, default=0, help="parallel graders (default: number of cores)")
    grade.add_argument("--db", type=Path, help="results database (default: grades.db beside course.yaml)")
    grade.add_argument("--force", action="store_true", help="regrade submissions already graded and unchanged")
    grade.add_argument("--json", action="store_true", help="one Gradescope-style JSON object per line")
    _common(grade)
    grade.set_defaults(run=_grade)

    doctor = commands.add_parser("doctor", help="show which sandbox protections this machine supports")
    doctor.add_argument("--sandbox", choices=("auto", "bwrap", "fallback"), default="auto")
    doctor.set_defaults(run=_doctor)

    report = commands.add_parser("report", help="write each student's feedback and the class report "
                                                "from stored results")
    report.add_argument("--db", type=Path, help="results database (default: grades.db beside course.yaml)")
    report.add_argument("--out", type=Path, default=Path("report"),
                        help="folder for index.html, grades.csv and feedback/ (default: %(default)s)")
    report.add_argument("--assignment", help="assignment to report on (default: the only one in the database)")
    report.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")
    report.set_defaults(run=_report)

    checks = commands.add_parser("checks", help="list an assignment's checks: function, visibility, points, "
                                                "what each verifies")
    checks.add_argument("assignment", help="assignment name from course.yaml, e.g. w07_attention")
    checks.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")
    checks.set_defaults(run=_checks)

    replay = commands.add_parser("replay", help="re-run one check for one student and print the inputs, "
                                                "the expected and the returned values")
    replay.add_argument("student", help="student id, as stored by `grade`")
    replay.add_argument("check", help="check name, e.g. softmax.matches_reference")
    replay.add_argument("--assignment", help="assignment (default: the only one in the database)")
    replay.add_argument("--db", type=Path, help="results database (default: grades.db beside course.yaml)")
    replay.add_argument("--file", type=Path, help="the student's file, if it moved since grading")
    _common(replay)
    replay.set_defaults(run=_replay)

    _export_parsers(commands)  # export csv/gradescope/nbgrader, gradescope-bundle, gradescope-run
    _release_parsers(commands)  # release (through nbgrader), check (students' public checks)
    return parser


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")
    command.add_argument("--sandbox", choices=("auto", "bwrap", "fallback"), default="auto",
                         help="auto uses bubblewrap when it works; fallback skips it (weaker)")


def _grade(args) -> int:
    course = load_course(args.course or find_course())
    suite = load_suite(course, args.assignment)
    with tempfile.TemporaryDirectory(prefix="autograder-zip-") as workdir:
        found = find_submissions(args.paths, suite.assignment.name, suite.assignment.module, Path(workdir))
        if not found:
            raise LayoutError("no submissions found in " + ", ".join(map(str, args.paths)))
        db = args.db or default_db(course)
        protections = probe(args.sandbox)
        if protections.warning:
            print(protections.warning, file=sys.stderr)
        refuse_readable(protections, suite.secret_paths(course) + [db] + [item.path for item in found])
        # Opened only now, so a mistyped path or a refused sandbox does not leave an empty database behind.
        with Store(db) as store:
            return _grade_found(args, course, suite, found, store, protections)


def _grade_found(args, course, suite, found, store: Store, protections) -> int:
    plan = plan_batch(found, store, suite, args.force)
    progress = Progress(len(plan.todo), skipped=len(plan.skipped))
    graded = []

    def on_result(result):
        graded.append(result)
        progress.update(result)
        if args.json:
            print(json.dumps(result.to_json()), flush=True)

    grade_batch(course, suite, protections, plan.todo, store, args.jobs or os.cpu_count() or 1, on_result)
    progress.finish()
    skipped = [store.result(suite.assignment.name, item.student) for item in plan.skipped]
    if args.json:
        for result in skipped:
            print(json.dumps(result.to_json()), flush=True)
    else:
        print(safe(format_results(graded + skipped)))
    failed = sum(bool(result.internal_error) for result in graded)
    if failed:
        # The last line, and the exit status, tell a script that some submissions still need grading.
        print(f"results are in {store.path}; {failed} submissions hit an internal error in the grader (not in their "
              "code): they are flagged in `autograder report` with the traceback, and the next `autograder grade` "
              "grades them again", file=sys.stderr)
        return INTERNAL_ERROR_STATUS
    print(f"results are in {store.path}; `autograder report` writes the feedback", file=sys.stderr)
    return 0


def _report(args) -> int:
    # Imported here: matplotlib and jinja2 would slow every other command's start.
    from autograder.report import write_reports

    assignment, results = stored_results(_db(args), args.assignment)
    index = write_reports(assignment, results, args.out)
    print(f"wrote feedback for {len(results)} students of {assignment} to {args.out / 'feedback'}/ and "
          f"{args.out / 'grades.csv'}", file=sys.stderr)
    print(f"class report: {index}")
    return 0


def _replay(args) -> int:
    course = load_course(args.course or find_course())
    assignment, results = stored_results(_db(args), args.assignment)
    stored = next((r for r in results if r.student == args.student), None)
    if stored is None:
        raise CourseError(f"no stored result for student {args.student!r} in {assignment}; grade the "
                          "submission first, or check the id with `autograder export csv`")
    suite = load_suite(course, assignment)
    path = args.file or Path(stored.file)
    if not path.is_file():
        raise CourseError(f"{path} (the file graded for {args.student}) is gone; pass --file with its new path")
    submission = dataclasses.replace(read_submission(path), student=args.student)
    if submission.sha256 != stored.sha256 or suite.version != stored.suite_version:
        print(f"note: the file or the suite changed since {args.student} was graded; the replay uses the "
              "current ones", file=sys.stderr)
    protections = probe(args.sandbox)
    refuse_readable(protections, suite.secret_paths(course) + [path, _db(args)])
    with Sandbox(protections, suite.assignment.preload) as sandbox:
        tried = Grader(course, suite, sandbox).replay(submission, args.check)
    print(safe(format_replay(args.student, args.check, stored.seed, tried)))
    return 0


def _db(args) -> Path:
    """--db, or grades.db beside the course's course.yaml."""
    return args.db or default_db(load_course(args.course or find_course()))


def _checks(args) -> int:
    suite = load_suite(load_course(args.course or find_course()), args.assignment)
    width = max(len(entry.name) for entry in suite.checks)
    for entry in suite.checks:
        limit = f" (within {entry.seconds:g} s)" if entry.seconds else ""
        print(f"{entry.name:<{width}}  {entry.visibility:<6}  {entry.points:>4g}  {entry.check.description}{limit}")
    print(f"{len(suite.checks)} checks, {suite.max_score:g} points; suite version {suite.version}")
    return 0


def _doctor(args) -> int:
    protections = probe(args.sandbox)
    print(f"sandbox mode: {protections.mode}" + (f" ({protections.reason})" if protections.reason else ""))
    for name, active in protections.rows():
        print(f"  [{'x' if active else ' '}] {name}")
    if protections.warning:
        print(protections.warning)
    return 0


def format_results(results: list[SubmissionResult]) -> str:
    """Per-function tables for a few submissions; a class summary for many."""
    if len(results) <= 3:
        return "\n".join(format_result(r) for r in results)
    results = sorted(results, key=lambda r: r.student)
    lines = [f"{'student':<20}{'points':>14}  flags"]
    for result in results:
        flags = sorted({t.status for t in result.tests} - {"passed", "failed"})
        if result.problem:
            flags.append("could not grade")
        if result.sandbox != "bwrap":
            flags.append("reduced sandbox")
        lines.append(f"{result.student:<20}{f'{result.score:g} / {result.max_score:g}':>14}  {', '.join(flags)}")
    mean = sum(r.score for r in results) / len(results)
    lines.append(f"{len(results)} submissions, mean {mean:.1f} / {results[0].max_score:g}")
    return "\n".join(lines)


def format_result(result: SubmissionResult) -> str:
    """A readable per-function table and the failing checks' messages."""
    lines = [f"{result.student}: {result.score:g} / {result.max_score:g} points "
             f"({result.assignment}, sandbox {result.sandbox}, seed {result.seed}, {result.seconds:.1f} s)"]
    if result.problem:
        lines.append(f"  could not grade: {result.problem}")
    lines += [f"  note: {note}" for note in result.notes]
    lines.append(f"  {'function':<18}{'points':>12}  checks passed")
    for function, (got, possible) in result.by_function().items():
        tests = [t for t in result.tests if t.function == function]
        passed = sum(t.status == "passed" for t in tests)
        lines.append(f"  {function:<18}{f'{got:g} / {possible:g}':>12}  {passed} / {len(tests)}")
    failing = [t for t in result.tests if t.status != "passed"]
    if failing and not result.problem:
        lines.append("  not passed:")
        for test in failing:
            lines.append(f"    {test.name} [{test.status}, {test.visibility}]: {test.output}")
            if test.explanation:
                lines.append(f"      idea to revisit: {test.explanation}")
    return "\n".join(lines)


# ---------------------------------------------------------------- exports


def _export_parsers(commands) -> None:
    export = commands.add_parser("export", help="write stored grades as CSV, Gradescope results.json files, "
                                                "or into an nbgrader gradebook")
    formats = export.add_subparsers(dest="format", required=True)
    to_csv = formats.add_parser("csv", help="one row per student: total, points per function, status flags")
    to_csv.add_argument("--out", type=Path, help="CSV file to write (default: standard output)")
    to_csv.set_defaults(run=_export_csv)
    to_gradescope = formats.add_parser("gradescope", help="OUT/<student>/results.json in Gradescope's format")
    to_gradescope.add_argument("--out", type=Path, required=True, help="folder to write the results into")
    to_gradescope.set_defaults(run=_export_gradescope)
    to_nbgrader = formats.add_parser("nbgrader", help="write the scores into an nbgrader gradebook")
    to_nbgrader.add_argument("--gradebook", required=True,
                             help="nbgrader database: a URL (sqlite:///path/gradebook.db) or a path to a .db file")
    to_nbgrader.add_argument("--notebook", help="notebook name in the gradebook (default: the assignment's "
                                                "module from course.yaml, e.g. attention)")
    to_nbgrader.set_defaults(run=_export_nbgrader)
    for command in (to_csv, to_gradescope, to_nbgrader):
        command.add_argument("--db", type=Path, help="results database (default: grades.db beside course.yaml)")
        command.add_argument("--assignment", help="assignment to export (default: the only one in the database)")
        command.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")

    bundle = commands.add_parser("gradescope-bundle", help="write a Gradescope autograder zip for an assignment")
    bundle.add_argument("assignment", help="assignment name from course.yaml, e.g. w07_attention")
    bundle.add_argument("--out", type=Path, default=Path("autograder.zip"), help="zip to write (default: %(default)s)")
    bundle.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")
    bundle.set_defaults(run=_gradescope_bundle)

    run = commands.add_parser("gradescope-run", help="grade the one submission in a Gradescope container and "
                                                     "write results/results.json (the bundle's run_autograder)")
    run.add_argument("assignment", help="assignment name from course.yaml")
    run.add_argument("--root", type=Path, default=exports.GRADESCOPE_ROOT,
                     help="Gradescope's folder holding submission/ and results/ (default: %(default)s)")
    _common(run)
    run.set_defaults(run=_gradescope_run)


def _export_csv(args) -> int:
    assignment, results = stored_results(_db(args), args.assignment)
    if args.out is None:
        exports.write_csv(results, sys.stdout)
        where = "standard output (--out FILE writes a file)"
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as stream:
            exports.write_csv(results, stream)
        where = str(args.out)
    print(f"wrote {len(results)} students of {assignment} to {where}", file=sys.stderr)
    return 0


def _export_gradescope(args) -> int:
    assignment, results = stored_results(_db(args), args.assignment)
    written = exports.write_gradescope_dir(results, args.out)
    print(f"wrote {len(written)} results.json files of {assignment} under {args.out}/<student>/", file=sys.stderr)
    return 0


def _export_nbgrader(args) -> int:
    gradebook = args.gradebook if "://" in args.gradebook else f"sqlite:///{Path(args.gradebook).resolve()}"
    assignment, results = stored_results(_db(args), args.assignment)
    notebook = args.notebook or load_course(args.course or find_course()).assignment(assignment).module
    summary = exports.write_nbgrader(results, gradebook, assignment, notebook)
    print(f"wrote {summary.students} students of {assignment} into {gradebook} (notebook {notebook!r}, one grade "
          f"cell per function, {sum(summary.cells.values()):g} points); `nbgrader export` and formgrader show "
          "them", file=sys.stderr)
    return 0


def _gradescope_bundle(args) -> int:
    course = load_course(args.course or find_course())
    names = exports.write_bundle(course, args.assignment, args.out)
    print(f"wrote {args.out} ({len(names)} files): upload it as the assignment's autograder on Gradescope. "
          "It holds the solutions; keep it private.", file=sys.stderr)
    return 0


def _gradescope_run(args) -> int:
    exports.grade_for_gradescope(load_course(args.course or find_course()), args.assignment, args.root,
                                 args.sandbox)
    return 0


# ---------------------------------------------------------------- release and students' self-check


def _release_parsers(commands) -> None:
    release = commands.add_parser("release", help="generate the students' version through nbgrader "
                                                  "(notebook, stub, public checks) and scan it for leaks")
    release.add_argument("assignment", help="assignment name from course.yaml, e.g. w07_attention")
    release.add_argument("--out", type=Path, help="release folder; the assignment goes in OUT/ASSIGNMENT "
                                                  "(default: release/ beside course.yaml, nbgrader's)")
    release.add_argument("--gradebook", type=Path, help="nbgrader database to record the assignment in "
                                                        "(default: nbgrader's, gradebook.db beside course.yaml)")
    release.add_argument("--rebuild", action="store_true", help="first regenerate the source notebook's answer, "
                                                                 "test and written cells and public_manifest.json "
                                                                 "from the reference, the stub and course.yaml")
    release.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")
    release.set_defaults(run=_release)

    check = commands.add_parser("check", help="run the public checks on your attention.py or attention.ipynb "
                                              "(for students, in the folder they were given)")
    check.add_argument("file", type=Path, help="your .py or .ipynb file")
    check.add_argument("--dir", type=Path, help="the assignment folder you were given, holding public_checks.py "
                                                "and public_manifest.json (default: the file's folder)")
    check.add_argument("--sandbox", choices=("auto", "bwrap", "fallback"), default="auto",
                       help="auto uses bubblewrap when it works; fallback skips it (weaker)")
    check.set_defaults(run=_check)


def _release(args) -> int:
    course = load_course(args.course or find_course())
    suite = load_suite(course, args.assignment)
    done = release(course, suite, args.out or course.root / "release", args.gradebook, args.rebuild)
    for path in done.rebuilt:
        print(f"regenerated {path} from the reference, the stub and course.yaml; review and commit it",
              file=sys.stderr)
    print(f"released {suite.assignment.name} to {done.folder}: {', '.join(done.files)}")
    print(f"  {done.points:g} autograded points (the same checks as `autograder grade`) and {done.written:g} "
          "hand-graded; nothing from solutions/ or the hidden checks was found in it")
    print(f"next: give students {done.folder}, or `nbgrader release_assignment {suite.assignment.name}` "
          "with nbgrader's exchange", file=sys.stderr)
    return 0


def _check(args) -> int:
    if not args.file.is_file() or args.file.suffix not in SUFFIXES:
        raise LayoutError(f"{args.file} is not a .py or .ipynb file; pass the file you will hand in, "
                          "e.g. `autograder check attention.ipynb`")
    folder = args.dir or args.file.resolve().parent
    suite = load_public_suite(folder)
    course = public_course(suite.assignment, folder)
    protections = probe(args.sandbox)
    if protections.warning:
        print(protections.warning, file=sys.stderr)
    with Sandbox(protections, suite.assignment.preload) as sandbox:
        # The student id is the module name, as in the notebook's public cells: the same inputs, the same messages.
        result = Grader(course, suite, sandbox).grade(read_submission(args.file, student=suite.assignment.module))
    passed = [t for t in result.tests if t.status == "passed"]
    lines = [f"{args.file.name}: {len(passed)} of {len(result.tests)} public checks passed "
             f"({result.score:g} / {result.max_score:g} points of the public checks)"]
    if result.problem:
        lines.append(f"  could not check: {result.problem}")
    lines += [f"  note: {note}" for note in result.notes]
    lines += [format_check(test) for test in result.tests]
    if len(passed) == len(result.tests) and not result.problem:
        lines.append("All public checks passed. Hidden checks on other inputs run when you are graded.")
    else:
        lines.append("Fix the checks marked above and run this again. Hidden checks run when you are graded.")
    print(safe("\n".join(lines)))
    return 0 if len(passed) == len(result.tests) and not result.problem else 1
