"""Grading a whole class: parallel, resumable, with progress, every result stored as it lands.

The main process finds the submissions, skips those already graded with the
same file and suite, and hands the rest, one at a time, to `jobs` grader
processes, each with its own sandbox. Results come back to the main process,
which is the only writer of the store in this run and commits each submission
on arrival — so Ctrl-C or kill -9 loses nothing already committed, and the
next run picks up where this one stopped. Each submission has one boundary:
whatever goes wrong while grading it becomes its result.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.calibration import cached_reference_times
from autograder.grading.course import Course
from autograder.grading.discover import Found
from autograder.grading.grader import Grader, internal_error_result
from autograder.grading.probe import require_environment
from autograder.grading.results import SubmissionResult
from autograder.grading.store import Store, StoreError
from autograder.grading.submission import FileBytes, Submission, file_sha256, read_bytes, submission_from_bytes
from autograder.grading.suite import Suite
from autograder.sandbox.kernel import PR_SET_PDEATHSIG, prctl
from autograder.sandbox.protections import Protections, SandboxError
from autograder.sandbox.zygote import Sandbox


@dataclass
class BatchPlan:
    """Which submissions to grade now and which are already current in the store."""

    todo: list[Found]
    skipped: list[Found]


def plan_batch(found: list[Found], store: Store, suite: Suite, force: bool) -> BatchPlan:
    todo, skipped = [], []
    stored = store.grading_keys(suite.assignment.name)
    for item in found:
        current = stored.get(item.student) == (file_sha256(item.path), suite.version, item.submitted_at)
        (skipped if current and not force else todo).append(item)
    return BatchPlan(todo, skipped)


def grade_batch(course: Course, suite: Suite, protections: Protections, todo: list[Found], store: Store,
                jobs: int, on_result: Callable[[SubmissionResult], None]) -> None:
    """Grade `todo` with `jobs` processes, saving and reporting each result as it arrives.

    Every submission gets a result, whatever happens while grading it: a
    fault in the grader, or its whole grading process dying, becomes that
    submission's "internal error" result and the batch goes on. So even
    one job grades in a process of its own, never in this one.
    """
    if not todo:
        return
    # Timed here, before the jobs start: they would only slow the reference down.
    reference = cached_reference_times(course, suite, store) if suite.reference is not None else None
    # fork shares the already imported suite (and torch) with the graders instead of loading it N times.
    context = multiprocessing.get_context("fork")
    waiting = list(reversed(todo))
    setup = (course, suite, protections, reference)
    running = [_Job(context, setup, slot) for slot in range(max(1, min(jobs, len(todo))))]
    try:
        for job in running:  # every job's probe passes before any submission is sent, so none is stored
            job.wait_ready()
        for job in running:
            job.give(waiting.pop() if waiting else None)
        while any(job.item is not None for job in running):
            busy = {job.connection: job for job in running if job.item is not None}
            for connection in multiprocessing.connection.wait(list(busy), timeout=1.0):
                job = busy[connection]
                deliver(job.receive(suite), suite, store, on_result)
                if job.stopped:
                    running[running.index(job)] = job = _Job(context, job.setup, job.slot)
                    job.wait_ready()
                job.give(waiting.pop() if waiting else None)
    finally:
        for job in running:
            job.end()


def grade_one(grader: Grader, item: Found, content: FileBytes | None = None) -> SubmissionResult:
    """One submission's result, read and graded; a fault anywhere is that submission's internal error.

    content: the file's bytes, when they were read on another machine (autograder.cluster); else read here.
    """
    try:
        result = grader.grade(_read(item, content))
    except Exception:  # noqa: BLE001 - reading the file is inside the submission's boundary too
        result = internal_error_result(item.student, grader.suite, str(item.path), "", traceback.format_exc(), 0.0,
                                       grader.sandbox.protections.mode)
    # When it was handed in travels with the result: the store keeps it, and lateness is judged from it.
    return dataclasses.replace(result, submitted_at=item.submitted_at, submitted_at_source=item.submitted_at_source)


class _Job:
    """One grading process, fed one submission at a time over its own pipe, so a death is pinned on one."""

    def __init__(self, context, setup: tuple, slot: int):
        self.setup, self.slot = setup, slot
        self.connection, theirs = context.Pipe()
        self.process = context.Process(target=_grader_process, args=(*setup, slot, theirs), daemon=True)
        self.process.start()
        theirs.close()
        self.item: Found | None = None
        self.stopped = False

    def wait_ready(self) -> None:
        """Wait until the job's sandbox passed the environment probe; raise SandboxError with its reason if not."""
        try:
            kind, payload = self.connection.recv()
        except (EOFError, OSError):
            self.process.join(timeout=10)
            raise SandboxError(f"grading process {self.slot} ended (exit code {self.process.exitcode}) before its "
                               "sandbox was ready; run `autograder doctor` to see what this machine supports. "
                               "Nothing was graded by it") from None
        if kind == "fatal":
            raise SandboxError(payload)

    def give(self, item: Found | None) -> None:
        """Send the next submission, or None: no more work, and the process ends."""
        self.item = item
        try:
            self.connection.send(item)
        except OSError:
            pass  # it died already; receive() notices

    def receive(self, suite: Suite) -> SubmissionResult:
        """The result of the submission this job holds; an internal error if the process died grading it."""
        try:
            kind, payload = self.connection.recv()
        except (EOFError, OSError):
            self.process.join(timeout=10)
            self.stopped = True
            item, self.item = self.item, None
            details = (f"the grading process (job {self.slot}) ended with exit code {self.process.exitcode} while "
                       f"grading {item.path}; it was replaced and the batch went on")
            return internal_error_result(item.student, suite, str(item.path), "", details, 0.0, "")
        self.item = None
        return payload

    def end(self) -> None:
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=10)
        self.connection.close()


