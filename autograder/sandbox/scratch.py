"""The workers' scratch space: a fresh directory per submission, emptied between submissions.

Runs in the zygote (and, for the fallback's host folder, in the grader):
`fresh_directory` makes each child a directory with a random 128-bit name,
which no earlier submission can have made or predicted; `wipe` removes what
a submission left, however it was made unremovable; `readable` says which
files the worker could open, asked before any student code runs.

Shipped to the worker (see sandbox.boot.BOOT): standard library only.
"""
from __future__ import annotations

import os
import secrets
import stat
import time

WIPE_SECONDS = 10.0  # time to empty the scratch space; what is left then restarts the sandbox


def wipe(directory: str, owner: int | None = None) -> list[str]:
    """Remove everything under `directory` but mount points (a Python environment under /tmp).

    owner: only remove the entries of `directory` this uid owns (a folder
    shared with other users). Returns the names still there that should not
    be (empty when clean).
    Never recursive and never follows a long path: a directory is emptied
    by moving its entries up into `directory` and removed, so a tree nested
    thousands of levels deep, or made unreadable with mode 000, goes too.
    """
    keep = _mount_paths(directory)
    if owner is None:
        try:
            os.chmod(directory, 0o700)
        except OSError:
            pass  # the sandbox's own /tmp belongs to root; its sticky bit lets us remove our files
    try:
        top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return []  # nothing there to wipe
    deadline = time.monotonic() + WIPE_SECONDS

    def left() -> list[str]:
        return sorted(n for n in os.listdir(top) if os.path.join(directory, n) not in keep
                      and (owner is None or _owner(top, n) == owner))
    try:
        pending = left()
        while pending and time.monotonic() < deadline:
            pending += _remove(top, pending.pop())
        for path in sorted(keep - {directory}):
            if not os.path.ismount(path) and os.path.dirname(path) == directory:
                wipe(path)  # a directory that only leads to a mount point: empty around it
        return left()
    finally:
        os.close(top)


def _owner(top: int, name: str) -> int | None:
    try:
        return os.lstat(name, dir_fd=top).st_uid
    except OSError:
        return None


def _remove(top: int, name: str) -> list[str]:
    """Remove entry `name` of the directory open as `top`; returns the names its contents were moved up to."""
    moved = []
    try:
        info = os.lstat(name, dir_fd=top)
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(name, dir_fd=top)
            return moved
        os.chmod(name, 0o700, dir_fd=top)
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=top)
        try:
            for entry in os.listdir(inner):
                if stat.S_ISDIR(os.lstat(entry, dir_fd=inner).st_mode):
                    os.chmod(entry, 0o700, dir_fd=inner)  # moving a folder to a new parent rewrites its ".."
                moved.append(_unused_name(top))
                os.rename(entry, moved[-1], src_dir_fd=inner, dst_dir_fd=top)
        finally:
            os.close(inner)
        os.rmdir(name, dir_fd=top)
    except OSError:
        pass  # what never goes is reported as left
    return moved


def _unused_name(top: int) -> str:
    while True:
        name = f".wiped-{secrets.token_hex(8)}"
        try:
            os.lstat(name, dir_fd=top)
        except FileNotFoundError:
            return name


def _mount_paths(directory: str) -> set[str]:
    """Mount points below `directory` and the directories that lead to them (from /proc/self/mountinfo)."""
    prefix = directory.rstrip("/") + "/"
    try:
        with open("/proc/self/mountinfo") as mounts:
            points = [line.split()[4] for line in mounts if line.split()[4].startswith(prefix)]
    except OSError:
        return set()
    paths = set()
    for point in points:
        while point.startswith(prefix):
            paths.add(point)
            point = os.path.dirname(point)
    return paths


def readable(paths: list) -> list[str]:
    """Which of `paths` this process can read: a file it can open, or a directory it can list."""
    found = []
    for path in paths:
        if not isinstance(path, str):
            continue
        try:
            if os.path.isdir(path):
                os.listdir(path)
            else:
                os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            found.append(path)
        except OSError:
            pass
    return found


def fresh_directory(scratch: str) -> str:
    """A new directory with a random name: no earlier submission can have created or predicted it."""
    while True:
        path = os.path.join(scratch, f"work-{secrets.token_hex(16)}")
        try:
            os.mkdir(path, 0o700)
            return path
        except FileExistsError:
            continue
