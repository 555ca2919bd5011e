"""Time limits calibrated from the reference, on this machine.

Before a class is graded, the reference answers every check's calls, in
this process, through the sandbox's own message code (sandbox.inprocess),
at the sizes the checks use; each call's processor time is measured `ROUNDS`
times and the best kept (processor time, so that a machine busy at that
moment does not loosen every limit for good). A check's call limit is then

    max(call_floor_seconds, call_factor × the reference's time on the check's slowest call)

(course.yaml `limits`), unless course.yaml pins the check's `seconds`. So a
function as fast as the reference, within a wide factor, always finishes,
and one that loops in Python over a large input is stopped after a fraction
of a second rather than a fixed several seconds. The reference's times are
cached per suite version and machine in the results store, and in the
user's cache folder (grading.suite_cache), so that a fresh store on the same
machine does not time them again.

Processor time is not immune to a busy machine: two processors that share a
core (hyperthreads, most virtual machines' vCPUs) each run slower while the
other computes, by 2-3x on the development machine. Times measured while the
rest of the machine kept more than QUIET_SHARE of a processor busy (read
from /proc/stat, minus this process's own time) grade the store they were
measured for, whose class must keep one set of limits, but are not cached for
other stores: one busy moment would otherwise loosen every later class's
limits on this machine.
"""
from __future__ import annotations

import contextlib
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from threadpoolctl import threadpool_limits

from autograder.authoring.checks import Trial
from autograder.authoring.seeds import check_rng, class_seed
from autograder.grading import suite_cache
from autograder.grading.attempt import SuiteFault, attempt
from autograder.grading.course import Course
from autograder.grading.store import Store
from autograder.grading.suite import Suite, SuiteCheck
from autograder.sandbox.inprocess import InProcessSession
from autograder.sandbox.processes import read_proc
from autograder.sandbox.waiting import MACHINE, TICK, processor_use

CACHE_KIND = "reference-times"  # the reference's times in the cache folder (grading.suite_cache)
ROUNDS = 5  # the best of several runs: caches and page faults only ever make a run slower
QUIET_SHARE = 0.25  # of one processor: the most the rest of the machine may use while timing, for the cache
WATCH_SECONDS = 0.5  # the shortest time that share is judged over: /proc/stat counts in 10 ms ticks


@dataclass(frozen=True)
class ReferenceTime:
    """How long the reference takes on one check: its slowest call (best of ROUNDS), and the calls it makes."""

    seconds: float
    calls: int


@dataclass(frozen=True)
class MachineReading:
    """Seconds so far that the machine's processors ran anything (summed over them), and this process ran."""

    busy: float
    own: float
    at: float  # time.monotonic() when read


def machine_reading(machine: str = MACHINE, own: str = "/proc/self") -> MachineReading | None:
    """What the kernel counts: `machine`'s "cpu" line (user, nice, system, irq and softirq ticks; idle,
    iowait and steal are time nothing of this machine ran) and the processor time of the process whose
    /proc directory is `own` (all its threads, sandbox.waiting.processor_use). None where either cannot be read."""
    mine = processor_use(own, machine)
    try:
        figures = [int(x) for x in read_proc(machine).split(b"\n", 1)[0].split()[1:8]]
    except (OSError, ValueError):
        return None
    if mine is None or len(figures) < 7:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = figures
    return MachineReading((user + nice + system + irq + softirq) / TICK, mine.all_threads, mine.at)


def others_busy(before: MachineReading | None, after: MachineReading | None) -> float:
    """How many processors, on average, the rest of the machine kept busy between two readings; infinite
    when unknown (no readings, or too short a time between them to tell)."""
    if before is None or after is None or after.at - before.at < WATCH_SECONDS / 2:
        return math.inf
    others = (after.busy - before.busy) - (after.own - before.own)
    return max(0.0, others) / (after.at - before.at)


@dataclass(frozen=True)
class CallLimit:
    """One check's call limit, and the reference's time it was calibrated from (None when pinned or uncalibrated)."""

    seconds: float
    reference: float | None = None


def machine() -> str:
    """What the timings hold for: this machine's name, processor and core count, and the library versions."""
    model = ""
    try:
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    import numpy
    return f"{platform.node()} | {model or platform.processor()} | {os.cpu_count()} cores | numpy {numpy.__version__}"


def time_reference(course: Course, suite: Suite) -> dict[str, ReferenceTime]:
    """The reference's time on every check's calls (a check's slowest call), measured here and now.

    On one thread, as workers compute (their environment sets one thread for BLAS and OpenMP, and the
    zygote for PyTorch): helper threads would add their spinning to the processor time.
    """
    with one_thread_here():
        return _time_each_check(course, suite)


