"""Time a call spent waiting for a processor, given back to it: a loaded machine must not cost points.

A call's limit is wall-clock time, measured by the grader. On a busy machine
(the other grading job, a TA's own work, a shared cluster node) a right
function can be runnable and still not run, and would time out through no
fault of its own. So at a call's deadline the grader reads, from the kernel's
scheduler accounting, how long the call's thread waited runnable for a
processor (`/proc/<pid>/schedstat`'s run delay) since the call began, and
extends the deadline by that much. On a virtual machine the host may also keep
the machine's processors from running at all (steal time, /proc/stat): the
kernel counts that neither as the call's processor time nor as its wait, so
the call is given the share of its own running time that the machine lost
meanwhile. A function that sleeps or loops on a quiet machine waits for
nothing and is stopped at its limit, as before.

A call stopped without having used its limit in processor time was idle
(grading.confirm runs it again), unless the kernel shows the child asleep in a
sleep of its own asking at that deadline: its only thread sleeping
interruptibly in nanosleep (`time.sleep`). Being held up looks otherwise: a
disk wait is an uninterruptible sleep, a stopped machine or process is running
or stopped, not asleep in a timer.

Nothing here is the submission's own account: the kernel keeps these figures,
and they are read from outside the sandbox. What a submission can do is crowd
its own thread out with threads of its own; so the credit stops once the
process as a whole has used its limit in processor time during the call (what
threads of its load computed before is no call's), and it never exceeds
`MAX_FACTOR` times the limit in all. Or with processes of its own, whose time
is not the child's: a helper computing on the child's processor while the
child waits would earn the child credit for its own work. So a call gets none
once the submission has run another process during it (one the child waited
for shows in its children's time; one alive, or ended and not waited for, in
the sandbox's process list).
"""
from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from autograder.sandbox.processes import STATE, THREADS, read_proc, stat_fields

MAX_FACTOR = 5.0  # a call runs at most this many times its limit, however loaded the machine
IDLE_SHARE = 0.5  # a call stopped having used less than this share of its limit in processor time was idle
KERNEL_SHARE = 0.5  # a stopped call's time in the kernel is named when it is at least this share of its computing
MIN_CREDIT = 0.005  # seconds: below this, the wait is noise, and the call is stopped at its limit
TICK = os.sysconf("SC_CLK_TCK")
MACHINE = "/proc/stat"
MAX_STOLEN = 0.9  # the largest share of the machine's time counted as stolen (the credit grows without bound near 1)
# The kernel's wait channel (/proc/<pid>/wchan) of a thread in time.sleep: hrtimer_nanosleep, do_nanosleep.
SLEEP_CHANNEL = b"nanosleep"


@dataclass(frozen=True)
class ProcessorUse:
    """A process's processor time so far, seconds: its main thread's, all its threads', and how long the main
    thread waited, runnable, for a processor."""

    ran: float
    all_threads: float
    waited: float
    stolen: float  # the whole machine's steal time so far, summed over its processors
    at: float  # when this was read (time.monotonic)
    in_kernel: float = 0.0  # of `all_threads`, the time in the kernel: page faults, system calls
    resting: bool = False  # its main thread was sleeping interruptibly (state S), waiting for something it asked for
    reaped: float = 0.0  # the processor time of its children that it has waited for (and of theirs)
    alone: bool = False  # it had one thread


def processor_use(proc: str, machine: str = MACHINE, files: ProcFiles | None = None) -> ProcessorUse | None:
    """What the kernel says of the process whose /proc directory is `proc`; None if it is gone or unreadable.

    schedstat (main thread, nanoseconds): time on a processor, time waiting on a run queue, time slices.
    stat fields 14 and 15 (the whole thread group, clock ticks): user and system time; 16 and 17: its waited-for
    children's; fields 3 and 20: the main thread's state and the number of threads. `machine`'s first
    line (/proc/stat's "cpu", clock ticks): its eighth figure is the steal time (0 where there is none).
    files: where the same process is read again and again (a session's calls): its files kept open, and
    `files.machine` read instead of `machine`.
    """
    read = files.read if files is not None else (lambda directory, name: read_proc(f"{directory}/{name}"))
    try:
        ran, waited = (int(x) for x in read(proc, "schedstat").split()[:2])
        fields = stat_fields(read(proc, "stat"))
        in_kernel = int(fields[12]) / TICK
        everything = int(fields[11]) / TICK + in_kernel
        resting, alone = fields[STATE] == b"S", fields[THREADS] == b"1"
        reaped = (int(fields[13]) + int(fields[14])) / TICK
    except (OSError, ValueError, IndexError):
        return None
    stolen = files.stolen() if files is not None else _stolen(machine)
    return ProcessorUse(ran / 1e9, everything, waited / 1e9, stolen, time.monotonic(), in_kernel, resting, reaped,
                        alone)


def _stolen(machine: str) -> float:
    try:
        return _steal_in(read_proc(machine))
    except OSError:
        return 0.0


def _steal_in(machine_stat: bytes) -> float:
    """The steal time in /proc/stat's text, seconds; 0.0 where it has none (a machine of its own, or a
    kernel that keeps none)."""
    try:
        return int(machine_stat.split(b"\n", 1)[0].split()[8]) / TICK
    except (ValueError, IndexError):
        return 0.0


