"""Finding and killing every process a submission left behind.

Workers are subreapers (or PID 1 of their namespace), so whatever a
submission forks — daemons included — stays a descendant of its zygote.
The grader walks /proc from outside the sandbox and kills all of them;
nothing inside the sandbox has to cooperate.
"""
from __future__ import annotations

import os
import signal


def parent_map() -> dict[int, int]:
    """pid -> parent pid for every process visible in /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses; fields follow the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        parents[int(entry)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    """Every live descendant of `root` (not `root` itself), parents before children."""
    children: dict[int, list[int]] = {}
    for pid, parent in parent_map().items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        kids = children.get(frontier.pop(), [])
        found += kids
        frontier += kids
    return found


def kill_descendants(root: int, rounds: int = 50) -> int:
    """SIGKILL every descendant of `root` until none is left; return how many were killed.

    Repeats because a process may fork between the scan and the kill; each
    round kills everything the previous one saw, so a bounded fork flood
    dies within a few rounds.
    """
    killed: set[int] = set()
    for _ in range(rounds):
        pids = [pid for pid in descendants(root) if not _is_zombie(pid)]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
    return len(killed)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] in (b"Z", b"X")
