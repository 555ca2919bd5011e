"""Grading every stored hand-in again under the current suite: what it would change, and committing it.

`regrade` grades each hand-in the history holds (grading.history), every
attempt of every student, from the bytes the store kept, else from the file
where it was graded, else from a class folder given to it, provided the bytes
hash to the hand-in's SHA-256. The results are compared, student by student,
on the result the submissions policy counts (grading.attempts): a student
moves when their counted total or any check's verdict changes.

A preview commits nothing: the batch writes its results into a `Collector`
instead of the store. A commit adds every new result to the history, so the
previous ones stay, and makes each student's last hand-in's new result the
store's current one. With `no_decrease`, a student whose counted total would
fall keeps the earlier results counted; the new ones are kept too, held back,
with the reason their feedback shows.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.attempts import SubmissionPolicy, choose, counted_result, total_of
from autograder.grading.batch import BatchPlan
from autograder.grading.found import Found, nothing_handed_in
from autograder.grading.handin import read_bytes
from autograder.grading.history import Attempt, Entry, kept
from autograder.grading.late import LateRule
from autograder.grading.rerun import same_handin
from autograder.grading.results import NOT_LOADED, SubmissionResult
from autograder.grading.store import Store

# How the note of a result kept by --no-decrease begins (its feedback shows it: grading.attempts.counted_result).
HELD_NOTE = "A regrade under the current checks gave "


def kept_by_no_decrease(result: SubmissionResult) -> bool:
    """Whether this counted result stands because `regrade --no-decrease` held back a lower one: graded under an
    earlier suite on purpose, which `autograder regrade` would not change."""
    return any(note.startswith(HELD_NOTE) for note in result.notes)


@dataclass(frozen=True)
class Todo:
    """One hand-in to grade again: where its bytes were written for the batch, and which attempt it is."""

    found: Found
    attempt: Attempt


@dataclass(frozen=True)
class Move:
    """What a regrade does to one student's counted result: totals after the late rule, and each flipped
    check as (check, verdict before, verdict after), "absent" for a check one side does not have."""

    student: str
    before: float
    after: float
    flipped: tuple[tuple[str, str, str], ...]
    held: bool = False  # --no-decrease kept the earlier result


class Collector:
    """Where a preview's batch saves its results: in memory, never in the store; the reference's timings,
    which are no grade, still come from (and go to) the store's cache."""

    def __init__(self, store: Store):
        self.store = store
        self.read_only = store.read_only  # as the store is, for the timings
        self.results: list[SubmissionResult] = []

    def save(self, result: SubmissionResult) -> None:
        self.results.append(result)

    def reference_times(self, suite_version: str, machine: str):
        return self.store.reference_times(suite_version, machine)

    def save_reference_times(self, suite_version: str, machine: str, times) -> None:
        self.store.save_reference_times(suite_version, machine, times)


def hand_ins(store: Store, attempts: dict[str, list[Attempt]], folder: Path, module: str,
             class_files: dict[str, list[Path]]) -> tuple[list[Todo], list[str]]:
    """Every attempt's bytes written under `folder` for the batch; and the hand-ins that could not be found.

    class_files: student -> files of a class folder given to `regrade`, tried last. The bytes the store kept
    are read in one query for the class, one hand-in at a time.
    """
    folder.mkdir(exist_ok=True)
    every = [(student, attempt) for student, mine in sorted(attempts.items()) for attempt in mine]
    places = [_place(folder, number, module, attempt) for number, (_, attempt) in enumerate(every)]
    written = _write_kept(store, [attempt for _, attempt in every], places)
    todo, lost = [], []
    for number, (student, attempt) in enumerate(every):
        first = attempt.first
        nothing = _nothing_handed_in(first)
        if nothing:  # graded again as what it was (a PDF alone): 0 points under the current suite, and said why
            todo.append(Todo(Found(student, places[number], problem=nothing, submitted_at=first.submitted_at,
                                   submitted_at_source=first.submitted_at_source), attempt))
            continue
        if number not in written:
            data = _from_files(attempt, class_files.get(student, []))
            if data is None:
                lost.append(f"{student}: hand-in {attempt.number} ({Path(first.file).name or 'no file'}, handed in "
                            f"{first.submitted_at or 'at an unknown time'}) is neither kept in the store nor at "
                            f"{first.file or 'a known place'}; pass the class folder it is in to regrade it")
                continue
            _write(places[number], data)
        todo.append(Todo(Found(student, places[number], submitted_at=first.submitted_at,
                               submitted_at_source=first.submitted_at_source, root=places[number].parent), attempt))
    return todo, lost


def _nothing_handed_in(result: SubmissionResult) -> str:
    """Why a hand-in with no file to grade was not loaded (a folder with only a PDF), as discover said it; ""
    for one with a file, whose bytes are regraded."""
    return result.problem.removeprefix(f"{NOT_LOADED}: ") if nothing_handed_in(result) else ""


def _write_kept(store: Store, every: list[Attempt], places: list[Path]) -> set[int]:
    """Write the bytes the store kept of each attempt to its place; the numbers (in `every`) of those written."""
    numbers: dict[str, list[int]] = {}  # sha256 -> the attempts of those bytes (a file handed in twice: two)
    for number, attempt in enumerate(every):
        if attempt.sha256:
            numbers.setdefault(attempt.sha256, []).append(number)
    written = set()
    for sha256, data in store.handins(list(numbers)):
        for number in numbers[sha256]:
            _write(places[number], data)
            written.add(number)
    return written


