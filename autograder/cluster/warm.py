"""Each Dask worker's graders, kept warm: the course private to it, the suite checked, a grading process per thread.

The driver registers a `WarmGrader` plugin carrying its `Orders`: the course
files grading needs, the suite version it expects, the sandbox to use and the
paths no student code may read. As soon as a worker has the plugin (it joins
later, or it restarted: Dask gives it the plugin then), the plugin warms up in
the background while the worker takes its first task: it unpacks the course
into a folder private to the worker (0700, removed at teardown), probes this
machine's sandbox (bubblewrap where it starts, else the fallback) and refuses
to grade where student code could read a secret. Then it loads the suite,
refusing a different suite version, and times the reference here. Then each
worker thread gets a grading process (grading.boundary) with its own sandbox,
under a worker uid no other sandbox on this machine holds (sandbox.uids),
kept for every task; no grading runs in the worker process itself, so a
submission that kills its grading process costs a fresh process, not the
worker.

The run's driver keeps a lease on the scheduler (`Lease`), renewed every few
seconds while it runs. Should the driver die without taking the plugin off
(kill -9, its machine gone), a watchdog in the plugin sees the lease go
stale, closes the run here (sandboxes stopped, course removed) and takes the
plugin off the scheduler, so that no worker joining later sets it up again.

Tasks (`grade_task`) carry one submission's bytes, since workers share no
file system with the driver, and return plain data: JSON text.
"""
from __future__ import annotations

import contextlib
import json
import logging
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from distributed import WorkerPlugin, get_worker
from distributed.utils import sync

import autograder
from autograder.cluster import installed_version
from autograder.grading.batch import grade_one, lost_result
from autograder.grading.boundary import RETRIES, GradingProcess, Lost, StartTimedOut, one_thread, tried
from autograder.grading.calibration import ReferenceTime, machine, stored_or_timed
from autograder.grading.course import COURSE_FILE, Course, CourseError, load_course
from autograder.grading.coursefiles import CourseFile, write_files
from autograder.grading.found import Found
from autograder.grading.results import result_to_plain
from autograder.grading.station import Protections, SandboxError, Setup, protect
from autograder.grading.submission import FileBytes
from autograder.grading.suite import Suite, load_suite, secret_places

# The scheduler's metadata entry that holds every run's lease: plugin name -> a counter, or ENDED.
LEASES = "autograder-leases"
ENDED = "ended"
RENEW_SECONDS = 5.0  # how often the driver renews its lease, and the watchdog reads it
# A lease not renewed for this long means the driver is gone: long enough for a driver busy loading the suite or
# writing its store, short enough that a dead run's sandboxes (~550 MB each) and course copy do not linger.
GRACE_SECONDS = 30.0
START_TRIES = 3  # grading processes that did not start in time, one after another, before the worker refuses


class Refused(Exception):
    """This worker cannot grade for this run; the message says why and what to do."""


@dataclass(frozen=True)
class Orders:
    """What the driver sends every worker once, inside the plugin."""

    assignment: str
    suite_version: str  # the driver's; a worker whose own differs grades nothing
    files: tuple[CourseFile, ...]  # grading.coursefiles: course.yaml, the public checks, the solution folder
    sandbox: str  # --sandbox: "auto", "bwrap" or "fallback"
    secrets: tuple[str, ...]  # the driver's paths no student code may read (a shared file system shows them)
    # machine -> check -> (seconds, calls): the driver's stored reference timings of this suite, by machine.
    reference_times: dict
    class_imports: tuple[str, ...] = ()  # what the class imports besides the preload (grading.class_imports)


@dataclass(frozen=True)
class _Unpacked:
    """The course as this worker unpacked it, and the sandbox it allows: enough to start sandboxes."""

    course: Course
    protections: Protections


@dataclass(frozen=True)
class _Prepared:
    """The suite, checked and timed here: what the graders of one worker share."""

    suite: Suite
    reference: dict[str, ReferenceTime] | None
    news: dict  # told to the driver once: this worker's sandbox and why, and timings measured here


@dataclass(frozen=True)
class _Warm:
    """One warm grading process (grading.boundary: its own sandbox and grader) of one worker thread."""

    process: GradingProcess
    done: threading.Event = field(default_factory=threading.Event)  # it died, or the run ended: its keeper ends it


