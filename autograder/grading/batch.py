"""Grading a whole class: parallel, resumable, with progress, every result stored as it lands.

The main process finds the submissions, skips those already graded with the
same file and suite, and hands the rest, one at a time, to `jobs` grader
processes, each with its own sandbox. Results come back to the main process,
which is the only writer of the store in this run and commits each submission
on arrival — so Ctrl-C or kill -9 loses nothing already committed, and the
next run picks up where this one stopped. Each submission has one boundary
(grading.boundary): whatever goes wrong while grading it becomes its result.
"""
from __future__ import annotations

import dataclasses
import multiprocessing.connection
import os
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.boundary import RETRIES, GradingProcess, Lost, tried
from autograder.grading.calibration import cached_reference_times
from autograder.grading.course import Course
from autograder.grading.found import Found
from autograder.grading.grader import Grader
from autograder.grading.grader_faults import internal_error_result, sandbox_fields
from autograder.grading.rerun import CANVAS, Again, is_last, same_handin
from autograder.grading.results import SubmissionResult
from autograder.grading.station import Protections, Sandbox, Setup
from autograder.grading.store import Store, StoreError
from autograder.grading.submission import FileBytes, Submission, file_sha256, read_bytes, submission_from_bytes
from autograder.grading.suite import Suite


@dataclass
class BatchPlan:
    """Which submissions to grade now and which are already current in the store."""

    todo: list[Found]
    skipped: list[Found]
    held: list[Found] = field(default_factory=list)  # unchanged, graded under an earlier suite: `regrade`'s
    again: list[Again] = field(default_factory=list)  # of `skipped`, a student's earlier hand-in found again


def plan_batch(found: list[Found], store: Store, suite: Suite, force: bool) -> BatchPlan:
    return plan_version(found, store, suite.assignment.name, suite.version, force)


def plan_version(found: list[Found], store: Store, assignment: str, version: str, force: bool) -> BatchPlan:
    """`plan_batch` from the suite's version alone (grading.suite.suite_version), before the suite is loaded.

    A file is skipped when it is any stored hand-in of its student's graded with this suite, not only the last
    (grading.rerun): an earlier download graded again had been stored as that student's latest result."""
    todo, skipped, again = [], [], []
    stored = store.grading_keys(assignment)  # one query for the class, whatever its size
    for item in found:
        digest = file_sha256(item.path, item.root)  # by the hand-in rule (grading.handin), as grading reads it
        mine = stored.get(item.student, [])
        handin = same_handin(mine, digest, item)
        # A retracted hand-in found again stays out, --force or not; a student with none standing is left to
        # retract.withheld, which holds the file and lists the student apart.
        withdrawn = handin is not None and handin.retracted and any(not one.retracted for one in mine)
        if not withdrawn and (handin is None or handin.retracted or version not in handin.versions or force):
            todo.append(item)
            continue
        skipped.append(item)
        if not is_last(mine, handin):
            again.append(Again(item.student, item.path.name, item.submitted_at, handin, item.lms == CANVAS))
    return BatchPlan(todo, skipped, again=again)


def grade_batch(course: Course, suite: Suite, protections: Protections, todo: list[Found], store: Store,
                jobs: int, on_result: Callable[[SubmissionResult], None], launched: Sequence[Sandbox] = (),
                classwide: Grader | None = None, say: Callable[[str], None] | None = None,
                class_imports: Sequence[str] = ()) -> None:
    """Grade `todo` with `jobs` processes, saving and reporting each result as it arrives.

    Every submission gets a result, whatever happens while grading it: a
    fault in the grader becomes that submission's "internal error" result,
    and a grading process that dies is replaced and the submission tried
    once more (grading.boundary), before it too becomes one. So even one
    job grades in a process of its own, never in this one.
    launched: sandboxes launched ahead for the first jobs (station.launch_sandbox), one per slot, which
    their processes take over; the caller closes them all at the end. classwide: a Grader warmed here
    (station.warm_grader) whose class-wide state every job's Graders share. say: prints a note for the TA
    (the reference timed on a busy machine). class_imports: what the class imports besides the preload
    (grading.class_imports), for the sandboxes of processes started here.
    """
    if not todo:
        return

    def quiet() -> None:  # the reference is timed on a quiet machine: zygotes still importing would slow it
        for sandbox in launched:
            sandbox.settle()
    # Timed here, before the jobs start: they would only slow the reference down.
    reference = cached_reference_times(course, suite, store, quiet, say=say) if suite.reference is not None else None
    slots = max(1, min(jobs, len(todo)))
    waiting = Lanes.of(todo, slots, lambda item: suite.assignment.seed_for(course.seed_salt, item.student))
    processors = processors_for(slots)
    running = [GradingProcess(Setup(course, suite, protections, reference, slot, classwide=classwide,
                                    class_imports=tuple(class_imports), processor=processors[slot]),
                              launched[slot] if slot < len(launched) else None)
               for slot in range(slots)]
    held: dict[int, tuple[Found, list[str]]] = {}  # job slot -> what it grades
    try:
        for job in running:  # every job's environment probe passes before any submission is sent: none is stored
            job.ready()
        for slot, job in enumerate(running):
            _give(job, slot, waiting, held)
        while held:
            busy = {running[slot].connection: slot for slot in held}
            for connection in multiprocessing.connection.wait(list(busy), timeout=1.0):
                slot = busy[connection]
                item, causes = held.pop(slot)
                outcome = running[slot].receive()
                if isinstance(outcome, Lost):
                    causes = [*causes, outcome.cause]
                    if outcome.died:
                        running[slot].end()
                        running[slot] = GradingProcess(running[slot].setup)
                    if outcome.died and len(causes) <= RETRIES:
                        waiting.again.append((item, causes))  # next, in the fresh process or another
                        _give(running[slot], slot, waiting, held)
                    else:
                        _give(running[slot], slot, waiting, held)
                        deliver(lost_result(item, suite, tried(causes)), suite, store, on_result)
                else:
                    _give(running[slot], slot, waiting, held)  # first: the job grades while the result is stored
                    deliver(outcome, suite, store, on_result)
    finally:
        for job in running:
            job.end()


