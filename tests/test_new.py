"""Issue 14: `autograder new` scaffolds an assignment that grades and releases."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`

def _course_copy(root):
    """A copy of the course in `root`, for `autograder new` to add to; its course.yaml."""
    for name in ("course.yaml", "nbgrader_config.py"):
        shutil.copy(ROOT / name, root / name)
    for folder in ("assignments", "solutions"):
        shutil.copytree(ROOT / folder, root / folder)
    return root / "course.yaml"


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    """A copy of the course with a new assignment, week08_demo, whose module is `demo`."""
    root = tmp_path_factory.mktemp("course")
    done = run_cli("new", "week08_demo", "--module", "demo", "--course", _course_copy(root))
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
    # The stub copied under a name of its own: demo.py in the assignment's folder names no student, and is refused.
    shutil.copy(root / "assignments/week08_demo/demo.py", root / "stub.py")
    done = run_cli("grade", "week08_demo", root / "solutions/week08_demo/reference.py", root / "stub.py", "--json",
                   "--course", root / "course.yaml", "--db", root / "g.db")
    assert done.returncode == 0, done.stderr
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert results["reference"]["score"] == results["reference"]["max_score"] > 0
    assert results["stub"]["score"] == 0
    assert all("not implemented yet" in t["message"] for t in results["stub"]["tests"])


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


NEGATE = '''

def negate(x):
    """Minus the input, element by element.

    Args:
        x: array of any shape.

    Returns:
        An array of the same shape as x, equal to -x.
    """
'''
TRIPLE = NEGATE.replace("negate", "triple").replace("Minus the input", "Three times the input").replace("-x.", "3 * x.")
PUBLIC = '''

def negate_small(t):
    """negate([1, -2]) is [-1, 2]."""
    expect_close(t.returned("negate", np.array([1.0, -2.0])), np.array([-1.0, 2.0]), t.tol(np.float64), "negate")


def triple_small(t):
    """triple([1, 2]) is [3, 6]."""
    expect_close(t.returned("triple", np.array([1.0, 2.0])), np.array([3.0, 6.0]), t.tol(np.float64), "triple")


CHECKS += [Check("negate.small", negate_small), Check("triple.small", triple_small)]
'''


def test_release_rebuild_adds_the_cells_of_a_function_new_in_the_stub(tmp_path):
    """Functions added to a scaffolded stub and reference get their cells, in the stub's order, and grade."""
    import nbformat
    course = _course_copy(tmp_path)
    assert run_cli("new", "week09_grow", "--module", "grow", "--course", course).returncode == 0
    source, solution = tmp_path / "assignments/week09_grow", tmp_path / "solutions/week09_grow"
    stub = (source / "grow.py").read_text()
    # negate before double, triple after it: the stub's order decides where their cells go.
    stub = stub.replace("\n\ndef double(", NEGATE + '    raise NotImplementedError("negate")\n\n\ndef double(')
    (source / "grow.py").write_text(stub + TRIPLE + '    raise NotImplementedError("triple")\n')
    (solution / "reference.py").write_text((solution / "reference.py").read_text() + NEGATE + "    return -x\n"
                                           + TRIPLE + "    return 3 * x\n")
    (source / "public_checks.py").write_text((source / "public_checks.py").read_text() + PUBLIC)
    course.write_text(course.read_text() + "      negate.small: 2\n      triple.small: 3\n")
    refused = run_cli("release", "week09_grow", "--course", course, timeout=900)
    assert refused.returncode != 0 and "--rebuild" in refused.stderr  # a stale source is not released silently

    done = run_cli("release", "week09_grow", "--rebuild", "--course", course, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer_negate" in done.stderr and "before answer_double" in done.stderr
    assert "answer_triple" in done.stderr and "after test_signs" in done.stderr
    notebook = nbformat.read(source / "grow.ipynb", as_version=4)
    nbformat.validate(notebook)
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in notebook.cells]
    graded = [i for i in ids if i and i.split("_")[0] in ("answer", "test")]
    assert graded == ["answer_negate", "test_negate", "answer_double", "test_double", "answer_signs", "test_signs",
                      "answer_triple", "test_triple"]
    assert ids.index("task_negate") == ids.index("answer_negate") - 1 < ids.index("task_double")
    cells = {i: c for i, c in zip(ids, notebook.cells)}
    assert cells["test_triple"].metadata["nbgrader"]["points"] == 3
    assert cells["test_triple"].metadata["nbgrader"]["grade"] is True
    assert "def triple(x):" in cells["answer_triple"].source and "return 3 * x" in cells["answer_triple"].source
    assert (tmp_path / "release/week09_grow/grow.ipynb").is_file()
    again = run_cli("release", "week09_grow", "--course", course, timeout=900)
    assert again.returncode == 0 and "added" not in again.stderr  # in step now: nothing more to add

    answer = tmp_path / "s0001.py"  # named for a student: grow.py in the course's folder names none
    answer.write_text("def double(x):\n    return 2 * x\n\n\ndef negate(x):\n    return -x\n\n\n"
                      "def triple(x):\n    return 3 * x\n\n\n"
                      "def signs(x):\n    return {'positive': int((x > 0).sum()), 'negative': int((x < 0).sum()), "
                      "'zero': int((x == 0).sum())}\n")
    graded_run = run_cli("grade", "week09_grow", answer, "--json", "--course", course, "--db", tmp_path / "g.db")
    assert graded_run.returncode == 0, graded_run.stderr
    result = json.loads(graded_run.stdout.splitlines()[0])
    tests = {t["name"]: t for t in result["tests"]}
    assert tests["negate.small"]["status"] == tests["triple.small"]["status"] == "passed"
    assert (tests["negate.small"]["score"], tests["triple.small"]["score"]) == (2, 3)
    assert result["score"] == result["max_score"]


