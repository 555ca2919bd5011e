"""Issue 5: failing checks name the misconception behind them, and failing randomized checks are shrunk.

Grading goes through the real sandbox (conftest's session-scoped fixtures);
the engine and the shrinker also get small tests of their own rules.
"""
from __future__ import annotations

import json
import textwrap
import time
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.authoring.checks import Sizes, Tolerance, Trial
from autograder.authoring.misconceptions import Catalogue, Misconception
from autograder.authoring.protocol import Call, Raised, Reply
from autograder.authoring.seeds import check_rng
from autograder.grading.attempt import attempt
from autograder.grading.diagnosis import Evidence, diagnose, diagnose_timeout
from autograder.grading.explain import FreshChild, GradedChild
from autograder.grading.shrink import MAX_SUBMISSION_SECONDS, ShrinkBudget, input_size, shrink
from autograder.grading.statuses import PASSED
from autograder.grading.submission import read_submission
from autograder.sandbox.replies import CallFailed
from autograder.sandbox.session import Session

from conftest import PLAIN, REFERENCE, ROOT, SUBMISSIONS, compose, manifest, run_cli
from degenerate import write_degenerate

BUGGY = manifest("buggy")
NARROW = manifest("narrow")
CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py")) + [REFERENCE]
TOLERANCE = {"float32": Tolerance(rtol=2e-3, atol=1e-5), "float64": Tolerance(rtol=1e-6, atol=1e-9)}


def _buggy(tmp_path, bug):
    return compose(tmp_path, bug, SUBMISSIONS / "buggy" / f"{bug}.py")


# ------------------------------------------------------------------ diagnosis, end to end


@pytest.mark.parametrize("bug", sorted(BUGGY))
def test_each_bug_is_diagnosed_as_its_own_misconception(grade_once, tmp_path, bug):
    expected = BUGGY[bug]["misconception"]
    also = set(BUGGY[bug].get("also_named", ()))  # ideas whose wrong answer is this bug's on some inputs
    result = grade_once(_buggy(tmp_path, bug))
    reported = {t.misconception for t in result.tests if t.misconception}
    assert expected in reported and reported - also == {expected}, [
        (t.name, t.misconception) for t in result.tests if t.misconception]
    named = [t for t in result.tests if t.misconception == expected]
    assert all(t.status != "passed" for t in named)
    assert any(t.function == BUGGY[bug]["function"] for t in named), "diagnosed only in other functions' checks"
    sentences = {t.explanation for t in named}
    assert len(sentences) == 1 and "slide" in sentences.pop()


@pytest.mark.parametrize("bug", sorted(NARROW))
def test_a_bug_only_some_inputs_show_costs_its_check_and_is_named(grade_once, tmp_path, bug, suite):
    # A mask of fewer axes than the scores, and scores in the thousands inside attention_torch: each of these files
    # had 100/100 before the checks gave such inputs.
    case = NARROW[bug]
    result = grade_once(compose(tmp_path, bug, SUBMISSIONS / "narrow" / f"{bug}.py"))
    failed = {t.name: t for t in result.tests if t.status != "passed"}
    checks = [case["check"], *case.get("also", ())]  # `also`: other checks whose inputs show the same bug
    assert sorted(failed) == sorted(checks), [(t.name, t.message) for t in failed.values()]
    named = failed[case["check"]]
    # A hidden check's message leaves the exception's own text (torch's, here) to the instructor (`withheld`).
    shown = named.withheld or named.message
    assert case["shows"] in shown, shown
    assert named.misconception == case["misconception"] and named.function == case["function"]
    assert result.score == result.max_score - sum(suite.check(check).points for check in checks)


@pytest.mark.slow
def test_a_students_own_check_names_arguments_as_the_stub_does(tmp_path):
    """`autograder check` has no reference to read parameter names from: its messages had said "changed its argument
    argument 1 in place" and suggested `argument 1.copy()`. The released manifest lists the stub's parameters."""
    returned = compose(tmp_path, "returned", SUBMISSIONS / "narrow" / "apply_mask_returns_scores_when_all_visible.py")
    changed = _buggy(tmp_path, "softmax_modifies_input")
    said = {name: run_cli("check", path, "--dir", ROOT / "assignments" / "w07_attention").stdout
            for name, path in (("returned", returned), ("changed", changed))}
    assert "apply_mask returned S itself (or a view of it) for a mask that hides no key" in said["returned"], said
    assert "`S.copy()`" in said["returned"], said["returned"]
    assert "softmax (or a function it calls) changed its argument S in place" in said["changed"], said["changed"]
    assert not any("argument argument" in text or "argument 1" in text for text in said.values()), said


def test_attention_raising_inside_context_is_told_about_context_not_the_scores_transpose(grade_once, tmp_path):
    """Values with no leading axes: attention raised inside the student's context (repeat_kv reading V.shape[-3]),
    and its message had told the student to transpose K in score."""
    bug = "context_repeats_values_to_heads"
    result = grade_once(compose(tmp_path, bug, SUBMISSIONS / "narrow" / f"{bug}.py"))
    message = next(t.message for t in result.tests if t.name == "attention.matches_reference")
    assert "in context" in message and "V.shape[-3]" in message, message
    assert "np.swapaxes(K" not in message, message


def test_a_wrong_scale_is_not_called_a_wrong_grid(grade_once, tmp_path):
    """score_wrong_scale's scores are the right grid times 1/4 (dk fixed at 64, the check's is 4): the public check
    of the grid says so, instead of that S[..., i, j] compares query i with key j."""
    result = grade_once(_buggy(tmp_path, "score_wrong_scale"))
    message = next(t.message for t in result.tests if t.name == "score.shape_rows_are_queries")
    assert "every entry is 0.25 × the right one" in message and "compares query i" not in message, message
    right_scale = grade_once(_buggy(tmp_path, "score_transposed"))
    message = next(t.message for t in right_scale.tests if t.name == "score.shape_rows_are_queries")
    assert "× the right one" not in message, message


