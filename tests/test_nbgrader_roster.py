"""`export nbgrader --roster`: names for the gradebook, and what the export says of a roster that does not fit.

Through the real CLI on a real SQLite file and a real nbgrader gradebook: the tiny course (one function, `double`)
graded with the real sandbox. Before, a roster whose ids a spreadsheet had read as numbers (`7` for `007`) named
no one, said nothing of it, and the note then asked for the --roster that had been passed ("1 students").
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, TINY_COURSE, run_cli, tiny_class

pytestmark = pytest.mark.slow  # whole commands, each starting its sandbox: make test runs them


def _graded(root: Path, students: list[str]) -> Path:
    """The tiny course in `root`, `students` graded (full marks each); its course.yaml."""
    for part in ("assignments", "solutions"):
        shutil.copytree(FIXTURES / "tiny" / part / "tiny", root / part / "tiny")
    (root / "course.yaml").write_text(TINY_COURSE)
    _cli(root, "grade", "tiny", tiny_class(root / "class", dict.fromkeys(students, "2 * x"), 1.70e9))
    return root / "course.yaml"


def _cli(root: Path, *args):
    done = run_cli(*args, "--course", root / "course.yaml", "--db", root / "grades.db")
    assert done.returncode == 0, done.stderr
    return done


def _export(root: Path, roster: str) -> str:
    (root / "students.csv").write_text("id,first_name,last_name,email\n" + roster)
    return " ".join(_cli(root, "export", "nbgrader", "--root", root, "--roster", root / "students.csv").stderr.split())


def _names(root: Path) -> dict[str, tuple]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as book:
        return {s.id: (s.first_name, s.last_name) for s in book.students}


def test_roster_ids_that_lost_their_leading_zeros_are_named_with_how_to_keep_them(tmp_path):
    _graded(tmp_path, ["007", "ann"])
    said = _export(tmp_path, "7,James,Bond,b@example.org\nann,Ann,Lee,a@example.org\nzed,Zed,Zee,z@example.org\n")
    assert "wrote 2 students of tiny" in said, said
    assert "1 student has no name in the gradebook (007)" in said
    assert f"the roster {tmp_path / 'students.csv'} does not list this id" in said and "pass --roster" not in said
    assert "lists 2 students with no result of tiny (7, zed), so no name of theirs was written" in said
    assert "The roster's ids lost their leading zeros (7 is 007)" in said and "Format that column as Text" in said
    assert _names(tmp_path) == {"007": (None, None), "ann": ("Ann", "Lee")}


def test_one_student_is_counted_in_the_singular_and_a_roster_id_without_a_result_is_named(tmp_path):
    _graded(tmp_path, ["ann"])
    said = _export(tmp_path, "ann,Ann,Lee,a@example.org\nzed,Zed,Zee,z@example.org\n")
    assert "wrote 1 student of tiny" in said, said
    assert "lists 1 student with no result of tiny (zed), so no name of theirs was written" in said
    assert "write their id in the roster as `autograder export csv tiny` lists it" in said
    assert "leading zeros" not in said and "no name in the gradebook" not in said
