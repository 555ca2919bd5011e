"""Withdrawing hand-ins stored by mistake, and putting them back: `autograder retract`.

A wrong folder graded, an instructor's reference.py graded as student `reference`, a hand-in a student
made by mistake: each stays in the store, and with `policy: best` a mistaken high total would count for
good. Retracting one hand-in (or all of a student's) marks its history rows (`history.retracted`: when, by
whom, why) rather than deleting them: every grade written out (reports, exports, `grade`'s table, regrade)
reads only the rows left standing (grading.history.entries), so the submissions policy chooses again from
what remains, and a student with nothing left has no result. `history` still shows the retracted rows, and
`--undo` clears the mark. The student's `submissions` row, which decides what a rerun of `grade` skips,
becomes the latest result left standing (none: the row goes).

A later `grade` of a class folder still holding a retracted file does not grade it again (`withheld`): it
says so and how to put it back, since grading it would bring the mistake back as a new hand-in. `--force`
does not change that: undo the retraction first. Where that file is the one the hand-in rule picked of a student's
several, their best other file is graded instead (`past_retracted`): a retraction of chosen hand-ins withdraws a
file, not the student; one of the whole student (no --handin: a stray reference.py) keeps the student out.
Beside it, `as_stored` grades, of files the rule cannot tell apart but by their times, the one already stored:
`files_to_grade` is both steps, which `grade` takes before planning.
"""
from __future__ import annotations

import dataclasses
import datetime
import getpass
import json
import sqlite3
from dataclasses import dataclass

from autograder.grading.attempts import SubmissionPolicy, choose, total_of
from autograder.grading.batch import BatchPlan
from autograder.grading.found import Found, timed
from autograder.grading.handin_choice import picked_not_graded
from autograder.grading.history import Attempt, Entry, attempts
from autograder.grading.late import FILE_TIME, LateRule
from autograder.grading.results import SubmissionResult
from autograder.grading.store import Store
from autograder.grading.submission import read_bytes
from autograder.text import command, one_line

# What the note of a hand-in graded in a retracted one's place says (`_passed_note`), then as notes stored before
# it was reworded said: an undo finds such hand-ins by it.
IN_PLACE = ("retracted when this was graded", "of theirs retracted earlier")


class RetractError(Exception):
    """What was asked cannot be retracted (or put back); the message says what exists and what to do."""


@dataclass(frozen=True)
class Counted:
    """The hand-in that counts for a student (numbered as `history` numbers them) and its total after the late
    rule."""

    number: int
    total: float


@dataclass(frozen=True)
class Change:
    """What retracting (or, with undo, putting back) some of one student's hand-ins does.

    handins: the hand-ins, as `history` shows them; rows: their history rows to mark (or clear); before, after:
    what counts for the student (None: no result); current: the student's stored result afterwards; whole: every
    hand-in of the student was asked for (no --handin), so no other file of theirs is graded in their place.
    """

    student: str
    undo: bool
    handins: tuple[Attempt, ...]
    rows: tuple[int, ...]
    before: Counted | None
    after: Counted | None
    current: SubmissionResult | None
    whole: bool = False
    # With undo: what counted before the retraction (the hand-ins graded since left out); the hand-ins graded in a
    # retracted one's place while it was retracted (`past_retracted`), standing; and what counts once those go too.
    was: Counted | None = None
    in_place: tuple[Attempt, ...] = ()
    without: Counted | None = None


def note(reason: str, now: datetime.datetime | None = None) -> str:
    """What a retracted row keeps of its retraction: when, by whom (the login, where known), and why."""
    when = (now or datetime.datetime.now(datetime.UTC)).isoformat(timespec="seconds")
    try:
        who = f" by {getpass.getuser()}"
    except (OSError, KeyError):  # no login name in the environment nor the password database (a bare container)
        who = ""
    # One line (a newline as `\\n`), so that `history`'s table keeps one row per result.
    return f"retracted {when}{who}" + (f": {one_line(reason.strip(), 2000)}" if reason.strip() else "")


def withdrawn(attempt: Attempt) -> bool:
    """Whether every result of this hand-in is retracted: it counts nowhere."""
    return all(entry.retracted for entry in attempt.entries)