def processors_for(jobs: int) -> list[int | None]:
    """The processor each of `jobs` grading jobs keeps its sandbox on: one each where this process may use
    exactly as many processors as there are jobs, else None for all (wherever the kernel puts them).

    Every child a zygote forks copies the same pages of it and runs the same code; on one processor, a
    sandbox's children find them in that processor's cache instead of wherever the other sandbox left
    its own. Measured with two jobs on two processors, whole commands in turn: 2–3 % faster, for
    plain classes and one with slow students (docs/performance.md). Only the sandboxes keep to a processor:
    the grading processes and the command go wherever one is free, so a processor whose child sleeps
    still does their work. With fewer jobs than processors, a job's child has a processor to itself
    anyway; with more, a processor holding two sandboxes could not hand one to an idle one. A child's
    time waiting for its processor is given back to its call (sandbox.waiting).
    """
    usable = sorted(os.sched_getaffinity(0))
    return usable if jobs == len(usable) else [None] * jobs


@dataclass
class Lanes:
    """The submissions waiting for a job: one lane of whole input sets per job, and work to try again.

    Every student of an input set is sent the same calls, which a job plans once (grading.plan.KeptPlans:
    about 12 ms of its processor a set), so a set that two jobs grade is planned twice. Each lane holds
    whole sets, about as many students in each; a job takes from the front of its own, and once that is
    empty, from the back of the longest, furthest from where that lane's job is. Work whose process died
    goes first, to whichever job is free next.
    lanes: (submission, how the processes grading it ended) per job slot. again: the same, tried again.
    """

    lanes: list[deque]
    again: deque = field(default_factory=deque)

    @classmethod
    def of(cls, todo: list[Found], slots: int, input_set: Callable[[Found], int]) -> Lanes:
        """`todo` in `slots` lanes by `input_set` (a student's seed); one job's lane keeps `todo`'s order."""
        if slots == 1:
            return cls([deque((item, []) for item in todo)])
        sets: dict[int, list] = {}
        for item in todo:
            sets.setdefault(input_set(item), []).append((item, []))
        lanes = [deque() for _ in range(slots)]
        for students in sorted(sets.values(), key=len, reverse=True):
            min(lanes, key=len).extend(students)
        return cls(lanes)

    def take(self, slot: int) -> tuple[Found, list[str]] | None:
        """The next work for job `slot`, or None when nothing waits."""
        if self.again:
            return self.again.popleft()
        if self.lanes[slot]:
            return self.lanes[slot].popleft()
        longest = max(self.lanes, key=len)
        return longest.pop() if longest else None


def _give(job: GradingProcess, slot: int, waiting: Lanes, held: dict) -> None:
    work = waiting.take(slot)
    if work is not None:
        held[slot] = work
        job.give(grade_one, work[0])


def grade_one(grader: Grader, item: Found, content: FileBytes | None = None) -> SubmissionResult:
    """One submission's result, read and graded; a fault anywhere is that submission's internal error.

    content: the file's bytes, when they were read on another machine (autograder.cluster); else read here.
    """
    try:
        result = grader.grade(_read(item, content))
    except Exception:  # noqa: BLE001 - reading the file is inside the submission's boundary too
        result = internal_error_result(item.student, grader.suite, str(item.path), "", traceback.format_exc(), 0.0,
                                       **sandbox_fields(grader.sandbox.protections))
    # When it was handed in travels with the result: the store keeps it, and lateness is judged from it.
    return dataclasses.replace(result, submitted_at=item.submitted_at, submitted_at_source=item.submitted_at_source)


def lost_result(item: Found, suite: Suite, cause: str) -> SubmissionResult:
    """The internal-error result of a submission whose grading gave no result (`cause`: how, for the instructor)."""
    result = internal_error_result(item.student, suite, str(item.path), "", f"{cause} while grading {item.path}",
                                   0.0, "")
    return dataclasses.replace(result, submitted_at=item.submitted_at, submitted_at_source=item.submitted_at_source)


def deliver(result: SubmissionResult, suite: Suite, store: Store, on_result) -> None:
    """Commit one result to the store, then report it; a result the store cannot take becomes an internal error."""
    try:
        store.save(result)
    except StoreError:
        raise  # the database itself failed: nothing more can be kept, so stop and say so
    except Exception:  # noqa: BLE001 - something in this result that the store cannot take
        result = internal_error_result(result.student, suite, result.file, result.sha256, traceback.format_exc(),
                                       result.seconds, result.sandbox, result.isolated)
        store.save(result)
    on_result(result)


def _read(item: Found, content: FileBytes | None) -> Submission:
    if item.problem:
        return Submission(item.student, item.path, item.path.suffix.lstrip("."), "", problem=item.problem)
    submission = submission_from_bytes(item.path, item.student, content or read_bytes(item.path, item.root))
    note = "; ".join(n for n in (item.note, submission.note) if n)
    return dataclasses.replace(submission, note=note)


def default_db(course: Course) -> Path:
    return course.root / "grades.db"
