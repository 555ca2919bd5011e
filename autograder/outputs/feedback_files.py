"""The feedback pages' file names, and which pages of an earlier report are stale.

A page is named after its student's id so a TA can find it, quoted so that any id is a file name. A report
written again into the same folder must not leave an earlier report's pages beside the new ones (a student
graded since under another id, a class reported into a folder another class used): a TA who mails out
`feedback/*` would send them. So each report lists the pages it wrote (`MANIFEST`), and the next one removes
those it did not write again; a file the report never wrote is never touched.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from pathlib import Path

MAX_FILE_NAME = 200  # characters of a feedback page's name before its suffix (a file name holds 255 bytes)
MANIFEST = ".pages.json"  # in feedback/: the pages the last report wrote there


def feedback_files(students: list[str]) -> dict[str, str]:
    """A file name (no suffix) per student id that reads back to it: the id, all but letters, digits and `._-~` as %XX
    of UTF-8 (`a b` is `a%20b`, a leading `.` too); ids stored apart only by case get `-2`, `-3` (renamed files).
    An id whose quoted form passes MAX_FILE_NAME (60 Greek letters quote to 360 bytes, over a file name's 255) is
    cut there and ends in a digest of the whole id, so it stays one student's."""
    names, used = {}, set()
    for student in students:
        base = urllib.parse.quote(student, safe="") or "student"
        if len(base) > MAX_FILE_NAME:
            base = _shortened(base, student)
        names[student] = name = base = "%2E" + base[1:] if base.startswith(".") else base
        suffix = 1
        while name.lower() in used:  # counted up, so that a taken `b-2` (an id of its own) is passed, not repeated
            suffix += 1
            names[student] = name = f"{base}-{suffix}"
        used.add(name.lower())
    return names


def _shortened(base: str, student: str) -> str:
    """`base`, a quoted id, cut to MAX_FILE_NAME with a digest of `student` at its end (never inside a %XX)."""
    digest = hashlib.blake2b(student.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    cut = base[:MAX_FILE_NAME - len(digest) - 1]
    if "%" in cut[-2:]:
        cut = cut[:cut.rindex("%")]
    return f"{cut}-{digest}"


def remove_stale(folder: Path, written: list[str]) -> None:
    """Remove the pages the last report listed in `folder` that this one did not write (`written`: file names),
    then list this report's. A listing that does not read is taken as empty: nothing is removed on its word."""
    manifest = Path(folder) / MANIFEST
    try:
        earlier = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = []
    keep = set(written)
    for name in earlier if isinstance(earlier, list) else []:
        # Only a bare file name listed by a report: never a path out of the folder.
        if isinstance(name, str) and name not in keep and os.path.basename(name) == name and name not in (".", ".."):
            try:
                (Path(folder) / name).unlink()
            except (OSError, ValueError):  # gone already, not ours to remove, or no file name (a NUL in it)
                pass
    manifest.write_text(json.dumps(sorted(keep)), encoding="utf-8")
