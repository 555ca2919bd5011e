"""Issue 6: the in-kernel runner behind the notebook's test cells gives the sandbox's verdicts.

nbgrader runs tests inside the student's kernel; autograder.inkernel runs
our checks there through the sandbox's own message code. These tests run it
in this process (as a kernel would) and compare it with the real sandbox.
"""
from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.authoring.checks import UNENDING_HINT
from autograder.grading.course import CourseError
from autograder.grading.manifest import MANIFEST_FILE, manifest_data, manifest_text
from autograder.grading.suite import PUBLIC_FILE
from autograder.nbgrader.inkernel import ChecksFailed, check_function, grade_function, nbgrader_student, run_checks

from conftest import PLAIN, REFERENCE, ROOT, STUB, SUBMISSIONS, compose, manifest, repository_env

BUGGY = SUBMISSIONS / "buggy"

# A sample that reaches every status and every kind of reply: passes, wrong values, a raise inside the
# student's code (error), NotImplementedError, a detached tensor (no gradient), an input changed in place,
# overflow warnings, and float32 kept as float32. tests/test_nbgrader_consistency.py covers every fixture.
_PART_POINTER = re.compile(r"\. \w+ calls [\w, ]+, which fails? (its|their) own checks: .*$")
SAMPLE = {
    "reference": lambda tmp: REFERENCE,
    "stub": lambda tmp: STUB,
    "float32_kept": lambda tmp: SUBMISSIONS / "correct" / "float32_kept.py",
    "context_transposed_weights": lambda tmp: compose(tmp, "ctw", BUGGY / "context_transposed_weights.py"),
    "softmax_no_max_subtraction": lambda tmp: compose(tmp, "snm", BUGGY / "softmax_no_max_subtraction.py"),
    "torch_detached": lambda tmp: compose(tmp, "td", SUBMISSIONS / "buggy" / "torch_detached.py"),
    "apply_mask_modifies_input": lambda tmp: compose(tmp, "ami", BUGGY / "apply_mask_modifies_input.py"),
}


def namespace_of(path: Path) -> dict:
    """The globals a kernel would hold after running the file (named like the sandbox names it)."""
    namespace = {"__name__": "attention", "__file__": "attention.py"}
    exec(compile(path.read_text(), "attention.py", "exec"), namespace)
    return namespace


def in_kernel(course, suite, path: Path, student: str) -> list:
    namespace = namespace_of(path)
    return [result for function in suite.functions
            for result in run_checks(course, suite, function, namespace, student).results]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the buggy softmax overflows, as it should
@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_same_verdicts_and_messages_as_the_sandbox(course, suite, grade, tmp_path, name):
    """The same, but for what only the whole file's results show: a test cell checks one function, so it cannot
    say that a function this one calls fails its own checks (grading.loading.with_failing_parts)."""
    path = SAMPLE[name](tmp_path)
    sandboxed = grade(path, "alice")
    kernel = in_kernel(course, suite, path, "alice")
    # A hidden check's message in full (`withheld`): a kernel has no file to vouch for an exception's place, so the
    # student's message withholds it there (grading.places), where the sandbox's shows a place the file has.
    assert sorted((t.name, t.status, t.score, t.withheld or t.message) for t in kernel) == \
           sorted((t.name, t.status, t.score, t.withheld or _PART_POINTER.sub("", t.message)) for t in sandboxed.tests)
    if name not in ("reference", "float32_kept"):
        assert sum(t.score for t in kernel) < suite.max_score  # the sample does exercise failures


