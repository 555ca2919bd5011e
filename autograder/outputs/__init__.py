"""What the grades become: terminal tables, reports, grades.csv, Gradescope's files, nbgrader's gradebook.

Everything here reads stored results (autograder.grading.store) and never
regrades, except the Gradescope path, which grades the one file Gradescope
hands it.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path


class ExportError(Exception):
    """An export could not be written; the message says what to do next."""


@contextlib.contextmanager
def replaced_whole(path: Path):
    """A stream to write `path` through: its text goes to `path.partial` beside it, which replaces `path` only once
    written whole. A full disk or a stop midway leaves an earlier file as it was, never cut short, and no partial
    file behind (an LMS import or a TA must never read half a gradebook)."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "w", newline="", encoding="utf-8") as stream:
            yield stream
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


def write_whole(path: Path, text: str) -> None:
    """`path` holds `text`, written whole or not at all (`replaced_whole`)."""
    with replaced_whole(path) as stream:
        stream.write(text)
