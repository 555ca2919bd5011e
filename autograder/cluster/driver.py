"""The driver's side of grading on a cluster: a task per submission, each result stored as it arrives.

The driver keeps what a local batch keeps: the store, on this machine, which it
alone writes, committing each submission as its result arrives (so Ctrl-C or
kill -9 loses nothing committed, and a rerun grades the rest), and the
progress. It reads each file and sends its bytes, since workers share no file
system with it, a few tasks per worker thread at a time, so its memory and the
scheduler's stay small however large the class. A worker that dies takes its
task with it: Dask runs the task again on another worker, and after the
scheduler's allowed failures the driver stores "could not grade" for that one
submission and goes on. A worker that refuses to grade (another suite
version, a sandbox that cannot start or could read a secret, an environment
that cannot grade the reference) takes no more tasks, and its task goes to
another; the run stops with every reason only when no worker is left that
grades. A result with a timeout is graded again on a warm worker before
anything is stored (`retries` says when a timeout counts): a worker that has
just joined (replaced mid-batch, still importing and timing the reference)
slows its machine's calls, and must not cost anyone points.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from distributed import Client, Future, wait
from distributed.scheduler import KilledWorker
from distributed.utils import CancelledError

from autograder.cluster import ClusterError, installed_version
from autograder.cluster.connect import scheduler_identity
from autograder.cluster.retries import Retries, Run
from autograder.cluster.warm import ENDED, LEASES, RENEW_SECONDS, Orders, WarmGrader, grade_task
from autograder.grading.batch import deliver
from autograder.grading.course import Course
from autograder.grading.coursefiles import grading_files
from autograder.grading.found import Found
from autograder.grading.grader_faults import internal_error_result
from autograder.grading.results import SubmissionResult, result_from_plain
from autograder.grading.store import Store
from autograder.grading.submission import read_bytes
from autograder.grading.suite import Suite, suite_version

TASKS_PER_THREAD = 2  # in flight per worker thread: the next submission is on its way while one is graded
POLL_SECONDS = 1.0  # how often, while no result arrives, the driver checks that workers remain
RETRIED = ("graded again: a call timed out, and on a cluster a timeout counts only when a run on a warm worker (one "
           "that has been grading a while, on a machine where no grader is starting) times out too; this is the last "
           "run's result")


@dataclass
class Cluster:
    """Where a run grades: the client of a cluster with workers, and what to tell them."""

    client: Client
    address: str  # as the TA gave it, for messages
    sandbox: str  # --sandbox, for every worker
    wait_seconds: float  # how long the run may go without any worker before it stops


@contextlib.contextmanager
def warm_graders(cluster: Cluster, course: Course, assignment: str, store: Store, secrets: list[Path],
                 class_imports: tuple[str, ...] = ()) -> Iterator[_Run]:
    """This run's graders on the cluster's workers, warming up from now on; taken off the workers at the end.

    Started before the driver loads the suite itself, so the workers' start-up
    (unpack, load, time the reference, start the sandboxes) overlaps the driver's.
    secrets: this machine's paths no student code may read; a worker refuses to
    grade if its sandbox could read any that its own file system shows. class_imports: what the class
    imports besides the preload (grading.class_imports), which every worker's sandboxes import too.
    """
    version = suite_version(course, assignment)
    orders = Orders(assignment=assignment, suite_version=version, files=tuple(grading_files(course, assignment)),
                    sandbox=cluster.sandbox, secrets=tuple(map(str, secrets)),
                    reference_times=store.reference_times_by_machine(version), class_imports=class_imports)
    run = _Run(cluster, f"autograder-{uuid.uuid4().hex[:12]}", store)
    lease = Lease(cluster.client, run.plugin)
    try:
        lease.start()  # before the plugin: its watchdog finds the lease from its first look
        cluster.client.register_plugin(WarmGrader(run.plugin, orders), name=run.plugin)
        yield run
    finally:
        run.stop()
        lease.end()


class Lease:
    """This run's lease on the scheduler, renewed every few seconds while the driver lives: a driver killed
    without a word stops renewing it, and each worker's plugin then closes itself (warm.WarmGrader._watch)."""

    def __init__(self, client: Client, plugin: str):
        self.client, self.plugin = client, plugin
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._renew, name=f"{plugin}-lease", daemon=True)

    def start(self) -> None:
        """Take the lease, and keep renewing it in a thread of its own (the grading loop may wait on Dask)."""
        self.client.set_metadata([LEASES, self.plugin], 0)
        self.thread.start()

    def end(self) -> None:
        """Stop renewing, and mark the lease ended: a worker still holding the plugin closes it at once."""
        self.stopped.set()
        with contextlib.suppress(Exception):  # the scheduler may be gone: then so is the plugin
            self.client.set_metadata([LEASES, self.plugin], ENDED)

    def _renew(self) -> None:
        count = 0
        while not self.stopped.wait(RENEW_SECONDS):
            count += 1
            with contextlib.suppress(Exception):  # a lost scheduler is the grading loop's to report
                self.client.set_metadata([LEASES, self.plugin], count)


