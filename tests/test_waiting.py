"""Issue 24: a loaded machine costs no points. Time a call waited for a processor is given back to it, read
from the kernel's accounting of real processes; sleeping, its own threads and its limit's worth of work earn
nothing."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import numpy as np
import pytest

from autograder.authoring.protocol import Call
from autograder.grading.submission import read_submission
from autograder.sandbox.limits import Limits
from autograder.sandbox.protections import probe
from autograder.sandbox.replies import CallTimedOut
from autograder.sandbox.session import Session
from autograder.sandbox.waiting import MAX_FACTOR, TICK, ProcFiles, WaitCredit, processor_use
from autograder.sandbox.zygote import Sandbox

X = np.zeros(2)
CPU = min(os.sched_getaffinity(0))  # every process below shares this one processor
SPIN = "while True: pass"
# Threads that hash without the GIL, beside a main thread that wakes every millisecond: its own threads keep it
# waiting for the processor, while it uses almost none itself.
CROWDED_BY_ITS_THREADS = """
import hashlib, threading, time
data = b"x" * 10_000_000
def hash_forever():
    while True:
        hashlib.sha256(data).digest()
for _ in range(3):
    threading.Thread(target=hash_forever, daemon=True).start()
while True:
    time.sleep(0.001)
"""


def _on_one_cpu():
    os.sched_setaffinity(0, {CPU})


@contextmanager
def _processes(*programs: str):
    """Python processes running `programs`, all on the one processor, each past its interpreter's start.

    Each in a session of its own, as a sandbox's child is: where the kernel groups a session's processes
    (sched_autogroup), a session shares its weight over every processor it runs on, so spinners in pytest's
    session, which runs other tests on the other processor, took less of this one than they should."""
    started = [subprocess.Popen([sys.executable, "-c", "print('ready', flush=True)\n" + program],
                                stdout=subprocess.PIPE, preexec_fn=_on_one_cpu, start_new_session=True)
               for program in programs]
    try:
        for process in started:
            assert process.stdout.readline() == b"ready\n"
        yield started
    finally:
        for process in started:
            process.kill()
            process.wait()


def _credit_after(program: str, seconds: float, hogs: int, wait: float = 0.6) -> float:
    """What WaitCredit gives a process running `program`, beside `hogs` spinning processes, `wait` s in."""
    with _processes(*[SPIN] * hogs), _processes(program) as (process,):
        credit = WaitCredit(f"/proc/{process.pid}", seconds)
        time.sleep(wait)
        return credit.more()


def test_the_kernel_keeps_what_the_credit_reads():
    use = processor_use(f"/proc/{os.getpid()}")
    assert use is not None and use.ran > 0 and use.all_threads >= use.ran - 0.02
    assert processor_use("/proc/0-no-such-process") is None


def test_files_kept_open_read_what_fresh_ones_read_until_their_process_is_gone():
    """A session reads its child's files after every call through one ProcFiles: opened once, then read
    again; once the process is gone (and its pid free), reading says so."""
    files = ProcFiles()
    try:
        with _processes(SPIN) as (process,):
            proc = f"/proc/{process.pid}"
            first = processor_use(proc, files=files)
            opened = _open_files_under(proc)
            time.sleep(0.2)
            kept, fresh = processor_use(proc, files=files), processor_use(proc)
            assert _open_files_under(proc) == opened == {"schedstat", "stat"}  # read again, not opened again
            assert kept.ran > first.ran and abs(kept.ran - fresh.ran) < 0.05
        assert processor_use(proc, files=files) is None  # killed and reaped
    finally:
        files.close()


def _open_files_under(proc: str) -> set[str]:
    """The names of the files under `proc` this process has open (its descriptors' targets)."""
    targets = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith(proc + "/"):
            targets.add(target[len(proc) + 1:])
    return targets


def test_the_steal_time_read_through_kept_files_follows_the_machine(tmp_path):
    proc, machine = tmp_path / "proc", tmp_path / "stat"
    _kernel_says(proc, machine, ran=0.0, stolen=1.0)
    files = ProcFiles(str(machine))
    assert files.stolen() == 1.0
    _kernel_says(proc, machine, ran=0.0, stolen=2.0)
    time.sleep(2 / TICK)  # the figure changes once a tick: read again after one
    assert files.stolen() == 2.0 and processor_use(str(proc), files=files).stolen == 2.0
    files.close()


def test_a_call_crowded_out_by_other_processes_is_given_its_wait_back():
    given = _credit_after(SPIN, seconds=2.0, hogs=2)
    assert 0.2 < given <= 0.6  # of 0.6 s, it had about a third


def test_a_sleeping_call_waits_for_no_processor_and_earns_nothing():
    assert _credit_after("import time; time.sleep(60)", seconds=2.0, hogs=2) == 0.0


def _idle_and_asleep(program: str, stop: bool = False) -> tuple[bool, bool]:
    """WaitCredit's idle() and asleep() for a process running `program` past a 0.1 s limit (stop: SIGSTOP it
    first, as a stall of the machine holds a call up)."""
    with _processes(program) as (process,):
        credit = WaitCredit(f"/proc/{process.pid}", 0.1)
        if stop:
            process.send_signal(signal.SIGSTOP)
        time.sleep(0.15)
        credit.more()
        return credit.idle(), credit.asleep()


def test_a_call_in_time_sleep_is_asleep_of_its_own_asking():
    assert _idle_and_asleep("import time; time.sleep(60)") == (True, True)


@pytest.mark.parametrize("program, stop", [
    ("import os; reading, _ = os.pipe(); os.read(reading, 1)", False),  # waits for input, not in a timer
    ("import threading, time; helper = threading.Thread(target=time.sleep, args=(60,)); helper.start(); "
     "helper.join()", False),  # its main thread waits for a thread: not its only one
    ("import time; time.sleep(60)", True),  # stopped from outside: held up, whatever it was doing
])
def test_other_idle_calls_are_not_taken_for_asleep(program, stop):
    assert _idle_and_asleep(program, stop) == (True, False)


# Mapping fresh memory and giving it back: its processor time is the kernel's, zeroing and unmapping pages.
IN_THE_KERNEL = "import mmap\nwhile True:\n    memory = mmap.mmap(-1, 64 << 20)\n    memory.write(bytes(64 << 20))\n" \
                "    memory.close()"


def _spent_after(program: str, seconds: float, hogs: int = 0, wait: float = 0.3) -> str:
    """WaitCredit.spent() for a process running `program` past a limit of `seconds`, beside `hogs` spinners."""
    with _processes(*[SPIN] * hogs), _processes(program) as (process,):
        credit = WaitCredit(f"/proc/{process.pid}", seconds)
        time.sleep(wait)
        while credit.more() > 0:  # as the stream does: each extension asked for until none is given
            time.sleep(0.05)
        return credit.spent()


def _seconds_in(text: str, before: str) -> float:
    return float(re.search(rf"(\d+\.\d\d) s {before}", text).group(1))


def test_a_stopped_call_is_told_the_processor_time_it_had_and_the_wait_given_back():
    """A timeout's message names what the kernel counted, so slow code is told from a busy machine."""
    alone = _spent_after(SPIN, seconds=0.1)  # alone but for whatever else runs on this processor meanwhile
    assert alone.startswith("the operating system counted ") and _seconds_in(alone, "of processor time") >= 0.1
    crowded = _spent_after(SPIN, seconds=0.4, hogs=2, wait=0.45)
    assert _seconds_in(crowded, "of processor time") >= 0.4  # it computed past its limit in the end
    assert _seconds_in(crowded, "it waited for a processor") > 0.2  # after being given its wait back
    asleep = _spent_after("import time; time.sleep(60)", seconds=0.1)
    # a tick or two (0.01 s each) on a busy machine, never more, and nothing in the kernel worth naming
    assert re.fullmatch(r"the operating system counted 0\.0[0-2] s of processor time for it", asleep), asleep


def test_a_stopped_call_whose_time_went_to_the_kernel_is_told_so():
    said = _spent_after(IN_THE_KERNEL, seconds=0.1)
    assert "of it in the operating system: allocating or touching memory" in said
    assert "in the operating system" not in _spent_after(SPIN, seconds=0.1)


def test_a_call_that_had_its_limit_of_processor_time_earns_nothing():
    assert _credit_after(SPIN, seconds=0.1, hogs=1) == 0.0  # about 0.3 s of processor time by then


def test_threads_of_its_own_that_crowd_the_call_out_earn_nothing():
    with _processes(CROWDED_BY_ITS_THREADS) as (process,):
        proc = f"/proc/{process.pid}"
        credit, start = WaitCredit(proc, 0.2), processor_use(proc)
        while processor_use(proc).all_threads - start.all_threads < 0.3:  # its threads had more than the limit
            time.sleep(0.05)
        now = processor_use(proc)
        assert now.waited - start.waited > 0.01 and now.ran - start.ran < 0.2  # it was kept waiting, ran little
        assert credit.more() == 0.0


def _kernel_says(proc, machine, ran: float, stolen: float, waited: float = 0.0) -> None:
    """Files shaped as the kernel's: the call's main thread ran `ran` s and waited `waited` s for a processor; the
    machine's processors were stolen `stolen` s in all. (No steal can be made here, on demand: the host decides it.)"""
    proc.mkdir(exist_ok=True)
    (proc / "schedstat").write_text(f"{int(ran * 1e9)} {int(waited * 1e9)} 1\n")
    ticks = round(ran * TICK)
    (proc / "stat").write_text("1 (python) R " + "0 " * 10 + f"{ticks} 0 " + "0 " * 30 + "\n")
    machine.write_text(f"cpu  100 0 100 1000 0 0 0 {round(stolen * TICK)} 0 0\ncpu0 ...\n")


@pytest.mark.parametrize("kept_open", [False, True])
def test_a_call_is_given_the_share_of_its_running_time_the_host_stole(tmp_path, kept_open):
    """On a virtual machine the host may stop the processors themselves: that is no wait the scheduler sees,
    and no processor time of the call's either. kept_open: read as a session reads, through ProcFiles."""
    proc, machine = tmp_path / "proc", tmp_path / "stat"
    _kernel_says(proc, machine, ran=0.0, stolen=0.0)
    files = ProcFiles(str(machine)) if kept_open else None
    busy = WaitCredit(str(proc), 1.0, machine=str(machine), processors=2, files=files)
    started = time.monotonic()
    time.sleep(0.2)
    # 40 % of both processors' time was stolen meanwhile, and the call ran 0.12 s: it lost 0.12 × 0.4 / 0.6.
    _kernel_says(proc, machine, ran=0.12, stolen=0.4 * 2 * (time.monotonic() - started))
    assert 0.06 < busy.more() < 0.09
    if files is not None:
        files.close()


def test_a_sleeping_call_loses_nothing_to_steal(tmp_path):
    proc, machine = tmp_path / "proc", tmp_path / "stat"
    _kernel_says(proc, machine, ran=0.0, stolen=0.0)
    sleeping = WaitCredit(str(proc), 1.0, machine=str(machine), processors=2)
    time.sleep(0.2)
    _kernel_says(proc, machine, ran=0.0, stolen=0.3)
    assert sleeping.more() == 0.0


def test_a_call_the_machine_kept_waiting_past_its_credit_is_busy_not_waiting_for_itself(tmp_path):
    """On a machine with 13 runnable processes a processor, a computing call got 0.05 s of its 0.114 s and waited
    0.46 s: taken for idle, its student was told it waited for a thread, a lock or input."""
    proc, machine = tmp_path / "proc", tmp_path / "stat"
    _kernel_says(proc, machine, ran=0.0, stolen=0.0)
    held = WaitCredit(str(proc), 0.114, machine=str(machine), processors=2)
    _kernel_says(proc, machine, ran=0.05, stolen=0.0, waited=0.46)
    assert held.more() == pytest.approx((MAX_FACTOR - 1) * 0.114)
    assert held.idle() and held.busy()
    _kernel_says(proc, machine, ran=0.0, stolen=0.0)
    sleeping = WaitCredit(str(proc), 0.114, machine=str(machine), processors=2)
    _kernel_says(proc, machine, ran=0.001, stolen=0.0, waited=0.002)
    sleeping.more()
    assert sleeping.idle() and not sleeping.busy()


def test_the_credit_stops_at_its_cap_however_long_the_wait():
    with _processes(SPIN, SPIN, SPIN) as (process, *_):
        credit = WaitCredit(f"/proc/{process.pid}", 0.05)
        time.sleep(0.5)
        total = credit.more()
        time.sleep(0.3)
        total += credit.more()
    assert total <= (MAX_FACTOR - 1) * 0.05 + 1e-9


# A submission's functions: one that does 65 ms of work, one that never returns. Beside two spinning
# processes on its processor the work takes about 0.2 s, over its limit of 0.1 s, and the credit stops
# at 0.5 s: room for the rest of a full test run on the same processor.
WORK = """
import time

def works(x):
    until = time.process_time() + 0.065
    while time.process_time() < until:
        pass
    return x

def hangs(x):
    while True:
        pass
"""


def test_a_right_call_in_the_sandbox_finishes_on_a_loaded_machine_and_a_hang_still_stops(suite, tmp_path):
    """The zygote (so every child) and two spinning processes on one processor: 65 ms of work takes about
    0.2 s. Its limit of 0.1 s is met in processor time, so it returns; a hang is stopped."""
    path = tmp_path / "attention.py"
    path.write_text(WORK)
    spec = read_submission(path).worker_spec("attention")
    with Sandbox(probe("auto"), suite.assignment.preload) as sandbox:
        sandbox.start()
        os.sched_setaffinity(sandbox.zygote_pid(), {CPU})
        with Session(sandbox, spec, Limits(call_seconds=0.1)) as session:
            assert not session.open().failure
            session.call(Call("works", (X,)))  # the child's first call, on the quiet processor: warm from here
            with _processes(SPIN, SPIN):
                time.sleep(0.3)  # the spinning processes have their share by now
                _loaded_calls(session)


def _loaded_calls(session: Session) -> None:
    started = time.monotonic()
    reply = session.call(Call("works", (X,)))
    took = time.monotonic() - started
    assert reply.raised is None and reply.value.tolist() == X.tolist() and took > 0.1
    started = time.monotonic()
    with pytest.raises(CallTimedOut):
        session.call(Call("hangs", (X,)))
    assert time.monotonic() - started < MAX_FACTOR * 0.1 + 1.0


# A top level that does 0.3 s of processor work (a one-time table, as the stub allows), then defines a function.
# Beside two spinning processes on its processor it takes about 0.9 s, over a load limit of 0.5 s.
SLOW_TOP_LEVEL = """
import time

until = time.process_time() + 0.3
while time.process_time() < until:
    pass

def works(x):
    return x
"""


def test_a_top_level_that_loads_within_its_limit_on_a_quiet_machine_loads_on_a_loaded_one(suite, tmp_path):
    """The load is given back its wait for a processor, as a call is: a file whose top level had 100 on a quiet
    machine got 0 ("still running at the load limit") beside two busy processes. One that computes past its
    limit is still stopped."""
    path = tmp_path / "attention.py"
    path.write_text(SLOW_TOP_LEVEL)
    spec = read_submission(path).worker_spec("attention")
    endless = tmp_path / "endless" / "attention.py"
    endless.parent.mkdir()
    endless.write_text("while True:\n    pass\n")
    with Sandbox(probe("auto"), suite.assignment.preload) as sandbox:
        sandbox.start()
        os.sched_setaffinity(sandbox.zygote_pid(), {CPU})
        with _processes(SPIN, SPIN):
            time.sleep(0.3)  # the spinning processes have their share by now
            started = time.monotonic()
            with Session(sandbox, spec, Limits(load_seconds=0.5)) as session:
                load = session.open()
                assert not load.failure and not load.stopped and "works" in load.functions, load
                assert time.monotonic() - started > 0.5  # it did wait past its limit, and was given that back
                assert session.call(Call("works", (X,))).value.tolist() == X.tolist()
            spec = read_submission(endless).worker_spec("attention")
            with Session(sandbox, spec, Limits(load_seconds=0.5)) as session:
                load = session.open()
                assert load.hung and load.stopped, load


# A top level that computes in a thread of its own for 0.4 s of processor time, then a call that spins.
THREADS_AT_THE_TOP_LEVEL = """
import hashlib, threading
data = b"x" * 1_000_000
def hash_for_a_while():
    started = time.thread_time()
    while time.thread_time() - started < 0.4:
        hashlib.sha256(data).digest()
worker = threading.Thread(target=hash_for_a_while)
worker.start()
worker.join()
print("loaded", flush=True)
while True:
    pass
"""


def test_threads_the_load_ran_before_the_call_take_none_of_its_credit():
    # Counted over the child's life, their 0.4 s were taken for the call's own threads: every call of such a file
    # had had its limit (0.3 s here) already, and a loaded machine could time it out.
    with _processes(SPIN), _processes("import time\n" + THREADS_AT_THE_TOP_LEVEL) as (process,):
        assert process.stdout.readline() == b"loaded\n"
        proc = f"/proc/{process.pid}"
        start = processor_use(proc)
        credit = WaitCredit(proc, 0.3, start=start)
        time.sleep(0.45)
        assert start.all_threads - start.ran >= 0.35  # the load's thread had computed, before the call
        assert credit.more() > 0.1  # beside one spinner, the call waited about as long as it ran
