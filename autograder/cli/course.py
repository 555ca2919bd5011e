"""Commands around the grade: history, and the LMS gradebook exports (export canvas|moodle|blackboard).

`stored_grades` is what every command that writes grades out reads: the
result each student's submissions policy counts (grading.attempts), with the
late rule beside it.
"""
from __future__ import annotations

import sys
from pathlib import Path

from autograder.cli import options
from autograder.cli.regrade import meant
from autograder.cli.retract import blank_after_retraction
from autograder.grading.attempts import counted_results
from autograder.grading.batch import default_db
from autograder.grading.course import CourseError, find_course, load_course
from autograder.grading.history import attempts
from autograder.grading.ids import as_stored
from autograder.grading.late import FILE_TIME, assess_result
from autograder.grading.regrade import held_back, kept_by_no_decrease
from autograder.grading.store import Store, StoreError, stored_history
from autograder.grading.suite import suite_version
from autograder.outputs import ExportError, lms, replaced_whole
from autograder.outputs.attempts import format_history, history_lines
from autograder.outputs.roster import column_points, lms_columns, not_on_roster, read_roster, zeros_lost
from autograder.text import counted, safe


def add_commands(commands) -> None:
    history = commands.add_parser("history", help="every result kept of one student's hand-ins: time, file hash, "
                                                  "suite version, score, which counts, and which are retracted")
    history.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    history.add_argument("student", help="student id, as stored by `grade`")
    history.add_argument("--json", action="store_true", help="one JSON object per result")
    options.results_db(history)
    options.course(history)
    history.set_defaults(run=_history)


def add_export_formats(formats) -> None:
    """`export canvas|moodle|blackboard`, beside `export csv` (cli.outputs)."""
    for name, what in (("canvas", "Canvas's gradebook import CSV"),
                       ("moodle", "Moodle's grade import CSV, feedback in its own column (or, given Moodle's grading "
                                  "worksheet as the roster, that worksheet filled in)"),
                       ("blackboard", "Blackboard's Grade Center upload, tab-delimited")):
        command = formats.add_parser(name, help=f"{what}: one row per roster student")
        command.add_argument("--roster", type=Path, required=True,
                             help="CSV or JSON: student and any of name, email, username, lms_id, sis_user_id, "
                                  "sis_login_id, section; or the LMS's own: Canvas's gradebook export, Moodle's "
                                  "grading worksheet, Blackboard's Grade Center download (README: LMS gradebooks)")
        command.add_argument("--out", type=Path, help=f"file to write (default: ASSIGNMENT-{name}"
                                                      f"{lms.FORMATS[name].suffix})")
        command.add_argument("--column", help="the gradebook column's title (default: the assignment's title)")
        command.add_argument("--column-id", default="", help="the LMS's id of an existing column (Canvas: the "
                                                             "assignment id; Blackboard: the Column ID)")
        command.add_argument("--gradebook", help="nbgrader gradebook to take students' names from where the roster "
                                                 "has none (default: gradebook.db beside course.yaml, if there)")
        command.add_argument("--force", action="store_true", help="write totals above the column's maximum in "
                             "the LMS as they are (refused by default: the LMS would skip them, or take them as more "
                             "than full marks)")
        options.results_db(command)
        options.stored_assignment(command, "assignment to export (default: the only one in the database)")
        options.course(command)
        command.set_defaults(run=_export_lms, lms=name)


def stored_grades(args):
    """(course, assignment, counted results, late rule) of the stored grades an output command writes out.

    An extension for a student with no result is most likely a mistyped id, so it is named; so are the
    students with hand-ins beyond the assignment's `max`.
    """
    course = load_course(args.course or find_course())
    db = (args.db or default_db(course)).resolve()
    assignment, found = stored_history(db, args.assignment)  # each result read once
    settings = course.assignment(assignment)
    rule = settings.late
    results, over = counted_results(attempts(found), settings.submissions, rule)
    for student in rule.unknown_students({entry.result.student for entry in found}):
        print(f"autograder: warning: {course.path}: assignments.{assignment}.extensions.{student}: no student "
              f"{student!r} has a result in {db}, so this extension applies to nobody; check the id",
              file=sys.stderr)
    _say_if_graded_earlier(course, assignment, results)
    _say_if_late_by_file_time(rule, results)
    if over:
        print(safe(f"autograder: note: {counted(len(over), 'student')} handed in more than "
                   f"{settings.submissions.limit} times ({_some(over)}): the later hand-ins are kept but do not "
                   f"count (`autograder history {assignment} STUDENT` lists them)"), file=sys.stderr)
    return course, assignment, results, rule


