"""Issue 11: points only for the arithmetic. The suite's mutation-adequacy test.

Every function of the stub is replaced, one at a time, by each degenerate
answer of tests/degenerate.py (zeros, ones, uniform weights, the identity, the
input echoed back, random values, always raising, the NumPy result wrapped as
tensors) inside an otherwise correct submission (plain.py). Graded through the
real sandbox, each must earn 0 points on the function it replaces, and every
function it does not touch must keep all of its points. plain.py's `attention`
is built from score, apply_mask, softmax and context, so it may lose points
with them, as may checks that call attention (`uses`).
"""
from __future__ import annotations

import pytest

from autograder.grading.submission import read_submission
from autograder.sandbox.session import Session

from conftest import PARTS_OF_ATTENTION, PLAIN
from degenerate import RETURNS, VARIANTS, stub_signatures, write_degenerate

CASES = [(function, variant) for function in RETURNS for variant in VARIANTS]
# `make check` grades a diagonal of the table, each function once and each variant at least once; the other
# cases are marked slow, so `make test` grades every one (~70 files through the sandbox).
FAST = {(function, VARIANTS[row % len(VARIANTS)]) for row, function in enumerate(RETURNS)}
# Variants that return arrays of the shape a right answer has, so no check may fail them on shape alone.
SHAPED = {"zeros", "ones", "uniform", "identity", "random", "wrapped"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("degenerate")


def graded(grader, path):
    """Every check's result for one file, through the grader's real sandbox.

    Failures are not explained (no misconception, no shrinking): points do not
    depend on it, and this module grades ~70 files. Loading must succeed, or
    every check would fail and the first assertion below would mean nothing.
    """
    submission = read_submission(path)
    assignment = grader.suite.assignment
    seed = assignment.seed_for(grader.course.seed_salt, submission.student)
    with Session(grader.sandbox, submission.worker_spec(assignment.module), assignment.limits) as session:
        load = session.open()
        assert not load.failure and not load.problems and not load.stopped, (load.failure, load.problems)
        return grader.run_checks(session, load, seed, explain=False)


def test_the_table_covers_every_function_of_the_stub_and_of_the_suite(suite):
    assert list(RETURNS) == list(stub_signatures())
    assert set(RETURNS) == set(suite.functions)
    assert len(CASES) >= 60
    assert {f for f, _ in FAST} == set(RETURNS) and {v for _, v in FAST} == set(VARIANTS)


@pytest.mark.parametrize("function,variant", [
    pytest.param(f, v, id=f"{f}-{v}", marks=() if (f, v) in FAST else pytest.mark.slow) for f, v in CASES])
def test_a_degenerate_answer_earns_nothing_on_its_function_and_costs_no_other(grader, suite, folder,
                                                                             function, variant):
    results = graded(grader, write_degenerate(folder, function, variant))
    own = [r for r in results if r.function == function]
    assert own and [(r.name, r.message) for r in own if r.score > 0] == []
    if variant in SHAPED:  # the table's shapes are right: nothing fails merely on shape
        assert [(r.name, r.message) for r in own if "expected shape" in r.message] == []
    affected = {function} | ({"attention"} if function in PARTS_OF_ATTENTION else set())
    uses = {entry.name: set(entry.check.functions) for entry in suite.checks}
    lost = [(r.name, r.message) for r in results if r.status != "passed" and not uses[r.name] & affected]
    assert lost == []


def test_right_values_outside_autograd_fail_every_attention_torch_check_on_the_gradients(grader, folder):
    """The wrapped NumPy result has C and A right; only the missing gradients can fail it."""
    results = graded(grader, write_degenerate(folder, "attention_torch", "wrapped"))
    torch_checks = [r for r in results if r.function == "attention_torch"]
    assert len(torch_checks) >= 4
    assert all("not connected to the autograd graph" in r.message for r in torch_checks), \
        [(r.name, r.message) for r in torch_checks]


def test_autograd_left_off_by_the_top_level_is_named_not_called_a_detach(grader, folder):
    """A right attention_torch in a file whose demo code ran torch.set_grad_enabled(False): the gradient checks
    fail (as they would in the notebook), and the message names the switch, not a .detach() the student never wrote."""
    path = folder / "grad_off.py"
    path.write_text(PLAIN.read_text() + "\ntorch.set_grad_enabled(False)\n")
    torch_checks = [r for r in graded(grader, path) if r.function == "attention_torch"]
    assert torch_checks and all(r.status != "passed" for r in torch_checks)
    assert all("autograd was already switched off when the call began" in r.message
               and "it was detached" not in r.message for r in torch_checks), [r.message for r in torch_checks]


def test_weights_cut_from_autograd_lose_the_gradient_checks(grader, folder):
    """attention_torch's A must stay connected too: right values copied through NumPy earn no gradient check."""
    path = folder / "weights_wrapped.py"
    path.write_text(PLAIN.read_text() + "\n\n_attention_torch = attention_torch\n\n"
                    "def attention_torch(*args, **kwargs):\n    C, A = _attention_torch(*args, **kwargs)\n"
                    "    return C, torch.from_numpy(A.detach().numpy().copy())\n")
    failed = [r for r in graded(grader, path) if r.status != "passed"]
    assert {r.function for r in failed} == {"attention_torch"} and len(failed) >= 3, [r.name for r in failed]
    assert all("returned value 2 of 2 is not connected to the autograd graph" in r.message for r in failed)


def test_what_one_function_switches_off_reaches_no_other_functions_call(grader, folder):
    """attention switching autograd off (and float64 tensors on, NumPy's overflow to errors) for good costs a right
    attention_torch nothing: each call starts from the state the file's top level left. The function that switches
    autograd off in its own call is told so, not that it detached."""
    leaky = ("\n\n_attention = attention\n\ndef attention(*args, **kwargs):\n"
             "    torch.set_grad_enabled(False)\n    torch.set_default_dtype(torch.float64)\n"
             "    np.seterr(over='raise')\n    return _attention(*args, **kwargs)\n")
    path = folder / "leaky.py"
    path.write_text(PLAIN.read_text() + leaky)
    assert [(r.name, r.message) for r in graded(grader, path) if r.status != "passed"] == []
    path = folder / "own_switch.py"
    path.write_text(PLAIN.read_text() + leaky.replace("attention", "attention_torch"))
    torch_checks = [r for r in graded(grader, path) if r.function == "attention_torch" and r.status != "passed"]
    assert torch_checks and all("autograd was switched off during the call" in r.message for r in torch_checks), \
        [r.message for r in torch_checks]


def test_always_raising_fails_the_error_path_checks_on_the_valid_neighbour(grader, folder):
    for function in ("softmax", "attention"):
        results = graded(grader, write_degenerate(folder, function, "raises"))
        check = next(r for r in results if r.name == f"{function}.all_masked_raises")
        assert check.status == "failed" and f"{function} raises on ordinary input: " in check.message, check.message


def test_a_tensor_changed_in_place_after_autograd_used_it_is_told_so_not_called_detached(grader, folder):
    path = folder / "in_place.py"
    path.write_text(PLAIN.read_text().replace("    A = torch.softmax(S, dim=-1)\n",
                                              "    A = torch.softmax(S, dim=-1)\n    A[A < 0] = 0.0\n"))
    failed = [r for r in graded(grader, path) if r.status != "passed"]
    assert failed and {r.function for r in failed} == {"attention_torch"}
    assert all("changed in place after it was used" in r.message and "Hint:" not in r.message
               and ".detach()" not in r.message for r in failed), [r.message for r in failed]


def test_all_zero_scores_are_not_called_a_wrong_scale(grader, folder):
    """0 × the right grid fits "every entry is one factor × the right one": a factor of 0 is no scale."""
    message = next(r.message for r in graded(grader, write_degenerate(folder, "score", "zeros"))
                   if r.name == "score.shape_rows_are_queries")
    assert "× the right one" not in message and "compares query i with key j" in message, message


def test_nan_weights_do_not_pass_for_rows_that_sum_to_one(grader, folder):
    path = folder / "nan_softmax.py"
    path.write_text(PLAIN.read_text() + "\n\ndef softmax(S):\n    return np.full(np.shape(S), np.nan)\n")
    message = next(r.message for r in graded(grader, path) if r.name == "softmax.rows_sum_to_one")
    assert "do not sum to 1" in message and "it holds NaN" in message, message


def test_a_file_that_breaks_the_libraries_switches_still_has_each_call_graded(grader, folder):
    """np.seterr and torch.set_grad_enabled replaced by the file's own code: restoring the state between calls
    must not stop the worker, which would cost the file every later check."""
    path = folder / "broken_switches.py"
    path.write_text(PLAIN.read_text() + "\n\ndef _refuse(*args, **kwargs):\n    raise RuntimeError('no')\n\n"
                    "np.seterr = _refuse\ntorch.set_grad_enabled = _refuse\ntorch.set_default_dtype = _refuse\n")
    assert [(r.name, r.message) for r in graded(grader, path) if r.status != "passed"] == []