def test_weights_normalized_over_another_axis_are_named_whatever_was_subtracted_first(grade, tmp_path):
    """Each row's maximum subtracted, then the sum taken over axis=1: no wrong answer computed from one axis matches
    it, but its weights sum to one over the queries (3 axes) or the heads (4 axes), and the idea says so."""
    path = tmp_path / "mixed_axes.py"
    path.write_text(PLAIN.read_text().replace("return e / np.sum(e, axis=-1, keepdims=True)",
                                              "return e / np.sum(e, axis=1, keepdims=True)"))
    result = grade(path)
    named = {t.name: t.misconception for t in result.tests if t.function == "softmax" and t.status != "passed"}
    assert named and set(named.values()) <= {"softmax_over_queries", "softmax_axis_1"}, named
    assert named["softmax.rows_sum_to_one"] == "softmax_over_queries", named


# A part of attention written out again in attention_torch, wrong there alone: plain.py's attention_torch with
# each (old, new) replaced, and the idea of the NumPy part it repeats. (Its missing scale is torch_missing_scale,
# a buggy fixture of its own.)
TORCH_PARTS = {
    "softmax_over_queries": [("torch.softmax(S, dim=-1)", "torch.softmax(S, dim=-2)")],
    "score_divides_by_dk": [("1.0 / math.sqrt(Q.shape[-1])", "1.0 / Q.shape[-1]")],
    "score_multiplies_by_sqrt_dk": [("1.0 / math.sqrt(Q.shape[-1])", "math.sqrt(Q.shape[-1])")],
    "score_dk_from_wrong_axis": [("1.0 / math.sqrt(Q.shape[-1])", "1.0 / math.sqrt(Q.shape[1])")],
    "attention_returns_a_c": [("return A @ V, A", "return A, A @ V")],
    "mask_fills_zero": [('masked_fill(~allowed, float("-inf"))', "masked_fill(~allowed, 0.0)")],
    "mask_inverted": [('masked_fill(~allowed, float("-inf"))', 'masked_fill(allowed, float("-inf"))')],
    "mask_truth_value": [("if allowed is not None:", "if allowed:")],
    "mask_after_softmax": [('S = S.masked_fill(~allowed, float("-inf"))', "pass"),
                           ("A = torch.softmax(S, dim=-1)", "A = torch.softmax(S, dim=-1) * (1 if allowed is None "
                                                            "else allowed)")],
}


@pytest.mark.parametrize("idea", sorted(TORCH_PARTS))
def test_a_part_of_attention_wrong_in_attention_torch_is_named_there_too(grade, tmp_path, idea):
    """torch.softmax over dim=-2 is the NumPy softmax's idea, 1/dk the NumPy score's, and so on, in attention_torch's
    own checks."""
    path = tmp_path / f"torch_{idea}.py"
    code, torch_part = PLAIN.read_text().split("\ndef attention_torch(")
    for old, new in TORCH_PARTS[idea]:
        assert torch_part.count(old) == 1, old
        torch_part = torch_part.replace(old, new)
    path.write_text(code + "\ndef attention_torch(" + torch_part)
    result = grade(path)
    failed = [t for t in result.tests if t.status != "passed"]
    assert failed and all(t.function == "attention_torch" for t in failed)
    assert {t.misconception for t in failed} == {idea}, [(t.name, t.misconception) for t in failed]


@pytest.mark.parametrize("masked", ["np.where(allowed, S, -1e9)", "np.where(allowed, S, np.finfo(np.float64).min)",
                                    "np.where(allowed, S, -10000.0)",
                                    "np.asarray(S) + (1 - np.asarray(allowed, dtype=float)) * -1e9"])
def test_a_finite_fill_for_hidden_keys_is_named_in_apply_mask(grade, tmp_path, masked):
    """Hugging Face's finfo.min, BERT's -10000, or -1e9 added as an additive mask: each student's own number, so
    recognised rather than recomputed. attention's all-masked check keeps the softmax idea, whose sentence names
    this cause too."""
    path = tmp_path / "finite_fill.py"
    path.write_text(PLAIN.read_text() + f"\n\ndef apply_mask(S, allowed):\n    return {masked}\n")
    result = grade(path)
    named = {t.name: t.misconception for t in result.tests if t.status != "passed"}
    assert {name for name in named if name.startswith("apply_mask.")} and all(
        idea == "mask_fills_finite_negative" for name, idea in named.items() if name.startswith("apply_mask.")), named
    if masked.startswith("np.where"):  # a row whose every key has the same fill comes out even
        assert named.get("attention.all_masked_raises") == "all_masked_uniform", named


def test_catalogue_covers_every_buggy_fixture_and_ids_are_unique(suite):
    ids = [m.id for m in suite.misconceptions.misconceptions]
    assert len(ids) == len(set(ids))
    assert {entry["misconception"] for entry in BUGGY.values()} <= set(ids)
    for idea in suite.misconceptions.misconceptions:
        assert idea.sentence.endswith(".") and "slide" in idea.sentence, idea.id
        assert (idea.wrong is not None or idea.shows is not None) != bool(idea.too_slow), idea.id
        assert all(name in {e.name for e in suite.checks} for name in idea.too_slow), idea.id


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_implementations_get_no_misconception(grade_once, path):
    result = grade_once(path)
    assert result.score == result.max_score
    assert [(t.name, t.misconception) for t in result.tests if t.misconception or t.explanation] == []


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_no_misconception_matches_any_call_of_a_correct_implementation(sandbox, suite, course, path):
    """Diagnose every call of every check, passed or not: a correct answer must never look like a wrong idea."""
    submission = read_submission(path)
    seed = suite.assignment.seed_for(course.seed_salt, submission.student)
    shared: dict = {}
    diagnosed = 0
    with Session(sandbox, submission.worker_spec(suite.assignment.module), suite.assignment.limits) as session:
        assert not session.open().failure
        for entry in suite.checks:
            if entry.seconds is not None:
                continue  # the T = 512 timing checks: too big to diagnose, by design (MAX_DIAGNOSED_BYTES)
            trial = Trial(entry.name, check_rng(seed, entry.name), suite.reference, session.call,
                          suite.assignment.tolerance, sizes=entry.check.sizes, shared_cache=shared)
            assert attempt(entry, trial).status == "passed", entry.name
            assert diagnose(suite.misconceptions, trial.calls, suite.reference, suite.assignment.tolerance) is None
            diagnosed += len(trial.calls)
    assert diagnosed > 50