def deliver(result: SubmissionResult, suite: Suite, store: Store, on_result) -> None:
    """Commit one result to the store, then report it; a result the store cannot take becomes an internal error."""
    try:
        store.save(result)
    except StoreError:
        raise  # the database itself failed: nothing more can be kept, so stop and say so
    except Exception:  # noqa: BLE001 - something in this result that the store cannot take
        result = internal_error_result(result.student, suite, result.file, result.sha256, traceback.format_exc(),
                                       result.seconds, result.sandbox)
        store.save(result)
    on_result(result)


def _read(item: Found, content: FileBytes | None) -> Submission:
    if item.problem:
        return Submission(item.student, item.path, item.path.suffix.lstrip("."), "", problem=item.problem)
    submission = submission_from_bytes(item.path, item.student, content or read_bytes(item.path))
    note = "; ".join(n for n in (item.note, submission.note) if n)
    return dataclasses.replace(submission, note=note)


def _grader_process(course, suite, protections, reference, slot, connection) -> None:
    """One job: its own sandbox, grading what it is sent until it is sent None."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides what Ctrl-C means
    one_thread()
    sandbox = Sandbox(protections, suite.assignment.preload, slot=slot)
    try:
        # Before its first submission: an environment that cannot grade the reference grades no one.
        require_environment(course, suite, sandbox, "grading")
    except SandboxError as error:
        sandbox.close()
        connection.send(("fatal", str(error)))
        return
    connection.send(("ready", None))
    with sandbox:
        grader = Grader(course, suite, sandbox, reference)
        while (item := connection.recv()) is not None:
            connection.send(("result", grade_one(grader, item)))


def one_thread() -> None:
    """Jobs already fill the cores; PyTorch's own thread pool in each grader would only contend with them."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _die_with_parent() -> None:
    """A grader must not outlive a main process killed with -9 (its sandbox then dies with it)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(1)


def default_db(course: Course) -> Path:
    return course.root / "grades.db"