# Issue 23: a scaffolded assignment whose functions return a dict (the scaffold's signs) and a str (shout, added
# here), with a helper its public and hidden checks share.
SHOUT = '''

def shout(text):
    """The text in capitals, with an exclamation mark after it.

    Args:
        text: a str.

    Returns:
        A str: text.upper() + "!".
    """
'''
COMMON = '''"""What the public and hidden checks of week10_plain share; released beside the public checks."""
from autograder.authoring import expect_equal


def expect_shout(t, text, expected):
    """shout(text) returns `expected`, the same str."""
    expect_equal(t.returned("shout", text), expected, f"shout({text!r})")
'''
PUBLIC_SHOUT = '''
from .checks_common import expect_shout


def shout_small(t):
    """shout("hi") is "HI!"."""
    expect_shout(t, "hi", "HI!")


CHECKS += [Check("shout.small", shout_small)]
'''
HIDDEN = '''
from autograder.authoring import expect_equal

from .checks_common import expect_shout


def signs_matches_reference(t):
    """signs counts like the reference on random integers, zeros among them."""
    x = t.rng.integers(-3, 4, size=12)
    x[0] = 0
    expect_equal(t.returned("signs", x), t.ref.signs(x), "signs(x)")


def shout_matches_reference(t):
    """shout matches the reference on random words."""
    word = "".join(t.rng.choice(list("abcxyz"), size=6))
    expect_shout(t, word, t.ref.shout(word))


CHECKS += [Check("signs.matches_reference", signs_matches_reference),
           Check("shout.matches_reference", shout_matches_reference)]
'''
# Right but for signs, which counts zeros as positive: the messages must name the key that differs.
ZERO_IS_POSITIVE = '''import numpy as np


def double(x):
    return 2 * x


def signs(x):
    return {"positive": int((x >= 0).sum()), "negative": int((x < 0).sum()), "zero": 0}


def shout(text):
    return text.upper() + "!"
'''


@pytest.fixture(scope="module")
def plain_values(tmp_path_factory):
    """A scaffolded week10_plain with shout added, its helper checks_common.py, and graded: the reference, a
    student whose signs is wrong."""
    root = tmp_path_factory.mktemp("plain")
    course = _course_copy(root)
    assert run_cli("new", "week10_plain", "--module", "plain", "--course", course).returncode == 0
    source, solution = root / "assignments/week10_plain", root / "solutions/week10_plain"
    (source / "plain.py").write_text((source / "plain.py").read_text() + SHOUT + '    raise NotImplementedError\n')
    (solution / "reference.py").write_text((solution / "reference.py").read_text() + SHOUT
                                           + '    return text.upper() + "!"\n')
    (source / "checks_common.py").write_text(COMMON)
    (source / "public_checks.py").write_text((source / "public_checks.py").read_text() + PUBLIC_SHOUT)
    (solution / "hidden_checks.py").write_text((solution / "hidden_checks.py").read_text() + HIDDEN)
    course.write_text(course.read_text() + "      signs.matches_reference: 2\n      shout.small: 1\n"
                      "      shout.matches_reference: 2\n")
    (root / "zero_is_positive.py").write_text(ZERO_IS_POSITIVE)
    done = run_cli("grade", "week10_plain", solution / "reference.py", root / "zero_is_positive.py", "--json",
                   "--course", course, "--db", root / "g.db")
    assert done.returncode == 0, done.stderr
    return root, {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}


def test_functions_returning_a_dict_and_a_str_grade_end_to_end(plain_values):
    _, results = plain_values
    reference, student = results["reference"], results["zero_is_positive"]
    assert reference["score"] == reference["max_score"] == 9
    tests = {t["name"]: t for t in student["tests"]}
    assert {name: t["status"] for name, t in tests.items()} == {
        "double.small": "passed", "double.matches_reference": "passed", "signs.small": "failed",
        "signs.matches_reference": "failed", "shout.small": "passed", "shout.matches_reference": "passed"}
    assert student["score"] == 9 - 1 - 2
    assert tests["signs.small"]["message"].startswith("signs([1, -2, 0, 3]) at key 'positive': got 3, expected 2")
    assert tests["signs.matches_reference"]["message"].startswith("signs(x) at key 'positive': got ")


def test_the_shared_helper_is_released_and_the_hidden_checks_are_not(plain_values):
    root, _ = plain_values
    done = run_cli("release", "week10_plain", "--rebuild", "--course", root / "course.yaml", timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    released = root / "release" / "week10_plain"
    assert sorted(p.name for p in released.iterdir()) == ["checks_common.py", "plain.ipynb", "plain.py",
                                                          "public_checks.py", "public_manifest.json"]
    checked = run_cli("check", "--dir", released, root / "zero_is_positive.py")  # a student's machine: no solutions/
    assert "shout.small" in checked.stdout and "at key 'positive'" in checked.stdout, checked.stdout + checked.stderr
