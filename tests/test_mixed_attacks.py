"""Issue 19: one class mixing every attack on the grader with honest submissions.

The attackers (named `a…`, so they sort, and are graded, first) attack the
shared memory, the sample positions, a strided subset of a long answer,
and the order of calls (answers that change once the file sees a shrunk
call, or wear out after a few calls). Each honest student (`z…`) must get
exactly the score and the per-check verdicts it gets when graded alone,
with `--jobs 1`, `--jobs 2` and `--cluster local:2`; every command ends
normally, each hand-in is stored once, and no attacker earns a point its
code does not.
"""
from __future__ import annotations

import json
import os
import sqlite3

import pytest

from conftest import PLAIN, SUBMISSIONS, bwrap_works, run_cli

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
# Each student's file: plain.py with these snippets appended in order, or (a whole file) the file itself.
ATTACKERS = {
    "a01_shared_memory": ["attacks/shared_memory.py"],
    "a02_predict_sample": ["attacks/predict_sample.py"],
    "a03_strided_subset": ["attacks/strided_subset.py"],
    "a04_notice_reruns": ["order/wrong_softmax.py", "order/notice_reruns.py"],
    "a05_softmax_wears_out": ["order/softmax_wears_out.py"],
}
HONEST = {
    "z1_einsum": "correct/einsum.py",
    "z2_score_missing_scale": ["buggy/score_missing_scale.py"],
    "z3_softmax_over_queries": ["buggy/softmax_over_queries.py"],
}
# notice_reruns' honest twin: the same wrong softmax without the trick, graded alone under the same id.
TWIN = ("a04_notice_reruns", ["order/wrong_softmax.py"])
SCALE_CHECKS = {"score.long_sequence", "attention.long_sequence"}
# What the shared-memory attacker must not manage: every change of the region's size, a new seal, a truncation.
DENIED = ("seal-write", "grow", "fallocate-grow", "reopen-truncate", "shrink")


@pytest.fixture(autouse=True)
def _bubblewrap():
    if not bwrap_works():
        if os.environ.get("CI"):
            pytest.fail("CI must test the bubblewrap path, but bwrap is missing or cannot start here")
        pytest.skip("bubblewrap is not installed or cannot start on this machine")


def _write(folder, student: str, source) -> None:
    """`source`: a whole file's path under submissions/, or the snippets to append to plain.py."""
    if isinstance(source, str):
        text = (SUBMISSIONS / source).read_text()
    else:
        text = PLAIN.read_text() + "".join("\n\n" + (SUBMISSIONS / snippet).read_text() for snippet in source)
    (folder / f"{student}.py").write_text(text)


def _graded(done) -> dict[str, dict]:
    """The command's JSON lines by student; it must have ended normally, each student printed once."""
    assert done.returncode == 0, done.stderr[-3000:]
    assert "internal errors 0" in done.stderr, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    results = {r["student"]: r for r in lines}
    assert len(results) == len(lines), [r["student"] for r in lines]
    return results


def _verdicts(result: dict) -> tuple[float, list[tuple[str, str, float]]]:
    return result["score"], [(t["name"], t["status"], t["score"]) for t in result["tests"]]


def _alone(folder, student: str, db) -> dict:
    return _graded(run_cli("grade", "w07_attention", folder / f"{student}.py", "--json", "--db", db))[student]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The class folder, and what each honest student, a05 and a04's honest twin get alone."""
    folder = tmp_path_factory.mktemp("class")
    for student, source in {**ATTACKERS, **HONEST}.items():
        _write(folder, student, source)
    alone = tmp_path_factory.mktemp("alone")
    solo = {student: _alone(folder, student, alone / f"{student}.db")
            for student in [*HONEST, "a05_softmax_wears_out"]}
    twin = tmp_path_factory.mktemp("twin")
    _write(twin, *TWIN)
    solo["twin"] = _alone(twin, TWIN[0], twin / "g.db")
    assert solo["z1_einsum"]["score"] == 100
    for student in ("z2_score_missing_scale", "z3_softmax_over_queries", "twin"):
        assert 0 < solo[student]["score"] < 100, (student, solo[student]["score"])
    return folder, solo


def _failed(result: dict) -> list[tuple[str, str]]:
    return [(t["name"], t["message"][:300]) for t in result["tests"] if t["status"] != "passed"]


def _attack_account(printed: str) -> dict[str, str]:
    """What the shared-memory attacker said about each thing it tried: {"shrink": "PermissionError", ...}."""
    line = next(line for line in printed.splitlines() if line.startswith("shared-memory attack: "))
    return dict(part.split(": ", 1) for part in line.removeprefix("shared-memory attack: ").split("; "))


def _assert_attackers_gain_nothing(results: dict, solo: dict) -> None:
    for student in ATTACKERS:
        assert not results[student]["problem"] and not results[student]["internal_error"], results[student]
    memory = results["a01_shared_memory"]  # honest answers: every point, and not one change to the region
    assert memory["score"] == 100, _failed(memory)
    said = _attack_account(memory["printed"])
    assert said.get("foreign descriptors") == "[]", said
    assert {what: said.get(what) for what in DENIED} == dict.fromkeys(DENIED, "PermissionError"), said  # it tried
    for student in ("a02_predict_sample", "a03_strided_subset"):  # right only where a sample might look
        assert sorted(name for name, _ in _failed(results[student])) == sorted(SCALE_CHECKS), _failed(
            results[student])
        assert all(t["score"] == 0 for t in results[student]["tests"] if t["name"] in SCALE_CHECKS)
    # Noticing a shrunk re-run earns exactly what the same wrong code earns without the trick.
    assert _verdicts(results["a04_notice_reruns"]) == _verdicts(solo["twin"])
    # Answers that wear out after a few calls earn what they earn alone: the class changes nothing.
    assert _verdicts(results["a05_softmax_wears_out"]) == _verdicts(solo["a05_softmax_wears_out"])
    assert results["a05_softmax_wears_out"]["score"] < 100


@pytest.mark.parametrize("options", [["--jobs", "1"], ["--jobs", "2"], ["--cluster", "local:2"]],
                         ids=["jobs1", "jobs2", "cluster"])
def test_honest_students_get_their_solo_scores_in_a_class_of_attackers(mixed, tmp_path, options):
    folder, solo = mixed
    db = tmp_path / "g.db"
    results = _graded(run_cli("grade", "w07_attention", folder, "--json", "--db", db, *options))
    assert sorted(results) == sorted([*ATTACKERS, *HONEST])
    for student in HONEST:
        assert _verdicts(results[student]) == _verdicts(solo[student]), (student, _failed(results[student]),
                                                                         _failed(solo[student]))
    _assert_attackers_gain_nothing(results, solo)
    with sqlite3.connect(db) as connection:
        stored = connection.execute("SELECT student, COUNT(*) FROM submissions GROUP BY student").fetchall()
    assert dict(stored) == {student: 1 for student in [*ATTACKERS, *HONEST]}
