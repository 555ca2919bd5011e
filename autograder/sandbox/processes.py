"""Finding and killing every process a submission left behind.

Workers are subreapers (or PID 1 of their namespace), so whatever a
submission forks — daemons included — stays a descendant of its zygote.
The grader walks /proc from outside the sandbox and kills all of them;
nothing inside the sandbox has to cooperate.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

STATE, PARENT, THREADS = 0, 1, 17  # where stat_fields puts the state (stat field 3), parent (4), threads (20)


@dataclass(frozen=True)
class Cleaned:
    """What cleaning up after a submission took (sandbox.zygote.Sandbox.clean): `killed`, processes that had
    to be killed; `exits`, how each reaped child ended (pid -> ["exit", code] or ["signal", name]);
    `restarted`, why the sandbox was restarted (scratch files that could not be removed), or ""."""

    killed: int = 0
    exits: dict = field(default_factory=dict)
    restarted: str = ""


def read_proc(path: str) -> bytes:
    """The contents of a small /proc file (stat, schedstat, status), in one read; OSError if it is gone.

    No buffered file object: these are read after every call, and open() costs more than the read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)  # the kernel hands a /proc file of this size over in one read
    finally:
        os.close(fd)


def stat_fields(stat: bytes) -> list[bytes]:
    """The fields of a /proc/<pid>/stat text after the command name, the state first (STATE, PARENT, THREADS).

    The command name may hold spaces and parentheses, so the fields start after the last ')'.
    """
    return stat[stat.rfind(b")") + 2:].split()


def parent_map() -> dict[int, int]:
    """pid -> parent pid for every process visible in /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = read_proc(f"/proc/{entry}/stat")
        except OSError:
            continue
        parents[int(entry)] = int(stat_fields(stat)[PARENT])
    return parents


def only_child(parent: int, seconds: float) -> int | None:
    """The pid of `parent`'s one child, waited for up to `seconds`; None if it has none, or several, by then."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        children = [pid for pid, its_parent in parent_map().items() if its_parent == parent]
        if len(children) == 1:
            return children[0]
        time.sleep(0.01)
    return None


def descendants(root: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every live descendant of `root` (not `root` itself), parents before children.

    parents: a `parent_map()` the caller has just read and uses too; None reads one.
    """
    children: dict[int, list[int]] = {}
    for pid, parent in (parent_map() if parents is None else parents).items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        kids = children.get(frontier.pop(), [])
        found += kids
        frontier += kids
    return found


def kill_descendants(root: int, seconds: float = 10.0, keep: set[int] = frozenset(),
                     uncounted: set[int] = frozenset()) -> int:
    """SIGKILL every descendant of `root` but those in `keep` and wait until all are dead; return how many.

    A kept process's own descendants are killed too. Those in `uncounted`
    are killed but not counted (a submission's own child, which may be
    exiting by itself: it is not a process the submission left behind). Repeats because a
    process may fork between the scan and the kill, and waits because a
    killed process is still running (tearing down its memory) for a moment;
    a bounded fork flood is gone within a few rounds.
    """
    killed: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [pid for pid in descendants(root) if pid not in keep and not _is_zombie(pid)]
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.005)
    return len(killed - set(uncounted))


def namespace_pid(pid: int) -> int | None:
    """The pid `pid` has in its own (innermost) PID namespace, from /proc/<pid>/status."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


def alone(zygote_children: bytes, child: int, child_stat: bytes, child_children: bytes) -> bool:
    """Whether a PID namespace holds nothing but its PID 1 (a sandbox's zygote) and that one's child `child`,
    from three /proc files read from outside: PID 1's `task/1/children`, and the child's `stat` and
    `task/<child>/children`.

    Every process of a PID namespace descends from its PID 1, and an orphan is handed to PID 1 (or to a
    subreaper among its ancestors). So nothing else runs when PID 1's one child is `child` and `child` has no
    child of its own and one thread: a process forked by another thread is listed under that thread, and
    under the main thread once that thread has gone. Three small reads where `live_count` lists the whole
    /proc; a zombie, a second thread or anything unexpected only makes the answer False (count them all).
    """
    fields = stat_fields(child_stat)
    return (zygote_children.split() == [str(child).encode()] and len(fields) > THREADS and fields[THREADS] == b"1"
            and not child_children.split())


def company(zygote: int, child: int, in_namespace: bool) -> bool:
    """Whether a sandbox whose zygote is `zygote` (this process's pid for it) holds any process but the zygote and
    its child `child` (the zygote's pid for it), zombies included. In a PID namespace every process of it is
    listed under the zygote's root (the zygote is PID 1); elsewhere, every descendant of the zygote is the
    submission's. False where nothing can be read (the zygote gone)."""
    if not zygote:
        return False
    if in_namespace:
        try:
            pids = {entry for entry in os.listdir(f"/proc/{zygote}/root/proc") if entry.isdigit()}
        except OSError:
            return False
        return bool(pids - {"1", str(child)})
    return bool(set(descendants(zygote)) - {child})


def live_descendants(root: int) -> int:
    """How many descendants of `root` are running (zombies excluded)."""
    return sum(not _is_zombie(pid) for pid in descendants(root))


def live_count(proc: str, known_alive: int = 0) -> int:
    """Processes that are not zombies in the procfs mounted at `proc` (e.g. a sandbox's /proc).

    known_alive: when there are at most this many processes, they are counted without reading each
    one's state: the caller knows they are alive, or that a zombie among them changes nothing. Asked
    after every call, this spares two /proc reads in the usual case.
    """
    try:
        pids = [entry for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return 0
    if len(pids) <= known_alive:
        return len(pids)
    return sum(not _is_zombie(pid, proc) for pid in pids)


def live_pids(proc: str) -> list[int]:
    """The pids of the processes that are not zombies in the procfs mounted at `proc`."""
    try:
        pids = [int(entry) for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return []
    return [pid for pid in pids if not _is_zombie(pid, proc)]


def _is_zombie(pid, proc: str = "/proc") -> bool:
    try:
        stat = read_proc(f"{proc}/{pid}/stat")
    except OSError:
        return True
    fields = stat_fields(stat)
    return bool(fields) and fields[STATE] in (b"Z", b"X")