class ProcFiles:
    """The /proc files of one process, and the machine's /proc/stat, kept open and read again from their start.

    Opening a file under a sandbox's /proc costs several times reading it (the path crosses into the
    sandbox's namespace), and a session reads its child's after every call. A file kept open names the
    process it was opened for; once that one is gone, its path is opened again, and names whatever
    process has that pid now (for a session, its current child) or nothing. The steal time changes once
    a clock tick, so /proc/stat is read at most once a tick. Close it when done.
    """

    def __init__(self, machine: str = MACHINE):
        self.machine = machine
        self._directory: str | None = None
        self._fds: dict[str, int] = {}  # file name in `_directory` -> its descriptor
        self._machine_fd: int | None = None
        self._stolen = (0.0, -math.inf)  # (seconds, when read)

    def read(self, directory: str, name: str) -> bytes:
        """The contents of `directory`/`name`; OSError if it cannot be read. Another directory than the last
        one's closes that one's files first (one process at a time: a session's current child)."""
        if directory != self._directory:
            self._close_process()
            self._directory = directory
        fd = self._fds.get(name)
        if fd is not None:
            try:
                return os.pread(fd, 4096, 0)
            except OSError:  # its process is gone
                os.close(self._fds.pop(name))
        fd = self._fds[name] = os.open(f"{directory}/{name}", os.O_RDONLY | os.O_CLOEXEC)
        return os.pread(fd, 4096, 0)

    def stolen(self) -> float:
        """The machine's steal time so far, seconds, as of at most a clock tick ago."""
        value, when = self._stolen
        now = time.monotonic()
        if now - when >= 1 / TICK:
            try:
                if self._machine_fd is None:
                    self._machine_fd = os.open(self.machine, os.O_RDONLY | os.O_CLOEXEC)
                value = _steal_in(os.pread(self._machine_fd, 4096, 0))
            except OSError:
                value = 0.0
            self._stolen = (value, now)
        return value

    def close(self) -> None:
        self._close_process()
        if self._machine_fd is not None:
            os.close(self._machine_fd)
            self._machine_fd = None

    def _close_process(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        self._directory = None


class WaitCredit:
    """The extra seconds one call has earned by waiting for a processor, asked at each of its deadlines.

    proc: the /proc directory of the child running the call, read from outside the sandbox (None: no
    credit, e.g. where the kernel keeps no scheduler statistics). seconds: the call's limit. machine and
    processors: where the machine's steal time is read, and over how many processors it is summed.
    start: the process's use when the call began, if read then (default: now).
    company: whether the submission has a process besides the child now, one ended and not waited for
    included, read from outside (Session.has_company); None: only what the child's own figures show.
    """

    def __init__(self, proc: str | None, seconds: float, machine: str = MACHINE, processors: int | None = None,
                 start: ProcessorUse | None = None, files: ProcFiles | None = None,
                 company: Callable[[], bool] | None = None):
        self._proc, self._machine, self._files, self._company = proc, machine, files, company
        self._seconds = seconds
        self._processors = processors  # what /proc/stat's steal is summed over; counted at a deadline, if one comes
        self._start = (start or processor_use(proc, machine, files)) if proc else None
        self._given = 0.0
        self._used = 0.0  # its processor time by the last deadline (its own thread's, and its other threads')
        self._in_kernel: float | None = None  # of that, the time in the kernel; None: not read at a deadline
        self._asleep = False  # at the last deadline, asleep in a sleep of its own asking
        self._resting = False  # at the last deadline, idle and waiting for something it asked for
        self._helped = False  # the submission ran another process during the call: no credit from then on
        self._waited = 0.0  # its main thread's seconds ready to run but waiting for a processor, by the last deadline

    def more(self) -> float:
        """Seconds to extend the deadline by now: the wait not yet given back, within the caps; 0 for none."""
        if self._start is None:
            return 0.0
        now = processor_use(self._proc, self._machine, self._files)
        if now is None:
            self._used = self._seconds  # gone: nothing more is known of it, and it is not taken for idle
            self._asleep = self._resting = False
            self._in_kernel = None
            return 0.0
        own = now.ran - self._start.ran
        self._waited = now.waited - self._start.waited
        # Its other threads' time during the call, less a clock tick (the whole process's is counted in ticks). Not
        # since the child began: threads of the load's, ended before the call, had taken every call's credit.
        others = now.all_threads - self._start.all_threads - own - 1 / TICK
        self._used = own + max(others, 0.0)
        self._in_kernel = now.in_kernel - self._start.in_kernel
        self._resting = now.resting and self.idle()
        self._asleep = self._resting and now.alone and self._in_sleep()
        if self._used >= self._seconds:
            return 0.0  # it had its limit's worth of processor time: the wait was its own doing or beside the point
        self._helped = self._helped or now.reaped > self._start.reaped or (
            self._company is not None and self._company())
        if self._helped:
            return 0.0
        waited = now.waited - self._start.waited + own * self._stolen_share(now)
        credit = min(waited - self._given, (MAX_FACTOR - 1) * self._seconds - self._given)
        if credit < MIN_CREDIT:
            return 0.0
        self._given += credit
        return credit

    def idle(self) -> bool:
        """Whether the call, by its last deadline, had used less than IDLE_SHARE of its limit in processor
        time: it slept, or was held up by what the kernel counts as no wait for a processor (False where
        unknown). A call computing all along falls a little short of its limit (it began before it ran)."""
        return self._start is not None and self._used < IDLE_SHARE * self._seconds

    def busy(self) -> bool:
        """Whether the idle call was kept waiting for a processor (its thread ready to run) for IDLE_SHARE of its
        limit or more by its last deadline: the machine, not a wait of the call's own, left it short of processor
        time, and its wait credit ran out at MAX_FACTOR times the limit."""
        return self.idle() and self._waited >= IDLE_SHARE * self._seconds

    def spent(self) -> str:
        """What the kernel counted of the call by its last deadline, for its timeout's message: its processor
        time, how much of that in the kernel where that was most of it, and the wait added to its limit.
        "" where nothing was read then. So a student, or a TA asked for a regrade, can tell slow code from a
        busy machine: the figures are the kernel's, read from outside the sandbox."""
        if self._in_kernel is None:
            return ""
        # "the operating system", not "the kernel": in a notebook, the kernel is Jupyter's
        text = f"the operating system counted {self._used:.2f} s of processor time for it"
        if self.in_kernel():
            in_kernel = min(self._in_kernel, self._used)  # counted in clock ticks: may round past the precise total
            text += (f" ({in_kernel:.2f} s of it in the operating system: allocating or touching memory, "
                     "reading files or other system calls)")
        if self._given > 0:
            text += f", and its limit was extended by the {self._given:.2f} s it waited for a processor"
        if self._helped:
            text += (f"{'; from then on' if self._given > 0 else '; its limit was'} not extended for waiting, as "
                     "the submission ran other processes meanwhile, whose processor time is not the call's")
        return text

    def in_kernel(self) -> bool:
        """Whether most of the processor time counted for the call by its last deadline was the kernel's (memory
        allocated or touched, files read), and enough of it to tell; False where nothing was read."""
        return (self._in_kernel is not None and min(self._in_kernel, self._used) >= KERNEL_SHARE * self._used
                and self._used >= 2 / TICK)

    def asleep(self) -> bool:
        """Whether, at its last deadline, the idle call's child was asleep in `time.sleep` (or nanosleep by
        another name), its only thread: the wait was its own, not the machine's. False where unknown (the
        wait channel is hidden where the grader may not trace the child)."""
        return self._asleep

    def resting(self) -> bool:
        """Whether, at its last deadline, the idle call's child (its main thread) slept interruptibly, waiting for
        something it asked for: a sleep, a lock, a thread, input. A process stopped, in an uninterruptible (disk)
        wait or running is held up otherwise. False where unknown."""
        return self._resting

    def _in_sleep(self) -> bool:
        try:
            channel = self._files.read(self._proc, "wchan") if self._files else read_proc(f"{self._proc}/wchan")
        except OSError:
            return False
        return SLEEP_CHANNEL in channel

    def _stolen_share(self, now: ProcessorUse) -> float:
        """Per second the call ran, the seconds it lost to steal: a share f of the machine's time stolen
        meanwhile leaves a running process 1 - f of each second, so f / (1 - f) per second it ran."""
        elapsed = now.at - self._start.at
        if elapsed <= 0:
            return 0.0
        processors = self._processors or os.cpu_count() or 1  # not per call: it reads /sys, and most calls end in time
        share = min(max((now.stolen - self._start.stolen) / (elapsed * processors), 0.0), MAX_STOLEN)
        return share / (1 - share)


class Extensions:
    """How far a call's deadline moves each time it is reached: by the time the call waited for a processor
    (`WaitCredit`). budget_left: the submission's seconds left when the call began, which no extension passes."""

    def __init__(self, waits: WaitCredit, budget_left: float):
        self._waits, self._budget_left = waits, budget_left

    def extended(self, deadline: float, started: float) -> float | None:
        """The call's next deadline, now that `deadline` is passed (by now, or by when its function returned);
        None: the call is out of time. Times are time.monotonic(); started: when the call began.

        Later by the wait credit, counted from the deadline passed and not from when the grader came to it:
        a grader held up itself gives the call nothing."""
        credit = self._waits.more()
        later = min(deadline + credit, started + self._budget_left)
        return later if credit > 0 and later > deadline else None

    def account(self) -> tuple[bool, bool, bool, bool, bool, str]:
        """What the kernel counted of a call that ran out of time, for its failure (sandbox.replies.CallTimedOut):
        whether it was idle, asleep in a sleep of its own asking, resting in a wait of its own, kept waiting for a
        processor, mostly in the kernel, and the sentence saying so (WaitCredit.idle, asleep, resting, busy,
        in_kernel, spent)."""
        waits = self._waits
        return waits.idle(), waits.asleep(), waits.resting(), waits.busy(), waits.in_kernel(), waits.spent()