def plan(found: list[Entry], student: str, numbers: list[int] | None, undo: bool, policy: SubmissionPolicy,
         rule: LateRule | None, assignment: str) -> Change:
    """The change retracting hand-ins `numbers` of `student` (None: every one standing) makes, from `found`, every
    result of theirs, retracted ones too; with `undo`, putting back those retracted (None: every one).

    Raises RetractError naming the hand-ins that exist when a number is none of them, or when there is nothing to
    do (all retracted already, or, with undo, none retracted)."""
    mine = attempts(found).get(student, [])
    chosen = _chosen(mine, numbers, undo, student, assignment)
    rows = tuple(e.order for a in chosen for e in a.entries if bool(e.retracted) == undo and e.order)
    marked = "" if undo else "retracted"
    after = [dataclasses.replace(e, retracted=marked) if e.order in rows else e for e in found]
    standing = [e for e in after if not e.retracted]
    current = max(standing, key=lambda e: e.order).result if standing else None
    change = Change(student, undo, tuple(chosen), rows, counted(found, mine, policy, rule),
                    counted(after, mine, policy, rule), current, whole=numbers is None and not undo)
    return _since(change, after, mine, policy, rule) if undo else change


def _since(change: Change, after: list[Entry], mine: list[Attempt], policy: SubmissionPolicy,
           rule: LateRule | None) -> Change:
    """An undo's `change` with what counted before the retraction, and the hand-ins graded in the put-back ones'
    place since: while a hand-in was retracted, `grade` may have graded the student's other file, which stays and
    may count now (policy last, or a `max` the put-back hand-in no longer fits in)."""
    since = [a for a in mine if _graded_since(a, change)]
    gone = {e.order for a in since for e in a.entries}
    was = counted([e for e in after if e.order not in gone], mine, policy, rule)
    in_place = tuple(a for a in since if not withdrawn(a) and _in_place(a))
    taken = {e.order for a in in_place for e in a.entries}
    without = counted([e for e in after if e.order not in taken], mine, policy, rule)
    return dataclasses.replace(change, was=was, in_place=in_place, without=without)


def _graded_since(attempt: Attempt, change: Change) -> bool:
    """Whether `attempt` was first graded after the retraction that `change` undoes: saved after its rows, and
    graded no earlier than the second the retraction was made (rows saved in between, before it, are not)."""
    marked = [e.retracted for a in change.handins for e in a.entries if e.order in change.rows]
    when = min((retracted_at(note) for note in marked), default="")
    first = attempt.entries[0]
    return first.order > max(change.rows, default=0) and (not when or first.result.graded_at[:19] >= when[:19])


def retracted_at(marked: str) -> str:
    """When a retraction note (`note`) was made, ISO 8601 in UTC ("" where the note does not say)."""
    words = marked.split()
    return words[1].rstrip(":") if len(words) > 1 and words[0] == "retracted" else ""


def _in_place(attempt: Attempt) -> bool:
    """Whether `grade` graded this hand-in in place of a retracted one (`_passed_note` says so in its notes)."""
    return any(mark in note for entry in attempt.entries for note in entry.result.notes for mark in IN_PLACE)


def counted(found: list[Entry], numbered: list[Attempt], policy: SubmissionPolicy,
            rule: LateRule | None) -> Counted | None:
    """What counts of the results in `found` left standing, as every export chooses it (grading.attempts), numbered
    as in `numbered` (every hand-in, retracted ones too, as `history` numbers them); None when nothing stands."""
    standing = [e for e in found if not e.retracted]
    if not standing:
        return None
    student = standing[0].result.student
    choice = choose(attempts(standing)[student], policy, rule)
    first = choice.counted.entries[0].order
    number = next((a.number for a in numbered if any(e.order == first for e in a.entries)), choice.counted.number)
    return Counted(number, total_of(choice.counted, rule))


def apply(store: Store, assignment: str, change: Change, marked: str) -> None:
    """Mark the change's rows retracted with `marked` (cleared, for an undo) and replace the student's stored
    result, in one transaction: a retraction is done whole or not at all."""
    store.write(lambda db: (mark(db, change.rows, "" if change.undo else marked, change.whole),
                            store.replace(assignment, change.student, change.current)))


def mark(db: sqlite3.Connection, rows: tuple[int, ...], marked: str, whole: bool = False) -> None:
    """Set these history rows' retraction note ("" puts them back) and whether the whole student was retracted,
    inside the caller's transaction."""
    db.execute("UPDATE history SET retracted=?, retracted_whole=? WHERE id IN (SELECT value FROM json_each(?))",
               (marked, int(whole and bool(marked)), json.dumps(list(rows))))


@dataclass(frozen=True)
class Held:
    """A file `grade` leaves out as retracted: its student, what it is ("b.py of bob (retracted …)"), the numbers of
    the retracted hand-ins of its bytes; for a student retracted whole, that retraction's note (`whole`) and, where
    the layout states the file was handed in after it, that time (`later`)."""

    student: str
    what: str
    numbers: list[int]
    whole: str = ""
    later: str = ""


