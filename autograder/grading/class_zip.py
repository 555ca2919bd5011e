"""A class handed over as a zip, extracted without letting it write outside its folder or fill the disk.

Every member's bytes are counted as they are written, whatever the zip
declares; a member that cannot be extracted safely is skipped, and a hand-in
among them is left as an empty stand-in whose student is told why
(grading.discover grades the rest).
"""
from __future__ import annotations

import os
import struct
import tempfile
import time
import zipfile
from pathlib import Path

from autograder.grading.submission import MAX_BYTES, SUFFIXES
from autograder.text import safe

MAX_ZIP_BYTES = 4 << 30  # bytes really written, counted while extracting: declared sizes may lie
MAX_ZIP_MEMBERS = 100_000
MAX_DEPTH = 32  # folders deep: far more than a class folder, a course or a student's repository nests
MAX_NAME_BYTES = 255  # one part of a member's path, as most file systems allow
MAX_PATH_BYTES = 1024
COMPRESSIONS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


class ZipRefused(Exception):
    """The zip as a whole cannot be extracted safely; the message says why and what to do."""


def extract(archive: Path, workdir: Path, refused: dict[Path, str]) -> Path:
    """Extract a zip without letting it write outside `workdir` or fill the disk; return the folder.

    Every member's bytes are counted as they are written, whatever the zip
    declares. A member that cannot be extracted safely (encrypted, an
    unsupported compression, a name too long, larger than a submission may
    be, damaged) is skipped; if it is a .py or .ipynb, an empty stand-in is
    left in its place and `refused` says why, so that student gets a message
    and the rest of the class is graded.
    """
    target = Path(tempfile.mkdtemp(prefix=archive.stem + "-", dir=workdir)).resolve()
    written = 0
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                raise ZipRefused(f"{safe(archive)} holds over {MAX_ZIP_MEMBERS} files, too many to extract "
                                  "safely; unpack it yourself and pass the folder")
            for member in members:
                name = _name(member)
                destination = _destination(target, name)
                if destination is None:
                    continue  # absolute paths and ../ escapes are skipped: they name no place in the class
                if member.is_dir():
                    destination.mkdir(parents=True, exist_ok=True)
                    continue
                problem = _member_problem(member, name)
                if not problem:
                    try:
                        written += _copy_member(bundle, member, destination, MAX_ZIP_BYTES - written)
                        _keep_zip_time(destination, member)
                        continue
                    except _MemberTooLarge:
                        problem = f"it is larger than {MAX_BYTES >> 20} MB once uncompressed"
                    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as error:
                        problem = f"it is damaged ({safe(error, 100)})"
                if destination.suffix in SUFFIXES:
                    destination.write_bytes(b"")
                    refused[destination] = (f"{safe(name, 200)} in {safe(archive.name)} could not be "
                                            f"extracted: {problem}. Hand in the file itself, or a zip made without "
                                            "a password with an ordinary zip tool")
    except zipfile.BadZipFile:
        raise ZipRefused(f"{safe(archive)} is not a valid zip file; check the download and try again") from None
    except _ZipTooLarge:
        raise ZipRefused(f"{safe(archive)} holds more than {MAX_ZIP_BYTES >> 30} GB once uncompressed, too much to "
                          "extract safely; unpack it yourself and pass the folder") from None
    return target


def _name(member: zipfile.ZipInfo) -> str:
    """The member's name as its author wrote it. Zip tools on Linux and macOS (Info-ZIP's `zip`) write UTF-8 names
    without the flag that says so, which Python then reads as the old DOS code page ("Zoë" as "Zo├½"), making a
    student of the garbled name; Info-ZIP's Unicode path field holds the name when the tool wrote one."""
    unicode_path = _extra_fields(member.extra).get(0x7075, b"")
    if len(unicode_path) > 5 and unicode_path[0] == 1:
        try:
            return unicode_path[5:].decode("utf-8")
        except UnicodeDecodeError:
            pass
    if member.flag_bits & 0x800:
        return member.filename
    try:
        return member.filename.encode("cp437").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return member.filename  # not UTF-8 bytes: the code page was meant