def _say_if_late_by_file_time(rule, results) -> None:
    """A warning where the late rule cuts totals by the file's modification time: a due time added after grading
    applies to hand-ins `grade` had no reason to warn about, and copying or extracting the folder moves those times."""
    cut = sorted(result.student for result in results if result.submitted_at_source == FILE_TIME
                 and assess_result(rule, result).penalty > 0)
    if cut:
        print(safe(f"autograder: warning: the late rule cuts {counted(len(cut), 'total')} by the hand-in's file "
                   f"modification time, which copying or extracting the class folder changes ({_some(cut)}); check "
                   "those times (`autograder history`), and where they are not when the students handed in, grade "
                   "with the LMS's or nbgrader's own times, or leave `due` out of course.yaml and apply the LMS's "
                   "late policy"), file=sys.stderr)


def _say_if_graded_earlier(course, assignment: str, results) -> None:
    """A note where results being written out were graded under an earlier suite (its checks, points, limits or
    tolerances changed since): their points are as graded then, which a TA would otherwise take for current. Those
    kept by `regrade --no-decrease` are named as such: a regrade would not change them, and was done already."""
    try:
        version = suite_version(course, assignment)
    except (OSError, ValueError):  # the suite's files are not here (an export away from the course): nothing to say
        return
    earlier = [result for result in results if result.suite_version != version]
    held = [result for result in earlier if kept_by_no_decrease(result)]
    others = [result.student for result in earlier if not kept_by_no_decrease(result)]
    if others:
        was, is_ = ("was", "is") if len(others) == 1 else ("were", "are")
        print(safe(f"autograder: note: {counted(len(others), 'result')} of {len(results)} ({_some(others)}) {was} "
                   "graded under an earlier suite (the checks, their points or course.yaml changed since), and "
                   f"{is_} written out as graded then; `autograder regrade {assignment} --preview` shows whom the "
                   "current suite moves, `autograder regrade` applies it"), file=sys.stderr)
    if held:
        points = course.assignment(assignment).max_score
        out_of = sorted({r.max_score for r in held if r.max_score != points})
        scale = f", out of {' or '.join(f'{m:g}' for m in out_of)} where the current suite is out of {points:g}" \
            if out_of else ""
        print(safe(f"autograder: note: {counted(len(held), 'result')} of {len(results)} "
                   f"({_some([r.student for r in held])}) {'is' if len(held) == 1 else 'are'} kept from an earlier "
                   f"suite by `regrade --no-decrease`, since the current suite scored them lower, and written out as "
                   f"graded then{scale}; nothing to do unless the lower scores are to count (`autograder regrade "
                   f"{assignment}` without --no-decrease; `autograder history {assignment} STUDENT` shows both)"),
              file=sys.stderr)


def hold_changed_suite(plan, store: Store, suite, force: bool):
    """`grade`'s plan without the unchanged hand-ins graded under an earlier suite, said so, with what to run.

    `grade` grades new and changed hand-ins and leaves those results as they are, rather than overwriting them
    quietly: `regrade --preview` shows whom the new suite moves, `regrade` (or `grade --force`) applies it.
    """
    plan, held = held_back(plan, store, suite.assignment.name, suite.version, force)
    if held:
        name = suite.assignment.name
        print(safe(f"autograder: the suite of {name} (its checks, reference or settings, or the grader's own code) "
                   f"changed since {counted(len(held), 'unchanged hand-in')} of this class folder were graded "
                   f"({_some(held)}): not graded again, their results stay as they were (and are not in the "
                   f"table below). `autograder regrade {name} --preview` shows whom "
                   f"the new suite moves and by how much; `autograder regrade {name}` applies it, keeping the "
                   "earlier results (`grade --force` regrades them too)"), file=sys.stderr)
    return plan


