"""Issue 23: comparing a plain value a student's function returned (str, numbers, lists, dicts, arrays inside)
with the reference's, with a message that names where they differ."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.authoring import CheckFailed, Opaque, Tolerance, expect_equal

TOL = Tolerance(rtol=1e-6, atol=1e-9)


def _message(got, expected, tol=TOL) -> str:
    with pytest.raises(CheckFailed) as failed:
        expect_equal(got, expected, "f(x)", tol)
    return failed.value.message


@pytest.mark.parametrize("got, expected, message", [
    ({"n": 3, "mean": 2.0}, {"n": 4, "mean": 2.0}, "f(x) at key 'n': got 3, expected 4"),
    ({"a": [1, 2]}, {"a": [1, 3]}, "f(x) at key 'a', index 1: got 2, expected 3"),
    ({"a": 1}, {"a": 1, "b": 2}, "f(x) has no key 'b'"),
    ({"a": 1, "c": 2}, {"a": 1}, "f(x) has a key 'c' that it should not have"),
    ("hello world", "hello World", "f(x): got 'hello world', expected 'hello World'; they first differ at character 6"),
    (1, True, "f(x) is an int (1); expected a bool (True)"),
    (3.0, 3, "f(x) is a float (3.0); expected an int (3)"),
    ((1, 2), [1, 2], "f(x) is a tuple ((1, 2)); expected a list ([1, 2])"),
    ([1], [1, 2], "f(x) has 1 items; expected 2"),
    (None, "x", "f(x) is None; expected a str ('x')"),
    (Opaque("builtins.set"), {"a": 1}, "f(x) is a builtins.set object; expected a dict ({'a': 1})"),
    ({"p": 0.5}, {"p": 0.6}, "f(x) at key 'p': got 0.5, expected 0.6 (differs by 1.0e-01"),
    ({"w": np.array([1.0, 2.0])}, {"w": np.array([1.0, 2.5])}, "f(x) at key 'w' differs from the expected values"),
    ({"m": np.array([True])}, {"m": np.array([False])}, "f(x) at key 'm' is wrong at 1 of 1 positions"),
    ({"k": np.array([1, 2])}, {"k": np.array([1, 3])}, "f(x) at key 'k' is wrong at 1 of 2 positions, e.g. index (1,)"),
    ({"k": [1, 2]}, {"k": np.array([1, 2])}, "f(x) at key 'k' is a list of 2 items, not a NumPy array"),
    ("x" * 500, "y", "f(x): got 'xxxxxxxx"),
])
def test_the_message_names_where_the_values_differ(got, expected, message):
    assert _message(got, expected).startswith(message)


def test_a_long_value_is_shown_cut():
    assert len(_message("x" * 10_000, "y")) < 300


@pytest.mark.parametrize("got, expected", [
    ({"n": np.array(3), "mean": np.array(2.5)}, {"n": 3, "mean": 2.5}),  # NumPy scalars, as they travel
    ({"mean": 2}, {"mean": 2.0}),  # an int is an exact float
    ({"mean": 2.0 + 1e-9}, {"mean": 2.0}),
    ([math.nan, "a", None, (True,)], [math.nan, "a", None, (True,)]),
    ({"w": np.array([1.0, np.nan])}, {"w": np.array([1.0, np.nan])}),
])
def test_equal_values_pass(got, expected):
    expect_equal(got, expected, "f(x)", TOL)


def test_without_a_tolerance_floats_must_be_equal():
    expect_equal(0.1 + 0.2, 0.1 + 0.2, "f(x)")
    assert _message(0.1 + 0.2, 0.3, None) == "f(x): got 0.30000000000000004, expected 0.3"


plain = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
                     lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
                                             st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=20)


@settings(max_examples=100, deadline=None)
@given(value=plain)
def test_every_plain_value_equals_itself(value):
    expect_equal(value, value, "f(x)", TOL)
