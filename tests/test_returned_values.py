"""What a function returns is judged as the value it is, whatever it is: an int too long for Python to write
as text fails its own checks with a message (never the grader), and a named tuple is the tuple it is.

Graded through the real sandbox; the text helpers are checked on their own too.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from autograder.authoring import CheckFailed, Opaque, expect_pair
from autograder.authoring.protocol import unmarked
from autograder.authoring.shown import int_text, shown
from autograder.grading.examples import load_example, render_value, value_json
from autograder.grading.statuses import FAILED, PASSED
from autograder.sandbox.replies import REPLIES_KEPT

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

NAMED = '''
import collections

_Pair = collections.namedtuple("_Pair", "C A")
_plain_attention, _plain_attention_torch = attention, attention_torch


class _Lying(list):
    def __iter__(self):
        return iter([None, None])


def attention(Q, K, V, allowed=None, scale=None):
    return _Pair(*_plain_attention(Q, K, V, allowed, scale))


def attention_torch(Q, K, V, allowed=None, scale=None):
    return _Lying(_plain_attention_torch(Q, K, V, allowed, scale))  # its items, not what __iter__ claims
'''


def test_an_int_too_long_to_write_is_shown_in_words_anywhere_in_a_value():
    assert int_text(10**19000) == "an int of 19,001 digits"
    # Counted exactly only up to 2**16 bits: counting takes a power of ten as long (0.3 s at 2**22 bits, for each
    # message and example that names one), and a submission returned dozens.
    assert int_text(10**100000) == "an int of about 100,000 digits"
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
    assert softmax.status == FAILED and "an int of about 100,000 digits" in softmax.message, softmax.message


def test_the_examples_of_a_huge_int_are_stored_in_words(huge):
    examples = [load_example(t.example) for t in huge.tests if t.function in ("score", "padding_mask") and t.example]
    assert examples, "a public check of score or padding_mask shows its example"
    text = json.dumps(examples)
    assert "<an int of 5,001 digits>" in text


ODD_ARRAYS = '''
_plain_score = score


def score(Q, K, scale=None):
    return (_plain_score(Q, K, scale) + 1).astype(np.longdouble)  # wrong, in a dtype JSON cannot write


def context(A, V):
    return np.zeros((1 << 31, 0))  # no bytes at all, and 2**31 rows
'''


def test_arrays_of_any_dtype_or_shape_cost_their_own_checks_and_nothing_else(grade_once, tmp_path_factory):
    result = grade_once(compose(tmp_path_factory.mktemp("odd"), "odd_arrays", _snippet(tmp_path_factory, ODD_ARRAYS)))
    assert not result.internal_error, result.internal_error
    by_function: dict = {}
    for test in result.tests:
        by_function.setdefault(test.function, set()).add(test.status)
    assert PASSED not in by_function["score"] and PASSED not in by_function["context"]
    for function in ("additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax"):
        assert by_function[function] == {PASSED}, function
    shown_examples = [load_example(t.example) for t in result.tests if t.function == "score" and t.example]
    assert any("longdouble" in json.dumps(example) or "float128" in json.dumps(example) for example in shown_examples)
    assert value_json(np.zeros((1 << 31, 0))) == {"shape": [1 << 31, 0], "dtype": "float64"}  # no values listed


def test_a_named_tuple_and_a_list_subclass_are_judged_by_their_items(grade_once, tmp_path_factory):
    result = grade_once(compose(tmp_path_factory.mktemp("named"), "named_pair", _snippet(tmp_path_factory, NAMED)))
    failing = [(t.name, t.message) for t in result.tests if t.status != PASSED]
    assert failing == [] and result.score == result.max_score


def _snippet(tmp_path_factory, text: str):
    path = tmp_path_factory.mktemp("snippet") / "snippet.py"
    path.write_text(text)
    return path


def test_a_value_that_is_not_a_pair_is_named_in_plain_words():
    with pytest.raises(CheckFailed) as failed:
        expect_pair(Opaque("builtins.set"), "attention(Q, K, V)", ("C", "A"))
    assert unmarked(failed.value.message).endswith("got a builtins.set object")  # the class's name marked as chosen
    with pytest.raises(CheckFailed) as failed:
        expect_pair(10**5000, "attention(Q, K, V)", ("C", "A"))
    assert unmarked(failed.value.message).endswith("got a single int, an int of 5,001 digits")  # its length chosen


LISTED = '''
_plain_context = context


def context(A, V):
    return _plain_context(A, V).tolist()
'''


def test_a_returned_list_is_named_and_shown_as_the_list_it_is(grade_once, tmp_path_factory):
    result = grade_once(compose(tmp_path_factory.mktemp("listed"), "listed", _snippet(tmp_path_factory, LISTED)))
    lecture = next(t for t in result.tests if t.name == "context.lecture_example")
    assert "is a list of 1 item, not a NumPy array of shape (1, 2)" in lecture.message, lecture.message
    returned = [call["returned"] for call in load_example(lecture.example)["calls"] if call["function"] == "context"]
    assert [render_value(value) for value in returned] == ["[[8.022242, 5.988879]]"]
    assert render_value(value_json((1.5,))) == "(1.5,)"  # a tuple of one, as Python writes it


NEAR_THEIR_LIMIT = """
_ZEROS = np.zeros(4_190_000)  # 33.5 MB, just under what one reply to a small call may hold (32 MiB and a bit)


def _zeros(*args, **kwargs):
    return _ZEROS


score = additive_score = causal_mask = padding_mask = apply_mask = softmax = context = _zeros
attention = attention_torch = _zeros
"""


def test_replies_each_within_their_limit_are_refused_once_the_session_holds_enough(grade_once, tmp_path_factory):
    # The grader keeps a session's replies until it judges them: about 85 replies of 33.5 MB each had the grading
    # process hold 2.7 GB. Past REPLIES_KEPT in all, a reply may hold only a small answer's bytes.
    result = grade_once(compose(tmp_path_factory.mktemp("near"), "near_their_limit",
                                _snippet(tmp_path_factory, NEAR_THEIR_LIMIT)))
    read = [t for t in result.tests if "(4190000,)" in t.message]
    refused = [t for t in result.tests if "far more than an answer to this call can be" in t.message]
    assert result.score == 0 and not result.internal_error
    assert 1 <= len(read) <= REPLIES_KEPT // 33_520_000 + 1 and len(refused) >= len(result.tests) - len(read) - 2, [
        (t.name, t.message[:80]) for t in result.tests]


FORGED_ID = """
import sys as _sys


def _socket():
    frame = _sys._getframe(1)
    while frame is not None:
        if "inbox" in frame.f_locals:
            return frame.f_globals["wire"], frame.f_locals["inbox"].sock
        frame = frame.f_back
    return None, None


_right_softmax = softmax


def softmax(S):
    wire, sock = _socket()
    if wire is not None:
        wire.send(sock, {"event": "noise", "id": [1]})  # an id no dict can look up
    return _right_softmax(S)
"""


def test_a_frame_whose_id_is_no_key_is_the_childs_problem_not_the_graders(grade_once, tmp_path_factory):
    # The frame's size limit looked its id up in a dict: a list there raised TypeError in the grading process, and
    # the hand-in became "internal error: the grader failed on this submission (not because of your code)".
    result = grade_once(compose(tmp_path_factory.mktemp("forged"), "forged_id", _snippet(tmp_path_factory, FORGED_ID)))
    assert not result.internal_error, result.internal_error[-500:]
    assert not any(t.status == "ungraded" for t in result.tests)