# Degenerate answers (tests/degenerate.py): the idea each one shows, as the feedback names it.
DEGENERATE_IDEAS = {
    ("softmax", "uniform"): "weights_ignore_scores",
    ("attention", "uniform"): "weights_ignore_scores",
    ("causal_mask", "zeros"): "mask_ignores_positions",
    ("causal_mask", "ones"): "causal_shows_future",  # the specific idea keeps its name
    ("padding_mask", "ones"): "mask_ignores_positions",
    ("padding_mask", "zeros"): "mask_ignores_positions",
    ("context", "zeros"): "context_ignores_values",
    ("softmax", "raises"): "raises_on_valid_rows",
    ("attention_torch", "uniform"): "weights_ignore_scores",  # no autograd history either, but wrong values first
}
# Degenerate answers that some idea's numbers fit by coincidence alone: a factor of 0 is no scale, and on one query
# every normalization gives ones. Naming those ideas would send the student after a mistake they did not make.
NOT_NAMED = {("score", "zeros"): "score_wrong_scale", ("softmax", "ones"): "softmax_over_queries"}


@pytest.mark.parametrize("function,variant", sorted(DEGENERATE_IDEAS), ids=lambda x: x)
def test_a_degenerate_answer_is_named_by_the_idea_it_shows(grade, tmp_path, function, variant):
    expected = DEGENERATE_IDEAS[function, variant]
    result = grade(write_degenerate(tmp_path, function, variant))
    named = [t for t in result.tests if t.misconception]
    assert {t.misconception for t in named} == {expected}, [(t.name, t.misconception) for t in named]
    assert any(t.function == function for t in named), "named only in other functions' checks"
    assert all(t.status != "passed" and "slide" in t.explanation for t in named)


def test_an_exception_another_idea_also_raises_names_it_only_if_the_other_calls_fit(grade, tmp_path):
    """context uses the weights of the last softmax call, not its A: on one call that raises the shape error
    A.T @ V would raise, but its other calls return what no transposed A gives."""
    path = tmp_path / "context_global.py"
    path.write_text(PLAIN.read_text() + textwrap.dedent("""

        _LAST_A = None


        def softmax(S):
            global _LAST_A
            S = np.asarray(S)
            if not np.all(np.any(np.isfinite(S), axis=-1)):
                raise ValueError("softmax: some query has every key masked")
            e = np.exp(S - np.max(S, axis=-1, keepdims=True))
            _LAST_A = e / np.sum(e, axis=-1, keepdims=True)
            return _LAST_A


        def context(A, V):
            return _LAST_A @ np.asarray(V)
        """))
    result = grade(path)
    assert any(t.function == "context" and t.status != PASSED for t in result.tests)
    assert "context_transposed_weights" not in {t.misconception for t in result.tests}


def test_an_idea_about_a_part_that_passes_its_own_checks_is_not_named_where_that_part_is_called(grade, suite,
                                                                                                 tmp_path):
    """softmax shifts by the maximum over the wrong axis: on a causal mask over equal scores attention's weights
    come out as a transposed score's would, but score passes all its checks and attention calls it. And scores
    of size 3 with NaN weights are not an overflow."""
    path = tmp_path / "max_over_wrong_axis.py"
    path.write_text(PLAIN.read_text() + textwrap.dedent("""

        def softmax(S):
            S = np.asarray(S)
            if np.any(np.all(np.isneginf(S), axis=-1)):
                raise ValueError("all keys masked in some row")
            z = S - np.max(S, axis=-2, keepdims=True)
            e = np.exp(z)
            return e / np.sum(e, axis=-1, keepdims=True)
        """))
    result = grade(path)
    homes = {idea.id: idea.functions[0] for idea in suite.misconceptions.misconceptions}
    assert all(t.status == PASSED for t in result.tests if t.function == "score")
    named = [(t.name, t.misconception) for t in result.tests if t.misconception]
    assert not [(name, idea) for name, idea in named if homes[idea] == "score"], named
    small = next(t for t in result.tests if t.name == "softmax.matches_reference")
    assert "of size up to 3" in small.message and small.misconception != "softmax_overflows", small


@pytest.mark.parametrize("function,variant", sorted(NOT_NAMED), ids=lambda x: x)
def test_a_degenerate_answer_is_not_named_by_an_idea_it_fits_by_coincidence(grade, tmp_path, function, variant):
    result = grade(write_degenerate(tmp_path, function, variant))
    assert NOT_NAMED[function, variant] not in {t.misconception for t in result.tests}, [
        (t.name, t.misconception) for t in result.tests if t.misconception]


@pytest.mark.slow  # a command-line round trip (grade, shrinking included); the sentences are checked above in-process
def test_the_sentence_reaches_the_command_line_table(tmp_path):
    done = run_cli("grade", "w07_attention", _buggy(tmp_path, "mask_fills_zero"), "--db", tmp_path / "g.db")
    assert done.returncode == 0, done.stderr
    assert "idea to revisit: A hidden key needs the score −∞, not 0" in done.stdout


# ------------------------------------------------------------------ the engine's rules


def _reference_module():
    module = types.ModuleType("tiny_reference")
    module.plus_one = lambda x: np.asarray(x) + 1.0
    module.outer = lambda x: module.plus_one(x) * 2.0
    return module


def _idea(name, functions, offset=None, raises=None, raises_below=None):
    def wrong(seen):
        if raises or raises_below is not None and np.any(np.asarray(seen.args["x"]) < raises_below):
            raise ValueError(raises or "below")
        return np.asarray(seen.args["x"]) + offset
    return Misconception(name, f"{name} — slide 1.", functions, wrong=wrong)


def _catalogue(*ideas):
    return Catalogue(ideas, right=lambda seen: getattr(seen.ref, seen.function)(**seen.args))


def _call(function, x, value=None, raised=None):
    return Call(function, (np.asarray(x, dtype=float),)), Reply(value=None if value is None else np.asarray(value),
                                                                  raised=raised)


def test_engine_names_the_idea_whose_wrong_answer_the_reply_matches():
    ref, catalogue = _reference_module(), _catalogue(_idea("plus_two", ("plus_one",), 2.0),
                                                     _idea("plus_three", ("plus_one",), 3.0))
    assert diagnose(catalogue, [_call("plus_one", [1.0, 2.0], [4.0, 5.0])], ref, TOLERANCE).id == "plus_three"
    assert diagnose(catalogue, [_call("plus_one", [1.0, 2.0], [3.0, 4.0])], ref, TOLERANCE).id == "plus_two"
    assert diagnose(catalogue, [_call("plus_one", [1.0, 2.0], [9.0, 9.0])], ref, TOLERANCE) is None
    assert diagnose(catalogue, [_call("plus_one", [1.0, 2.0], [2.0, 3.0])], ref, TOLERANCE) is None  # right