def _place(folder: Path, number: int, module: str, attempt: Attempt) -> Path:
    """Where attempt `number`'s bytes go: a folder of its own, the file named as it was handed in (`s004.py`), so
    that what the student is told of it (`not loaded: s004.py`, `Run python s004.py`) is what they were told
    before; named as the module only where no name was stored."""
    name = Path(attempt.first.file).name
    return folder / f"{number}" / (name or f"{module}.py")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir()
    path.write_bytes(data)


def _from_files(attempt: Attempt, candidates: list[Path]) -> bytes | None:
    """The hand-in's bytes from where it was graded, or from a class folder's files, if they hash to it."""
    if not attempt.sha256:
        return None
    for path in [Path(attempt.first.file), *candidates]:
        read = read_bytes(path)
        if read.sha256 == attempt.sha256:
            return read.data
    return None


def regraded(before: dict[str, list[Attempt]], todo: list[Todo],
             results: list[SubmissionResult]) -> tuple[dict[str, list[Attempt]], list[str]]:
    """(every student's attempts with each new result appended, its file named as first graded; the hand-ins
    the grader itself failed on, whose earlier results stand: a fault of the grader is no new grade)."""
    by_path = {str(item.found.path): item for item in todo}
    new: dict[tuple[str, int], SubmissionResult] = {}
    failed = []
    for result in results:
        item = by_path[result.file]
        if result.internal_error:
            failed.append(f"{item.found.student}: hand-in {item.attempt.number}: {result.problem}")
            continue
        new[(item.found.student, item.attempt.number)] = dataclasses.replace(result, file=item.attempt.first.file)
    return {student: [_with(attempt, new.get((student, attempt.number))) for attempt in mine]
            for student, mine in before.items()}, failed


def _with(attempt: Attempt, result: SubmissionResult | None) -> Attempt:
    """`attempt` with `result` as its latest result (as it was when None: not regraded)."""
    if result is None:
        return attempt
    order = max(e.order for e in attempt.entries) + 1  # after every result it had
    return Attempt(attempt.number, (*attempt.entries, Entry(result, order)))


def moves(before: dict[str, list[Attempt]], after: dict[str, list[Attempt]], policy: SubmissionPolicy,
          rule: LateRule | None, no_decrease: bool) -> tuple[dict[str, list[Attempt]], list[Move]]:
    """(the attempts to commit, new results held back where --no-decrease keeps the earlier; each student the
    regrade moves, by student)."""
    final, moved = {}, []
    for student in sorted(after):
        was, now = choose(before[student], policy, rule), choose(after[student], policy, rule)
        old_total, new_total = total_of(was.counted, rule), total_of(now.counted, rule)
        held = no_decrease and new_total < old_total
        flipped = _flipped(counted_result(was), counted_result(now))  # what the regrade found, held back or not
        if held:
            reason = (f"{HELD_NOTE}{_points(new_total)} points, fewer than the "
                      f"{_points(old_total)} before; the earlier result is kept (no score goes down in a regrade).")
            after[student] = [_hold(attempt, old, reason) for attempt, old in zip(after[student], before[student])]
            now = choose(after[student], policy, rule)
        final[student] = after[student]
        shown_after = total_of(now.counted, rule)
        if flipped or shown_after != old_total or held:
            moved.append(Move(student, old_total, new_total if held else shown_after, flipped, held))
    return final, moved


def commit(store: Store, before: dict[str, list[Attempt]], final: dict[str, list[Attempt]]) -> int:
    """Keep every new result (one transaction per student), the last hand-in's as the store's current result.

    Returns how many results were added.
    """
    added = 0
    for student, attempts in sorted(final.items()):
        known = {a.number: len(a.entries) for a in before[student]}
        new = {a.number: a.entries[known[a.number]:] for a in attempts}
        if not any(new.values()):
            continue
        store.keep([kept(e.result, True, e.held) for entries in new.values() for e in entries])
        latest = new[attempts[-1].number]
        if latest:
            store.save(latest[-1].result)  # already in the history: only the submissions row changes
        added += sum(map(len, new.values()))
    return added


def held_back(plan: BatchPlan, store: Store, assignment: str, suite_version: str,
              force: bool) -> tuple[BatchPlan, list[str]]:
    """`grade`'s plan without the unchanged hand-ins graded under another suite version, which it leaves as they
    are, neither graded nor shown (`regrade` regrades them, showing first what that changes); and those students.
    With `force`, the plan as it was."""
    if force or not plan.todo:
        return plan, []
    stored = store.grading_keys(assignment)  # one query for the class: every stored hand-in (grading.rerun)
    keep, held = [], []
    for item in plan.todo:
        handin = same_handin(stored.get(item.student, []), read_bytes(item.path, item.root).sha256, item)
        same = handin is not None and bool(handin.versions) and suite_version not in handin.versions
        (held if same else keep).append(item)
    return dataclasses.replace(plan, todo=keep, held=held), [item.student for item in held]


def _hold(attempt: Attempt, old: Attempt, reason: str) -> Attempt:
    """`attempt` with the results it gained since `old` held back for `reason`."""
    known = len(old.entries)
    return Attempt(attempt.number, (*attempt.entries[:known],
                                    *(dataclasses.replace(e, held=reason) for e in attempt.entries[known:])))


def _flipped(was: SubmissionResult, now: SubmissionResult) -> tuple[tuple[str, str, str], ...]:
    before = {t.name: t.status for t in was.tests}
    after = {t.name: t.status for t in now.tests}
    names = list(dict.fromkeys([*before, *after]))
    return tuple((name, before.get(name, "absent"), after.get(name, "absent")) for name in names
                 if before.get(name, "absent") != after.get(name, "absent"))


def _points(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")