class WarmGrader(WorkerPlugin):
    """The worker plugin: warm graders, one per worker thread, for one run of `autograder grade --cluster`."""

    def __init__(self, name: str, orders: Orders):
        self.name = name
        self.orders = orders

    def setup(self, worker) -> None:
        # Only bookkeeping on the worker's event loop; warming up takes seconds, in a thread of its own.
        self.address = worker.address
        self._workspace = worker.local_directory  # Dask removes it, and purges those of dead workers
        self._lock = threading.Lock()  # guards _stop's setting, _idle's contents at teardown, _root, _news
        self._idle: queue.Queue[_Warm] = queue.Queue()
        self._stop = threading.Event()
        self._root: Path | None = None
        self._failure = ""
        self._loaded = threading.Event()  # set once the suite is ready here, or the warm-up failed
        self._prepared: _Prepared | None = None
        self._news: dict | None = None
        threading.Thread(target=self._guarded, args=(self._warm_up, worker.state.nthreads),
                         name=f"{self.name}-warm-up", daemon=True).start()
        threading.Thread(target=self._watch, args=(worker,), name=f"{self.name}-watchdog", daemon=True).start()

    def teardown(self, worker) -> None:
        self.close()

    @contextlib.contextmanager
    def grader(self) -> Iterator[tuple[GradingProcess, dict | None]]:
        """A warm grading process for one task, and the news for the driver the first time; raises Refused."""
        while True:
            if self._failure:
                raise Refused(self._failure)
            if self._stop.is_set():
                raise Refused(f"worker {self.address} no longer grades for this run (it ended, or was interrupted)")
            try:
                warm = self._idle.get(timeout=0.1)  # there are as many as threads: one is free or warming up
                break
            except queue.Empty:
                continue
        with self._lock:
            news, self._news = self._news, None
        try:
            yield warm.process, news
        finally:
            with self._lock:
                keep = not self._stop.is_set() and warm.process.alive()
                if keep:
                    self._idle.put(warm)
            if not keep:  # dead (its keeper starts another), or taken off the worker while this task graded
                warm.done.set()

    def close(self) -> None:
        """Stop every idle sandbox (a busy one stops when its task ends), remove the course."""
        with self._lock:
            self._stop.set()
            idle = []
            while not self._idle.empty():
                idle.append(self._idle.get())
            root, self._root = self._root, None
        for warm in idle:
            warm.done.set()
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def _watch(self, worker) -> None:
        """Close this run here, and take its plugin off the scheduler, once its driver stops renewing the lease.

        Without this, a driver killed with kill -9 left its sandboxes, its worker uids and its course copy
        (solutions included) on every worker until the scheduler restarted, and the scheduler gave the plugin to
        every worker that joined later. An unreadable lease counts as not renewed: a driver that lost the
        scheduler has stopped too.
        """
        seen, since = None, time.monotonic()
        while not self._stop.wait(RENEW_SECONDS):
            try:
                lease = sync(worker.loop, worker.scheduler.get_metadata, keys=[LEASES, self.name], default=None)
            except Exception:  # noqa: BLE001 - the scheduler is unreachable or closing: the lease is not renewed
                lease = seen
            now = time.monotonic()
            if lease != seen:
                seen, since = lease, now
            if lease == ENDED or now - since > GRACE_SECONDS:
                break
        else:
            return  # the run ended here in the ordinary way (the driver took the plugin off)
        logging.getLogger(__name__).warning("autograder: the driver of %s is gone (its lease was not renewed for "
                                            "%g s); closing its graders here", self.name, GRACE_SECONDS)
        self.close()
        with contextlib.suppress(Exception):  # another worker may have taken it off first, or the scheduler is gone
            sync(worker.loop, worker.scheduler.unregister_worker_plugin, name=self.name)

    def _guarded(self, step, *args) -> None:
        """`step(*args)` in this thread. A fault it did not foresee refuses the run on this worker: left alone, it
        would end the thread and leave every task here waiting for a grader that never comes."""
        try:
            step(*args)
        except Exception as error:  # noqa: BLE001 - whatever it is, the driver must hear of it
            logging.getLogger(__name__).exception("autograder: %s could not prepare to grade", self.name)
            self._fail(f"worker {self.address} could not prepare to grade ({type(error).__name__}: {error}). The "
                       "worker's log has the traceback: fix what it names on that worker (or report it with the log), "
                       "then run again")

    def _warm_up(self, threads: int) -> None:
        """Unpack and probe; then start the sandboxes while the suite loads and the reference is timed."""
        try:
            unpacked = self._unpack_and_probe()
        except (Refused, CourseError, SandboxError, OSError) as error:
            self._fail(f"worker {self.address} refused to grade: {error}")
            return
        for number in range(threads):
            threading.Thread(target=self._guarded, args=(self._keep, unpacked), name=f"{self.name}-sandbox-{number}",
                             daemon=True).start()
        try:
            self._prepared = self._load_and_time(unpacked)
        except (Refused, CourseError, OSError) as error:
            self._fail(f"worker {self.address} refused to grade: {error}")
            return
        self._news = self._prepared.news
        self._loaded.set()

    def _fail(self, why: str) -> None:
        self._failure = why
        self._loaded.set()  # sandboxes waiting for the suite stop instead

    def _keep(self, unpacked: _Unpacked) -> None:
        """Keep one grading process for this worker thread for the whole run; start another when one dies.
        Forked from this thread, which outlives each: a grading process dies with the thread that started it.
        Its sandbox leases a worker uid no other sandbox on this machine holds (sandbox.uids)."""
        self._loaded.wait()
        prepared, stuck = self._prepared, 0
        while not self._failure and not self._stop.is_set():
            warm = _Warm(GradingProcess(Setup(unpacked.course, prepared.suite, unpacked.protections,
                                              prepared.reference, class_imports=self.orders.class_imports)))
            try:
                warm.process.ready()
            except StartTimedOut as error:
                # Forked from a worker's many threads, a grading process can inherit a lock another thread held and
                # never start; a fresh fork rarely meets it again. A start that keeps failing refuses, as below.
                stuck += 1
                logging.getLogger(__name__).warning("autograder: %s; starting another (%d of %d)", error, stuck,
                                                    START_TRIES)
                if stuck < START_TRIES:
                    continue
                self._fail(f"worker {self.address} cannot grade here: {error} ({START_TRIES} times)")
                return
            except SandboxError as error:  # its sandbox did not start, or could not grade the reference
                warm.process.end()
                self._fail(f"worker {self.address} cannot grade here: {error}")
                return
            with self._lock:
                ended = self._stop.is_set()
                if not ended:
                    self._idle.put(warm)
            if not ended:
                warm.done.wait()
            warm.process.end()

    def _unpack_and_probe(self) -> _Unpacked:
        orders = self.orders
        # mkdtemp: a fresh folder only this worker's user can enter (0700), so student code can read none of it.
        with self._lock:
            if self._stop.is_set():
                raise Refused("the run ended before this worker warmed up")
            self._root = root = Path(tempfile.mkdtemp(prefix="autograder-course-", dir=self._workspace))
        write_files(list(orders.files), root)
        course = load_course(root / COURSE_FILE)
        # Checked before any sandbox starts, and so before any student code runs.
        secrets = secret_places(course, course.assignment(orders.assignment))
        return _Unpacked(course, protect(orders.sandbox, [root, *secrets, *map(Path, orders.secrets)]))

    def _load_and_time(self, unpacked: _Unpacked) -> _Prepared:
        suite = load_suite(unpacked.course, self.orders.assignment)
        if suite.version != self.orders.suite_version:
            raise Refused(self._mismatch(suite.version))
        one_thread()
        # Calibrated here, not on the driver: a call's limit is a multiple of the reference's time, and that
        # must be the time on the machine that runs the student's code (a driver on a laptop or a login node
        # may be faster or slower than the cluster's nodes). The driver's store keeps each machine's timings,
        # so a node is timed once per suite version.
        here = machine()
        reference, measured = None, False
        if suite.reference is not None:
            reference, measured = stored_or_timed(unpacked.course, suite, self.orders.reference_times.get(here, {}))
        times = {name: [t.seconds, t.calls] for name, t in reference.items()} if measured else None
        news = {"address": self.address, "mode": unpacked.protections.mode,
                "warning": unpacked.protections.warning, "machine": here, "times": times}
        return _Prepared(suite, reference, news)

    def _mismatch(self, version: str) -> str:
        here = Path(autograder.__file__).resolve().parent
        return (f"its suite version for {self.orders.assignment} is {version}, but the driver's is "
                f"{self.orders.suite_version}: the worker runs different grading code (autograder "
                f"{installed_version()} at {here}). Install the same autograder as the driver's on every worker "
                "(the same release, or the same commit), restart the workers, and run again. Nothing was graded "
                "on this worker")


def grade_task(plugin: str, item: Found, content: FileBytes | None) -> str:
    """Runs on a Dask worker: one submission's result as JSON text, or why this worker refuses to grade.

    The grading runs in one of the worker's grading processes, never in the
    worker itself: one that dies is replaced, and the submission tried once
    more before it is stored as an internal error. So no submission can take
    its Dask worker down.
    """
    worker = get_worker()
    warm = worker.plugins.get(plugin)
    if not isinstance(warm, WarmGrader):
        return json.dumps({"refused": f"worker {worker.address} has no grader for this run (its plugin {plugin} is "
                                      "gone: the run may have ended, or the worker restarted without it); run again"})
    told, causes = None, []
    try:
        for _ in range(1 + RETRIES):
            with warm.grader() as (process, news):
                told = told or news
                outcome = process.run(grade_one, item, content)
            if not isinstance(outcome, Lost):
                break
            causes.append(outcome.cause)
            if not outcome.died:
                break
    except (Refused, SandboxError) as error:
        return json.dumps({"refused": str(error)})
    result = outcome if not isinstance(outcome, Lost) else lost_result(item, process.setup.suite, tried(causes))
    return json.dumps({"result": result_to_plain(result), "news": told})
