"""Issue 21: tolerances from numerical analysis, and error paths that diagnose the exception really raised.

A sum's rounding is bounded by the magnitude of its terms (C = A V: rtol · Σⱼ |aᵢⱼ| |vⱼₖ| plus a floor),
so float32 rounding inside a float64 function passes under every seed while wrong arithmetic still
fails. An error-path check calls the valid neighbouring input too; when that raises as well, the
message says so and no all-masked misconception is named. Graded through the real sandbox.
"""
from __future__ import annotations

import builtins

import numpy as np
import pytest

from autograder.authoring.checks import CheckFailed, Tolerance, Trial
from autograder.authoring.compare import expect_close
from autograder.authoring.protocol import unmarked
from autograder.authoring.seeds import check_rng
from autograder.grading.attempt import attempt
from autograder.grading.submission import read_submission
from autograder.sandbox.session import Session

from conftest import PLAIN, SUBMISSIONS, compose, manifest

RAISING = manifest("raising")
PARAMETERS = manifest("parameters")
FLOAT64 = Tolerance(rtol=1e-6, atol=1e-9)
STUDENTS = [f"s{n:04d}" for n in range(1, 7)]
ALL_MASKED_IDEAS = {"all_masked_wrong_exception", "all_masked_nan", "all_masked_uniform", "raises_on_valid_rows"}


# ------------------------------------------------------------------ tolerances


def _cancelling_product(rng):
    """A = softmax weights, V with entries of both signs, and a column of V that makes one entry of C = A V cancel."""
    A = rng.dirichlet(np.ones(6), size=4)
    V = rng.normal(size=(6, 3))
    V[:, 0] -= (A[0] @ V[:, 0]) / A[0].sum()  # C[0, 0] is now zero up to rounding, its terms are not
    return A, V


def test_float32_rounding_of_the_weights_passes_where_a_sum_cancels():
    rng = np.random.default_rng(21)
    A, V = _cancelling_product(rng)
    expected, terms = A @ V, np.abs(A) @ np.abs(V)
    got = A.astype(np.float32).astype(np.float64) @ V  # the weights rounded to float32, the sum in float64
    with pytest.raises(CheckFailed):  # bounded by the result, the cancelled entry fails
        expect_close(got, expected, FLOAT64, "C")
    expect_close(got, expected, FLOAT64, "C", terms=terms)  # bounded by its terms, it passes


