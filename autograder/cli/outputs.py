"""Commands for what grades become: report, export, gradescope-bundle, gradescope-run."""
from __future__ import annotations

import sys
from pathlib import Path

from autograder.cli import options
from autograder.grading.course import find_course, load_course
from autograder.grading.store import stored_results
from autograder.outputs import bundle, gradebook, grades_csv, gradescope


def add_commands(commands) -> None:
    report = commands.add_parser("report", help="write each student's feedback and the class report "
                                                "from stored results")
    options.results_db(report)
    report.add_argument("--out", type=Path, default=Path("report"),
                        help="folder for index.html, grades.csv and feedback/ (default: %(default)s)")
    report.add_argument("--assignment", help="assignment to report on (default: the only one in the database)")
    options.course(report)
    report.set_defaults(run=_report)

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
                                                "module from course.yaml)")
    to_nbgrader.set_defaults(run=_export_nbgrader)
    for command in (to_csv, to_gradescope, to_nbgrader):
        options.results_db(command)
        command.add_argument("--assignment", help="assignment to export (default: the only one in the database)")
        options.course(command)

    bundle = commands.add_parser("gradescope-bundle", help="write a Gradescope autograder zip for an assignment")
    bundle.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    bundle.add_argument("--out", type=Path, default=Path("autograder.zip"), help="zip to write (default: %(default)s)")
    options.course(bundle)
    bundle.set_defaults(run=_gradescope_bundle)

    run = commands.add_parser("gradescope-run", help="grade the one submission in a Gradescope container and "
                                                     "write results/results.json (the bundle's run_autograder)")
    run.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    run.add_argument("--root", type=Path, default=gradescope.GRADESCOPE_ROOT,
                     help="Gradescope's folder holding submission/ and results/ (default: %(default)s)")
    options.course(run)
    options.sandbox(run)
    run.set_defaults(run=_gradescope_run)


def _export_csv(args) -> int:
    assignment, results = stored_results(options.db_path(args), args.assignment)
    if args.out is None:
        grades_csv.write_csv(results, sys.stdout)
        where = "standard output (--out FILE writes a file)"
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as stream:
            grades_csv.write_csv(results, stream)
        where = str(args.out)
    print(f"wrote {len(results)} students of {assignment} to {where}", file=sys.stderr)
    return 0


def _export_gradescope(args) -> int:
    assignment, results = stored_results(options.db_path(args), args.assignment)
    written = gradescope.write_gradescope_dir(results, args.out)
    print(f"wrote {len(written)} results.json files of {assignment} under {args.out}/<student>/", file=sys.stderr)
    return 0


def _export_nbgrader(args) -> int:
    url = args.gradebook if "://" in args.gradebook else f"sqlite:///{Path(args.gradebook).resolve()}"
    assignment, results = stored_results(options.db_path(args), args.assignment)
    notebook = args.notebook or load_course(args.course or find_course()).assignment(assignment).module
    summary = gradebook.write_nbgrader(results, url, assignment, notebook)
    print(f"wrote {summary.students} students of {assignment} into {url} (notebook {notebook!r}, one grade "
          f"cell per function, {sum(summary.cells.values()):g} points); `nbgrader export` and formgrader show "
          "them", file=sys.stderr)
    return 0


def _gradescope_bundle(args) -> int:
    course = load_course(args.course or find_course())
    names = bundle.write_bundle(course, args.assignment, args.out)
    print(f"wrote {args.out} ({len(names)} files): upload it as the assignment's autograder on Gradescope. "
          "It holds the solutions; keep it private.", file=sys.stderr)
    return 0


def _gradescope_run(args) -> int:
    gradescope.grade_for_gradescope(load_course(args.course or find_course()), args.assignment, args.root,
                                 args.sandbox)
    return 0


def _report(args) -> int:
    # Imported here: matplotlib and jinja2 would slow every other command's start.
    from autograder.outputs.report import write_reports

    assignment, results = stored_results(options.db_path(args), args.assignment)
    index = write_reports(assignment, results, args.out)
    print(f"wrote feedback for {len(results)} students of {assignment} to {args.out / 'feedback'}/ and "
          f"{args.out / 'grades.csv'}", file=sys.stderr)
    print(f"class report: {index}")
    return 0
