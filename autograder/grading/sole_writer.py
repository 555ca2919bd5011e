"""One grading command at a time per results database: `grade` and `regrade` hold its lock while they run.

Two runs on one database would otherwise both grade every student still to grade (each plans before the
other stores anything) and store each hand-in twice, as two attempts. The second waits instead, then plans
from what the first stored: a rerun grades only what is left. The lock is an flock on a file
beside the database (`grades.db.lock`), not on the database, whose locks are SQLite's own; the kernel
drops it when its holder ends, however it ends, so a killed run leaves nothing for the TA to clear.
Reading commands (report, exports, history) take no lock: SQLite lets them read while a run writes.
"""
from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from autograder.grading.store import StoreError

SUFFIX = ".lock"


class SoleWriter:
    """Held from `__enter__` to `__exit__`; on entry, waits for any other process holding it, saying so first.

    db: the results database's path (its folder exists). command: what is running, for the other's message.
    say: prints a line for the user.
    """

    def __init__(self, db: Path, command: str, say: Callable[[str], None]):
        self.path = lock_path(db)
        self.db = db
        self.command = command
        self.say = say
        self._descriptor: int | None = None

    def __enter__(self) -> SoleWriter:
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as error:
            raise StoreError(f"cannot create {self.path}, which keeps two commands from grading into {self.db} at "
                             f"once ({error.strerror}); make its folder writable, or pass --db with a database in "
                             "a writable folder") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(descriptor) or "a process that did not say which"
            self.say(f"another command is writing to {self.db} ({holder}); waiting for it to finish, then this one "
                     "grades what is left (Ctrl-C stops waiting; nothing stored is lost)")
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        # Who holds it, for whoever comes next; written under the lock, so never by two at once.
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"`autograder {self.command}`, process {os.getpid()}, started "
                              f"{time.strftime('%H:%M:%S')}".encode(), 0)
        self._descriptor = descriptor
        return self

    def __exit__(self, *_) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)  # releases the lock; the file stays, harmless, for the next run to reuse
            self._descriptor = None


def lock_path(db: Path) -> Path:
    """The lock file of the database at `db`: beside it, its name plus SUFFIX."""
    return db.with_name(db.name + SUFFIX)


def _read(descriptor: int) -> str:
    try:
        return os.pread(descriptor, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""