def _export_lms(args) -> int:
    course, assignment, results, rule = stored_grades(args)
    settings = course.assignment(assignment)
    roster = _with_names(read_roster(args.roster, lms.ROSTER_FIELDS), course, args.gradebook)
    kind = lms.format_for(args.lms, roster)
    shared = {}  # one user stored under two ids: whose total is theirs is for a person to say
    if kind.user_of is not None:
        shared = lms.shared_users(roster, {r.student for r in results}, kind.user_of)
        roster = lms.by_lms_user(roster, {r.student for r in results}, kind.user_of)
    made, unknown = lms.rows(roster, results, rule, settings.submissions.missing)
    unknown = [student for student in unknown if not any(student in both for both in shared.values())]
    nameless = lms.unidentified(made, kind.identities)
    if nameless:
        raise ExportError(f"{args.roster}: {len(nameless)} students have none of {', '.join(kind.identities)}, which "
                          f"{args.lms.capitalize()} finds students by ({_some(nameless)}); add the column and export "
                          "again")
    column = lms.Column(args.column or settings.title, _column_id(args, settings.title, kind), settings.max_score)
    stated, said = lms.stated_maximum(made, column, column_points(args.roster))
    above, other = lms.above_maximum(made, column, stated, said, "moodle worksheet" if kind is lms.MOODLE_WORKSHEET
                                     else args.lms, assignment)
    above = [*lms.shared_user_problems(shared, args.lms, assignment), *above]
    if above and not args.force:
        raise ExportError(safe(f"{args.roster}: {'. '.join(above)}. Nothing was written (--force writes the file "
                               "all the same)", 2000))
    ungraded = [row.student for row in made if row.feedback in lms.NO_GRADE]
    if unknown and len(ungraded) == len(made):  # uploaded, it would blank every grade and feedback in the LMS
        raise ExportError(f"{args.roster}: none of its {len(made)} students is one with a result, and "
                          f"{len(unknown)} with a result are not on it ({_some(unknown, 10)}), so nothing was "
                          "written: the roster's ids are not the ones graded. Check that it is this course's "
                          f"roster and that its students are found by the ids {assignment} was graded under, and "
                          f"export again{zeros_lost(ungraded, unknown)}")
    out = args.out or Path(f"{assignment}-{args.lms}{kind.suffix}")
    out.parent.mkdir(parents=True, exist_ok=True)
    written, left_out = kind.written(made)
    with replaced_whole(out) as stream:
        kind.write(written, column, stream)
    print(safe(f"wrote {counted(len(written), 'student')} of the roster of {assignment} "
               f"({len(made) - len(ungraded)} with a grade; {settings.submissions.missing} for {len(ungraded)}"
               f"{': ' + _some(ungraded, 10) if ungraded else ''}{left_out}) to {out.resolve()}: import it as the "
               f"LMS documents ({kind.docs})", 2000), file=sys.stderr)
    blank = blank_after_retraction(made, (args.db or default_db(course)).resolve(), assignment,
                                   settings.submissions.missing)
    if blank:
        print(safe(blank, 2000), file=sys.stderr)
    for line in [*(f"written all the same (--force): {line}" for line in above), *([other] if other else [])]:
        print(safe(f"autograder: warning: {line}", 2000), file=sys.stderr)
    if unknown:
        print(safe(f"autograder: warning: {not_on_roster(unknown, ungraded, args.roster)}"), file=sys.stderr)
    return 0