@pytest.mark.parametrize("wrong", ["axis", "scale", "mask"])
def test_wrong_arithmetic_still_fails_with_the_terms(wrong):
    rng = np.random.default_rng(7)
    S = rng.normal(size=(4, 6))
    V = rng.normal(size=(6, 3))
    allowed = np.tril(np.ones((4, 6), dtype=bool), k=2)

    def weights(scores, axis=-1):
        e = np.exp(scores - scores.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    A = weights(np.where(allowed, S, -np.inf))
    mistaken = {"axis": weights(np.where(allowed, S, -np.inf), axis=-2),
                "scale": weights(np.where(allowed, 2 * S, -np.inf)),
                "mask": weights(np.where(allowed, S, 0.0))}[wrong]
    with pytest.raises(CheckFailed):
        expect_close(np.nan_to_num(mistaken) @ V, A @ V, FLOAT64, "C", terms=np.abs(A) @ np.abs(V))


def test_the_message_shows_the_digits_that_differ_and_the_difference():
    with pytest.raises(CheckFailed) as failed:
        expect_close(np.array([-0.034415612]), np.array([-0.034415587]), Tolerance(rtol=0.0, atol=1e-9), "C")
    assert "got -0.034415612, expected -0.034415587 (differs by 2.5e-08, allowed 1.0e-09)" in \
        unmarked(failed.value.message)  # the returned entry and its difference are marked as the code's choice


@pytest.mark.slow  # the same grading under many seeds: make test runs it
def test_float32_softmax_inside_float64_functions_gets_full_marks_under_every_seed(grade):
    """The habit of Hugging Face's eager attention: softmax in float32 whatever the input dtype."""
    for student in STUDENTS:
        result = grade(SUBMISSIONS / "correct" / "float32_softmax.py", student)
        assert [(t.name, t.message) for t in result.tests if t.status != "passed"] == [], student


# ------------------------------------------------------------------ error paths


@pytest.mark.parametrize("name", sorted(RAISING))
def test_an_exception_ordinary_input_also_raises_is_diagnosed_as_that(grade, tmp_path, name):
    case = RAISING[name]
    result = grade(compose(tmp_path, name, SUBMISSIONS / "raising" / f"{name}.py"))
    check = next(t for t in result.tests if t.name == case["check"])
    assert check.status == "failed"
    assert check.message.startswith(f"{case['check'].split('.')[0]} raises on ordinary input: ")
    assert f"raised {case['raised']} at line " in check.message  # the exception, where, and its message
    assert "no visible key" not in check.message.split("(if this")[0]  # not sent to the masking first
    named = {t.misconception for t in result.tests if t.misconception}
    assert not named & ALL_MASKED_IDEAS, [(t.name, t.misconception) for t in result.tests if t.misconception]
    if case["raised"] == case.get("asked", "ValueError"):  # NumPy's own ValueError: no raise of the student's
        assert "not a raise statement of yours" in check.message and "is your own" not in check.message, check.message


def test_a_raise_of_the_students_own_on_ordinary_input_is_told_when_to_raise(grade, tmp_path):
    snippet = tmp_path / "always.py"
    snippet.write_text("def softmax(S):\n    raise ValueError('softmax: every key masked')\n")
    result = grade(compose(tmp_path, "always_raises", snippet))
    message = next(t.message for t in result.tests if t.name == "softmax.all_masked_raises")
    own = "(if this ValueError is your own, raise ValueError only for a row whose every key is masked"
    assert own in message, message


_OWN_EXCEPTION = """
class {name}({bases}):
    \"\"\"A row with no visible key.\"\"\"


_plain_softmax = softmax


def softmax(S):
    S = np.asarray(S)
    if (~np.isfinite(S) | (S == -np.inf)).all(axis=-1).any():
        raise {name}("a row has every key masked")
    return _plain_softmax(S)
"""


@pytest.mark.parametrize("bases", ["ValueError", "ArithmeticError, ValueError", "RuntimeError"])
def test_a_students_own_exception_counts_as_the_built_in_it_subclasses(grade, tmp_path, bases):
    """`except ValueError` catches a subclass of it, so the error paths asking for ValueError accept one."""
    snippet = tmp_path / "own.py"
    snippet.write_text(_OWN_EXCEPTION.format(name="AllMaskedError", bases=bases))
    result = grade(compose(tmp_path, "own", snippet))
    checks = {t.name: t for t in result.tests if t.name.endswith("all_masked_raises")}
    assert set(checks) >= {"softmax.all_masked_raises", "attention.all_masked_raises"}
    if "ValueError" in bases:
        assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != "passed"]
    else:  # not a ValueError: still wrong, and named
        assert all(t.status == "failed" and "raised AllMaskedError" in t.message and "expected ValueError" in t.message
                   for t in checks.values()), [(t.name, t.message) for t in checks.values()]


def test_an_error_path_check_makes_the_same_calls_whatever_the_answers(sandbox, suite, tmp_path):
    """The student's own valid case, then the valid neighbour and the faulty input (in the order the seed drew),
    for a right answer, one always raising, one returning."""
    always = tmp_path / "always.py"
    always.write_text("def softmax(S):\n    raise ValueError('no')\n")
    never = tmp_path / "never.py"
    never.write_text("def softmax(S):\n    return np.zeros(np.shape(S))\n")
    entry = suite.check("softmax.all_masked_raises")
    sequences = []
    for path in (SUBMISSIONS / "correct" / "plain.py", compose(tmp_path, "always", always),
                 compose(tmp_path, "never", never)):
        submission = read_submission(path)
        with Session(sandbox, submission.worker_spec(suite.assignment.module), suite.assignment.limits) as session:
            assert not session.open().failure
            trial = Trial(entry.name, check_rng(1, entry.name), suite.reference, session.call,
                          suite.assignment.tolerance)
            statuses = attempt(entry, trial).status
            sequences.append(([(call.function, np.asarray(call.args[0]).tolist()) for call, _ in trial.calls],
                              statuses))
    assert [status for _, status in sequences] == ["passed", "failed", "failed"]
    calls = [calls for calls, _ in sequences]
    assert calls[0] == calls[1] == calls[2] and len(calls[0]) == 3
    pair = [np.isfinite(np.asarray(scores)[1]).any() for _, scores in calls[0][1:]]
    assert sorted(pair) == [False, True]  # the all-masked row and its neighbour, one each


