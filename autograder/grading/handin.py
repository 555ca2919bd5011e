"""What a hand-in is: a regular file, opened once, never through a link, no larger than a submission may be.

Every layout (a folder, nbgrader's submitted/ tree, a zip, Gradescope's
submission folder, a cluster's driver) reads a student's file here and only
here. The file is opened once with O_NOFOLLOW | O_NONBLOCK, every folder
between the layout's top (`root`, the folder the TA named) and the file too,
and judged from that one descriptor's fstat before a byte is read:

- a symbolic link anywhere in the student's part of the path is refused (a
  class folder copied with `cp -a` keeps the link a student made to the
  reference solution);
- a file with more than one name (a hard link) is refused: its other name
  may be a course file the student could not copy but could link;
- a FIFO, device, socket or folder named like a hand-in is refused without
  waiting on it (O_NONBLOCK: opening a FIFO would otherwise block the batch);
- a file over MAX_BYTES is refused by its size, unread.

What is read is hashed from the same bytes, so the stored sha256 is always of
the contents that were graded. A refused file gives `FileBytes.error`, a
sentence for that student's feedback; it costs no one else anything.
"""
from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from autograder.text import safe

MAX_BYTES = 50 << 20  # notebooks with images can be large; anything bigger is not a submission
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FOLDER_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC
_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a symbolic link"}


@dataclass(frozen=True)
class FileBytes:
    """A submission file's bytes as read where it lies, to be parsed there or on another machine.

    data: the bytes (empty when the file was refused); size: its size in bytes (fstat's);
    sha256: of `data`, "" when refused; error: why it was refused, a sentence for the student, "" when read.
    """

    data: bytes
    size: int
    sha256: str
    error: str = ""


class _Refused(Exception):
    """The path is not a hand-in; the message says why and what to do."""


def read_bytes(path: Path, root: Path | None = None) -> FileBytes:
    """The bytes of the hand-in at `path`, from one open; refused (see the module) with `error` set.

    root: the top of the layout the TA named; every folder below it on the way to
    `path` is opened without following links. None: only the file itself is checked.
    """
    path = Path(path)
    shown = _shown(path, root)
    try:
        fd = _open(path, root, shown)
    except _Refused as refused:
        return FileBytes(b"", 0, "", str(refused))
    try:
        return _read(fd, shown)
    except _Refused as refused:
        return FileBytes(b"", 0, "", str(refused))
    finally:
        os.close(fd)


def file_sha256(path: Path, root: Path | None = None) -> str:
    """The SHA-256 of a hand-in's bytes, read by the same rule as grading reads them ("" if refused)."""
    return read_bytes(path, root).sha256


def _open(path: Path, root: Path | None, shown: str) -> int:
    parts = _below(path, root)
    if parts is None:
        return _opened(lambda: os.open(path, _FILE_FLAGS), shown)
    folder = _opened(lambda: os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), shown)
    try:
        for part in parts[:-1]:
            inner = _opened(lambda part=part, at=folder: os.open(part, _FOLDER_FLAGS, dir_fd=at), shown, part, folder)
            os.close(folder)
            folder = inner
        return _opened(lambda: os.open(parts[-1], _FILE_FLAGS, dir_fd=folder), shown, parts[-1], folder)
    finally:
        os.close(folder)


def _below(path: Path, root: Path | None) -> tuple[str, ...] | None:
    """The parts of `path` below `root`, or None when there is no root to walk from."""
    if root is None:
        return None
    try:
        parts = Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        return None
    return parts or None


def _opened(opener, shown: str, part: str = "", folder: int | None = None) -> int:
    """opener()'s descriptor; an OSError becomes the student's message."""
    try:
        return opener()
    except OSError as error:
        raise _Refused(_open_error(error, shown, part, folder)) from None


def _open_error(error: OSError, shown: str, part: str, folder: int | None) -> str:
    if error.errno == errno.ELOOP or (error.errno == errno.ENOTDIR and _is_link(part, folder)):
        where = shown if not part or shown.endswith(part) else f"{safe(part)} (on the way to {shown})"
        return (f"{where} is a symbolic link, not a file; a hand-in must be the file itself. Replace the link "
                "with a copy of your file (or copy the class folder without keeping links) and grade again")
    if error.errno == errno.ENXIO:
        return f"{shown} is a socket, not a file; hand in your .py or .ipynb file itself"
    if error.errno in (errno.EACCES, errno.EPERM):
        return (f"{shown} could not be read (permission denied); make the file readable by the grading account "
                "(chmod a+r) and grade again")
    if error.errno == errno.ENOENT:
        return f"{shown} is gone (it was removed after it was found); hand it in again and grade again"
    return (f"{shown} could not be read ({safe(error.strerror or error, 100)}); check that it exists and is "
            "readable, then grade again")


def _is_link(part: str, folder: int | None) -> bool:
    try:
        return bool(part) and stat.S_ISLNK(os.stat(part, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read(fd: int, shown: str) -> FileBytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        raise _Refused(f"{shown} is {kind}, not a file; hand in your .py or .ipynb file itself"
                       + (" (a folder may not be named like one)" if stat.S_ISDIR(info.st_mode) else ""))
    if info.st_nlink > 1:
        raise _Refused(f"{shown} is a hard link (the same file has {info.st_nlink} names), so it may be another "
                       "file than the student's; replace it with a copy of the file (not a link) and grade again")
    if info.st_size > MAX_BYTES:
        raise _Refused(over_size_limit(shown, info.st_size))
    data = _read_at_most(fd, MAX_BYTES + 1)
    if len(data) > MAX_BYTES:  # it grew after fstat
        raise _Refused(over_size_limit(shown, len(data)))
    return FileBytes(data, len(data), hashlib.sha256(data).hexdigest())


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, count = [], 0
    while count < limit and (chunk := os.read(fd, min(1 << 20, limit - count))):
        chunks.append(chunk)
        count += len(chunk)
    return b"".join(chunks)


def over_size_limit(shown: str, size: int) -> str:
    todo = ("clear the notebook's outputs (Edit → Clear Outputs of All Cells), save it" if shown.endswith(".ipynb")
            else "take out the data written into the file (read it from a file of its own, or compute it)")
    return f"{shown} is {size / 1e6:.0f} MB, over the {MAX_BYTES >> 20} MB limit; {todo} and hand it in again"


def _shown(path: Path, root: Path | None) -> str:
    """The file's name as the student's message shows it: below the layout's top, else its own name."""
    parts = _below(path, root)
    return safe("/".join(parts) if parts else path.name, 300)


def read_small(path: Path, limit: int = 4096) -> bytes | None:
    """At most `limit` bytes of a small file that sits beside a hand-in (nbgrader's timestamp.txt).

    The same rule as for hand-ins: no link, regular files only, never waiting on a FIFO. None when refused.
    """
    try:
        fd = os.open(path, _FILE_FLAGS)
    except OSError:
        return None
    try:
        return _read_at_most(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)