def test_engine_ignores_an_idea_that_gives_the_right_answer_on_the_call():
    ref = _reference_module()
    catalogue = _catalogue(_idea("plus_one_again", ("plus_one",), 1.0))  # same as the right answer
    assert diagnose(catalogue, [_call("plus_one", [1.0], [2.0])], ref, TOLERANCE) is None


def test_engine_examines_the_last_call_first():
    ref, catalogue = _reference_module(), _catalogue(_idea("plus_two", ("plus_one",), 2.0),
                                                     _idea("plus_three", ("plus_one",), 3.0))
    calls = [_call("plus_one", [1.0], [3.0]), _call("plus_one", [1.0], [4.0])]
    assert diagnose(catalogue, calls, ref, TOLERANCE).id == "plus_three"


def test_engine_matches_an_exception_only_in_the_function_the_idea_lives_in():
    ref = _reference_module()
    catalogue = _catalogue(_idea("breaks", ("plus_one", "outer"), raises="shapes differ"))
    raised = Raised("ValueError", "shapes differ")
    assert diagnose(catalogue, [_call("plus_one", [1.0], raised=raised)], ref, TOLERANCE).id == "breaks"
    assert diagnose(catalogue, [_call("outer", [1.0], raised=raised)], ref, TOLERANCE) is None
    other = Raised("ValueError", "another message")
    assert diagnose(catalogue, [_call("plus_one", [1.0], raised=other)], ref, TOLERANCE) is None


def test_engine_takes_no_exception_as_evidence_when_ordinary_input_raises_it_too():
    """An idea about what to raise is shown only by an input that must raise, and only if ordinary ones return."""
    ref = _reference_module()
    ref.plus_one = lambda x: (_ for _ in ()).throw(ValueError("negative")) if np.any(np.asarray(x) < 0) \
        else np.asarray(x) + 1.0
    wrong_type = Misconception("wrong_type", "wrong_type — slide 1.", ("plus_one",),  # on the input that must raise
                               shows=lambda seen: seen.raised is not None and seen.raised[0] == "RuntimeError"
                               and bool(np.any(np.asarray(seen.args["x"]) < 0)))
    catalogue = _catalogue(wrong_type)
    raised = Raised("RuntimeError", "shapes")
    alone = [_call("plus_one", [-1.0], raised=raised)]
    assert diagnose(catalogue, alone, ref, TOLERANCE).id == "wrong_type"
    both = [_call("plus_one", [1.0], raised=raised), _call("plus_one", [-1.0], raised=raised)]
    assert diagnose(catalogue, both, ref, TOLERANCE) is None


def test_engine_names_an_idea_only_where_the_students_other_calls_of_the_function_fit_it():
    """plus_two matches the failing call; the student's other calls of plus_one (another check's, passed or not)
    decide: where the idea answers otherwise than the reference, the student must have answered as the idea."""
    ref = _reference_module()
    catalogue = _catalogue(_idea("plus_two", ("plus_one",), 2.0, raises_below=0.0))
    failing = [_call("plus_one", [1.0], [3.0])]

    def named(*others):
        runs = [types.SimpleNamespace(calls=failing), types.SimpleNamespace(calls=list(others)), None]
        return diagnose(catalogue, failing, ref, TOLERANCE, Evidence(runs, ref, TOLERANCE))

    assert named().id == "plus_two"
    assert named(_call("plus_one", [5.0], [7.0])).id == "plus_two"  # the idea's answer again
    assert named(_call("plus_one", [5.0], [6.0])) is None  # right where the idea is wrong: not the student's idea
    assert named(_call("plus_one", [5.0], [0.0])) is None  # a third answer
    assert named(_call("outer", [5.0], [0.0])).id == "plus_two"  # another function's calls are not held against it
    assert named(_call("plus_one", [-1.0], [0.0])) is None  # the idea raises here, and the student returned
    assert named(_call("plus_one", [-1.0], raised=Raised("ValueError", "below"))).id == "plus_two"


def test_a_timeout_names_a_slowness_idea_only_after_the_functions_other_checks_passed():
    slow = Misconception("loops", "loops — slide 24.", ("f",), too_slow=("f.at_scale",))
    catalogue = _catalogue(slow)
    assert diagnose_timeout(catalogue, "f.at_scale", "f", [("f", "passed"), ("g", "failed")]) is slow
    assert diagnose_timeout(catalogue, "f.at_scale", "f", [("f", "passed"), ("f", "failed")]) is None  # a bug
    assert diagnose_timeout(catalogue, "f.at_scale", "f", [("g", "passed")]) is None  # nothing to go on
    assert diagnose_timeout(catalogue, "f.small", "f", [("f", "passed")]) is None  # not a scale check


# ------------------------------------------------------------------ shrinking


class _Run:
    """A fake attempt: fails where `fails(sizes)`, with inputs sized by the sizes."""

    def __init__(self, sizes, failed):
        self.status = "failed" if failed else "passed"
        self.calls = [(Call("f", (np.zeros((*sizes["batch"], sizes["nq"], sizes["nk"], sizes["dk"])),)), Reply())]


def _ample() -> ShrinkBudget:
    """A budget no shrink of at most 100 re-runs spends: for the walk's own rules."""
    return ShrinkBudget(10.0, runs=100)


def test_shrink_walks_down_to_a_local_minimum():
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    fails = lambda d: d["nk"] >= 2 and d["dk"] >= 3  # noqa: E731
    runs = []
    rerun = lambda d: runs.append(d) or _Run(d, fails(d))  # noqa: E731
    shrunk = shrink(start, input_size(_Run(start, True).calls), rerun, ShrinkBudget(10.0))
    assert shrunk.sizes == Sizes.of(batch=(), nq=1, nk=2, dk=3, dv=1)
    assert all(not fails(smaller) for smaller in shrunk.sizes.smaller())
    assert shrunk.runs == len(runs) <= 20


def test_a_failure_that_shows_at_the_least_sizes_is_shrunk_in_one_run():
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    runs = []
    shrunk = shrink(start, input_size(_Run(start, True).calls), lambda d: runs.append(d) or _Run(d, True),
                    ShrinkBudget(10.0))
    assert shrunk.sizes == Sizes.of(batch=(), nq=1, nk=1, dk=1, dv=1) == start.smallest()
    assert runs == [start.smallest()] and shrunk.runs == 1


