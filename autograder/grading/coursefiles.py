"""What grading one assignment needs of the course, as files, for places that have no copy of the course.

course.yaml, the assignment's public checks (with the helper they share with
the hidden ones, if any) and its solution folder: the
Gradescope bundle ships them, and so does a cluster's driver to its workers.
Nothing else of the assignment goes (nbgrader's source notebook holds every
solution region). Each file is named by its path inside the course folder,
so the course's layout holds wherever they are unpacked.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autograder.grading.course import COURSE_FILE, Course, CourseError
from autograder.grading.suite import public_check_files

_SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX"}
_SKIPPED_SUFFIXES = (".pyc", ".db", ".db-wal", ".db-shm", ".db.lock", ".partial")


@dataclass(frozen=True)
class CourseFile:
    name: str  # its path inside the course folder (or the bundle), with forward slashes
    data: bytes
    executable: bool = False


def grading_files(course: Course, assignment: str) -> list[CourseFile]:
    """course.yaml, `assignment`'s public checks (and helper) and its solution folder, named as inside the course."""
    settings = course.assignment(assignment)
    root = course.root
    public = [CourseFile(f"{inside(settings.source_dir, root)}/{path.name}", path.read_bytes())
              for path in public_check_files(settings.source_dir)]
    return [CourseFile(COURSE_FILE, course.path.read_bytes()), *public,
            *folder_files(settings.solution_dir, inside(settings.solution_dir, root))]


def inside(folder: Path, root: Path) -> str:
    """`folder`'s path inside the course folder `root`; an error saying what to do when it lies outside."""
    try:
        return Path(folder).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise CourseError(f"{folder} is outside the course folder {root}; grading elsewhere keeps the course's "
                          "layout, so move the assignment's folders under it (see course.yaml).") from None


def folder_files(folder: Path, target: str) -> list[CourseFile]:
    """Every file under `folder`, named `target/<path inside folder>`; caches, databases and symlinks left out."""
    if not Path(folder).is_dir():
        raise CourseError(f"{folder} does not exist, and grading needs it. Check the assignment's folders "
                          "in course.yaml.")
    found = []
    for directory, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = Path(directory) / name
            if name.startswith(".") or name.endswith(_SKIPPED_SUFFIXES) or path.is_symlink():
                continue
            found.append(CourseFile(f"{target}/{path.relative_to(folder).as_posix()}", path.read_bytes()))
    return found


def write_files(files: list[CourseFile], root: Path) -> None:
    """Write `files` under the existing folder `root`, private to this user (folders 0700, files 0600).

    Names are checked first: none may be absolute or climb out of `root`.
    """
    for file in files:
        parts = PurePosixPath(file.name).parts
        if not parts or PurePosixPath(file.name).is_absolute() or ".." in parts:
            raise CourseError(f"refused to unpack {file.name!r}: a course file's name must stay inside the course")
    for file in files:
        path = Path(root, *PurePosixPath(file.name).parts)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700 if file.executable
                             else 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(file.data)
