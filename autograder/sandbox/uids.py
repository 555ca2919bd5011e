"""Worker uids that no other sandbox on this machine holds, across processes and commands.

When the grader is root, a sandbox runs student code as 61000 + its slot. Two
sandboxes under one uid would not be isolated from each other: in the fallback
one submission could signal the other's processes, share its process limit, and
each zygote's clean-up of /tmp would remove the other's files mid-run. A
`grade --jobs N` numbers its own jobs, but two commands on one machine (two
assignments graded at once, a TA's `check` beside a batch, several Dask
workers) would each start at slot 0. So every sandbox leases its uid: an
exclusive lock on a file in a folder private to the grader's user, held for as
long as its zygote lives and released by the kernel if the process dies.
"""
from __future__ import annotations

import fcntl
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from autograder.sandbox.kind import WORKER_UID_BASE
from autograder.sandbox.protections import SandboxError

SLOTS = 1000  # uids 61000 to 61999
# One folder for every command on the machine, whatever its TMPDIR: two commands that looked in two
# folders would each find every uid free.
LOCKS = Path("/tmp")


@dataclass(frozen=True)
class UidLease:
    uid: int
    lock: int  # the descriptor holding the uid's lock; closing it frees the uid

    def release(self) -> None:
        os.close(self.lock)


def lease_uid(slot: int, folder: Path | None = None) -> UidLease:
    """The worker uid of `slot` if no other sandbox holds it, else the next free one, locked until released."""
    folder = folder or LOCKS / f"autograder-uids-{os.geteuid()}"
    try:
        return _lease(slot, _private_folder(folder))
    except OSError as error:
        raise SandboxError(f"could not lock a worker uid in {folder} ({error}); student code runs only under a uid "
                           f"no other sandbox holds. Make {folder.parent} writable for this user") from None


def _lease(slot: int, folder: Path) -> UidLease:
    for number in [*range(slot, SLOTS), *range(0, min(slot, SLOTS))]:
        lock = os.open(folder / f"{number}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            continue
        return UidLease(WORKER_UID_BASE + number, lock)
    raise SandboxError(f"all {SLOTS} worker uids ({WORKER_UID_BASE} to {WORKER_UID_BASE + SLOTS - 1}) are held by "
                       f"other sandboxes on this machine (locks in {folder}): run fewer graders here at once")


def _private_folder(folder: Path) -> Path:
    """`folder`, created if need be, once it is sure to be this user's own: the fallback's workers write to /tmp."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    found = os.lstat(folder)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
        raise SandboxError(f"{folder} is not a folder private to this user (another user may have made it); "
                           "remove it and start grading again")
    return folder
