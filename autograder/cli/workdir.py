"""The commands' own temporary folders (extracted zips, regrade copies), and what a killed command left of them.

Each folder is named for the machine and the process that made it
(`autograder-zip-<host>-<pid>-XXXXXXXX`, in the system's temporary folder),
and only its owner can enter it. A command that ends normally, by Ctrl-C or
by SIGTERM removes its folder. One that is killed outright (kill -9, the
out-of-memory killer) cannot, and the folder may hold students' hand-ins: the
next command of the same user that makes such a folder removes every one its
user left on this machine whose process no longer runs.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

_LEFT = re.compile(r"autograder-(?P<kind>[a-z]+)-(?P<host>.+)-(?P<pid>\d+)-[^-]+")


@contextlib.contextmanager
def command_workdir(kind: str) -> Iterator[Path]:
    """A fresh private folder for this command's `kind` of work ("zip", "regrade"), removed when it ends."""
    host = _host()
    remove_leftovers(kind, host, Path(tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix=f"autograder-{kind}-{host}-{os.getpid()}-") as folder:
        yield Path(folder)


def remove_leftovers(kind: str, host: str, parent: Path) -> list[Path]:
    """Remove the `kind` folders in `parent` that this user's killed commands on `host` left; returns them."""
    removed = []
    for path in parent.glob(f"autograder-{kind}-*"):
        found = _LEFT.fullmatch(path.name)
        if found is None or found["kind"] != kind or found["host"] != host or _alive(int(found["pid"])):
            continue  # another machine's pid means nothing here (a /tmp shared between containers)
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: the folder is not this one's, or its pid was taken again
        return True
    return True


def _host() -> str:
    # A folder name: no separator, and no dash, which the pattern splits on.
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"
