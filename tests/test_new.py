"""Issue 14: `autograder new` scaffolds an assignment that grades and releases."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`

@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    """A copy of the course with a new assignment, week08_demo, whose module is `demo`."""
    root = tmp_path_factory.mktemp("course")
    for name in ("course.yaml", "nbgrader_config.py"):
        shutil.copy(ROOT / name, root / name)
    for folder in ("assignments", "solutions"):
        shutil.copytree(ROOT / folder, root / folder)
    done = run_cli("new", "week08_demo", "--module", "demo", "--course", root / "course.yaml")
    assert done.returncode == 0, done.stderr
    return root, done


def test_it_writes_every_part_of_an_assignment_and_its_course_entry(scaffolded):
    root, done = scaffolded
    for path in ("assignments/week08_demo/demo.py", "assignments/week08_demo/public_checks.py",
                 "assignments/week08_demo/demo.ipynb", "assignments/week08_demo/public_manifest.json",
                 "solutions/week08_demo/reference.py", "solutions/week08_demo/hidden_checks.py",
                 "solutions/week08_demo/misconceptions.py"):
        assert (root / path).is_file(), path
        assert str(root / path) in done.stdout
    listed = run_cli("checks", "week08_demo", "--course", root / "course.yaml")
    assert listed.returncode == 0, listed.stderr
    assert "double.small" in listed.stdout and "double.matches_reference" in listed.stdout
    assert run_cli("checks", "w07_attention", "--course", root / "course.yaml").returncode == 0  # the rest is intact


def test_the_reference_grades_full_marks_and_the_stub_zero(scaffolded):
    root, _ = scaffolded
    done = run_cli("grade", "week08_demo", root / "solutions/week08_demo/reference.py",
                   root / "assignments/week08_demo/demo.py", "--json", "--course", root / "course.yaml",
                   "--db", root / "g.db")
    assert done.returncode == 0, done.stderr
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert results["reference"]["score"] == results["reference"]["max_score"] > 0
    assert results["demo"]["score"] == 0
    assert all("not implemented yet" in t["output"] for t in results["demo"]["tests"])


def test_it_releases_through_nbgrader(scaffolded):
    root, _ = scaffolded
    done = run_cli("release", "week08_demo", "--course", root / "course.yaml", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    released = root / "release" / "week08_demo"
    assert sorted(p.name for p in released.iterdir()) == ["demo.ipynb", "demo.py", "public_checks.py",
                                                         "public_manifest.json"]


def test_a_name_in_use_or_not_an_identifier_is_refused(scaffolded):
    root, _ = scaffolded
    for name in ("week08_demo", "w07_attention", "Week 8"):
        done = run_cli("new", name, "--course", root / "course.yaml")
        assert done.returncode == 2 and "autograder:" in done.stderr, (name, done.stderr)