def test_a_call_that_does_not_fit_the_parameters_says_to_keep_the_stubs(grade, tmp_path):
    """A renamed parameter: the checks that pass it by name fail with the hint. A TypeError raised before
    any line of the function ran, but by a wrapper (a cache refusing an array), is not the parameters'
    doing and gets none."""
    renamed = tmp_path / "renamed.py"
    renamed.write_text(PLAIN.read_text().replace("def score(Q, K, scale=None):",
                                                 "def score(Q, K, s=None):\n    scale = s"))
    failed = {t.name: t.message for t in grade(renamed).tests if t.status != "passed"}
    assert failed and all(name.startswith("score.") for name in failed)
    assert all(message.endswith("its parameters are Q, K, s, so rename `s` to `scale`") for message in failed.values())
    cached = tmp_path / "cached.py"
    cached.write_text("import functools\n" + PLAIN.read_text().replace(
        "def score(Q, K, scale=None):", "@functools.lru_cache\ndef score(Q, K, scale=None):"))
    failed = [t for t in grade(cached).tests if t.function == "score" and t.status != "passed"]
    # A hidden check's message leaves the exception's own text to the instructor (`withheld`).
    assert failed and all("unhashable" in (t.withheld or t.message) and "stub" not in t.message for t in failed)


@pytest.mark.parametrize("name", sorted(name for name, case in PARAMETERS.items() if "rename" in case))
def test_a_parameter_named_otherwise_than_the_stubs_is_named_in_public_and_hidden_checks_alike(grade_once, tmp_path,
                                                                                            name):
    """Correct code with the Annotated Transformer's names (attention(query, key, value, mask=None, ...)) loses the
    checks that pass `allowed=` by name, as designed; each message says which parameter it lacks, the ones it has
    and what to rename, in a hidden check's message for students too: the names are the file's own `def`."""
    case = PARAMETERS[name]
    result = grade_once(compose(tmp_path, name, SUBMISSIONS / "parameters" / f"{name}.py"))
    failed = [t for t in result.tests if t.status != "passed"]
    said = (f"your {case['function']} has no parameter `{case['keyword']}`: the checks pass `{case['keyword']}=` by "
            f"name, as the stub defines it; its parameters are {', '.join(case['has'])}, so rename "
            f"`{case['rename']}` to `{case['keyword']}`")
    assert failed and {t.function for t in failed} == {case["function"]}
    assert {t.visibility for t in failed} == {"public", "hidden"}
    assert all(t.message == said for t in failed), [t.message for t in failed]


@pytest.mark.parametrize("name", sorted(name for name, case in PARAMETERS.items() if "says" in case))
def test_the_stubs_parameters_taken_another_way_are_told_as_such_never_as_other_names(grade_once, tmp_path, name):
    """Correct code with the stub's names and order that takes them otherwise (after `*`, before `/`, with no
    default) loses the checks that call it the stub's way; each message says which way and what to change, in a
    hidden check's message for students too, and none says to keep the stub's names and order, which it has."""
    case = PARAMETERS[name]
    result = grade_once(compose(tmp_path, name, SUBMISSIONS / "parameters" / f"{name}.py"))
    failed = [t for t in result.tests if t.status != "passed" and t.function == case["function"]]
    assert failed and {t.visibility for t in failed} == set(case["visibility"])
    assert all(case["says"] in t.message and "names and order" not in t.message + (t.withheld or "")
               for t in failed), [t.message for t in failed]