def _extra_fields(extra: bytes) -> dict[int, bytes]:
    """A member's extra fields by their id (APPNOTE 4.5: a 2-byte id, a 2-byte length, then the data)."""
    fields, at = {}, 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, at)
        fields.setdefault(kind, extra[at + 4:at + 4 + size])
        at += 4 + size
    return fields


def _keep_zip_time(destination: Path, member: zipfile.ZipInfo) -> None:
    """Give an extracted file the time the zip records, not the extraction's: the last resort for a submission
    time, flagged as unreliable, but better than "now". The UTC time Info-ZIP (field 0x5455) or Windows (NTFS,
    0x000a) keep beside the zip's own where there is one; the zip's own has no zone, and is read as this machine's
    local time, which may not be where the zip was made."""
    try:
        stamp = _utc_time(member)
        stamp = time.mktime((*member.date_time, 0, 0, -1)) if stamp is None else stamp
        os.utime(destination, (stamp, stamp))
    except (OverflowError, ValueError, OSError):
        pass  # a nonsense date in the zip: the extraction time stays


def _utc_time(member: zipfile.ZipInfo) -> float | None:
    fields = _extra_fields(member.extra)
    unix = fields.get(0x5455, b"")
    if len(unix) >= 5 and unix[0] & 1:  # flag 1: the modification time comes first
        return float(struct.unpack_from("<i", unix, 1)[0])
    ntfs = fields.get(0x000A, b"")
    if len(ntfs) >= 32 and struct.unpack_from("<HH", ntfs, 4) == (1, 24):  # attribute 1: three FILETIMEs
        return struct.unpack_from("<Q", ntfs, 8)[0] / 1e7 - 11_644_473_600  # 100 ns since 1601
    return None


class _MemberTooLarge(Exception):
    """One member is larger than any submission may be."""


class _ZipTooLarge(Exception):
    """The zip's members together are larger than a class's files may be."""


def _destination(target: Path, name: str) -> Path | None:
    """Where a member named `name` goes under `target`; over-long names are shortened, escapes refused (None)."""
    parts = [_short(part) for part in name.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts or name.startswith("/") or len(parts) > MAX_DEPTH:
        return None  # a path nested deeper than any class's (its folders would overflow Path.mkdir's recursion)
    destination = target.joinpath(*parts)
    destination.parent.mkdir(parents=True, exist_ok=True)
    return destination if destination.resolve().parent.is_relative_to(target) else None


def _short(part: str) -> str:
    """A path part short enough for the file system; the suffix (.py, .ipynb) is kept."""
    if len(part.encode()) <= MAX_NAME_BYTES:
        return part
    suffix = Path(part).suffix if len(Path(part).suffix) < 16 else ""
    return part.encode()[:100].decode(errors="ignore") + suffix


def _member_problem(member: zipfile.ZipInfo, name: str) -> str:
    if (member.external_attr >> 16) & 0o170000 == 0o120000:
        return "it is a symbolic link, not a file (a hand-in must be the file itself)"
    if member.flag_bits & 0x1:
        return "it is encrypted"
    if member.compress_type not in COMPRESSIONS:
        return f"it uses a compression method ({member.compress_type}) this grader does not read"
    if len(name.encode()) > MAX_PATH_BYTES or any(len(part.encode()) > MAX_NAME_BYTES for part in name.split("/")):
        return "its name is too long"
    return ""


def _copy_member(bundle: zipfile.ZipFile, member: zipfile.ZipInfo, destination: Path, room: int) -> int:
    """Write one member, counting real bytes; stops past a submission's size or the zip's `room` left."""
    count = 0
    with bundle.open(member) as source, open(destination, "wb") as sink:
        while chunk := source.read(1 << 20):
            count += len(chunk)
            if count > room:
                raise _ZipTooLarge
            if count > MAX_BYTES:
                sink.close()
                destination.unlink()
                raise _MemberTooLarge
            sink.write(chunk)
    return count