def test_a_size_the_failure_needs_is_kept_while_the_others_jump_to_their_least():
    # Most bugs need one size above its least (two keys to mix up, dk = 2 for a missing 1/√dk). Once lowering
    # that size alone made the failure go away, the other sizes go to their least together, and that size
    # is not lowered alone again from each new start: six runs where walking every size in turn took nine.
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    runs = []
    shrunk = shrink(start, input_size(_Run(start, True).calls),
                    lambda d: runs.append(d) or _Run(d, d["nk"] >= 2), ShrinkBudget(10.0))
    assert shrunk.sizes == Sizes.of(batch=(), nq=1, nk=2, dk=1, dv=1)
    assert [d for d in runs if d["nk"] == 1 and d != start.smallest()] == [Sizes.of(batch=(), nq=1, nk=1, dk=4, dv=3)]
    assert len(runs) <= 6


@settings(max_examples=200, deadline=None)
@given(axes=st.integers(0, 2), nq=st.integers(1, 5), nk=st.integers(1, 7), dk=st.integers(1, 4),
       dv=st.integers(1, 3))
def test_shrink_finds_the_least_failing_sizes_of_a_failure_that_needs_each_size_at_least_so_big(axes, nq, nk, dk,
                                                                                               dv):
    # A failure that shows whenever every size is at least its threshold has one smallest input: the thresholds.
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    needs = {"nq": nq, "nk": nk, "dk": dk, "dv": dv}
    fails = lambda d: len(d["batch"]) >= axes and all(d[name] >= least for name, least in needs.items())  # noqa: E731
    runs = []
    shrunk = shrink(start, input_size(_Run(start, True).calls), lambda d: runs.append(d) or _Run(d, fails(d)),
                    _ample(), max_runs=100)
    assert shrunk.sizes == Sizes.of(batch=(1,) * axes, **needs)
    assert len(runs) == len(set(runs))


def test_sizes_follow_another_checks_smallest_failure_where_both_name_a_size():
    mine = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    assert mine.following(Sizes.of(nq=1, nk=2)) == Sizes.of(batch=(), nq=1, nk=2, dk=1, dv=1)
    # never larger than here, and a batch keeps as many axes as both have
    assert mine.following(Sizes.of(batch=(1, 3), nq=1, nk=9, dk=2)) == Sizes.of(batch=(1, 3), nq=1, nk=7, dk=2,
                                                                                  dv=1)
    assert mine.following(Sizes.of(batch=(3,), dv=2)) == Sizes.of(batch=(2,), nq=1, nk=1, dk=1, dv=2)
    assert mine.following(Sizes.of(batch=2, nk=(2,))) == mine.smallest()  # not a size of the same kind


def test_a_guess_that_fails_is_the_smallest_failure_in_two_runs():
    # score's smallest failure, tried for the attention built on it: everything at its least passes, the
    # guess fails, and nothing below it does (six runs without the guess, see above).
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    runs = []
    shrunk = shrink(start, input_size(_Run(start, True).calls), lambda d: runs.append(d) or _Run(d, d["nk"] >= 2),
                    ShrinkBudget(10.0), guesses=[Sizes.of(batch=(), nq=1, nk=2, dk=1)])
    assert shrunk.sizes == Sizes.of(batch=(), nq=1, nk=2, dk=1, dv=1)
    assert runs == [start.smallest(), shrunk.sizes]


def test_a_guess_that_passes_costs_at_most_its_run():
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    fails = lambda d: d["nk"] >= 2 and d["dk"] >= 2  # noqa: E731 - a wrong score, in the attention built on it
    guess = Sizes.of(batch=(), nq=1, nk=1, dk=2)  # where the score itself failed: one key hides the scale
    plain, guided = [], []
    size = input_size(_Run(start, True).calls)
    alone = shrink(start, size, lambda d: plain.append(d) or _Run(d, fails(d)), _ample(), max_runs=100)
    helped = shrink(start, size, lambda d: guided.append(d) or _Run(d, fails(d)), _ample(), max_runs=100,
                    guesses=[guess])
    assert helped.sizes == alone.sizes == Sizes.of(batch=(), nq=1, nk=2, dk=2, dv=1)
    # The same walk, with the guess tried early (here the walk reaches those sizes later, and then skips them)
    tried_early = start.following(guess)
    assert guided == [plain[0], tried_early, *(d for d in plain[1:] if d != tried_early)]


@settings(max_examples=200, deadline=None)
@given(nq=st.integers(1, 5), nk=st.integers(1, 7), dk=st.integers(1, 4), guesses=st.lists(
    st.builds(lambda nq, nk, dk, axes: Sizes.of(batch=(1,) * axes, nq=nq, nk=nk, dk=dk), st.integers(1, 6),
              st.integers(1, 8), st.integers(1, 5), st.integers(0, 3)), max_size=3))
def test_guesses_never_keep_shrink_from_the_least_failing_sizes(nq, nk, dk, guesses):
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    fails = lambda d: d["nq"] >= nq and d["nk"] >= nk and d["dk"] >= dk  # noqa: E731
    runs = []
    shrunk = shrink(start, input_size(_Run(start, True).calls), lambda d: runs.append(d) or _Run(d, fails(d)),
                    _ample(), max_runs=100, guesses=guesses)
    assert shrunk.sizes == Sizes.of(batch=(), nq=nq, nk=nk, dk=dk, dv=1)
    assert len(runs) == len(set(runs))


def test_shrink_runs_no_sizes_twice():
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    runs = []
    shrink(start, input_size(_Run(start, True).calls),
           lambda d: runs.append(d) or _Run(d, d["nk"] >= 2 and d["dk"] >= 3), _ample(), max_runs=100)
    assert len(runs) == len(set(runs))


def test_shrink_is_bounded_by_runs_and_by_time():
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    size = input_size(_Run(start, True).calls)
    fails = lambda d: d["nk"] >= 2 and d["dk"] >= 3  # noqa: E731 - takes more than three runs to walk down
    runs = []
    shrunk = shrink(start, size, lambda d: runs.append(d) or _Run(d, fails(d)), ShrinkBudget(10.0), max_runs=3)
    assert len(runs) == 3 and shrunk.runs == 3
    runs.clear()
    assert shrink(start, size, lambda d: runs.append(d) or _Run(d, True), ShrinkBudget(0.0)) is None
    assert runs == []