def test_a_parameters_kind_the_files_text_does_not_declare_is_kept_from_a_hidden_checks_message(grade, tmp_path):
    """The kinds and defaults the worker reads are the code's word too (`__signature__` can be set while it runs):
    a hidden check shows them only where the file has a `def` with just those parameters, each of that kind."""
    built = tmp_path / "built.py"
    built.write_text(PLAIN.read_text() + """

import inspect
_attention = attention


def attention(*args, **kwargs):
    if len(args) > 3:
        raise TypeError("by keyword")
    return _attention(*args, **kwargs)


attention.__signature__ = inspect.signature(lambda Q, K, V, *, allowed=None, scale=None: None)
""")
    failed = [t for t in grade(built).tests if t.function == "attention" and t.status != "passed"]
    assert failed and all(t.visibility == "hidden" and "keyword only" not in t.message
                          and "keyword only" in t.withheld for t in failed), [t.message for t in failed]


def test_parameters_that_the_files_text_does_not_declare_are_kept_from_a_hidden_checks_message(grade, tmp_path):
    """A function built while the code runs can have any parameter names, which could carry a hidden check's inputs:
    its names are shown in public checks, and in hidden ones only to the instructor."""
    built = tmp_path / "built.py"
    built.write_text(PLAIN.read_text() + '\n\nexec("def attention(" + "qu" + "ery, key, value, mask=None, scale=None):'
                                         '\\n    return None")\n')
    failed = [t for t in grade(built).tests if t.function == "attention" and t.status != "passed"]
    unfit = [t for t in failed if "has no parameter `allowed`" in t.message]
    hidden = [t for t in unfit if t.visibility == "hidden"]
    assert hidden and all("query" not in t.message and "its parameters are query, key" in t.withheld
                          for t in hidden), [t.message for t in hidden]
    assert all("its parameters are query, key" in t.message for t in unfit if t.visibility == "public")
    assert {t.visibility for t in unfit} == {"public", "hidden"}


@pytest.mark.parametrize("own, says", [(True, "(if this ValueError is your own"),
                                       (None, "(if this ValueError is your own"),  # where the worker cannot tell
                                       (False, "not a raise statement of yours")])
def test_advice_for_a_valueerror_on_ordinary_input_follows_only_what_the_worker_could_tell(own, says):
    # An in-kernel check has no file to find the raise in: its ValueError may well be the student's own.
    from autograder.authoring.error_paths import _raises_on_ordinary_input
    from autograder.authoring.protocol import Raised
    raised = Raised("ValueError", "no key", own=own, kinds=("ValueError", "Exception", "BaseException"))
    message = _raises_on_ordinary_input("softmax", raised, raised, "ValueError", "the same row", "raise only then")
    assert says in message, message


def test_an_exception_is_a_valueerror_by_the_built_in_class_itself_whatever_else_it_subclasses():
    """`except ValueError` catches a subclass whose ValueError comes after eight other built-in parents, and misses a
    class of the student's own named ValueError that claims the built-ins' module: the worker's account follows."""
    from autograder.authoring.protocol import Raised
    from autograder.sandbox.loader import builtin_kinds

    class AllMasked(UserWarning, DeprecationWarning, PendingDeprecationWarning, SyntaxWarning, RuntimeWarning,
                    FutureWarning, ImportWarning, builtins.ValueError):
        pass

    # The student's own, passed off as the built-in.
    forged_class = type("ValueError", (Exception,), {"__module__": "builtins"})
    deep, forged = AllMasked("all masked"), forged_class("all masked")
    assert isinstance(deep, builtins.ValueError) and not isinstance(forged, builtins.ValueError)
    assert Raised("AllMasked", "all masked", kinds=tuple(builtin_kinds(deep))).is_a("ValueError")
    assert not Raised("ValueError", "all masked", kinds=tuple(builtin_kinds(forged))).is_a("ValueError")
    assert Raised("ValueError", "x", kinds=tuple(builtin_kinds(builtins.ValueError("x")))).is_a("ValueError")
