"""Grading a whole class: parallel, resumable, with progress, every result stored as it lands.

The main process finds the submissions, skips those already graded with the
same file and suite, and hands the rest to `jobs` grader processes, each with
its own sandbox. Results come back to the main process, which is the only
writer of the store in this run and commits each submission on arrival —
so Ctrl-C or kill -9 loses nothing already committed, and the next run
picks up where this one stopped.
"""
from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import os
import queue
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from autograder.course import Course
from autograder.discover import Found
from autograder.grading import Grader
from autograder.results import SubmissionResult
from autograder.sandbox import Protections, Sandbox
from autograder.store import Store
from autograder.submission import file_sha256, read_submission
from autograder.suite import Suite

PR_SET_PDEATHSIG = 1


@dataclass
class BatchPlan:
    """Which submissions to grade now and which are already current in the store."""

    todo: list[Found]
    skipped: list[Found]


def plan_batch(found: list[Found], store: Store, suite: Suite, force: bool) -> BatchPlan:
    todo, skipped = [], []
    for item in found:
        current = store.is_current(suite.assignment.name, item.student, file_sha256(item.path), suite.version)
        (skipped if current and not force else todo).append(item)
    return BatchPlan(todo, skipped)


def grade_batch(course: Course, suite: Suite, protections: Protections, todo: list[Found], store: Store,
                jobs: int, on_result: Callable[[SubmissionResult], None]) -> None:
    """Grade `todo` with `jobs` processes, saving and reporting each result as it arrives."""
    if jobs <= 1 or len(todo) <= 1:
        with Sandbox(protections, suite.assignment.preload) as sandbox:
            grader = Grader(course, suite, sandbox)
            for item in todo:
                _deliver(grader.grade(_read(item)), store, on_result)
        return
    # fork shares the already imported suite (and torch) with the graders instead of loading it N times.
    context = multiprocessing.get_context("fork")
    tasks, results = context.Queue(), context.Queue()
    for item in todo:
        tasks.put(item)
    jobs = min(jobs, len(todo))
    for _ in range(jobs):
        tasks.put(None)
    workers = [context.Process(target=_grader_process, args=(course, suite, protections, slot, tasks, results),
                               daemon=True) for slot in range(jobs)]
    for worker in workers:
        worker.start()
    try:
        remaining = len(todo)
        while remaining:
            try:
                message = results.get(timeout=1.0)
            except queue.Empty:
                if all(not w.is_alive() for w in workers):
                    raise RuntimeError("every grader process stopped before the batch finished; "
                                       "rerun the command to grade the rest") from None
                continue
            if isinstance(message, SubmissionResult):
                _deliver(message, store, on_result)
                remaining -= 1
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
        for worker in workers:
            worker.join(timeout=10)


def _deliver(result: SubmissionResult, store: Store, on_result) -> None:
    store.save(result)
    on_result(result)


def _read(item: Found):
    submission = read_submission(item.path, item.student)
    note = "; ".join(n for n in (item.note, submission.note) if n)
    return dataclasses.replace(submission, note=note)


def _grader_process(course, suite, protections, slot, tasks, results) -> None:
    """One job: its own sandbox, grading until it takes the end marker."""
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides what Ctrl-C means
    _one_thread()
    with Sandbox(protections, suite.assignment.preload, slot=slot) as sandbox:
        grader = Grader(course, suite, sandbox)
        while (item := tasks.get()) is not None:
            results.put(grader.grade(_read(item)))


def _one_thread() -> None:
    """Jobs already fill the cores; PyTorch's own thread pool in each grader would only contend with them."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _die_with_parent() -> None:
    """A grader must not outlive a main process killed with -9 (its sandbox then dies with it)."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        os._exit(1)


def default_db(course: Course) -> Path:
    return course.root / "grades.db"
