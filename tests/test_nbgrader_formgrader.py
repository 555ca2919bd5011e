"""Issue 22: what nbgrader's formgrader shows after `export nbgrader`: names, and notebooks not built from the release.

A temporary course is released with the real nbgrader (through `autograder release`), handed in, graded
in the sandbox and exported; nbgrader's own formgrader back end (NbGraderAPI) is then asked what a TA sees.
"""
from __future__ import annotations

import json

import nbformat
import pytest
import yaml
from nbgrader.api import Gradebook
from nbgrader.apps.api import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from conftest import REFERENCE, ROOT, run_cli
from nbgrader_course import ASSIGNMENT, WRITTEN, make_course, release, with_code

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
STAMP = "2026-11-20 10:00:00.000000 UTC"


@pytest.fixture(scope="module")
def exported(tmp_path_factory, suite):
    """(course root, export's stderr): "named" is in the roster, "known" has its names in nbgrader's database
    already, "scratch" handed in a notebook of its own (not built from the release)."""
    root = make_course(tmp_path_factory.mktemp("formgrader"))
    released = release(root)
    data = yaml.safe_load((ROOT / "course.yaml").read_text())
    data["assignments"][ASSIGNMENT].update(source=str(ROOT / "assignments" / ASSIGNMENT),
                                           solution=str(ROOT / "solutions" / ASSIGNMENT))
    (root / "course.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    for student in ("named", "known", "scratch"):
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        notebook = (nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(REFERENCE.read_text())])
                    if student == "scratch" else with_code(released, REFERENCE.read_text(), suite.functions, WRITTEN))
        nbformat.write(notebook, folder / "attention.ipynb")
        (folder / "timestamp.txt").write_text(STAMP)
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:  # as `nbgrader db student import` leaves it
        gradebook.add_student("known", first_name="Kim", last_name="Known")
    roster = root / "roster.json"
    roster.write_text(json.dumps([{"student": "named", "first_name": "Ada", "last_name": "Lovelace",
                                   "email": "ada@example.org"}, {"student": "other", "kind": "correct"}]))
    done = run_cli("grade", ASSIGNMENT, root, "--course", root / "course.yaml", "--db", root / "grades.db")
    assert done.returncode == 0, done.stderr
    done = run_cli("export", "nbgrader", "--course", root / "course.yaml", "--db", root / "grades.db", "--root", root,
                   "--roster", roster, cwd=root)
    assert done.returncode == 0, done.stderr
    return root, done.stderr


def _api(root) -> NbGraderAPI:
    config = Config()
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    config.Exchange.root = str(root / "exchange")
    return NbGraderAPI(CourseDirectory(config=config), config=config)


def test_names_come_from_the_roster_or_the_gradebook(exported):
    root, said = exported
    shown = {s["student"]: (s["first_name"], s["last_name"]) for s in _api(root).get_submissions(ASSIGNMENT)}
    assert shown["named"] == ("Ada", "Lovelace") and shown["known"] == ("Kim", "Known")
    assert shown["scratch"] == (None, None)
    assert "1 student has no name in the gradebook (scratch)" in said and "does not list this id" in said
    assert "lists 1 student with no result of w07_attention (other), so no name of theirs was written" in said


def test_a_notebook_not_built_from_the_release_is_exported_with_a_warning_and_nothing_to_grade_by_hand(exported):
    root, said = exported
    listed = {n["student"]: n for n in _api(root).get_notebook_submissions(ASSIGNMENT, "attention")}
    assert listed["scratch"]["score"] == 100 and not listed["scratch"]["needs_manual_grade"]
    assert listed["named"]["needs_manual_grade"]  # its written answers wait for the TA
    assert "scratch: attention.ipynb was not built from the released notebook" in said
    assert (root / "autograded" / "scratch" / ASSIGNMENT / "attention.ipynb").is_file()