@pytest.mark.slow  # a subprocess or a sandbox of its own for one test: make test runs it
def test_student_output_and_warnings_stay_out_of_the_cell(tmp_path):
    # In a fresh interpreter, as in a kernel (pytest would record the warnings itself).
    source = PLAIN.read_text() + (SUBMISSIONS / "buggy" / "softmax_no_max_subtraction.py").read_text() + '''

import sys
def context(A, V):
    print("debugging context")
    print("to stderr", file=sys.stderr)
    return np.asarray(A) @ np.asarray(V)
'''
    (tmp_path / "attention.py").write_text(source)
    script = """
import json
from autograder.grading.course import load_course
from autograder.nbgrader.inkernel import run_checks
from autograder.grading.suite import load_suite
course = load_course(COURSE)
suite = load_suite(course, "w07_attention")
namespace = {}
exec(compile(open("attention.py").read(), "attention.py", "exec"), namespace)
ran = {f: run_checks(course, suite, f, namespace, "alice") for f in ("softmax", "context")}
print(json.dumps({f: [r.output, r.score, r.max_score] for f, r in ran.items()}))
""".replace("COURSE", repr(str(ROOT / "course.yaml")))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=repository_env())
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # nbgrader scores a test cell 0 when anything reaches stderr
    ran = json.loads(done.stdout)
    assert "RuntimeWarning: overflow encountered in exp" in ran["softmax"][0]
    assert "debugging context" in ran["context"][0] and "to stderr" in ran["context"][0]
    assert ran["context"][1] == ran["context"][2]
    assert ran["softmax"][1] < ran["softmax"][2]


def test_a_hanging_function_is_stopped_at_its_limit_and_not_called_again(course, suite):
    quick = dataclasses.replace(suite.assignment.limits, call_seconds=0.5)
    short = dataclasses.replace(suite, assignment=dataclasses.replace(suite.assignment, limits=quick))
    namespace = namespace_of(PLAIN)
    exec("import time\ndef causal_mask(n_q, n_k=None):\n    time.sleep(1000)\n", namespace)
    started = time.monotonic()
    ran = run_checks(course, short, "causal_mask", namespace, "alice")
    assert time.monotonic() - started < 3
    assert ran.results[0].status == "timeout"
    assert ran.results[0].message == f"causal_mask did not return within 0.5 s and was stopped; {UNENDING_HINT}"
    # Stopped on small work, it is called once more (it may hang on that input alone), and after a second stop no
    # more (grading.stopped_functions).
    assert all(r.status == "timeout" for r in ran.results)
    assert [r.message.startswith("not run: ") for r in ran.results][:2] == [False, False]
    assert all(r.message.startswith("not run: ") for r in ran.results[2:])
    assert ran.score == 0


def test_a_function_that_swallows_the_alarm_still_times_out(course, suite):
    quick = dataclasses.replace(suite.assignment.limits, call_seconds=0.3)
    short = dataclasses.replace(suite, assignment=dataclasses.replace(suite.assignment, limits=quick))
    namespace = namespace_of(PLAIN)
    exec("import time\ndef padding_mask(lengths, n_k):\n    try:\n        time.sleep(1000)\n"
         "    except BaseException:\n        time.sleep(0.2)\n    return None\n", namespace)
    handler = signal.getsignal(signal.SIGALRM)
    ran = run_checks(course, short, "padding_mask", namespace, "alice")
    assert {r.status for r in ran.results} == {"timeout"}
    # Nothing is left to ring later inside the kernel's own code, which would kill the kernel.
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == handler
    time.sleep(0.5)


def test_a_missing_function_fails_its_checks_with_the_graders_message(course, suite):
    namespace = namespace_of(PLAIN)
    del namespace["context"]
    ran = run_checks(course, suite, "context", namespace, "alice")
    expected = "your file does not define context(); keep the function names of the stub"
    assert {r.message for r in ran.results} == {expected}
    assert ran.score == 0


@pytest.fixture
def released_folder(tmp_path, course, suite):
    """A folder as students get it: the public checks and the manifest, nothing else."""
    folder = tmp_path / "w07_attention"
    folder.mkdir()
    (folder / PUBLIC_FILE).write_text((suite.assignment.source_dir / PUBLIC_FILE).read_text())
    public = [e.name for e in suite.checks if e.visibility == "public"]
    (folder / MANIFEST_FILE).write_text(manifest_text(manifest_data(suite.assignment, public)))
    return folder


