"""Linux process controls (prctl) that both the grader and the worker use.

A control that could not be set is returned, never dropped: each one stands for a protection that
`autograder doctor` lists, and the worker refuses to run student code without it (worker.zygote_main).

Shipped to the worker (see sandbox.boot.BOOT): standard library only.
"""
from __future__ import annotations

import ctypes
import os

PR_SET_PDEATHSIG = 1  # a signal this process gets when its parent dies
PR_SET_DUMPABLE = 4  # 0: no process of the same uid may read our memory or ptrace us
PR_SET_CHILD_SUBREAPER = 36  # orphans of our descendants become our children, not init's
NAMES = {PR_SET_PDEATHSIG: "PR_SET_PDEATHSIG", PR_SET_DUMPABLE: "PR_SET_DUMPABLE",
         PR_SET_CHILD_SUBREAPER: "PR_SET_CHILD_SUBREAPER"}
KILLED_FIRST = 1000  # oom_score_adj of a submission's processes: the highest, ended first when memory runs out
# The zygote's: ended after any child of its own, still before every process that asked for nothing (0), the
# grader among them. A child reaches 1000 whatever its size against the zygote's (which is larger: 268 MB
# against 200 MB with PyTorch) unless the zygote holds more than half of the machine's memory beyond it.
KILLED_NEXT = 500
MADV_COLLAPSE = 25  # Linux 6.1: back a range with huge pages now, whatever the system's THP mode
HUGE_PAGE = 2 << 20


def prctl(option: int, value: int) -> str:
    """Set one process control: "" once it is set, else why it could not be (the caller decides what then)."""
    try:
        done = ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError) as error:
        return f"prctl is not available here ({error})"
    return "" if done == 0 else os.strerror(ctypes.get_errno())


def set_controls(controls: list[tuple[int, int]]) -> dict[str, str]:
    """Set each (option, value); returns {name: why} for those that could not be set, {} when all were."""
    return {NAMES.get(option, str(option)): why for option, value in controls if (why := prctl(option, value))}


def kill_order(pid: int | str = "self", value: int = KILLED_NEXT) -> None:
    """Set process `pid`'s (this one's by default) oom_score_adj to `value`, which children inherit: the zygote's
    (KILLED_NEXT). Each of a submission's processes is limited, not their sum, so together they may touch more than
    the machine has; the kernel's choice must then fall on them (KILLED_FIRST, see `own_setting`), then on the
    zygote, never on the grader or the TA's session. A zygote ended first had cost the submission graded in it a
    check, as if its code had crashed, and ended whichever job's zygote was largest, not the one at fault.

    Written by a process with CAP_SYS_RESOURCE (a root grader, for the zygote it started), the value is also a
    floor: no process that inherits it may set a lower one without that capability. That holds for a process
    whose /proc files have become its own again, which an exec does (the kernel makes the new program dumpable);
    without the floor such a process could lower its value to 0, and with it to the zygote's at the lowest, still
    above the grader's. Best effort: where the setting cannot be written, the kernel chooses as it otherwise
    would."""
    try:
        with open(f"/proc/{pid}/oom_score_adj", "w") as setting:
            setting.write(str(value))
    except OSError:
        pass


def own_setting() -> int | None:
    """A descriptor this process may write its own oom_score_adj through for good, or None where it cannot.

    Opened while the process is still dumpable: once it is not, its /proc files are root's and could no longer
    be opened, but a descriptor opened before still writes (the kernel checks who may write only at the open).
    The zygote raises itself to KILLED_FIRST through it just before each fork and lowers itself right after
    (`set_own`), so every child starts at KILLED_FIRST before any student code, above the zygote; a child cannot
    raise its own value, its /proc files being root's. Each child closes the descriptor with every other it
    inherited (worker._close_inherited) before it receives a submission."""
    try:
        return os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return None


def set_own(setting: int | None, value: int) -> None:
    """Write `value` through `own_setting`'s descriptor (None: nothing to write through). Best effort: a value
    below the floor a privileged grader set (`kill_order`) is refused, and the setting stays as it was."""
    if setting is not None:
        try:
            os.pwrite(setting, str(value).encode(), 0)
        except OSError:
            pass


def collapse_anonymous_memory() -> int:
    """Move this process's anonymous memory onto 2 MiB pages where the kernel can; how many bytes it moved.

    For the zygote, once it has served worker.COLLAPSE_AFTER sessions: each fork copies one page-table
    entry per 4 KiB page of anonymous memory that the parent has (and the child's exit frees them), but one
    per 2 MiB page. Python's object arenas, ~60 MiB after PyTorch's import, lie on 4 KiB pages (glibc's heap
    is on huge pages already, kind.worker_environment). A huge page the zygote writes to while a child
    shares it is split again: two thirds of what moves, within its first sessions. What stays made a
    session's open and close about 3 ms cheaper in 2026-12-04's measurements, 0.5 ms in later ones; the
    move itself costs about 0.17 s (docs/performance.md). Mappings with a name (files, [heap], [stack]) are
    left as they are, and only whole 2 MiB steps move. Best effort: 0 on a kernel before 6.1, where the
    system's THP mode is "never", or where memory is short.
    """
    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return 0
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    with open("/proc/self/maps") as lines:
        ranges = [line.split() for line in lines]
    moved = 0
    for fields in ranges:
        if len(fields) != 5 or fields[1] != "rw-p":
            continue
        start, end = (int(address, 16) for address in fields[0].split("-"))
        start, end = -(-start // HUGE_PAGE) * HUGE_PAGE, end // HUGE_PAGE * HUGE_PAGE
        if end - start >= HUGE_PAGE and madvise(start, end - start, MADV_COLLAPSE) == 0:
            moved += end - start
    return moved
