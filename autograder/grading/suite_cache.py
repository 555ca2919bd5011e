"""What grading keeps between runs, per suite version and machine, in the user's cache folder.

A fresh results database would otherwise time the reference again on every
run (grading.calibration), a second or so before anything is graded. The
grader trusts what it reads here (the reference's timings set every call
limit), so the folder must be its own: owned by this user and closed to
everyone else (0700), each file owned by this user, written whole (a
temporary file renamed into place). Student code never reaches it:
bubblewrap shows workers nothing of the home folder, and `grade` names the
folder among the secrets `protect` refuses for workers that could read it.

An entry that is missing, unreadable, not JSON, for another suite version or
machine, or in a folder or file anyone else could write, is ignored: the
grader measures again and writes it anew.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

FORMAT = 1  # bumped when an entry's layout changes: older entries are then ignored
MAX_BYTES = 1 << 20  # an entry is a few kB; anything larger is not one of ours
KEEP = 64  # entries of one kind kept, newest first: suite versions come and go as the course changes


def cache_folder() -> Path:
    """$XDG_CACHE_HOME/autograder, or ~/.cache/autograder (the XDG default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "autograder"


def read_entry(kind: str, suite_version: str, machine: str) -> object | None:
    """What `write_entry` kept for this kind, suite version and machine; None where nothing trustworthy is kept."""
    path = _entry_path(kind, suite_version, machine)
    if not _private(path.parent, folder=True):
        return None
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(descriptor, "rb") as handle:
            if not _private_stat(os.fstat(handle.fileno()), folder=False):
                return None
            raw = handle.read(MAX_BYTES + 1)
        data = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_BYTES else None
    except (OSError, ValueError):  # ValueError: not UTF-8, not JSON, or cut short
        return None
    if not isinstance(data, dict) or (data.get("format"), data.get("kind"), data.get("suite_version"),
                                      data.get("machine")) != (FORMAT, kind, suite_version, machine):
        return None
    return data.get("value")


def write_entry(kind: str, suite_version: str, machine: str, value: object) -> None:
    """Keep `value` (plain JSON) for this kind, suite version and machine; nothing happens where that fails."""
    path = _entry_path(kind, suite_version, machine)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(path.parent, folder=True):
            return  # a folder others could write in: neither read nor written
        text = json.dumps({"format": FORMAT, "kind": kind, "suite_version": suite_version, "machine": machine,
                           "value": value})
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".writing-", delete=False) as handle:
            try:
                handle.write(text)
                handle.close()
                os.replace(handle.name, path)  # readers see the old entry or the new one, never half of one
            except OSError:
                os.unlink(handle.name)
                raise
        _prune(path.parent, kind)
    except (OSError, TypeError, ValueError):  # a full disk, a read-only home, a value JSON cannot hold
        return


def _entry_path(kind: str, suite_version: str, machine: str) -> Path:
    # The machine's description is long and free text: its digest names the file, the text itself is checked.
    digest = hashlib.sha256(machine.encode()).hexdigest()[:16]
    return cache_folder() / f"{kind}-{suite_version}-{digest}.json"


def _private(path: Path, folder: bool) -> bool:
    try:
        return _private_stat(os.lstat(path), folder)
    except OSError:
        return False


def _private_stat(found: os.stat_result, folder: bool) -> bool:
    """Owned by this user, of the expected type (no symlink), writable by no one else (a folder: closed to all)."""
    right_type = stat.S_ISDIR(found.st_mode) if folder else stat.S_ISREG(found.st_mode)
    closed = found.st_mode & (0o077 if folder else 0o022) == 0
    return right_type and closed and found.st_uid == os.geteuid()


def _prune(folder: Path, kind: str) -> None:
    entries = sorted(folder.glob(f"{kind}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)