def test_check_function_prints_a_table_and_fails_the_cell(released_folder, capsys, monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    namespace = namespace_of(compose(released_folder, "x", SUBMISSIONS / "buggy" / "causal_hides_diagonal.py"))
    with pytest.raises(ChecksFailed, match="1 of 1 public checks of causal_mask failed(.|\n)*"
                                           "causal_mask.lower_triangle: causal_mask\\(4\\)\\[0, 0\\] is False"):
        check_function("causal_mask", namespace, released_folder)
    table = capsys.readouterr().out
    assert "FAILED  causal_mask.lower_triangle" in table and "causal_mask.rectangular" not in table
    check_function("score", namespace, released_folder)  # a correct function passes quietly


def test_check_function_does_not_fail_the_cell_while_nbgrader_autogrades(released_folder, monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")  # the hidden part decides the points there
    namespace = namespace_of(STUB)
    assert check_function("softmax", namespace, released_folder) is None
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")  # but `nbgrader validate` must see the failure
    with pytest.raises(ChecksFailed):
        check_function("softmax", namespace, released_folder)


def test_grade_function_scores_the_nbgrader_student_with_the_graders_seed(course, suite, grade, tmp_path,
                                                                          monkeypatch, capsys):
    path = compose(tmp_path, "bob", SUBMISSIONS / "buggy" / "softmax_over_queries.py")
    workdir = tmp_path / "autograded" / "bob" / "w07_attention"
    workdir.mkdir(parents=True)
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("AUTOGRADER_COURSE", str(ROOT / "course.yaml"))
    namespace = namespace_of(path)
    points = grade_function("w07_attention", "softmax", namespace)
    sandboxed = grade(path, "bob")
    assert points == sandboxed.by_function()["softmax"][0] < sandboxed.by_function()["softmax"][1]
    hidden_failure = next(t for t in sandboxed.tests if t.function == "softmax" and t.visibility == "hidden"
                          and t.status == "failed")
    assert hidden_failure.message in capsys.readouterr().out  # same seed, so the same random inputs


def test_the_student_is_the_folder_above_the_notebooks(tmp_path):
    assert nbgrader_student("w07_attention", tmp_path / "autograded" / "s0042" / "w07_attention") == "s0042"
    with pytest.raises(CourseError, match="nbgrader autograde"):
        nbgrader_student("w07_attention", tmp_path / "somewhere")


@pytest.mark.parametrize("bug", ["attention_masks_after_softmax", "attention_exp_overflows"])
def test_a_bug_only_large_scores_show_fails_for_every_input_set(course, suite, tmp_path, bug):
    """Weights masked after the softmax gave 0/0 only where a masked key happened to score 745 above the visible
    ones: 2 of the 16 input sets missed it, and the same file scored 97 or 100 by the student's id. The masked key
    is now put far above them, in every set. Every set is met among these ids (seeds.student_seed). Each file loses
    the checks its manifest entry names (exp without the maximum also fails the float32 query far below 0)."""
    from autograder.authoring.seeds import student_seed

    namespace = namespace_of(compose(tmp_path, bug, SUBMISSIONS / "narrow" / f"{bug}.py"))
    sets = course.assignment(suite.assignment.name).input_sets
    ids, seen = [], set()
    for number in range(400):
        student = f"s{number:04d}"
        seed = student_seed(course.seed_salt, suite.assignment.name, student, sets)
        if seed not in seen:
            seen.add(seed)
            ids.append(student)
    assert len(ids) == sets
    case = manifest("narrow")[bug]
    expected = {case["check"], *case.get("also", ())}
    for student in ids:
        ran = run_checks(course, suite, "attention", namespace, student)
        failed = {r.name for r in ran.results if r.status != "passed"}
        assert failed == expected, (student, failed)


def test_an_argument_returned_itself_costs_its_check_in_the_kernel_too(course, suite, tmp_path):
    """apply_mask returning S itself for a mask that hides no key: the answer is right, and the in-process call
    (nbgrader's kernel) marks the array returned as a sandboxed worker does, so S read back holds the mark."""
    bug = "apply_mask_returns_scores_when_all_visible"
    namespace = namespace_of(compose(tmp_path, bug, SUBMISSIONS / "narrow" / f"{bug}.py"))
    ran = run_checks(course, suite, "apply_mask", namespace, "alice")
    failed = {r.name: r.message for r in ran.results if r.status != "passed"}
    assert list(failed) == ["apply_mask.input_unchanged"], failed
    assert "apply_mask returned S itself" in failed["apply_mask.input_unchanged"]
    right = run_checks(course, suite, "apply_mask", namespace_of(PLAIN), "alice")
    assert all(r.status == "passed" for r in right.results), [(r.name, r.message) for r in right.results]