def withheld(batch: BatchPlan, store: Store, assignment: str) -> tuple[BatchPlan, list[Held]]:
    """`grade`'s plan without the hand-ins that are a retracted one's bytes again, nor any file of a student retracted
    whole with nothing standing, and a `Held` for each: grading them would bring a withdrawn mistake back as a new
    hand-in (a copy of the folder, or a touched file, makes another file of theirs the one picked). A student with
    hand-ins still standing is shown as stored (`skipped`), at the total that counts; one with none is held. Only
    the students about to be graded are read."""
    students = sorted({item.student for item in batch.todo})
    gone = store.retracted(assignment, students) if students else {}
    who = {student for student, _ in gone}
    standing = store.students(assignment) if who else set()
    whole = store.wholly_retracted(assignment, sorted(who - standing)) if who - standing else set()
    keep, found = [], []
    for item in batch.todo:
        sha = _sha256(item) if item.student in who else ""
        if (item.student, sha) in gone or item.student in whole:
            found.append((item, sha))
        else:
            keep.append(item)
    if not found:
        return dataclasses.replace(batch, todo=keep), []
    numbered = attempts(store.history(assignment, sorted({item.student for item, _ in found}), retracted=True))
    notes = {student: max(n for (s, _), n in gone.items() if s == student) for student in whole}
    lines = [_held(item, gone.get((item.student, sha), ""), numbered, sha, notes.get(item.student, ""))
             for item, sha in found]
    on = [item for item, _ in found if item.student in standing]
    held = [item for item, _ in found if item.student not in standing]
    return dataclasses.replace(batch, todo=keep, skipped=[*batch.skipped, *on], held=[*batch.held, *held]), lines


def _held(item: Found, why: str, numbered: dict, sha: str, whole: str) -> Held:
    """What `grade` says of `item` left out: of its bytes' retraction (`why`), or of its student's whole one."""
    numbers = _numbers(numbered, item.student, sha) if why else []
    what = f"{item.path.name} of {item.student}" + (f" ({why})" if why and not whole else "")
    stated = whole and item.submitted_at_source != FILE_TIME  # a file's own time says nothing: a copy renews it
    later = item.submitted_at if stated and _later(item.submitted_at, retracted_at(whole)) else ""
    return Held(item.student, what, numbers, whole, later)


def _later(one: str, other: str) -> bool:
    """Whether ISO time `one` is after `other` (False where either does not read as a time)."""
    try:
        return datetime.datetime.fromisoformat(one) > datetime.datetime.fromisoformat(other)
    except (TypeError, ValueError):  # a naive time beside an aware one, or no time at all
        return False


def files_to_grade(found: list[Found], store: Store, assignment: str) -> list[Found]:
    """`found`, each student's file settled against the store: of files alike but for their times, the one stored
    already (`as_stored`); then past a retracted hand-in (`past_retracted`)."""
    return past_retracted(as_stored(found, store, assignment), store, assignment)


def as_stored(found: list[Found], store: Store, assignment: str) -> list[Found]:
    """`found`, where the file the rules picked of a student's several is alike to others by every rule up to their
    times (equally new), with the first of those whose bytes are a stored hand-in of the student standing: a copy of
    the folder (`cp -r`) gives its files new times in whatever order, and the other file was stored as a new, late
    hand-in; the stored one is found again and skipped. Only students with tied files and stored hand-ins are read,
    one query for the class."""
    if not any(item.tied and item.stored and not item.problem for item in found):
        return found
    stored = store.grading_keys(assignment)
    return [_stored_one(item, {h.sha256 for h in stored[item.student] if not h.retracted})
            if item.tied and item.stored and not item.problem and item.student in stored else item for item in found]


def _stored_one(item: Found, shas: set[str]) -> Found:
    """`item`, or the first of its tied files whose bytes are one of `shas` where its own are none of them."""
    if not shas or _sha256(item) in shas:
        return item
    other = next((path for path in item.tied if _read(path, item) in shas), None)
    if other is None:
        return item
    said = (f"graded {other.name} instead: it is a hand-in of theirs already stored, and of files equally new by "
            "those rules (a copy of the folder gives them new times) the one graded before is graded again")
    return _moved(item, other, "; ".join(n for n in (picked_not_graded(item.note), said) if n))


def past_retracted(found: list[Found], store: Store, assignment: str) -> list[Found]:
    """`found`, where the file the rules picked of a student's several is a retracted hand-in of theirs (its bytes),
    with their best other file that is not one instead, its note saying so: a retraction of chosen hand-ins
    withdraws those files, not the student's other work. A student retracted whole (no --handin) stays out:
    `withheld` holds the file. Only students with retractions are read."""
    students = sorted({item.student for item in found if item.others and item.stored and not item.problem})
    gone = store.retracted(assignment, students) if students else {}
    who = {student for student, _ in gone} - (store.wholly_retracted(assignment, students) if gone else set())
    if not who:
        return found
    return [_instead(item, gone, assignment) if item.student in who and item.others else item for item in found]


