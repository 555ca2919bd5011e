"""Issue 19: nothing a worker controls can hurt the grader, and a fault while grading one hand-in is its result.

Through the commands a user runs: `grade` (--jobs 1 and 2, --cluster local:2),
`gradescope-run`, `replay` and `check`, with honest submissions graded after
the attacker in the same job.
"""
from __future__ import annotations

import json
import os
import re
import sqlite3

import pytest

from autograder.grading.course import load_course
from autograder.grading.manifest import MANIFEST_FILE, manifest_data, manifest_text

from conftest import FIXTURES, ROOT, SUBMISSIONS, bwrap_works, compose, private_course, run_cli

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
ATTACKER = SUBMISSIONS / "attacks" / "shared_memory.py"
BUGGY = SUBMISSIONS / "buggy" / "score_missing_scale.py"
# What the attacker must not manage: every change of the region's size, a new seal, a truncating reopen.
DENIED = ("seal-write", "grow", "fallocate-grow", "reopen-truncate", "shrink")


@pytest.fixture(autouse=True)
def _bubblewrap():
    if not bwrap_works():
        if os.environ.get("CI"):
            pytest.fail("CI must test the bubblewrap path, but bwrap is missing or cannot start here")
        pytest.skip("bubblewrap is not installed or cannot start on this machine")


@pytest.fixture(scope="module")
def attack_class(tmp_path_factory):
    """The attacker first, then an honest correct file and an honest buggy one, and the buggy one's solo score."""
    folder = tmp_path_factory.mktemp("class")
    compose(folder, "a_attacker", ATTACKER)
    compose(folder, "b_plain")
    compose(folder, "c_buggy", BUGGY)
    alone = tmp_path_factory.mktemp("alone")
    compose(alone, "c_buggy", BUGGY)  # the same student id: the same inputs
    solo = _results(run_cli("grade", "w07_attention", alone, "--json", "--jobs", "1",
                            "--db", alone / "g.db"))["c_buggy"]["score"]
    assert 0 < solo < 100
    return folder, {"b_plain": 100, "c_buggy": solo}


def _results(done) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}


def _account(printed: str) -> dict[str, str]:
    """What the attacker said about each thing it tried: {"shrink": "PermissionError", ...}."""
    line = next(line for line in printed.splitlines() if line.startswith("shared-memory attack: "))
    return dict(part.split(": ", 1) for part in line.removeprefix("shared-memory attack: ").split("; "))


def _assert_contained(attacker_output: str) -> None:
    said = _account(attacker_output)
    assert said["foreign descriptors"] == "[]", said  # nothing inherited from the zygote
    for what in DENIED:
        assert said[what] == "PermissionError", (what, said)


@pytest.mark.parametrize("options", [["--jobs", "1"], ["--jobs", "2"], ["--cluster", "local:2"]],
                         ids=["jobs1", "jobs2", "cluster"])
def test_the_shared_memory_attack_hurts_no_grader_in_a_batch(attack_class, tmp_path, options):
    folder, solo = attack_class
    done = run_cli("grade", "w07_attention", folder, "--json", "--db", tmp_path / "g.db", *options)
    results = _results(done)
    for student, score in solo.items():
        assert results[student]["score"] == score, (student, [(t["name"], t["message"]) for t in
                                                              results[student]["tests"] if t["status"] != "passed"])
    attacker = results["a_attacker"]
    assert not attacker["problem"] and not attacker["internal_error"], attacker["internal_error"][-500:]
    _assert_contained(attacker["printed"])
    assert "internal errors 0" in done.stderr


def test_the_shared_memory_attack_hurts_no_replay_or_check(attack_class, tmp_path):
    folder, _ = attack_class
    db = tmp_path / "g.db"
    _results(run_cli("grade", "w07_attention", folder, "--json", "--db", db, "--jobs", "1"))
    for student in ("a_attacker", "b_plain"):
        replay = run_cli("replay", student, "softmax.input_unchanged", "--db", db)
        assert replay.returncode == 0, replay.stderr[-2000:]
        assert "passed" in replay.stdout, replay.stdout[-2000:]
    for name in ("a_attacker.py", "b_plain.py"):
        check = run_cli("check", folder / name, "--dir", ROOT / "assignments" / "w07_attention")
        assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
        assert "All public checks passed" in check.stdout