def _column_id(args, title: str, kind) -> str:
    """The LMS's id of the column to fill: --column-id, checked against the columns the roster's header names
    where it is the LMS's own download; else that header's id for the column's title (without one, the LMS
    makes a second column of that title). Moodle's upload maps its columns by hand: no id is written."""
    if kind in (lms.FORMATS["moodle"], lms.MOODLE_WORKSHEET):
        if args.column_id:
            raise ExportError("--column-id is not read by Moodle, whose import maps each column to a grade item in "
                              "its preview; leave --column-id out and export again")
        return ""
    known = lms_columns(args.roster)
    title = args.column or title
    listed = ", ".join(f"{name} ({number})" for name, number in known[:10]) + (
        f" and {len(known) - 10} more" if len(known) > 10 else "")
    if not args.column_id:
        ids = [number for name, number in known if name == title]
        if len(ids) > 1:
            raise ExportError(f"the roster names {len(ids)} columns titled {title!r} (ids {', '.join(ids)}); pass "
                              "--column-id with the one to fill, and export again")
        if ids:
            print(safe(f"the roster's own column {title!r} has the id {ids[0]}: writing into it (--column-id "
                       "picks another)"), file=sys.stderr)
        elif known:  # the LMS would add a column beside the assignment's own, which stays empty
            print(safe(f"autograder: warning: the roster names no column titled {title!r} ({listed}), so the file "
                       f"makes a new column of that title. To fill one of those columns instead, pass --column with "
                       "its title (or --column-id with its id) and export again"), file=sys.stderr)
        return ids[0] if ids else ""
    names = [name for name, number in known if number == args.column_id]
    if known and not names:
        raise ExportError(f"--column-id {args.column_id} is none of the columns the roster's header names ({listed}); "
                          "pass one of those ids, or leave --column-id out to make a new column, and export again")
    if names and names[0] != title:  # the upload would fill another assignment's column under this title
        raise ExportError(f"--column-id {args.column_id} is the roster's column {names[0]!r}, not {title!r}; pass "
                          f"--column {names[0]!r} to fill that column, or the id of {title!r}, and export again")
    return args.column_id


def _with_names(roster: dict, course, gradebook: str | None) -> dict:
    """The roster, with names and emails from nbgrader's gradebook for students it gives none."""
    if not any(not (who.get("name") or who.get("last_name")) or not who.get("email") for who in roster.values()):
        return roster
    try:
        from nbgrader.api import Gradebook

        from autograder.nbgrader.gradebook import gradebook_url
    except ModuleNotFoundError:
        return roster  # nbgrader is an extra: without it, the roster's own names
    url, place = gradebook_url(gradebook, course.root)
    prefix = "sqlite:///"
    if url.startswith(prefix) and not Path(url[len(prefix):]).is_file():
        if gradebook is None:
            return roster  # no nbgrader course here: the roster's own names
        raise ExportError(f"there is no nbgrader gradebook at {place}; pass --gradebook with the course's "
                          "gradebook.db, or leave it out")
    with Gradebook(url) as book:
        known = {s.id: s for s in book.students}
    for student, who in roster.items():
        entry = known.get(student)
        if entry is not None:
            names = {"first_name": entry.first_name, "last_name": entry.last_name, "email": entry.email}
            who.update({k: safe(v, 200) for k, v in names.items() if v and not who.get(k)})
    return roster


def _history(args) -> int:
    course = load_course(args.course or find_course())
    settings = course.assignment(args.assignment)
    db = options.db_path(args)
    if not Path(db).is_file():
        raise StoreError(f"there is no results database at {db}; grade first, or pass --db with the database")
    with Store.for_reading(db) as store:
        student = args.student
        # Their rows only, retracted ones too (grading.retract), shown as such.
        mine = attempts(store.history(settings.name, [student], retracted=True)).get(student)
        if not mine:  # ids compare as everywhere else, case and width folded: `ST02` finds st02's rows
            known = store.students(settings.name)
            student = as_stored([student], known).get(student, student)
            mine = attempts(store.history(settings.name, [student], retracted=True)).get(student)
    if not mine:
        raise CourseError(f"{db} has no result of student {args.student!r} for {settings.name}; "
                          f"{meant([args.student], known)}check the id (`autograder export csv` lists the students "
                          "graded)")
    lines = history_lines(mine, settings.submissions, settings.late) if args.json else \
        [format_history(student, mine, settings.submissions, settings.late)]
    print("\n".join(safe(line) for line in lines))
    return 0


def _some(students: list[str], shown: int = 5) -> str:
    return ", ".join(students[:shown]) + (", …" if len(students) > shown else "")