def _instead(item: Found, gone: dict, assignment: str) -> Found:
    """`item`, or its student's best other file whose bytes are no retracted hand-in of theirs, where its own are."""
    if (item.student, _sha256(item)) not in gone:
        return item
    passed = [item.path]
    for path in item.others:
        sha = _read(path, item)
        if sha and (item.student, sha) not in gone:
            return _moved(item, path, "; ".join(n for n in (picked_not_graded(item.note),
                                                            _passed_note(path, passed, item.student, assignment))
                                                if n))
        passed += [path] if sha else []
    return item  # `withheld` says that it is retracted, and how to put it back


def _passed_note(graded, passed: list, student: str, assignment: str) -> str:
    """Why `graded` is graded: each file the rules put before it is a retracted hand-in. No hand-in number nor
    command that takes one, nor what becomes of them: the note is stored, and an undo or a later hand-in would make
    those wrong."""
    one = len(passed) == 1
    names = ", ".join(path.name for path in passed[:-1]) + (" and " if not one else "") + passed[-1].name
    return (f"graded {graded.name} instead: {names}, which the rules pick{',' if one else ' first,'} "
            f"{'is a hand-in' if one else 'are hand-ins'} of theirs that {'was' if one else 'were'} {IN_PLACE[0]} "
            f"(`{command('history', [assignment, student])}` lists {'it' if one else 'them'} and whether "
            f"{'it is' if one else 'they are'} still retracted; `autograder retract` with --undo and the hand-in's "
            "number puts one back)")


def _moved(item: Found, other, note: str) -> Found:
    """`item` graded from `other`, one of its others, instead: the file picked goes last among the others."""
    moved = dataclasses.replace(item, path=other, note=note, others=(*(p for p in item.others if p != other),
                                                                     item.path),
                                tied=tuple(p for p in (*item.tied, item.path) if p != other))
    # A file's own time goes with the file, and so does a time the layout states for it (a Blackboard attempt's).
    if item.submitted_at_source == FILE_TIME:
        return timed(dataclasses.replace(moved, submitted_at=""))
    stated = dict(item.stated)
    return dataclasses.replace(moved, submitted_at=stated[other]) if stated.get(other) else moved


def _read(path, item: Found) -> str:
    """The sha256 of `path` read as grading reads it; "" where it cannot be read."""
    content = read_bytes(path, item.root)
    return "" if content.error else content.sha256


def _numbers(numbered: dict, student: str, sha: str) -> list[int]:
    """The numbers, as `history` numbers them, of the student's retracted hand-ins of these bytes."""
    return [a.number for a in numbered.get(student, []) if withdrawn(a) and any(e.result.sha256 == sha
                                                                                 for e in a.entries)]


def withdrawn_students(db, assignment: str) -> list[str]:
    """The students of `assignment` in the store at `db` every hand-in of whom is retracted (none without the file)."""
    if not db.is_file():
        return []
    with Store.for_reading(db) as store:
        return store.withdrawn(assignment)


def _sha256(item: Found) -> str:
    return read_bytes(item.path, item.root).sha256


def _chosen(mine: list[Attempt], numbers: list[int] | None, undo: bool, student: str,
            assignment: str) -> list[Attempt]:
    """The hand-ins asked for; RetractError, saying what there is, when one does not exist or is already so."""
    listed = f"`{command('history', [assignment, student])}` lists them"
    if not mine:
        raise RetractError(f"{student} has no hand-in of {assignment} stored; check the id (`autograder export csv` "
                           "lists the students graded)")
    unknown = sorted(set(numbers or ()) - {a.number for a in mine})
    if unknown:
        raise RetractError(f"{student} has {len(mine)} hand-in{'s' * (len(mine) > 1)} of {assignment}, numbered "
                           f"1 to {len(mine)} ({listed}); there is no hand-in {', '.join(map(str, unknown))}. "
                           "Pass --handin with one of those numbers")
    chosen = [a for a in mine if numbers is None or a.number in numbers]
    already = [a.number for a in chosen if withdrawn(a) != undo]
    if numbers is None:
        chosen = [a for a in chosen if withdrawn(a) == undo]
        if not chosen:
            raise RetractError(f"{student} has no retracted hand-in of {assignment} to put back ({listed})" if undo
                               else f"every hand-in of {student} for {assignment} is retracted already ({listed}); "
                               "nothing to do (--undo puts them back)")
    elif already:
        what = "is not retracted" if undo else "is retracted already"
        raise RetractError(f"hand-in {', '.join(map(str, already))} of {student} for {assignment} {what} ({listed}); "
                           "nothing was changed. " + ("Leave out --undo to retract it" if undo else
                                                     "--undo puts it back"))
    return chosen