@contextlib.contextmanager
def one_thread_here():
    """PyTorch, BLAS and OpenMP on one thread in this process meanwhile, as in the workers and the jobs."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch else 0
    try:
        if torch:
            torch.set_num_threads(1)
        with threadpool_limits(limits=1):
            yield
    finally:
        if torch:
            torch.set_num_threads(threads)


def _time_each_check(course: Course, suite: Suite) -> dict[str, ReferenceTime]:
    namespace = vars(suite.reference)
    seed = class_seed(course.seed_salt, suite.assignment.name)
    shared: dict = {}
    times = {}
    for entry in suite.checks:
        best, calls = None, 0
        for _ in range(ROUNDS):
            session = InProcessSession(namespace, suite.assignment.limits)
            try:
                attempt(entry, Trial(entry.name, check_rng(seed, entry.name), suite.reference, session.call,
                                     suite.assignment.tolerance, sizes=entry.check.sizes, shared_cache=shared,
                                     arguments_unchanged=suite.assignment.arguments_unchanged))
            except SuiteFault:
                pass  # timed as far as it ran; each submission that reaches the fault is an internal error
            slowest = max(session.seconds, default=0.0)
            best, calls = slowest if best is None else min(best, slowest), len(session.seconds)
        times[entry.name] = ReferenceTime(best, calls)
    return times


def cached_reference_times(course: Course, suite: Suite, store: Store, quiet: Callable[[], None] | None = None,
                           machine_stat: str = MACHINE, say: Callable[[str], None] | None = None
                           ) -> dict[str, ReferenceTime]:
    """The reference's times for this suite on this machine: from the store, else from the user's cache
    folder, else measured now (after `quiet()`, which waits for the grader's own sandboxes to settle).

    The store keeps the times its results are graded with. The cache folder gets times measured now only
    if the rest of the machine (`machine_stat`: /proc/stat) was quiet meanwhile (QUIET_SHARE); otherwise
    `say` gets a note for the TA.
    """
    here = machine()
    stored = store.reference_times(suite.version, here)
    kept = stored if _covers(suite, stored) else _from_cache(suite.version, here)
    measured_quietly = False
    if _covers(suite, kept):
        times = _as_times(kept)
    else:
        if quiet is not None:
            quiet()
        times, busy = timed_watching(course, suite, machine_stat)
        measured_quietly = busy <= QUIET_SHARE
        if not measured_quietly and say is not None:
            say(busy_note(busy))
    plain = {name: (t.seconds, t.calls) for name, t in times.items()}
    if plain != stored and not store.read_only:  # a database only read (replay's) keeps what it has
        store.save_reference_times(suite.version, here, plain)
    if measured_quietly:
        suite_cache.write_entry(CACHE_KIND, suite.version, here, {name: list(t) for name, t in plain.items()})
    return times


def busy_note(busy: float) -> str:
    """What the TA is told when the reference was timed beside `busy` processors' worth of other work."""
    how = ("the reference was timed without a reading of the rest of the machine (/proc/stat)" if math.isinf(busy)
           else f"the reference was timed on a busy machine (other processes kept {busy:.1f} processors busy)")
    return (f"note: {how}, so this database's time limits may be looser than on a quiet one; they are kept for "
            "this database only. For the usual limits, grade into a fresh --db while the machine is quiet")


def timed_watching(course: Course, suite: Suite, machine_stat: str = MACHINE) -> tuple[dict[str, ReferenceTime],
                                                                                        float]:
    """`time_reference`, and how many processors the rest of the machine kept busy meanwhile (`others_busy`),
    watched for at least WATCH_SECONDS: a suite timed faster waits out the rest, so a tick or two of some
    other process's work is not read as a busy machine."""
    before = machine_reading(machine_stat)
    times = time_reference(course, suite)
    if before is not None:
        time.sleep(max(0.0, before.at + WATCH_SECONDS - time.monotonic()))
    return times, others_busy(before, machine_reading(machine_stat))


def _from_cache(version: str, here: str) -> dict[str, tuple[float, int]]:
    """The times the cache folder keeps for this suite version and machine; {} for none or any that do not read."""
    entry = suite_cache.read_entry(CACHE_KIND, version, here)
    if not isinstance(entry, dict):
        return {}
    found = {}
    for name, value in entry.items():
        if not (isinstance(value, list) and len(value) == 2 and type(value[0]) in (int, float)
                and type(value[1]) is int and math.isfinite(value[0]) and value[0] >= 0 and value[1] >= 0):
            return {}
        found[name] = (float(value[0]), value[1])
    return found


def _covers(suite: Suite, times: dict) -> bool:
    return set(times) == {entry.name for entry in suite.checks}


def stored_or_timed(course: Course, suite: Suite, stored: dict[str, tuple[float, int]]
                    ) -> tuple[dict[str, ReferenceTime], bool]:
    """The reference's times: `stored` (check -> (seconds, calls), as the store keeps them for this machine)
    when it covers every check, else measured here and now; and whether they were measured."""
    if _covers(suite, stored):
        return _as_times(stored), False
    return time_reference(course, suite), True


def _as_times(kept: dict[str, tuple[float, int]]) -> dict[str, ReferenceTime]:
    return {name: ReferenceTime(seconds, calls) for name, (seconds, calls) in kept.items()}


def call_limits(suite: Suite, reference: dict[str, ReferenceTime] | None) -> dict[str, CallLimit]:
    """Every check's call limit: pinned in course.yaml, calibrated from `reference`, or the plain default."""
    limits = suite.assignment.limits
    found = {}
    for entry in suite.checks:
        found[entry.name] = _limit(entry, limits, reference.get(entry.name) if reference else None)
    return found


def budget(suite: Suite, reference: dict[str, ReferenceTime] | None, limits: dict[str, CallLimit]) -> float:
    """A submission's time budget that follows from its call limits: loading, then every call at its limit."""
    if not reference:
        return suite.assignment.limits.submission_seconds
    calls = sum(limits[e.name].seconds * max(1, reference[e.name].calls) for e in suite.checks if e.name in reference)
    return suite.assignment.limits.load_seconds + calls


def _limit(entry: SuiteCheck, limits, reference: ReferenceTime | None) -> CallLimit:
    if entry.seconds is not None:
        return CallLimit(entry.seconds)
    if reference is None:
        return CallLimit(limits.call_seconds)
    return CallLimit(max(limits.call_floor_seconds, limits.call_factor * reference.seconds), reference.seconds)
