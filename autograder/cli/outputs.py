"""Commands for what grades become: report, export, gradescope-bundle."""
from __future__ import annotations

import sys
from pathlib import Path

from autograder.cli import options
from autograder.cli.course import add_export_formats, stored_grades
from autograder.cli.gradescope import run_script
from autograder.grading.course import find_course, load_course
from autograder.grading.retract import withdrawn_students
from autograder.outputs import bundle, grades_csv, gradescope, replaced_whole
from autograder.text import counted, safe


def add_commands(commands) -> None:
    report = commands.add_parser("report", help="write each student's feedback and the class report "
                                                "from stored results")
    options.results_db(report)
    report.add_argument("--out", type=Path, help="folder for index.html, grades.csv and feedback/ (default: "
                                                 "report/<assignment>, so two assignments' pages never mix)")
    options.stored_assignment(report, "assignment to report on (default: the only one in the database)")
    options.course(report)
    report.set_defaults(run=_report)

    export = commands.add_parser("export", help="write stored grades as CSV, Gradescope results.json files, "
                                                "or into an nbgrader gradebook")
    formats = export.add_subparsers(dest="format", required=True)
    to_csv = formats.add_parser("csv", help="one row per student: total, points per function, status flags")
    to_csv.add_argument("--out", type=Path, help="CSV file to write (default: standard output)")
    to_csv.set_defaults(run=_export_csv)
    to_gradescope = formats.add_parser("gradescope", help="OUT/<student>/results.json in Gradescope's format")
    to_gradescope.add_argument("--out", type=Path, required=True, help="folder to write the results into "
                                                                       "(required; e.g. out/gradescope)")
    to_gradescope.set_defaults(run=_export_gradescope)
    to_nbgrader = formats.add_parser("nbgrader", help="leave an nbgrader course as `nbgrader autograde` would: "
                                                      "autograded notebooks and the gradebook, with our scores")
    to_nbgrader.add_argument("--root", type=Path, help="the nbgrader course folder, holding submitted/ and "
                                                       "autograded/ (default: the folder of course.yaml)")
    to_nbgrader.add_argument("--gradebook", help="nbgrader database: a path or a URL (sqlite:///gradebook.db); "
                                                 "relative ones are relative to --root (default: gradebook.db there)")
    to_nbgrader.add_argument("--notebook", help="notebook name in the gradebook (default: the assignment's "
                                                "module from course.yaml)")
    to_nbgrader.add_argument("--roster", type=Path, help="students' names for the formgrader: nbgrader's CSV "
                                                         "(id,first_name,last_name,email) or a JSON list with "
                                                         "student, first_name, last_name, email")
    to_nbgrader.set_defaults(run=_export_nbgrader)
    for command in (to_csv, to_gradescope, to_nbgrader):
        options.results_db(command)
        options.stored_assignment(command, "assignment to export (default: the only one in the database)")
        options.course(command)
    add_export_formats(formats)

    bundle = commands.add_parser("gradescope-bundle", help="write a Gradescope autograder zip for an assignment")
    bundle.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    bundle.add_argument("--out", type=Path, default=Path("autograder.zip"), help="zip to write (default: %(default)s)")
    options.course(bundle)
    bundle.set_defaults(run=_gradescope_bundle)


def _refused(refused: list[str], what: str) -> int:
    """List, last, each student an output could not write, with the reason; the exit status says whether any."""
    for line in refused:
        print(f"autograder: {what}: {line}", file=sys.stderr)
    return 1 if refused else 0


def _export_csv(args) -> int:
    _, assignment, results, rule = stored_grades(args)
    if args.out is None:
        refused = grades_csv.write_csv(results, sys.stdout, rule)
        where = "standard output (--out FILE writes a file)"
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with replaced_whole(args.out) as stream:
            refused = grades_csv.write_csv(results, stream, rule)
        where = str(args.out.resolve())
    print(f"wrote {counted(len(results) - len(refused), 'student')} of {assignment} to {where}", file=sys.stderr)
    return _refused(refused, "not exported")


