"""Worker uid slots that no other grader on this machine holds, across processes.

A sandbox's worker uid is 61000 + its slot (sandbox.protections): a local
`grade --jobs N` numbers its jobs' slots itself, but Dask workers are
independent processes, several per machine, that must never share a uid (a
shared uid would share the fallback's process limit and its clean-up of
/tmp). Each grading thread therefore claims a slot with an exclusive lock on
a file in a folder private to this user, held for as long as its sandbox lives.
"""
from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.station import SandboxError

# From 500 on, apart from the slots a local `grade --jobs` uses (0 up to its job count) on the same machine.
FIRST_SLOT = 500
SLOTS = 1000


@dataclass(frozen=True)
class Slot:
    number: int
    lock: int  # the descriptor holding the slot's lock; closing it frees the slot

    def release(self) -> None:
        os.close(self.lock)


def claim_slot(folder: Path | None = None) -> Slot:
    """The lowest free slot on this machine, locked for this process until released."""
    folder = _private_folder(folder or Path(tempfile.gettempdir()) / f"autograder-slots-{os.geteuid()}")
    for number in range(FIRST_SLOT, FIRST_SLOT + SLOTS):
        lock = os.open(folder / f"{number}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            continue
        return Slot(number, lock)
    raise SandboxError(f"all {SLOTS} worker slots in {folder} are taken: more graders run on this machine than it "
                       "can hold. Run fewer Dask workers (or threads) here")


def _private_folder(folder: Path) -> Path:
    """`folder`, created if need be, once it is sure to be this user's own: the fallback's workers write to /tmp."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    found = os.lstat(folder)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
        raise SandboxError(f"{folder} is not a folder private to this user (another user may have made it); "
                           "remove it and start the worker again")
    return folder