def test_a_submission_s_checks_share_its_count_of_re_runs():
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    size = input_size(_Run(start, True).calls)
    fails = lambda d: d["nk"] >= 2 and d["dk"] >= 3  # noqa: E731 - takes more than three runs to walk down
    budget, runs = ShrinkBudget(10.0, runs=5), []
    first = shrink(start, size, lambda d: runs.append(d) or _Run(d, fails(d)), budget)
    assert first.runs == 5 == len(runs) and budget.exhausted()
    assert shrink(start, size, lambda d: runs.append(d) or _Run(d, True), budget) is None and len(runs) == 5


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(0.0, 0.008), min_size=1, max_size=8))
def test_where_shrinking_stops_does_not_depend_on_how_long_the_re_runs_take(delays):
    # A submission's own budget, its re-runs slower or faster (as on a loaded machine or a quiet one): the
    # same sizes after the same re-runs, since its count stops an ordinary file, not its clock. At most
    # MAX_RUNS re-runs of 8 ms stay under the time cap; a budget of the old half graded run's 25 ms fails.
    start = Sizes.of(batch=(2, 3), nq=5, nk=7, dk=4, dv=3)
    size = input_size(_Run(start, True).calls)
    fails = lambda d: d["nk"] >= 2 and d["dk"] >= 3  # noqa: E731

    def shrunk_with(delay_of):
        budget, ran = ShrinkBudget.for_submission(15.9), []

        def rerun(d):
            time.sleep(delay_of(len(ran)))
            ran.append(d)
            return _Run(d, fails(d))
        found = shrink(start, size, rerun, budget)
        return (found.sizes, found.runs) if found else None, ran
    assert shrunk_with(lambda i: delays[i % len(delays)]) == shrunk_with(lambda i: 0.0)


def test_shrink_reports_nothing_when_the_inputs_do_not_depend_on_the_sizes():
    start = Sizes.of(batch=(2,), nq=3, nk=3, dk=2, dv=2)
    fixed = _Run(start, True)
    assert shrink(start, input_size(fixed.calls), lambda d: fixed, ShrinkBudget(10.0)) is None


def test_a_failing_randomized_check_is_stored_at_its_smallest_failing_size(grade_once, tmp_path, sandbox, suite,
                                                                          course):
    result = grade_once(_buggy(tmp_path, "score_missing_scale"))
    check = next(t for t in result.tests if t.name == "score.matches_reference")
    example = json.loads(check.example)
    # Missing 1/√dk only shows when √dk ≠ 1: one query, one key, dk = 2 is the smallest failing input.
    assert example["sizes"] == {"batch": [], "nq": 1, "nk": 1, "dk": 2, "dv": 1}
    assert example["shrunk_from"] == {"batch": [2, 3], "nq": 5, "nk": 7, "dk": 6, "dv": 8}
    assert set(example) == {"sizes", "shrunk_from"}  # a hidden check: sizes, never values
    entry = suite.check("score.matches_reference")
    smallest = Sizes.of(**example["sizes"])
    submission = read_submission(_buggy(tmp_path, "score_missing_scale"))
    with Session(sandbox, submission.worker_spec(suite.assignment.module), suite.assignment.limits) as session:
        session.open()
        run = lambda sizes: attempt(entry, Trial(entry.name, check_rng(result.seed, entry.name), suite.reference,  # noqa: E731
                                                 session.call, suite.assignment.tolerance, sizes=sizes))
        assert run(smallest).status == "failed"
        assert [run(d).status for d in smallest.smaller()] == ["passed"] * len(smallest.smaller())


def _judged(grader, sandbox, suite, course, path):
    """(the worker's spec, the student's seed, the checks judged) of the file at `path`, graded in a session of
    its own: what explaining it in another child needs."""
    submission = read_submission(path)
    spec = submission.worker_spec(suite.assignment.module)
    seed = suite.assignment.seed_for(course.seed_salt, submission.student)
    with Session(sandbox, spec, suite.assignment.limits) as session:
        return spec, seed, grader.judge_checks(session, session.open(), seed)


def test_a_slow_start_of_the_fresh_child_leaves_the_example_as_small(grader, tmp_path, sandbox, suite, course):
    # A fresh child takes the re-runs after a run again (grading.confirm). On a loaded machine it can take
    # longer to start than the whole shrinking budget; the start is not a re-run, so the same file must
    # still get its smallest example.
    spec, seed, judged = _judged(grader, sandbox, suite, course, _buggy(tmp_path, "score_missing_scale"))

    def slow_start():
        time.sleep(2 * MAX_SUBMISSION_SECONDS)
        return Session(sandbox, spec, suite.assignment.limits)
    with FreshChild(slow_start) as fresh:
        tests = grader.explain(judged, seed, fresh)
    check = next(t for t in tests if t.name == "score.matches_reference")
    assert json.loads(check.example)["sizes"] == {"batch": [], "nq": 1, "nk": 1, "dk": 2, "dv": 1}


def test_a_failing_file_is_shrunk_in_its_graded_child_without_a_second_start(grader, sandbox, tmp_path,
                                                                              monkeypatch):
    # Every graded call is answered before the first re-run, so the graded child itself takes the re-runs:
    # a failing file costs no second fork and load (docs/performance.md).
    started = []
    spawn = sandbox.spawn
    monkeypatch.setattr(sandbox, "spawn", lambda limits: started.append(limits) or spawn(limits))
    result = grader.grade(read_submission(_buggy(tmp_path, "score_missing_scale")))
    check = next(t for t in result.tests if t.name == "score.matches_reference")
    assert json.loads(check.example)["sizes"] == {"batch": [], "nq": 1, "nk": 1, "dk": 2, "dv": 1}
    assert len(started) == 1


