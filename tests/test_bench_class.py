"""The benchmark's classes (bench/make_class.py): who the students are, and the slow fixtures they draw on.

No grader starts here: the slow fixtures' scores through the sandbox are tests/test_time_limits.py's
(every entry of slow/manifest.yaml); here their values are compared with the reference in this process.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
import torch

from conftest import REFERENCE, ROOT, SUBMISSIONS

sys.path.insert(0, str(ROOT / "bench"))
from make_class import COSTLY, LOOPING, SLOW_MIX, Mix, code_for, plan, write_class  # noqa: E402

FUNCTIONS = ("score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
             "attention", "attention_torch")


def _kinds(rows) -> Counter:
    return Counter(kind for _, kind, _ in rows)


def test_by_default_15_percent_of_the_honest_students_have_one_bug_and_none_is_slow():
    rows = plan(200, ("patch_allclose",), 1)
    assert rows == plan(200, ("patch_allclose",), 1, Mix(15, 0))  # the default is the mix of 15 %
    assert _kinds(rows) == {"correct": 169, "buggy": 29, "attack": 1, "broken": 1}  # 15 % of 198 honest
    assert [student for student, _, _ in rows] == [f"s{n:04d}" for n in range(1, 201)]


@pytest.mark.parametrize(("percent", "buggy"), [(0, 0), (1, 1), (70, 35), (100, 50)])
def test_the_buggy_share_is_of_the_honest_students_and_at_least_one_unless_zero(percent, buggy):
    kinds = _kinds(plan(50, (), 0, Mix(buggy_percent=percent)))
    assert kinds["buggy"] == buggy and kinds["correct"] == 50 - buggy


def test_slow_students_replace_honest_ones_and_mix_hangs_python_loops_and_costly_right_files():
    rows = plan(200, (), 0, Mix(buggy_percent=70, slow_percent=5))
    assert _kinds(rows) == {"hanging": 4, "slow": 4, "costly": 2, "buggy": 133, "correct": 57}  # 70 % of 190
    slow = Counter(fixture for _, kind, fixture in rows if kind in ("hanging", "slow", "costly"))
    assert slow == {"infinite_loop_in_function": 2, "loops_python_lists": 2, "first_call_import": 2,
                    "sleep_in_function": 2, "loops_numpy_indexing": 2}
    assert rows == plan(200, (), 0, Mix(buggy_percent=70, slow_percent=5))  # deterministic


def test_a_right_file_that_costs_half_a_second_is_a_slow_student_never_a_correct_one():
    for percent in (0, 15, 70):
        assert not [row for row in plan(300, (), 0, Mix(percent)) if row[2] in COSTLY]
    assert code_for("costly", COSTLY[0]) == (SUBMISSIONS / "correct" / f"{COSTLY[0]}.py").read_text()


def test_every_slow_student_is_a_fixture_appended_to_plain_and_the_loops_define_all_nine_functions():
    plain = (SUBMISSIONS / "correct" / "plain.py").read_text()
    for kind, name in SLOW_MIX:
        if kind == "costly":
            continue  # a whole right file (the test above)
        code = code_for(kind, name)
        assert code.startswith(plain) and code.endswith((SUBMISSIONS / ("attacks" if kind == "hanging" else kind)
                                                         / f"{name}.py").read_text())
    for name in LOOPING:
        tree = ast.parse((SUBMISSIONS / "slow" / f"{name}.py").read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert set(FUNCTIONS) <= defined, f"{name} does not define {set(FUNCTIONS) - defined}"


def _module(path):
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


@pytest.mark.parametrize("name", LOOPING)
def test_the_python_loops_give_the_references_values_and_gradients(name):
    mine, ref = _module(SUBMISSIONS / "slow" / f"{name}.py"), _module(REFERENCE)
    rng = np.random.default_rng(3)
    for dtype in (np.float64, np.float32):
        Q, K, V = (rng.normal(size=shape).astype(dtype) for shape in ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 3)))
        allowed = rng.random((2, 3, 5, 7)) < 0.6
        allowed[..., 0] = True
        for got, expected in zip(mine["attention"](Q, K, V, allowed, 0.5), ref["attention"](Q, K, V, allowed, 0.5)):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        padding = ref["padding_mask"](np.array([7, 2, 5]), 7)[:, None]  # (3, 1, 1, 7) over (2, 3, 5, 7)
        S = ref["score"](Q, K)
        np.testing.assert_array_equal(mine["apply_mask"](S, padding[1:2]), ref["apply_mask"](S, padding[1:2]))
        args = [rng.normal(size=shape).astype(dtype) for shape in ((4, 4), (6, 3), (5, 4), (5, 3), (5,), (5,))]
        np.testing.assert_allclose(mine["additive_score"](*args), ref["additive_score"](*args), rtol=1e-5)
        tensors = [[torch.tensor(x, requires_grad=True) for x in (Q, K, V)] for _ in range(2)]
        upstream = torch.tensor(rng.normal(size=(2, 3, 5, 3)).astype(dtype))
        outputs = [f(*t, torch.tensor(allowed), 0.6) for f, t in zip((mine["attention_torch"],
                                                                         ref["attention_torch"]), tensors)]
        for C, _ in outputs:
            (C * upstream).sum().backward()
        for got, expected in [*zip(outputs[0], outputs[1]), *((a.grad, b.grad) for a, b in zip(*tensors))]:
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(mine["causal_mask"](4, 7), ref["causal_mask"](4, 7))
    assert mine["causal_mask"](5).dtype == np.bool_
    with pytest.raises(ValueError):
        mine["softmax"](np.array([[0.3, -np.inf], [-np.inf, -np.inf]]))


def test_the_command_writes_the_mix_it_is_given_and_refuses_a_share_over_100(tmp_path):
    command = [sys.executable, str(ROOT / "bench" / "make_class.py"), str(tmp_path / "class"), "--students", "20",
               "--layout", "flat", "--broken", "0", "--buggy-percent", "50", "--slow-percent", "20"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    roster = json.loads((tmp_path / "class" / "roster.json").read_text())
    assert Counter(row["kind"] for row in roster) == {"hanging": 2, "slow": 1, "costly": 1, "buggy": 8, "correct": 8}
    assert len(list((tmp_path / "class").glob("s*.*"))) == 20
    refused = subprocess.run([*command[:-1], "101"], capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 2 and "--slow-percent is a percentage" in refused.stderr


def test_a_class_is_written_again_from_scratch(tmp_path):
    write_class(tmp_path / "class", 5, "flat", (), 0, mix=Mix(buggy_percent=100))
    rows = write_class(tmp_path / "class", 3, "flat", (), 0, mix=Mix(buggy_percent=0))
    assert _kinds(rows) == {"correct": 3}
    assert sorted(p.stem for p in (tmp_path / "class").glob("s*.*")) == ["s0001", "s0002", "s0003"]