def _export_gradescope(args) -> int:
    _, assignment, results, rule = stored_grades(args)
    written = gradescope.write_gradescope_dir(results, args.out, rule)
    print(f"wrote {len(written.files)} results.json files of {assignment} under {args.out.resolve()}/<student>/",
          file=sys.stderr)
    if written.removed:
        print(safe(f"autograder: removed the results.json an earlier export wrote for {len(written.removed)} students "
                   f"with no result now ({', '.join(written.removed[:10])}{', …' if len(written.removed) > 10 else ''}"
                   "; every hand-in retracted, or graded into another database): a score of theirs uploaded to "
                   "Gradescope before stays there; delete it in Gradescope by hand", 2000), file=sys.stderr)
    return _refused(written.refused, "not exported")


def _export_nbgrader(args) -> int:
    # Imported here: only this command needs nbgrader, an extra.
    from autograder.nbgrader.gradebook import Target, gradebook_url, write_nbgrader
    from autograder.nbgrader.roster import read_roster, unnamed, without_result
    from autograder.nbgrader.withdrawn import clear_withdrawn

    course, assignment, results, rule = stored_grades(args)
    settings = course.assignment(assignment)
    root = (args.root or course.root).resolve()
    url, place = gradebook_url(args.gradebook, root)
    notebook = args.notebook or settings.module
    names = read_roster(args.roster) if args.roster else {}
    summary = write_nbgrader(results, Target(url, root, assignment, notebook, rule, settings.source_dir, names))
    print(f"wrote {counted(summary.students, 'student')} of {assignment} into the nbgrader gradebook {place} "
          f"(notebook {notebook!r}, one autograded cell per function, {sum(summary.cells.values()):g} points)",
          file=sys.stderr)
    if summary.autograded:
        print(f"wrote {counted(len(summary.autograded), 'autograded notebook')} under {root / 'autograded'}/<student>/"
              f"{assignment}/: the formgrader (Manage Submissions, manual grading), `nbgrader export` and "
              "`nbgrader generate_feedback` show our scores", file=sys.stderr)
    else:
        print("wrote no autograded notebooks: the gradebook has no released notebook (release into it first: "
              f"`autograder release {assignment} --out {root / 'release'} --gradebook {place}`), or no submission "
              f"is in {root / 'submitted'}/; `nbgrader export` shows the totals, the formgrader has nothing to grade "
              "by hand", file=sys.stderr)
    for line in summary.notes:
        print(f"  note: {line}", file=sys.stderr)
    if summary.unnamed:
        print(f"  note: {unnamed(summary.unnamed, args.roster)}", file=sys.stderr)
    if args.roster and (note := without_result(names, [r.student for r in results], args.roster, assignment)):
        print(f"  note: {note}", file=sys.stderr)
    for line in clear_withdrawn(url, assignment, notebook, withdrawn_students(options.db_path(args).resolve(),
                                                                                 assignment)):
        print(f"autograder: retracted: {line}", file=sys.stderr)
    for line in summary.skipped:
        print(f"autograder: not exported: {line}", file=sys.stderr)
    return 1 if summary.skipped else 0


def _gradescope_bundle(args) -> int:
    course = load_course(args.course or find_course())
    names = bundle.write_bundle(course, args.assignment, args.out, run_script(args.assignment))
    print(f"wrote {args.out.resolve()} ({len(names)} files): upload it as the assignment's autograder on Gradescope. "
          "It holds the solutions; keep it private.", file=sys.stderr)
    return 0


def _report(args) -> int:
    # Imported here: matplotlib and jinja2 would slow every other command's start.
    from autograder.outputs.report import write_reports

    _, assignment, results, rule = stored_grades(args)
    out = (args.out or Path("report") / assignment).resolve()
    written = write_reports(assignment, results, out, rule)
    print(f"wrote feedback for {counted(len(results) - len(written.refused), 'student')} of {assignment} to "
          f"{out / 'feedback'}/ and {out / 'grades.csv'}", file=sys.stderr)
    print(f"class report: {written.index}")
    return _refused(written.refused, "no feedback")