def test_the_re_runs_in_the_graded_child_have_a_budget_of_their_own(grader, tmp_path, sandbox, suite, course):
    # The graded calls may have used up the submission's budget; the example must not depend on that.
    submission = read_submission(_buggy(tmp_path, "score_missing_scale"))
    seed = suite.assignment.seed_for(course.seed_salt, submission.student)
    with Session(sandbox, submission.worker_spec(suite.assignment.module), suite.assignment.limits) as session:
        judged = grader.judge_checks(session, session.open(), seed)
        session.deadline = time.monotonic()  # as if the graded calls had taken the whole budget
        child, failed = GradedChild(session), []

        def call(request):
            try:
                return child.call(request)
            except CallFailed as failure:
                failed.append(f"{request.function}: {failure}")
                raise
        tests = grader.explain(judged, seed, types.SimpleNamespace(open=child.open, call=call))
    assert failed == []  # every re-run was answered
    shrunk = {t.name: json.loads(t.example)["sizes"] for t in tests if t.example and "shrunk_from" in t.example}
    assert shrunk["score.matches_reference"] == {"batch": [], "nq": 1, "nk": 1, "dk": 2, "dv": 1}
    assert "attention.matches_reference" in shrunk


def test_a_file_gets_the_same_examples_when_its_re_runs_are_slower(grader, tmp_path, sandbox, suite, course):
    # score_missing_scale needs the most re-runs of the buggy files. Made 2 ms slower each, as a loaded
    # machine makes them, they still reach the same examples: the count of re-runs decides where shrinking
    # stops, not the clock (a cap of half the graded run's time stopped them at different points).
    spec, seed, judged = _judged(grader, sandbox, suite, course, _buggy(tmp_path, "score_missing_scale"))

    def examples(delay):
        calls = []
        with FreshChild(lambda: Session(sandbox, spec, suite.assignment.limits)) as fresh:
            child = types.SimpleNamespace(open=fresh.open, call=lambda request: calls.append(time.sleep(delay))
                                          or fresh.call(request))
            tests = grader.explain(judged, seed, child)
        return {t.name: json.loads(t.example)["sizes"] for t in tests if "shrunk_from" in t.example}, len(calls)
    quick, calls = examples(0.0)
    assert len(quick) >= 2 and calls >= 10
    assert examples(0.002) == (quick, calls)


def test_a_file_is_shrunk_in_fewer_runs_when_each_function_starts_from_the_sizes_before_it(grader, tmp_path,
                                                                                            sandbox, suite, course):
    # Zeros for the hidden scores fail apply_mask and attention, which calls it, at the same least sizes:
    # explained together, the function after the first is tried there first. Explained one check at a time
    # (nothing found before), the same failures take more re-runs to reach examples no smaller.
    spec, seed, judged = _judged(grader, sandbox, suite, course, _buggy(tmp_path, "mask_fills_zero"))

    def explained(groups):
        calls, tests = [], []
        for group in groups:
            with FreshChild(lambda: Session(sandbox, spec, suite.assignment.limits)) as fresh:
                child = types.SimpleNamespace(open=fresh.open, call=lambda request: calls.append(request)
                                              or fresh.call(request))
                tests += grader.explain(group, seed, child)
        return calls, {t.name: json.loads(t.example)["sizes"] for t in tests if "shrunk_from" in t.example}
    together, shrunk_together = explained([judged])
    apart, shrunk_apart = explained([[one] for one in judged if one.entry.name in shrunk_together])
    assert len(shrunk_together) >= 2 and shrunk_together.keys() == shrunk_apart.keys()
    for name, sizes in shrunk_together.items():
        assert sum(np.prod(v or [1]) for v in sizes.values()) <= sum(np.prod(v or [1]) for v in
                                                                      shrunk_apart[name].values()), name
    assert len(together) < len(apart)


def test_timing_checks_are_not_shrunk(grade_once, tmp_path):
    result = grade_once(_buggy(tmp_path, "score_missing_scale"))
    long = next(t for t in result.tests if t.name == "score.long_sequence")
    assert long.status == "failed" and long.example == ""


def test_hidden_examples_hold_sizes_only_and_public_ones_hold_the_values(grade_once, tmp_path):
    result = grade_once(_buggy(tmp_path, "softmax_no_max_subtraction"))
    for test in result.tests:
        if test.visibility == "hidden" and test.example:
            assert set(json.loads(test.example)) == {"sizes", "shrunk_from"}, test.name
    stable = next(t for t in result.tests if t.name == "softmax.large_scores_stable")
    example = json.loads(stable.example)
    (call,) = example["calls"]
    assert call["function"] == "softmax"
    assert call["args"]["S"]["values"] == [[1000.0, 999.0, -1000.0], [-1000.0, -999.0, -998.0],
                                           [-1000.0, 1000.0, 999.0]]
    assert "nan" in json.dumps(call["returned"]["values"])
    assert example["expected"]["shape"] == [3, 3]


IN_PLACE = {
    "apply_mask": ("def apply_mask(S, allowed):\n    hidden = np.asarray(allowed)\n"
                   "    np.logical_not(hidden, out=hidden)  # the caller's mask, flipped\n"
                   "    return np.where(np.broadcast_to(hidden, np.shape(S)), -np.inf, S)\n"),
    "attention_torch": ("_attention_torch = attention_torch\n\n"
                        "def attention_torch(Q, K, V, allowed=None, scale=None):\n"
                        "    if allowed is not None:\n        allowed.logical_not_()  # the caller's mask, flipped\n"
                        "        allowed = ~allowed\n"
                        "    return _attention_torch(Q, K, V, allowed=allowed, scale=scale)\n"),
}


@pytest.mark.parametrize("function", sorted(IN_PLACE))
def test_a_mask_changed_in_place_costs_its_function_and_is_named(grade_once, tmp_path, function):
    # Right weights, but the caller's mask flipped: its next call would hide the keys it meant to show. Both files
    # had 100/100 when only the scores, queries, keys and values were read back after a call.
    path = tmp_path / f"flips_{function}.py"
    path.write_text(PLAIN.read_text() + "\n\n" + IN_PLACE[function])
    result = grade_once(path)
    failed = [t for t in result.tests if t.status != "passed"]
    assert failed and {t.function for t in failed} <= {function, "attention"}, [t.name for t in failed]
    assert any(t.function == function and "changed its argument allowed in place" in t.message for t in failed)


