"""Student ids as the outside sees them: no id invented for a student beside a refused file, a file named as the
assignment's module named for its student, ids starting with '-' on the command line, and messages that say what
is there and what to do."""
from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest

from autograder.cli.not_graded import not_graded
from autograder.grading.discover import find_submissions

from conftest import PLAIN, run_cli

ASSIGNMENT, MODULE = "w07_attention", "attention"


def _found(paths: list[Path], tmp_path: Path, skipped: list[Path] | None = None) -> dict:
    """student -> what discovery found for them, by the real discovery of `grade`."""
    return {item.student: item for item in find_submissions(paths, ASSIGNMENT, MODULE, tmp_path / "work", skipped)}


def _handed_in(*paths: Path) -> None:
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PLAIN, path)


@pytest.mark.parametrize("refused", ["alice .py", " alice.py", "alice\u200b.py"])
def test_a_refused_file_takes_no_id_from_the_student_beside_it(tmp_path, refused):
    # `alice .py` sorts before `alice.py` (a space before a dot), and its readable form is `alice`: it took the id,
    # and the real alice was graded as alice-2.
    _handed_in(tmp_path / "c" / refused, tmp_path / "c" / "alice.py")
    found = _found([tmp_path / "c"], tmp_path)
    assert found["alice"].stored and found["alice"].path.name == "alice.py"
    (other,) = [item for student, item in found.items() if student != "alice"]
    assert not other.stored and other.path.name == refused


def test_grade_stores_each_student_under_their_own_id_beside_refused_files(tmp_path):
    folder = tmp_path / "sp"
    _handed_in(folder / "alice.py", folder / "alice .py", folder / " bob.py", folder / "bob.py")
    done = run_cli("grade", ASSIGNMENT, folder, "--db", tmp_path / "sp.db", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(line)["student"] for line in done.stdout.splitlines()) == ["alice", "bob"]
    assert "not graded, nothing stored: " + str(folder / "alice .py") in done.stderr


@pytest.mark.parametrize("name", ["attention.py", "Attention.ipynb", "ATTENTION.py"])
def test_a_file_named_as_the_module_given_alone_is_its_folders_student(tmp_path, name):
    _handed_in(tmp_path / "alice" / name, tmp_path / "bob" / "attention.py")
    found = _found([tmp_path / "alice" / name, tmp_path / "bob" / "attention.py"], tmp_path)
    assert sorted(found) == ["alice", "bob"] and all(item.stored for item in found.values())


@pytest.mark.parametrize("folder, why", [("w07_attention", "is named after the assignment"),
                                         ("class", "holds other .py or .ipynb files (ann.py, ben.py)"),
                                         ("course", "is the course's (it holds course.yaml)"),
                                         ("bad ", "cannot be a student id")])
def test_a_file_named_as_the_module_in_no_students_folder_is_refused_saying_what_to_do(tmp_path, folder, why):
    _handed_in(tmp_path / folder / "attention.py", tmp_path / "class" / "ann.py", tmp_path / "class" / "ben.py")
    if folder == "course":
        (tmp_path / folder / "course.yaml").write_text("assignments: {}\n")
    (item,) = _found([tmp_path / folder / "attention.py"], tmp_path).values()
    assert not item.stored
    assert why in item.problem and "copy it as STUDENT.py" in item.problem and "pass that folder" in item.problem


def test_a_file_named_as_the_module_in_an_nbgrader_tree_keeps_its_students_id(tmp_path):
    path = tmp_path / "submitted" / "s0121" / ASSIGNMENT / "attention.py"
    _handed_in(path)
    assert list(_found([path], tmp_path)) == ["s0121"]


@pytest.mark.parametrize("command, fix", [
    (["history", ASSIGNMENT, "-x"], "write `--` before it, after every option: `autograder history --db DB -- "
                                    f"{ASSIGNMENT} -x`"),
    (["replay", "-x", "softmax.last_axis"], "`autograder replay --db DB -- -x softmax.last_axis`"),
    (["regrade", ASSIGNMENT, "--students", "-x"], "join it to its option: `--students=-x`"),
])
def test_an_id_starting_with_a_dash_is_refused_saying_how_to_pass_it(tmp_path, command, fix):
    done = run_cli(*command, "--db", "DB", cwd=tmp_path)
    assert done.returncode == 2
    assert "-x was read as an option" in done.stderr and fix in done.stderr, done.stderr


def test_an_id_starting_with_a_dash_after_the_separator_reaches_the_command(tmp_path):
    done = run_cli("history", ASSIGNMENT, "--db", tmp_path / "none.db", "--", "-x")
    assert "read as an option" not in done.stderr and "no results database" in done.stderr, done.stderr


def test_an_option_typed_wrong_gets_no_advice_about_ids(tmp_path):
    done = run_cli("history", ASSIGNMENT, "alice", "--jsn", cwd=tmp_path)
    assert done.returncode == 2 and "read as an option" not in done.stderr


def test_a_folder_as_the_database_is_named_as_a_folder(tmp_path):
    done = run_cli("history", ASSIGNMENT, "alice", "--db", tmp_path, cwd=tmp_path)
    assert done.returncode == 2
    assert f"{tmp_path} is a folder" in done.stderr and str(tmp_path / "grades.db") in done.stderr, done.stderr


def test_a_student_folder_without_a_hand_in_is_named_with_what_it_holds(tmp_path):
    _handed_in(tmp_path / "c" / "ann.py", tmp_path / "c" / "ben" / ".attention.py")
    (tmp_path / "c" / "ben" / "attention.py.txt").write_text("def score(): pass\n")
    (tmp_path / "c" / "eve").mkdir()
    skipped: list[Path] = []
    assert list(_found([tmp_path / "c"], tmp_path, skipped)) == ["ann"]
    (line,) = not_graded(skipped, MODULE)
    assert "ben/ (holds .attention.py (hidden) and attention.py.txt), eve/ (empty)" in line
    assert "rename a hidden one without its dot" in line


def test_names_alike_but_for_unicode_normalization_are_told_apart(tmp_path):
    composed, decomposed = unicodedata.normalize("NFC", "josé"), unicodedata.normalize("NFD", "josé")
    _handed_in(tmp_path / "c" / f"{composed}.py", tmp_path / "c" / f"{decomposed}.py")
    found = list(_found([tmp_path / "c"], tmp_path).values())
    assert len(found) == 2 and not any(item.stored for item in found)
    problem = found[0].problem
    assert "differ in Unicode normalization" in problem
    assert "$'jose\\u0301', decomposed" in problem and "$'jos\\u00e9', composed" in problem
    assert "rename the decomposed one" in problem