def test_the_shared_memory_attack_hurts_no_gradescope_run(attack_class, tmp_path):
    folder, _ = attack_class
    course = private_course(tmp_path)
    for student in ("a_attacker", "b_plain"):
        root = tmp_path / student
        (root / "submission").mkdir(parents=True)
        (root / "submission" / "attention.py").write_text((folder / f"{student}.py").read_text())
        done = run_cli("gradescope-run", "w07_attention", "--root", root, "--course", course)
        assert done.returncode == 0, done.stderr[-3000:]
        written = json.loads((root / "results" / "results.json").read_text())
        assert not written["extra_data"]["internal_error"], written["extra_data"]["internal_error"][-500:]
        if student == "a_attacker":
            _assert_contained(written["extra_data"]["student_output"])
        else:
            assert written["score"] == 100, written["output"]


# ------------------------------------------------------------------ a grading process that dies

KILLING_CHECK = '''
import os
import signal

import numpy as np

from autograder.authoring.checks import Check
from autograder.authoring.compare import expect_close


def double_small(t):
    """double([1]) is [2]; and a check with bugs that only some answers reach."""
    got = t.returned("double", np.array([1.0]))
    if got[0] == 9:
        os.kill(os.getpid(), signal.SIGSEGV)  # as a crash in a native library would kill the grader
    if got[0] == 5:
        got = got * (1 / (float(got[0]) - 5))  # ZeroDivisionError: the suite's own bug
    expect_close(got, np.array([2.0]), t.tol(np.float64), "double([1])")


CHECKS = [Check("double.small", double_small)]
'''
STUDENTS = {"a_good": "2 * x", "b_crashes": "0 * x + 9", "c_divides": "0 * x + 5", "d_good": "x + x"}
BROKEN = ("b_crashes", "c_divides")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny course whose public check kills the grading process, or divides by zero, for some answers."""
    root = tmp_path_factory.mktemp("tiny")
    for part in ("assignments", "solutions"):
        (root / part / "tiny").mkdir(parents=True)
    for name in ("reference.py", "hidden_checks.py"):
        (root / "solutions" / "tiny" / name).write_text((FIXTURES / "tiny" / "solutions" / "tiny" / name).read_text())
    (root / "assignments" / "tiny" / "public_checks.py").write_text(KILLING_CHECK)
    (root / "course.yaml").write_text(
        "course: {name: Tiny, seed_salt: s}\ndefaults:\n  tolerance:\n    float32: {rtol: 1.0e-5, atol: 1.0e-6}\n"
        "    float64: {rtol: 1.0e-9, atol: 1.0e-12}\nassignments:\n  tiny:\n    title: Doubling\n    module: tiny\n"
        "    preload: [numpy]\n    checks: {double.small: 1, double.matches_reference: 1}\n")
    assignment = load_course(root / "course.yaml").assignment("tiny")
    (root / "assignments" / "tiny" / MANIFEST_FILE).write_text(manifest_text(manifest_data(assignment,
                                                                                          ["double.small"])))
    folder = root / "class"
    folder.mkdir()
    for student, body in STUDENTS.items():
        (folder / f"{student}.py").write_text(f"def double(x):\n    return {body}\n")
    return root / "course.yaml", folder


def _assert_broken_are_internal_errors(results: dict) -> None:
    assert results["a_good"]["score"] == results["d_good"]["score"] == 2
    for student in BROKEN:
        assert results[student]["problem"].startswith("internal error"), results[student]["problem"]
        assert results[student]["score"] == 0
    crashed = results["b_crashes"]["internal_error"]
    assert "graded 2 times" in crashed and crashed.count("segmentation fault (SIGSEGV)") == 2, crashed
    divided = results["c_divides"]["internal_error"]
    assert "ZeroDivisionError" in divided and "the check double.small raised" in divided, divided


@pytest.mark.parametrize("options", [["--jobs", "1"], ["--jobs", "2"], ["--cluster", "local:2"]],
                         ids=["jobs1", "jobs2", "cluster"])
def test_a_grading_process_that_dies_or_a_check_that_raises_is_that_hand_ins_internal_error(tiny, tmp_path,
                                                                                            options):
    course, folder = tiny
    db = tmp_path / "g.db"
    done = run_cli("grade", "tiny", folder, "--course", course, "--db", db, "--json", *options)
    assert done.returncode == 3, done.stderr[-3000:]
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert sorted(results) == sorted(STUDENTS)
    _assert_broken_are_internal_errors(results)
    assert done.stderr.strip().splitlines()[-1].endswith(
        f"{len(BROKEN)} submissions hit an internal error in the grader (not in their code): they are flagged in "
        "`autograder report` with the traceback, and the next `autograder grade` grades them again")
    with sqlite3.connect(db) as connection:
        stored = dict(connection.execute("SELECT student, internal_error FROM submissions"))
    assert "ZeroDivisionError" in stored["c_divides"] and stored["a_good"] == ""
    if options == ["--jobs", "1"]:
        report = run_cli("report", "--db", db, "--out", tmp_path / "report", "--course", course)
        assert report.returncode == 0, report.stderr
        index = (tmp_path / "report" / "index.html").read_text()
        assert "ZeroDivisionError" in index and "segmentation fault" in index
        assert "Traceback" not in (tmp_path / "report" / "feedback" / "c_divides.html").read_text()
    rerun = run_cli("grade", "tiny", folder, "--course", course, "--db", db, "--json", *options)
    assert rerun.returncode == 3
    assert "2 submissions already graded" in rerun.stderr  # the good ones
    assert f"{len(BROKEN)} submissions hit an internal error" in rerun.stderr  # the broken ones, graded again


def test_a_gradescope_run_whose_grading_process_dies_writes_its_internal_error(tiny, tmp_path):
    course, folder = tiny
    for student, status in (("b_crashes", 3), ("c_divides", 3), ("a_good", 0)):
        root = tmp_path / student
        (root / "submission").mkdir(parents=True)
        (root / "submission" / "tiny.py").write_text((folder / f"{student}.py").read_text())
        done = run_cli("gradescope-run", "tiny", "--root", root, "--course", course)
        assert done.returncode == status, done.stderr[-3000:]
        written = json.loads((root / "results" / "results.json").read_text())
        if status:
            assert written["score"] == 0 and "internal error" in written["output"], written["output"]
            assert "Traceback" not in written["output"]  # the details are the instructor's
            assert written["extra_data"]["internal_error"] and "could not be graded" in done.stderr
        else:
            assert written["score"] == 2
    assert "segmentation fault" in json.loads((tmp_path / "b_crashes" / "results" / "results.json").read_text())[
        "extra_data"]["internal_error"]


def test_replay_and_check_whose_grading_process_dies_say_so_and_end_normally(tiny, tmp_path):
    course, folder = tiny
    db = tmp_path / "g.db"
    run_cli("grade", "tiny", folder, "--course", course, "--db", db, "--jobs", "1")
    crashed = run_cli("replay", "b_crashes", "double.small", "--db", db, "--course", course)
    assert crashed.returncode == 3, crashed.stderr[-2000:]
    assert "could not replay double.small for b_crashes: internal error" in crashed.stderr
    assert re.search(r"graded 2 times.*segmentation fault", crashed.stderr), crashed.stderr[-2000:]
    divided = run_cli("replay", "c_divides", "double.small", "--db", db, "--course", course)
    assert divided.returncode == 3 and "ZeroDivisionError" in divided.stderr, divided.stderr[-2000:]
    good = run_cli("replay", "d_good", "double.small", "--db", db, "--course", course)
    assert good.returncode == 0 and "passed" in good.stdout, good.stdout + good.stderr
    released = course.parent / "assignments" / "tiny"
    for student, status, said in (("b_crashes", 3, "segmentation fault"), ("c_divides", 3, "ZeroDivisionError"),
                                  ("a_good", 0, "All public checks passed")):
        check = run_cli("check", folder / f"{student}.py", "--dir", released)
        assert check.returncode == status, check.stdout + check.stderr[-2000:]
        assert said in check.stdout + check.stderr


def test_doctor_lists_the_grading_boundary_protections():
    done = run_cli("doctor")
    assert done.returncode == 0, done.stderr
    for protection in ("sealed", "no descriptor", "process boundary"):
        assert protection in done.stdout, protection

