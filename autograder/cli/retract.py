"""`autograder retract`: withdraw a hand-in (or a whole student) stored by mistake, with a preview and an undo.

The rows stay in the database, marked (grading.retract); this prints what changes for the student, and makes
`grade` say so when it meets a retracted file again rather than grading it back in.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.cli import options
from autograder.grading import retract
from autograder.grading.course import CourseError, find_course, load_course
from autograder.grading.ids import as_stored, canonical, near_ids
from autograder.grading.sole_writer import SoleWriter
from autograder.grading.store import Store, StoreError
from autograder.outputs.progress import starting
from autograder.text import command, counted, one_line, safe


def add_commands(commands) -> None:
    command = commands.add_parser("retract", help="withdraw a hand-in stored by mistake (or all of a student's) from "
                                                  "every report and export; kept and marked, --undo puts it back")
    command.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    command.add_argument("student", help="student id, as stored by `grade` (`autograder history ASSIGNMENT "
                                         "STUDENT` lists their hand-ins)")
    command.add_argument("--handin", type=_number, nargs="+", metavar="N",
                         help="only these hand-ins, numbered as `autograder history` shows them (default: all of "
                              "the student's)")
    command.add_argument("--reason", default="", help="why, kept with the retraction and shown by `history`")
    command.add_argument("--preview", action="store_true", help="print what would change; change nothing")
    command.add_argument("--undo", action="store_true", help="put retracted hand-ins back (the same --handin "
                                                             "numbers; default: all of the student's)")
    options.results_db(command)
    options.course(command)
    command.set_defaults(run=_retract)


def _number(text: str) -> int:
    """An argparse type: a hand-in's number, 1 or more as `history` numbers them (0 or -1 is a typo)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is no hand-in number: hand-ins are numbered from 1 as `autograder history ASSIGNMENT STUDENT` "
            "shows them. Give those numbers, or leave --handin out to retract every hand-in of the student (with "
            "--undo: put back every retracted one)")
    return value


def _retract(args) -> int:
    course = load_course(args.course or find_course())
    settings = course.assignment(args.assignment)
    db = options.db_path(args).resolve()
    if not db.is_file():
        raise StoreError(f"there is no results database at {db}; grade first, or pass --db with the database")
    with Store(db) as store, SoleWriter(db, "retract", starting):
        student, found = _student(store, settings.name, args.student, db)
        try:
            change = retract.plan(found, student, args.handin, args.undo, settings.submissions, settings.late,
                                  settings.name)
        except retract.RetractError as error:
            raise CourseError(str(error)) from None
        print(safe("\n".join(describe(change, settings.name, settings.submissions.policy)), 4000))
        if not args.preview:
            retract.apply(store, settings.name, change, retract.note(args.reason))
    print(safe(_after(args, change, settings.name, db), 2000), file=sys.stderr)
    return 0


def _student(store: Store, assignment: str, asked: str, db: Path) -> tuple[str, list]:
    """(the stored id, every result of theirs, retracted ones too); ids compare as elsewhere (case, width folded).
    CourseError naming ids near it when the store has none of theirs."""
    found = store.history(assignment, [asked], retracted=True)
    if found:
        return asked, found
    known = {entry.result.student for entry in store.history(assignment, retracted=True)}
    student = as_stored([asked], known).get(asked, "")
    if not student:
        near = near_ids(asked, known)
        meant = f"did you mean {', '.join(near)}? " if near else ""
        raise CourseError(f"{db} has no hand-in of student {asked!r} for {assignment}; {meant}check the id "
                          "(`autograder export csv` lists the students graded), and run again")
    return student, store.history(assignment, [student], retracted=True)


def describe(change: retract.Change, assignment: str, policy: str) -> list[str]:
    """What the change does, one line per hand-in, then the student's counted total before and after."""
    verb = "put back" if change.undo else "retract"
    lines = []
    for attempt in change.handins:
        result = attempt.current.result
        lines.append(f"{verb} hand-in {attempt.number} of {change.student} for {assignment}: handed in "
                     f"{result.submitted_at or 'at an unknown time'}, {Path(result.file).name or 'no file'}, "
                     f"sha256 {result.sha256[:12] or 'none'}, {result.score:g} / {result.max_score:g} points"
                     + (f" ({one_line(attempt.entries[-1].retracted, 600)})" if change.undo else ""))
    lines.append(f"{change.student}'s counted total (policy: {policy}): {_counted(change.before)} -> "
                 f"{_counted(change.after)}")
    if change.after is None:
        lines.append(f"{change.student} then has no result for {assignment}: they leave every report and export "
                     "(an LMS export gives them course.yaml's `missing`)")
    return lines


def _counted(counted_: retract.Counted | None) -> str:
    return "no result" if counted_ is None else f"{counted_.total:g} (hand-in {counted_.number})"