@dataclass
class _Run:
    """One run of `grade --cluster`: the plugin it gave the workers, and the submissions in flight."""

    cluster: Cluster
    plugin: str  # this run's plugin name, unique: a cluster may serve several runs at once
    store: Store
    suite: Suite | None = None
    on_result: Callable[[SubmissionResult], None] | None = None
    say: Callable[[str], None] | None = None
    pending: deque = field(default_factory=deque)
    in_flight: dict[Future, Found] = field(default_factory=dict)
    runs: dict[Future, Run] = field(default_factory=dict)  # how each task in flight was sent
    heard: set = field(default_factory=set)  # warnings already shown
    timeouts: dict = field(default_factory=dict)  # student -> the workers their runs timed out on, in order
    waiting: deque = field(default_factory=deque)  # runs again after a timeout, waiting for a warm worker
    retries: Retries = field(default_factory=Retries)
    sent: dict = field(default_factory=dict)  # student -> how many tasks were submitted for them
    refused: dict = field(default_factory=dict)  # worker address -> why it will not grade: it gets no more tasks
    threads: int = 1
    checked: float = 0.0
    alone_since: float | None = None

    def grade(self, suite: Suite, todo: list[Found], on_result: Callable[[SubmissionResult], None],
              say: Callable[[str], None]) -> None:
        """Grade `todo` on the workers, saving and reporting each result as it arrives."""
        self.suite, self.on_result, self.say, self.pending = suite, on_result, say, deque(todo)
        with self.cluster.client.as_current():  # distributed.wait asks for the current client
            try:
                self._loop()
            except CancelledError as error:  # Dask cancels every task in flight when it loses the scheduler
                raise self._lost(_reason(error)) from None

    def _loop(self) -> None:
        self._look()
        self._top_up()
        while self.in_flight or self.waiting:
            if not self.in_flight:  # only runs waiting for a worker to warm up
                time.sleep(POLL_SECONDS)
                self._look()
                self._top_up()
                continue
            try:
                done = wait(list(self.in_flight), timeout=POLL_SECONDS, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                self._look()
                continue
            for future in done:
                self._finish(future, self.in_flight.pop(future))
            self._top_up()

    def stop(self) -> None:
        """Cancel what is still queued or running, and take the plugin (and its private course) off the workers."""
        with contextlib.suppress(Exception):
            self.cluster.client.cancel(list(self.in_flight))
        with contextlib.suppress(Exception):
            self.cluster.client.unregister_worker_plugin(self.plugin)

    def _top_up(self) -> None:
        for _ in range(len(self.waiting)):
            self._again(self.waiting.popleft())
        while self.pending and len(self.in_flight) < TASKS_PER_THREAD * self.threads + 1:
            self._submit(self.pending.popleft())

    def _again(self, item: Found) -> None:
        """Send `item` once more: after a timeout, to a warm worker, or back to wait for one."""
        timed_out_on = self.timeouts.get(item.student)
        if not timed_out_on:
            self._submit(item)
            return
        place = self.retries.place(item.student, self._usable(), set(timed_out_on), time.monotonic())
        if place is None:
            self.waiting.append(item)
        else:
            self._submit(item, place)

    def _submit(self, item: Found, warm: tuple[str, ...] = ()) -> None:
        """Send `item` to a worker that has not refused to grade; `warm`: the warm workers a run after a timeout
        goes to (loosely: should they all leave, it goes to another, and then does not count)."""
        content = None if item.problem else read_bytes(item.path, item.root)
        usable = self._usable()
        restricted = list(warm) or (usable if self.refused else [])
        count = self.sent[item.student] = self.sent.get(item.student, 0) + 1
        future = self.cluster.client.submit(grade_task, self.plugin, item, content, retries=0,
                                            key=f"{self.plugin}-{item.student}" + (f"-{count}" if count > 1 else ""),
                                            workers=restricted or None, allow_other_workers=bool(warm))
        self.in_flight[future] = item
        self.runs[future] = Run(len(self.timeouts.get(item.student, ())) + 1, time.monotonic(), warm)

    def _usable(self) -> list[str]:
        """The workers that have not refused; a ClusterError with every reason when every worker left has refused.

        With no worker at all, it is [] and no error: `_look` waits for one to join, as it does for any run.
        """
        workers = self._workers()
        usable = [address for address in workers if address not in self.refused]
        if workers and not usable:
            reasons = "; ".join(self.refused.values())
            raise ClusterError(f"no Dask worker of {self.cluster.address} can grade: {reasons} (this machine, the "
                               f"driver, runs autograder {installed_version()}). Results stored so far are kept: "
                               "fix the workers' environment, then run the same command again to grade the rest")
        return usable

    def _refuse(self, future: Future, item: Found, why: str) -> None:
        """A worker that refused to grade takes no more tasks; `item` goes to another."""
        for address in self.cluster.client.who_has([future]).get(future.key, ()) or ("(unknown)",):
            if address not in self.refused:
                self.refused[address] = why
                self.retries.warmth.idle.add(address)
                self.say(f"{why}; it takes no more tasks, and the other workers grade on")
        future.release()
        self._again(item)

    def _finish(self, future: Future, item: Found) -> None:
        run = self.runs.pop(future)
        if future.status in ("lost", "pending"):
            # It finished, then the worker holding its result died before the driver read it (another task killed
            # the worker, or its machine went away): the scheduler runs it again, so it is waited for again.
            self.in_flight[future] = item
            self.runs[future] = run
            return
        if future.status == "finished":
            refused = _refusal(future.result())
            if refused:
                self._refuse(future, item, refused)
                return
            ran_on = next(iter(self.cluster.client.who_has([future]).get(future.key, ())), "")
            self.retries.warmth.answer(ran_on, time.monotonic())
            result = self._result(item, future.result())
            if _timed_out(result) and not self.retries.counts(run, ran_on):
                # A worker that has just joined is still importing and timing the reference, and it slows its
                # machine's calls meanwhile: a timeout is a grade only if a run under normal conditions times out too.
                self.timeouts.setdefault(item.student, []).append(ran_on)
                future.release()
                self._again(item)
                return
            if item.student in self.timeouts:
                result = dataclasses.replace(result, notes=(*result.notes, RETRIED))
        elif future.status == "error":
            result = self._internal_error(item, _why(item, future.exception()))
        else:
            raise self._lost(f"its task for {item.student} was {future.status}")
        future.release()
        deliver(result, self.suite, self.store, self.on_result)

    def _result(self, item: Found, text) -> SubmissionResult:
        try:
            reply = json.loads(text)
            self._hear(reply.get("news"))
            result = result_from_plain(reply["result"])
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            return self._internal_error(item, f"the Dask worker's reply for {item.path} was not a result: {error}")
        if (result.student, result.assignment, result.suite_version) != (item.student, self.suite.assignment.name,
                                                                          self.suite.version):
            return self._internal_error(item, f"the Dask worker answered for {result.student} "
                                              f"({result.assignment}, suite {result.suite_version}), not for "
                                              f"{item.student}")
        return result

    def _internal_error(self, item: Found, details: str) -> SubmissionResult:
        result = internal_error_result(item.student, self.suite, str(item.path), "", details, 0.0, "")
        return dataclasses.replace(result, submitted_at=item.submitted_at,
                                   submitted_at_source=item.submitted_at_source)

    def _hear(self, news) -> None:
        """What a worker says once about itself: its sandbox's warning, and reference timings it measured."""
        if not isinstance(news, dict):
            return
        warning = news.get("warning")
        if isinstance(warning, str) and warning and warning not in self.heard:
            self.heard.add(warning)
            self.say(f"worker {news.get('address')}: {warning}")
        times, machine = news.get("times"), news.get("machine")
        if isinstance(times, dict) and isinstance(machine, str):
            with contextlib.suppress(ValueError, TypeError):
                self.store.save_reference_times(self.suite.version, machine,
                                                {str(name): (float(s), int(c)) for name, (s, c) in times.items()})

    def _look(self) -> None:
        """How many threads the cluster has now; stop when it has had no worker for too long."""
        now = time.monotonic()
        if now - self.checked < POLL_SECONDS:
            return
        self.checked = now
        info = self._identity(n_workers=0)
        self.threads = max(1, info.get("total_threads", 1))
        if info.get("n_workers"):
            self.alone_since = None
        elif self.alone_since is None:
            self.alone_since = now
            self.say(f"every Dask worker left {self.cluster.address}; waiting up to "
                     f"{self.cluster.wait_seconds:g} s for one to join")
        elif now - self.alone_since > self.cluster.wait_seconds:
            raise ClusterError(f"the Dask cluster at {self.cluster.address} has had no worker for "
                               f"{self.cluster.wait_seconds:g} s. Results stored so far are kept: start workers (or "
                               "scale the cluster), then run the same command again to grade the rest")

    def _identity(self, n_workers: int) -> dict:
        try:
            return scheduler_identity(self.cluster.client, n_workers)
        except OSError as error:
            raise self._lost(str(error)) from None

    def _lost(self, why: str) -> ClusterError:
        """The run cannot go on: the scheduler is gone (stopped, killed, its machine or network gone)."""
        return ClusterError(f"lost the Dask scheduler at {self.cluster.address} ({why}); results stored so far are "
                            "kept: restart the scheduler and workers, then run the same command again to grade the "
                            "rest")

    def _workers(self) -> list[str]:
        """The workers' addresses, as the scheduler lists them now (and their machines, for `retries`)."""
        workers = self._identity(n_workers=-1).get("workers", {})
        self.retries.warmth.saw({address: str(info.get("host", "")) for address, info in workers.items()},
                                time.monotonic())
        return list(workers)


def _refusal(text) -> str:
    """Why the worker refused to grade, from its reply; "" for a result."""
    try:
        reason = json.loads(text).get("refused", "")
    except (ValueError, TypeError, AttributeError):
        return ""
    return reason if isinstance(reason, str) else "a worker refused to grade"


def _reason(error: CancelledError) -> str:
    """Dask's reason for cancelling the tasks (e.g. "scheduler-connection-lost"), without its advice to rerun."""
    reasons = {group.reason for group in getattr(error, "error_groups", ())}
    return f"Dask cancelled the tasks in flight: {', '.join(sorted(reasons)) or 'no reason given'}"


def _timed_out(result: SubmissionResult) -> bool:
    return not result.internal_error and any(test.status == "timeout" for test in result.tests)


def _why(item: Found, error: BaseException | None) -> str:
    """The instructor's account of a task that failed: its workers died, or the task itself failed."""
    if isinstance(error, KilledWorker):
        last = getattr(error.last_worker, "address", "unknown")
        return (f"the Dask workers grading {item.path} died {error.allowed_failures + 1} times (the last was {last}), "
                "so it was not tried again: the submission may crash its grader, or the workers ran out of memory. "
                "Their logs say why; the next `autograder grade` tries it again")
    return f"the Dask task grading {item.path} failed: {type(error).__name__}: {error}"
