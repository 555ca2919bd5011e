"""Results as plain data: what a Dask worker sends back is taken only as a well-formed result."""
from __future__ import annotations

import json

import pytest

from autograder.grading.results import result_from_plain, result_to_plain
from autograder.grading.submission import read_submission

from conftest import PLAIN


@pytest.fixture(scope="module")
def graded(grader):
    return grader.grade(read_submission(PLAIN, "ann"))


def test_a_real_result_survives_the_trip_through_json_unchanged(grader, graded):
    assert graded.tests and graded.score == graded.max_score
    assert graded.isolated == (grader.sandbox.protections.mode == "bwrap")  # set where grading knows the sandbox
    assert result_from_plain(json.loads(json.dumps(result_to_plain(graded)))) == graded


@pytest.mark.parametrize("damage, named", [
    (lambda d: d.pop("student"), "result.student: missing"),
    (lambda d: d.update(seed="7"), "result.seed: expected int"),
    (lambda d: d.update(seed=True), "result.seed: expected int"),
    (lambda d: d.update(notes="not a list"), "result.notes"),
    (lambda d: d.update(tests={}), "result.tests: expected a list"),
    (lambda d: d["tests"][0].update(score=None), "tests[0].score: expected float"),
    (lambda d: d["tests"][1].pop("status"), "tests[1].status: missing"),
    (lambda d: d["tests"].append([1, 2]), "expected a mapping"),
])
def test_anything_else_is_refused_with_the_field_it_got_wrong(graded, damage, named):
    data = json.loads(json.dumps(result_to_plain(graded)))
    damage(data)
    with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
        result_from_plain(data)