def _after(args, change: retract.Change, assignment: str, db: Path) -> str:
    """The closing line: what was (or would be) done, and what to run next."""
    again = command("retract", [assignment, change.student],
                    ["--handin", *(a.number for a in change.handins), *(["--undo"] if change.undo else [])])
    what = counted(len(change.handins), "hand-in")
    if args.preview:
        return (f"preview: nothing was changed; `{again}` (without --preview) "
                f"{'puts' if change.undo else 'retracts'} the {what} above")
    if change.undo:
        return (f"put back {what} of {change.student}: {_as_before(change, assignment)}. Write the reports and "
                "exports again (`autograder report`, `autograder export ...`) to bring files written since up to date")
    it = "it" if len(change.handins) == 1 else "them"
    undo = command("retract", [assignment, change.student], ["--handin", *(a.number for a in change.handins), "--undo"])
    return (f"retracted {what} of {change.student}: kept in {db}, marked retracted (`"
            f"{command('history', [assignment, change.student])}` shows {it}), and left out of every report and "
            f"export from now on; write those again (`autograder report`, `autograder export ...`) to replace files "
            f"written before. `{undo}` puts {it} back; `autograder grade` does not grade {it} again until then"
            + (", nor another file of theirs in its place" if change.whole else
               "; where the student handed in other files beside it, `grade` grades their best other one instead"))


def _as_before(change: retract.Change, assignment: str) -> str:
    """What counts after an undo, said against what counted before the retraction: the same only where no hand-in
    graded since (the student's other file, graded in the retracted one's place) changed it; each of those named,
    with the command that retracts it."""
    same = change.after == change.was
    said = ("they count again as before the retraction" if same else
            f"their counted total is now {_counted(change.after)}, not {_counted(change.was)} as before the "
            "retraction")
    for attempt in change.in_place:
        result = attempt.current.result
        again = command("retract", [assignment, change.student], ["--handin", attempt.number])
        counts = change.after is not None and change.after.number == attempt.number
        said += (f"; hand-in {attempt.number} ({Path(result.file).name or 'no file'}) was graded in the retracted "
                 f"one's place while it was retracted, and {'counts now' if counts else 'stays among their hand-ins'}"
                 f": `{again}` retracts it" + ("" if same else f", and the total is then {_counted(change.without)}"))
    return said


def hold_retracted(plan, store: Store, assignment: str):
    """`grade`'s plan without the files that are retracted hand-ins again, nor those of a student retracted whole,
    said so, with how to put them back: grading them would bring the mistake back."""
    plan, lines = retract.withheld(plan, store, assignment)
    for held in lines[:5]:
        print(safe(f"autograder: not graded: {_held_line(held, assignment)}", 2000), file=sys.stderr)
    if len(lines) > 5:
        print(safe(f"autograder: not graded: {len(lines) - 5} more retracted hand-ins "
                   f"({', '.join(held.student for held in lines[5:])}); `autograder history {assignment} STUDENT` "
                   "shows each", 2000), file=sys.stderr)
    return plan


def _held_line(held: retract.Held, assignment: str) -> str:
    """Why one file is not graded, and the command that puts its hand-in (or its student) back."""
    if held.whole:
        when, why = retract.retracted_at(held.whole), held.whole.partition(": ")[2]
        later = (f" (it was handed in {held.later}, after the retraction, and is held too: the retraction is of the "
                 "student, not of a file)" if held.later else "")
        handin = f" (hand-in {', '.join(map(str, held.numbers))} of theirs)" if held.numbers else ""
        because = f" ({why})" if why else ""
        return (f"{held.what}{handin}, retracted whole on {when[:10] or 'an earlier date'}{because}: "
                f"no file of theirs is graded{later} until the retraction is undone; "
                f"`{command('retract', [assignment, held.student], ['--undo'])}` puts them back (--preview shows "
                "what that puts back), then grade again; --force does not grade them")
    back = command("retract", [assignment, held.student],
                   [*(["--handin", *held.numbers] if held.numbers else []), "--undo"])
    return (f"{held.what}, hand-in {', '.join(map(str, held.numbers)) or '?'} of theirs, retracted earlier, stays out "
            f"of every grade. To grade it again, put it back first (`{back}`; --preview shows what that puts back), "
            "then grade again; --force does not grade it")


def blank_after_retraction(made: list, db: Path, assignment: str, missing: str) -> str:
    """An LMS export's warning naming the roster students given a blank cell because every hand-in of theirs is
    retracted: a blank cell changes nothing in the LMS, so a grade uploaded before stays. "" when there are none."""
    gone = {canonical(student) for student in retract.withdrawn_students(db, assignment)}
    blank = [row.student for row in made if not row.total and canonical(row.student) in gone]
    if missing != "blank" or not blank:
        return ""
    shown = ", ".join(blank[:10]) + (", …" if len(blank) > 10 else "")
    return (f"autograder: warning: {counted(len(blank), 'student')} of the file had every hand-in of {assignment} "
            f"retracted ({shown}), so their cell is blank, and a blank cell changes nothing in the LMS: a grade of "
            "theirs uploaded before stays there. Clear it in the LMS by hand, or set `submissions: {missing: zero}` "
            f"for {assignment} in course.yaml and export again")


def retracted_first(db: Path, assignment: str, asked: list[str], doing: str) -> str:
    """Where some of the ids `asked` are students every hand-in of whom is retracted: a message saying so, and how to
    put them back before `doing` (the command refused); "" where none is."""
    gone = {canonical(student): student for student in retract.withdrawn_students(Path(db).resolve(), assignment)}
    found = [gone[canonical(student)] for student in asked if canonical(student) in gone]
    if not found:
        return ""
    backs = "; ".join(f"`{command('retract', [assignment, student], ['--undo'])}`" for student in found[:5])
    return (f"every hand-in of {', '.join(found[:5])} for {assignment} is retracted (`autograder history {assignment} "
            f"STUDENT` shows each, with why), so there is nothing of theirs to {doing}: it counts nowhere. To "
            f"{doing} it, put it back first ({backs}; --handin N puts back one hand-in only), then run again")
