"""Releasing an assignment through nbgrader, without leaking what stays with the instructor.

`release` checks that the source notebook is in step (autograder.nbgrader.source),
runs nbgrader's own generate_assignment, and scans every released file for
anything from solutions/, a hidden check, or a solution region
(autograder.nbgrader.leaks); a release that leaks is deleted.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.grading.course import Assignment, Course
from autograder.grading.manifest import MANIFEST_FILE
from autograder.grading.suite import PUBLIC_FILE, Suite
from autograder.nbgrader import ReleaseError, install_nbgrader_hint, nbgrader_missing
from autograder.nbgrader.leaks import scan_release
from autograder.nbgrader.source import build_source, source_notebook_path

# ---------------------------------------------------------------- the source notebook


# ---------------------------------------------------------------- answers from a .py file


# ---------------------------------------------------------------- nbgrader

def generate_assignment(course: Course, assignment: Assignment, out: Path, gradebook: Path | None) -> Path:
    """Run `nbgrader generate_assignment` into `out`/<assignment>; return that folder.

    nbgrader reads nbgrader_config.py in the course root (source folder,
    gradebook); the source and release folders are passed explicitly so any
    `out` works. gradebook: the nbgrader database to record the assignment in
    (default: nbgrader's, gradebook.db in the course root; a relative path is relative to the course root).
    """
    if nbgrader_missing():
        raise ReleaseError(f"`release` runs nbgrader's generate_assignment, and nbgrader is not installed here; "
                           f"install the instructors' extra ({install_nbgrader_hint()}) and release again")
    if assignment.source_dir.name != assignment.name:
        raise ReleaseError(f"nbgrader needs the source folder to be named after the assignment: "
                           f"{assignment.source_dir} should be .../{assignment.name}")
    out = Path(out).resolve()
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment.name, "--force",
               f"--CourseDirectory.root={course.root}",
               f"--CourseDirectory.source_directory={assignment.source_dir.parent.resolve()}",
               f"--CourseDirectory.release_directory={out}"]
    if gradebook is not None:
        # Relative to the course root, as nbgrader's default gradebook is, never to the working directory.
        command.append(f"--CourseDirectory.db_url=sqlite:///{(course.root / Path(gradebook).expanduser()).resolve()}")
    done = subprocess.run(command, cwd=course.root, capture_output=True, text=True, env=nbgrader_env())
    released = out / assignment.name
    if done.returncode != 0 or not released.is_dir():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise ReleaseError(f"nbgrader generate_assignment failed (exit {done.returncode}):\n{tail}\n"
                           "Fix what nbgrader reports (usually a cell's nbgrader metadata) and release again")
    return released


def nbgrader_env(extra: dict | None = None) -> dict:
    """The environment to run nbgrader in: ours, with this Python's scripts first on PATH.

    nbgrader starts `alembic` (its database migrations) by name, and kernels
    run `python`; both must be the ones installed beside this interpreter
    even when it was started by path without activating its environment.
    """
    env = dict(os.environ, **(extra or {}))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


# ---------------------------------------------------------------- the leak scan


# ---------------------------------------------------------------- the whole release

@dataclass(frozen=True)
class Release:
    folder: Path  # <out>/<assignment>
    files: tuple[str, ...]  # released files, relative to folder
    rebuilt: tuple[Path, ...]  # source files regenerated before the release (with rebuild=True)
    added: tuple[str, ...]  # cells created in the source for functions new in the stub, in words
    points: float  # autograded points in the notebook
    written: float  # hand-graded points in the notebook


def release(course: Course, suite: Suite, out: Path, gradebook: Path | None = None, rebuild: bool = False) -> Release:
    """Run nbgrader's generate_assignment on an up-to-date source, and refuse a release that leaks.

    rebuild: first regenerate the source's generated cells and manifest (files
    under version control: review and commit them); without it, a stale
    source is an error rather than a silent change. A leaking release is
    deleted and ReleaseError lists what leaked.
    """
    assignment = suite.assignment
    added: list[str] = []
    rebuilt = build_source(course, suite, write=rebuild, added=added)
    if rebuilt and not rebuild:
        names = ", ".join(str(path.relative_to(course.root)) for path in rebuilt)
        verb = "no longer matches" if len(rebuilt) == 1 else "no longer match"
        raise ReleaseError(f"{names} {verb} the reference, the stub or course.yaml; run `autograder "
                           f"release {assignment.name} --rebuild` to regenerate them, then review and commit them")
    folder = generate_assignment(course, assignment, out, gradebook)
    source = nbformat.read(source_notebook_path(assignment), as_version=4)
    leaks = scan_release(folder, suite, source)
    if leaks:
        shutil.rmtree(folder)
        listed = "\n".join(f"  {leak.path.relative_to(folder)}: {leak.what}" for leak in leaks[:20])
        raise ReleaseError(f"the release would leak {len(leaks)} things, so it was deleted:\n{listed}\n"
                           f"Remove them from {assignment.source_dir} (only public material belongs there) "
                           "and release again")
    required = [f"{assignment.module}.ipynb", f"{assignment.module}.py", PUBLIC_FILE, MANIFEST_FILE]
    absent = [name for name in required if not (folder / name).is_file()]
    if absent:
        raise ReleaseError(f"the release in {folder} lacks {absent[0]}; students need it. Put it in "
                           f"{assignment.source_dir} (nbgrader copies that folder) and release again")
    files = tuple(str(p.relative_to(folder)) for p in sorted(folder.rglob("*")) if p.is_file())
    return Release(folder, files, tuple(rebuilt), tuple(added), suite.max_score, sum(assignment.written.values()))
