"""What `grade` says of what it found in a flat class folder and did not grade (grading.discover's `skipped`).

A TA reading the class folder in a file browser must not miss a student because the grader left their work
out without a word: a folder whose hand-in sits one folder too deep, a hidden file, a folder with nothing in
it, a file that is not a hand-in. Each is named with what to do.
"""
from __future__ import annotations

import os
from pathlib import Path

from autograder.grading.found import CHECKPOINTS, handed_in_below
from autograder.grading.submission import SUFFIXES
from autograder.text import one_line


def not_graded(skipped: list[Path], module: str) -> list[str]:
    """What `grade` says of a flat class folder's folders that hold no hand-in and files that are not one
    (grading.discover)."""
    nested = [path for path in skipped if path.is_dir() and handed_in_below(path)]
    folders = [path for path in skipped if path.is_dir() and path not in nested]
    hidden = [path for path in skipped if not path.is_dir() and path.name.startswith(".")]
    stray = [path for path in skipped if not path.is_dir() and path.suffix in SUFFIXES and path not in hidden]
    files = [path for path in skipped if not path.is_dir() and path not in hidden and path not in stray]
    lines = []
    if nested:
        several = len(nested) > 1
        lines.append(f"not graded: {len(nested)} folder{'s' if several else ''} whose .py or .ipynb is in a folder "
                     f"inside {'them' if several else 'it'}: {_listed(nested, '/')}. Move the hand-in up into the "
                     "student's folder and grade again")
    if hidden:
        several = len(hidden) > 1
        lines.append(f"not graded: {len(hidden)} hidden file{'s' if several else ''} (a name starting with a dot, "
                     f"which file browsers hide): {_listed(hidden, '')}. If {'one' if several else 'it'} is a "
                     "student's hand-in, rename it without the dot and grade again")
    if stray:
        several = len(stray) > 1
        lines.append(f"not graded: {_listed(stray, '')}, named as the assignment's own file, not after a student, "
                     f"among students' files: most likely the released {module} file or a copy of it left in the "
                     "class folder. If it is a student's hand-in, rename it STUDENT" + (" each" if several else "")
                     + " (the student's id) and grade again")
    if folders:
        several = len(folders) > 1
        lines.append(f"not graded: {len(folders)} folder{'s' if several else ''} with no .py or .ipynb in "
                     f"{'them' if several else 'it'}: {_holding(folders)}. If {'one' if several else 'it'} is a "
                     f"student's, their hand-in is missing or saved as something else: rename a hidden one without its "
                     f"dot, save a .PY, .py.txt or .txt as .py, extract a zip, or put their {module}.ipynb or "
                     f"{module}.py in it, and grade again")
    if files:
        several = len(files) > 1
        lines.append(f"not graded: {len(files)} file{'s' if several else ''} that {'are' if several else 'is'} not "
                     f"a .py or .ipynb: {_listed(files, '')}. If {'one' if several else 'it'} is a student's hand-in, "
                     "save it as STUDENT.ipynb or STUDENT.py (extract a zip; rename a .PY or a .py.txt; in an LMS's "
                     "download, keep the name the LMS gave it and change only its ending, as the LMS's name says who "
                     "the student is) and grade again")
    return lines


def _holding(folders: list[Path]) -> str:
    """Each folder named with what it holds (`ben/ (holds .hw.py (hidden) and hw.py.txt)`): a hand-in hidden or
    saved under another ending is what the TA must rename, and a file browser may not show it."""
    described = [f"{_listed([folder], '/')} ({_contents(folder)})" for folder in folders[:5]]
    return ", ".join(described) + (f" and {len(folders) - 5} more" if len(folders) > 5 else "")


def _contents(folder: Path) -> str:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError as error:
        return f"cannot be listed: {error.strerror}"
    shown = [entry for entry in entries if not entry.name.startswith(".") or Path(entry.name).suffix in SUFFIXES]
    if entries and all(entry.name == CHECKPOINTS for entry in entries):
        return (f"holds only Jupyter's hidden {CHECKPOINTS}/, autosaved copies, which are not graded: the notebook "
                "itself is missing")
    if not shown:
        return "empty" if not entries else f"holds only hidden files such as {_listed([Path(entries[0].name)], '')}"
    names = [_listed([Path(entry.name)], "/" if entry.is_dir() else "") + (" (hidden)" * entry.name.startswith("."))
             for entry in shown[:4]]
    return "holds " + ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1] + \
        (f" and {len(shown) - 4} more" if len(shown) > 4 else "")


def _listed(paths: list[Path], mark: str) -> str:
    names = ", ".join(one_line(path.name, 60) + ("…" if len(path.name) > 60 else "") + mark for path in paths[:5])
    return names + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
