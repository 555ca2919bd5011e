"""What a function returns is judged as the value it is, whatever it is: an int too long for Python to write
as text fails its own checks with a message (never the grader).

Graded through the real sandbox; the text helpers are checked on their own too.
"""
from __future__ import annotations

import json

import pytest

from autograder.authoring.shown import int_text, shown
from autograder.grading.examples import load_example
from autograder.grading.statuses import FAILED, PASSED

from conftest import compose

HUGE = '''
def softmax(S):
    return 10**100000


def attention(Q, K, V, allowed=None, scale=None):
    return (10**5000, 1)


def score(Q, K, scale=None):
    return {"a": 10**5000}


def padding_mask(lengths, n_k):
    return [[10**5000]]
'''


def test_an_int_too_long_to_write_is_shown_in_words_anywhere_in_a_value():
    assert int_text(10**100000) == "an int of 100,001 digits"
    assert int_text(-(10**5000)) == "an int of 5,001 digits" and int_text(-12) == "-12"
    assert shown([[10**5000]]) == "[[<an int of 5,001 digits>]]"
    assert shown({"a": (10**5000, 1)}) == "{'a': (<an int of 5,001 digits>, 1)}"
    assert shown(list(range(10**6)), 20) == "[0, 1, 2, 3, 4, 5..."  # written only as far as shown


@pytest.fixture(scope="module")
def huge(grade_once, tmp_path_factory):
    return grade_once(compose(tmp_path_factory.mktemp("huge"), "huge_ints", _snippet(tmp_path_factory, HUGE)))


def test_a_returned_huge_int_fails_its_own_checks_and_no_others(huge):
    assert not huge.internal_error, huge.internal_error
    by_function = {}
    for test in huge.tests:
        by_function.setdefault(test.function, set()).add(test.status)
    for function in ("softmax", "attention", "score", "padding_mask"):
        assert PASSED not in by_function[function], function
    for function in ("additive_score", "causal_mask", "context"):  # untouched: every point kept
        assert by_function[function] == {PASSED}, function
    softmax = next(t for t in huge.tests if t.name == "softmax.lecture_example")
    assert softmax.status == FAILED and "an int of 100,001 digits" in softmax.message, softmax.message


def test_the_examples_of_a_huge_int_are_stored_in_words(huge):
    examples = [load_example(t.example) for t in huge.tests if t.function in ("score", "padding_mask") and t.example]
    assert examples, "a public check of score or padding_mask shows its example"
    text = json.dumps(examples)
    assert "<an int of 5,001 digits>" in text



def _snippet(tmp_path_factory, text: str):
    path = tmp_path_factory.mktemp("snippet") / "snippet.py"
    path.write_text(text)
    return path