def test_a_softmax_that_raises_for_its_last_row_only_loses_its_own_point_and_attention_points_at_it(grade_once,
                                                                                                    tmp_path):
    # The all-masked check sits after the loop over the rows: only the last row is looked at. It kept all 21 points
    # of softmax, and attention lost 2 with no word of softmax.
    snippet = ("def softmax(S):\n    S = np.asarray(S)\n    for row in S.reshape(-1, S.shape[-1]):\n"
               "        visible = np.isfinite(row)\n    if not visible.any():\n"
               "        raise ValueError('a query has every key masked')\n"
               "    e = np.exp(S - S.max(axis=-1, keepdims=True))\n    return e / e.sum(axis=-1, keepdims=True)\n")
    path = tmp_path / "last_row_only.py"
    path.write_text(PLAIN.read_text() + "\n\n" + snippet)
    result = grade_once(path)
    failed = {t.name: t for t in result.tests if t.status != "passed"}
    assert set(failed) == {"softmax.all_masked_anywhere", "attention.all_masked_raises"}, sorted(failed)
    assert "look at every row, in every batch entry" in failed["softmax.all_masked_anywhere"].message
    assert "attention calls softmax, which fails its own checks" in failed["attention.all_masked_raises"].message


def test_weights_changed_in_place_cost_additive_score_its_points(grade_once, tmp_path):
    # W_q doubled in place, the answer compensated: right scores, the caller's weights changed. It had 100/100.
    # Every call shows it; it costs one check, the first (grading.changed_arguments).
    snippet = ("_additive_score = additive_score\n\n"
               "def additive_score(Q, K, W_q, W_k, v, b):\n    W_q *= 2.0\n"
               "    return _additive_score(Q, K, W_q / 2.0, W_k, v, b)\n")
    path = tmp_path / "doubles_w_q.py"
    path.write_text(PLAIN.read_text() + "\n\n" + snippet)
    failed = [t for t in grade_once(path).tests if t.status != "passed"]
    assert [t.name for t in failed] == ["additive_score.lecture_formula"], [(t.name, t.message) for t in failed]
    assert "changed its argument W_q in place" in failed[0].message


def test_a_local_named_after_a_graded_function_is_not_a_call_of_it(grade_once, tmp_path):
    """attention_torch's local `score = ...` was read as a call of score, which passes its checks: the idea
    `score_divides_by_dk` was dropped as a coincidence. A local `context = A @ V` had its failures point at a
    failing NumPy context that attention_torch never calls."""
    snippet = tmp_path / "local.py"
    snippet.write_text("def attention_torch(Q, K, V, allowed=None, scale=None):\n"
                       "    if scale is None:\n        scale = 1.0 / Q.shape[-1]\n"
                       "    score = (Q @ K.transpose(-2, -1)) * scale\n"
                       "    if allowed is not None:\n        score = score.masked_fill(~allowed, float('-inf'))\n"
                       "    A = torch.softmax(score, dim=-1)\n    context = A @ V\n    return context, A\n\n\n"
                       "def context(A, V):\n    return np.dot(np.asarray(A), np.asarray(V))\n")
    result = grade_once(compose(tmp_path, "local_names", snippet))
    torch_failed = [t for t in result.tests if t.function == "attention_torch" and t.status != "passed"]
    assert torch_failed and all(t.misconception == "score_divides_by_dk" for t in torch_failed), [
        (t.name, t.misconception) for t in torch_failed]
    assert not any("calls context" in t.message for t in torch_failed), [t.message for t in torch_failed]


def test_a_mask_handled_right_is_not_told_to_keep_its_axes(grade_once, tmp_path):
    """A score that keeps an explicit scale for later calls fails attention's case of a mask with one axis fewer than
    the scores, whose keys it hides rightly: that message had told the student to leave the mask's axes alone. An
    axis inserted after the mask's first hides other keys, and is still told so."""
    kept = grade_once(compose(tmp_path, "kept", SUBMISSIONS / "narrow" / "score_keeps_a_scale_per_dk.py"))
    message = next(t.message for t in kept.tests if t.name == "attention.agrees_with_sdpa")
    assert "one axis fewer than the scores" in message and "fewer axes than the scores" not in message, message
    assert "attention calls score, which fails its own checks" in message, message
    bug = "attention_adds_an_axis_for_one_axis_fewer"
    inserted = grade_once(compose(tmp_path, bug, SUBMISSIONS / "narrow" / f"{bug}.py"))
    message = next(t.withheld or t.message for t in inserted.tests if t.name == "attention.agrees_with_sdpa")
    assert "a mask with fewer axes than the scores lines up with their last axes" in message, message


HALF_PRECISION_FOR_FLOAT32 = '''
def attention_torch(Q, K, V, allowed=None, scale=None):
    # Half precision for float32 tensors, to save memory; float64 ones stay as they are.
    given = Q.dtype
    if given == torch.float32:
        Q, K, V = Q.half(), K.half(), V.half()
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[-1])
    S = (Q @ K.transpose(-2, -1)) * scale
    if allowed is not None:
        S = S.masked_fill(~torch.as_tensor(allowed, dtype=torch.bool), float("-inf"))
    A = torch.softmax(S.float(), dim=-1)
    return (A @ V.float()).to(given), A.to(given)
'''


def test_only_weight_on_a_masked_key_is_told_to_hide_it_with_minus_infinity(grade_once, tmp_path):
    """attention_torch's and attention's float32 case with a query far below 0 and one of its keys masked: a −1e4 fill
    gives the masked key weight and is told to hide it with −∞. Code whose masked keys get none, wrong there for
    another reason (float16, whose largest number is 65504), had been told the same: the message named the fill
    whatever the weights were."""
    case = "the second query's every key 100,000 below 0 and one of them masked"
    advice = "hide masked keys with −∞ whatever the dtype"
    for bug, check in (("torch_fills_minus_1e4_below_float64", "attention_torch.agrees_with_sdpa"),
                       ("attention_fills_minus_1e4_in_float32", "attention.agrees_with_sdpa")):
        filled = grade_once(compose(tmp_path, bug, SUBMISSIONS / "narrow" / f"{bug}.py"))
        message = next(t.message for t in filled.tests if t.name == check)
        assert case in message and advice in message, message
    half = tmp_path / "half_snippet.py"
    half.write_text(HALF_PRECISION_FOR_FLOAT32)
    result = grade_once(compose(tmp_path, "half", half))
    failed = {t.name: t for t in result.tests if t.status != "passed"}
    named = failed["attention_torch.agrees_with_sdpa"]
    assert case in named.message and advice not in named.message, named.message
    assert named.misconception != "masked_with_a_finite_fill", named.misconception
