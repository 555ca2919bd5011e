"""Helpers for tests that drive the real nbgrader in a temporary course directory (issue 6)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

from autograder.nbgrader.release import nbgrader_env
from autograder.nbgrader.source import fill_answers

from conftest import REFERENCE, ROOT, STUB, SUBMISSIONS, compose, manifest, repository_env, run_cli

ASSIGNMENT = "w07_attention"
# Anything for the two hand-graded cells, so that `nbgrader validate` sees them answered.
WRITTEN = "Dot products of dk unit-variance terms have variance dk; dividing by sqrt(dk) keeps softmax unsaturated."


def make_course(root: Path) -> Path:
    """An nbgrader course in `root` whose source folder is the repository's assignments/."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.source_directory = {str(ROOT / 'assignments')!r}\n"
        f"c.CourseDirectory.db_url = {'sqlite:///' + str(root / 'gradebook.db')!r}\n")
    return root


def release(root: Path) -> Path:
    """`autograder release` into the course's release/ and gradebook (real nbgrader generate_assignment)."""
    done = run_cli("release", ASSIGNMENT, "--out", root / "release", "--gradebook", root / "gradebook.db")
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "release" / ASSIGNMENT


def nbgrader(*args, cwd: Path, timeout: int = 1800, **env) -> subprocess.CompletedProcess:
    """The real nbgrader command, from this Python's environment; its kernels import this repository's autograder."""
    return subprocess.run([sys.executable, "-m", "nbgrader", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=nbgrader_env(repository_env(**env)))


def with_code(released: Path, code: str, functions: tuple[str, ...], written: str = "") -> nbformat.NotebookNode:
    """The released notebook with `code`'s functions in its answer cells (and `written` in the written ones)."""
    notebook = fill_answers(nbformat.read(released / "attention.ipynb", as_version=4), code, functions)
    for cell in notebook.cells:
        if written and cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith("written_"):
            cell.source = written
    return notebook


def fixture_codes(workdir: Path) -> dict[str, str | None]:
    """student id -> the .py code of every fixture submission; None for the released notebook as it is.

    Buggy ones are composed as tests/conftest.py's `compose` does (plain.py with the snippet appended).
    """
    codes: dict[str, str | None] = {"reference": REFERENCE.read_text(), "stub": STUB.read_text(), "untouched": None}
    for path in sorted((SUBMISSIONS / "correct").glob("*.py")):
        codes[f"correct_{path.stem}"] = path.read_text()
    for bug in sorted(manifest("buggy")):
        codes[f"buggy_{bug}"] = compose(workdir, bug, SUBMISSIONS / "buggy" / f"{bug}.py").read_text()
    return codes
