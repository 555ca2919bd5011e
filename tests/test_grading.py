"""Issue 2: the reference, the stub, correct variants and one-bug variants, graded end to end."""
from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections import Counter

import nbformat
import pytest

from autograder.authoring.seeds import class_seed, student_seed
from autograder.grading import plan as plan_module
from autograder.grading.grader import Grader
from autograder.grading.loading import undefined_messages
from autograder.grading.plan import plan_check
from autograder.grading.submission import read_submission
from autograder.sandbox.load_report import LoadReport

from conftest import PARTS_OF_ATTENTION, PLAIN, REFERENCE, STUB, SUBMISSIONS, compose, manifest, run_cli

BUGGY = manifest("buggy")
CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py"))


def test_reference_gets_full_marks(grade_once, suite):
    result = grade_once(REFERENCE, "reference")
    failing = [(t.name, t.message) for t in result.tests if t.status != "passed"]
    assert failing == []
    assert result.score == result.max_score == suite.max_score == 100


def test_a_function_that_changes_the_callers_arrays_loses_one_check_for_it(grade_once, tmp_path):
    """score scales Q in place: the caller's queries are changed, in every call of score and of attention, which
    calls score. The arrays are read back from the grader's own memory after each call, and the change costs each
    function one check, the one of fewest points that showed it and passed on its values (grading.changed_arguments),
    not every check it showed in, nor whichever showed it first (attention's first is worth 5)."""
    path = tmp_path / "scales_q_in_place.py"
    path.write_text(PLAIN.read_text() + """

def score(Q, K, scale=None):
    Q = np.asarray(Q)
    Q *= 1.0 / math.sqrt(Q.shape[-1]) if scale is None else scale
    return Q @ np.swapaxes(np.asarray(K), -1, -2)
""")
    failed = {t.name: t.message for t in grade_once(path).tests if t.status != "passed"}
    assert set(failed) == {"score.lecture_example", "attention.changed_query"}, failed
    assert all("changed its argument Q in place" in message for message in failed.values()), failed


def test_an_exception_says_what_the_call_was_given(grade_once, tmp_path):
    """apply_mask indexes S with a mask that only broadcasts to it: NumPy's IndexError names axes and sizes, and the
    message adds the arguments by name, dtype and shape, so the student sees it was the (B, 1, 1, Nk) mask."""
    path = tmp_path / "boolean_index.py"
    path.write_text(PLAIN.read_text() + """

def apply_mask(S, allowed):
    out = np.array(S, dtype=float)
    out[~np.asarray(allowed, dtype=bool)] = -np.inf
    return out
""")
    raised = [t.message for t in grade_once(path).tests if t.status == "error" and t.function == "apply_mask"]
    assert raised and all(re.search(r"\(given S: a float(32|64) array of shape \(\d+(, \d+)*\), allowed: a bool "
                                    r"array of shape \(\d+(, \d+)*\)\)$", message) for message in raised), raised


def test_stub_gets_zero_with_one_not_implemented_line_per_function(grade_once, suite):
    result = grade_once(STUB, "stub")
    assert result.score == 0
    for function in suite.functions:
        messages = {t.message for t in result.tests if t.function == function}
        assert len(messages) == 1 and messages.pop().startswith(
            f"{function} is not implemented yet (it raises NotImplementedError); if you did write it, delete the "
            "template's `raise NotImplementedError(...)` line"), function
    assert not any("Traceback" in t.message for t in result.tests)


@pytest.mark.slow  # a command-line round trip: the messages are checked in-process above, the command by the JSON test
def test_stub_through_the_command_line_prints_no_traceback(tmp_path):
    # A copy named for a student: the stub's own file, named as the module in the assignment's folder, names no
    # student, and is refused (discover: a file named as the module is its folder's student's).
    shutil.copy(STUB, tmp_path / "stub.py")
    done = run_cli("grade", "w07_attention", tmp_path / "stub.py", "--db", tmp_path / "grades.db")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "stub: 0 / 100 points" in done.stdout
    assert "softmax is not implemented yet" in done.stdout


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_variants_get_full_marks(grade_once, path):
    assert len(CORRECT) >= 6
    result = grade_once(path)
    assert [(t.name, t.message) for t in result.tests if t.status != "passed"] == []


@pytest.mark.parametrize("student", ["s0001", "s0002", "s0003", "s0004", "s0005", "s0006", "s0007", "s0008"])
@pytest.mark.parametrize("style", ["float32_throughout", "float32_cast_back", "float32_scores",
                                   "float32_scores_then_scaled", "float32_additive_then_v", "float32_logsumexp"])
def test_an_answer_computed_in_float32_is_held_to_float32s_tolerance_under_every_seed(grade_once, student, style):
    """float64 inputs, float32 answers: float64's tolerance would pass or fail them by where each student's random
    values happen to round (85 to 98 points for the same file under nine ids, before Tolerance.coarser; 88 to 96
    for answers cast back to float64, before holds_float32_only). float32 scores under a float64 softmax hold no
    float32 numbers: their weights are held to their scores' rounding (97 or 100 by the student id, before). Nor do
    float32 products multiplied by a float64 number (the scale, or v): score's and additive_score's answers are held
    to float64's tolerance plus float32's rounding of their products (95 to 97, and 93 to 100, before)."""
    result = grade_once(SUBMISSIONS / "correct" / f"{style}.py", student)
    assert [(t.name, t.message) for t in result.tests if t.status != "passed"] == []


# Four ids whose input sets differ (the test checks it): s02 and s04 are ids under which logsumexp.py had lost
# attention_torch.agrees_with_sdpa, s01 and s06 ids under which it had kept it.
INPUT_SET_IDS = ("s01", "s02", "s04", "s06")


def test_the_ids_pick_different_input_sets(course, suite):
    seeds = {suite.assignment.seed_for(course.seed_salt, student) for student in INPUT_SET_IDS}
    assert len(seeds) == len(INPUT_SET_IDS), seeds


@pytest.mark.parametrize("student", INPUT_SET_IDS)
@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_variants_get_full_marks_under_every_input_set(grade_once, path, student):
    """Right code keeps full marks whatever input set its id picks: log-space code (torch.logsumexp) scored 92 under
    11 of 16 ids, where a float32 query 100,000 below 0 rounds its log-sum-exp by 0.008, and its weights were held
    to float32's flat tolerance instead of that rounding."""
    result = grade_once(path, student)
    assert [(t.name, t.message) for t in result.tests if t.status != "passed"] == []


HALF_PRECISION = '''
def softmax(S):
    S = np.asarray(S, dtype=np.float16)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    if not np.isfinite(S).any(axis=-1).all():
        raise ValueError("a row has every key masked")
    return e / e.sum(axis=-1, keepdims=True)


def attention_torch(Q, K, V, allowed=None, scale=None):
    Q, K, V = Q.bfloat16(), K.bfloat16(), V.bfloat16()
    S = Q @ K.transpose(-2, -1) * (Q.shape[-1] ** -0.5 if scale is None else scale)
    if allowed is not None:
        S = S.masked_fill(~allowed, float("-inf"))
    A = torch.softmax(S, dim=-1)
    return A @ V, A
'''


@pytest.mark.parametrize("student", ["s0001", "s0002", "s0003"])
def test_a_half_precision_answer_fails_the_same_checks_under_every_seed_and_says_why(grade_once, tmp_path, student):
    """float16 and bfloat16 keep about 3 digits, which no check's tolerance is made for: held to float32's, they
    passed or failed by each student's values (43 to 51 points for one file); now they fail, every time, saying so."""
    snippet = tmp_path / "half.py"
    snippet.write_text(HALF_PRECISION)
    result = grade_once(compose(tmp_path, "half_precision", snippet), student)
    lost = {t.name: t.message for t in result.tests if t.status != "passed"}
    assert {name.split(".")[0] for name in lost} == {"softmax", "attention", "attention_torch"}, lost
    half = {t.name for t in result.tests if t.function in ("softmax", "attention_torch")}
    assert set(lost) >= half, half - set(lost)
    assert "has dtype float16; compute in float32 or float64" in lost["softmax.lecture_example"]
    # its rows do sum to 1: the dtype is the fault, not the softmax's rule
    rows = lost["softmax.rows_sum_to_one"]
    assert rows.endswith("too few for the checks' tolerances"), rows
    assert "is a torch tensor of dtype=torch.bfloat16" in lost["attention_torch.lecture_example"]


def test_a_sparse_tensor_is_told_to_be_dense_not_given_precision_advice(grade_once, tmp_path):
    snippet = tmp_path / "sparse.py"
    snippet.write_text("\n_attention_torch = attention_torch\n\ndef attention_torch(*args, **kwargs):\n"
                       "    C, A = _attention_torch(*args, **kwargs)\n    return C, A.to_sparse()\n")
    result = grade_once(compose(tmp_path, "sparse_weights", snippet))
    lost = [t.message for t in result.tests if t.status != "passed"]
    assert lost and all("layout=torch.sparse_coo" in m and "return a dense one (.to_dense())" in m
                        and "half precision" not in m for m in lost), lost


def test_an_attention_torch_that_raises_is_told_the_shapes_of_the_tensors_it_was_given(grade_once, tmp_path):
    path = tmp_path / "torch_all_axes.py"
    path.write_text(PLAIN.read_text().replace("S = (Q @ K.transpose(-2, -1)) * scale", "S = (Q @ K.T) * scale"))
    raised = [t.message for t in grade_once(path).tests if t.status == "error"]
    assert raised and all("attention_torch raised RuntimeError" in m and "(given Q: a float64 tensor of shape (" in m
                          for m in raised), raised


@pytest.mark.parametrize("dtype", ["float16", "complex64"])
def test_every_check_of_scores_refuses_a_dtype_it_cannot_compare(grade_once, tmp_path, dtype):
    # score.shape_rows_are_queries compared the entries with np.isclose before asking for a floating dtype, so
    # the right scores as float16 or complex64 passed it (2 points) while every other check of score refused them.
    snippet = tmp_path / "cast.py"
    snippet.write_text(f"_right_score = score\n\n\ndef score(Q, K, scale=None):\n"
                       f"    return _right_score(Q, K, scale).astype(np.{dtype})\n")
    result = grade_once(compose(tmp_path, f"score_{dtype}", snippet))
    checks = {t.name: t for t in result.tests if t.function == "score"}
    assert all(t.status != "passed" for t in checks.values()), [n for n, t in checks.items() if t.status == "passed"]
    assert f"has dtype {dtype}" in checks["score.shape_rows_are_queries"].message


SEED_SENSITIVE_BUGS = {
    "padding_mask.lecture_lengths": '''
def padding_mask(lengths, n_k):
    lengths = np.asarray(lengths)
    return (np.arange(lengths.max())[None, :] < lengths[:, None])[:, None, :]  # as wide as the longest, not n_k
''',
    "softmax.large_scores_stable": '''
def softmax(S):
    S = np.asarray(S)
    if not np.isfinite(S).any(axis=-1).all():
        raise ValueError("a row has every key masked")
    e = np.exp(S - S[..., :1])  # the row's first score, not its max
    return e / e.sum(axis=-1, keepdims=True)
''',
}


@pytest.mark.parametrize("check", sorted(SEED_SENSITIVE_BUGS))
@pytest.mark.parametrize("student", ["s0001", "s0002", "s0003", "s0004", "s0007", "s0009"])
def test_a_bug_a_public_check_is_about_fails_it_under_every_seed(grade_once, tmp_path, check, student):
    """Bugs that the public checks' changed cases caught only in some students' orders or lengths (about half of
    them) fail the check for every student: the fixed cases now hold what catches them."""
    snippet = tmp_path / "bug.py"
    snippet.write_text(SEED_SENSITIVE_BUGS[check])
    result = grade_once(compose(tmp_path, check.replace(".", "_"), snippet), student)
    assert next(t.status for t in result.tests if t.name == check) != "passed"


LOOKUPS = sorted((SUBMISSIONS / "lookups").glob("*.py"))


@pytest.mark.parametrize("path", LOOKUPS, ids=[p.stem for p in LOOKUPS])
@pytest.mark.parametrize("student", ["s0001", "s0002", "s0003"])
def test_an_answer_that_looks_up_the_printed_numbers_earns_nothing(grade_once, path, student):
    """Every fixed public case is asked again reordered or scaled, in each student's own way (public_checks.key_order
    and scale_factor): the worked example's printed numbers, returned whatever the inputs or when the shapes are the
    example's, earned 23 and 26 points before; and every public check asks a case of the student's own too
    (own_counts, own_memory): a lookup that undid the reordering and the scaling earned 34."""
    result = grade_once(path, student)
    assert result.score == 0, [t.name for t in result.tests if t.status == "passed"]


def _may_fail(check_functions: tuple, bug_in: str) -> bool:
    """A check may lose points if it calls the buggy function, or attention built on it."""
    affected = {bug_in} | ({"attention"} if bug_in in PARTS_OF_ATTENTION else set())
    return bool(affected & set(check_functions))


@pytest.mark.parametrize("bug", sorted(BUGGY))
def test_one_bug_costs_only_its_function(grade_once, suite, tmp_path, bug):
    assert len(BUGGY) >= 15
    bug_in = BUGGY[bug]["function"]
    result = grade_once(compose(tmp_path, bug, SUBMISSIONS / "buggy" / f"{bug}.py"))
    own = [t for t in result.tests if t.function == bug_in and t.status != "passed"]
    assert own, f"{bug}: no check of {bug_in} failed"
    functions = {entry.name: entry.check.functions for entry in suite.checks}
    collateral = [(t.name, t.message) for t in result.tests
                  if t.status != "passed" and not _may_fail(functions[t.name], bug_in)]
    assert collateral == []


def test_same_submission_graded_twice_gives_the_same_result(grade, tmp_path):
    path = compose(tmp_path, "twice", SUBMISSIONS / "buggy" / "softmax_over_queries.py")
    first, second = grade(path), grade(path)
    assert first.seed == second.seed
    assert [(t.name, t.status, t.score, t.message) for t in first.tests] == \
           [(t.name, t.status, t.score, t.message) for t in second.tests]


def _failures(result) -> dict:
    return {t.name: t.message for t in result.tests if t.visibility == "hidden" and t.status != "passed"}


def test_seeds_differ_between_input_sets_and_change_the_inputs(grade, tmp_path):
    path = compose(tmp_path, "seeded", SUBMISSIONS / "buggy" / "softmax_over_queries.py")
    alice, bob = grade(path, "alice"), grade(path, "bob")  # sets 14 and 10 of course.yaml's 16
    assert alice.seed != bob.seed
    assert _failures(alice).keys() == _failures(bob).keys()
    assert _failures(alice) != _failures(bob)  # same bug, different random inputs


def test_students_of_one_input_set_get_its_inputs_planned_once(course, suite, sandbox, tmp_path, monkeypatch):
    """bob and ivan share set 10 of course.yaml's 16: the same calls, so the same bug gets the same messages,
    and the reference plans the set's checks for the first of them only."""
    planned = []
    monkeypatch.setattr(plan_module, "plan_check", lambda *args: planned.append(args[0].name) or plan_check(*args))
    grader = Grader(course, suite, sandbox)
    path = compose(tmp_path, "seeded", SUBMISSIONS / "buggy" / "softmax_over_queries.py")
    bob = grader.grade(read_submission(path, "bob"))
    first = len(planned)
    ivan = grader.grade(read_submission(path, "ivan"))
    assert bob.seed == ivan.seed and _failures(bob) and _failures(bob) == _failures(ivan)
    assert first == len(suite.checks) and len(planned) == first  # every check planned for bob, none for ivan
    alice = grader.grade(read_submission(path, "alice"))
    assert alice.seed != bob.seed and len(planned) > first  # another set is planned anew


def test_input_sets_spread_a_class_evenly_and_depend_on_the_salt():
    seeds = Counter(student_seed("salt", "hw", f"s{i:04d}", 16) for i in range(1600))
    assert len(seeds) == 16 and min(seeds.values()) > 60  # 100 a set on average
    assert class_seed("salt", "hw") not in seeds  # the class-wide cases draw from a stream of their own
    assert not seeds.keys() & {student_seed("another salt", "hw", f"s{i:04d}", 16) for i in range(1600)}
    assert len({student_seed("salt", "hw", f"s{i:04d}", 100_000) for i in range(1600)}) > 1580


def test_input_sets_one_gives_every_student_the_same_inputs(course, suite, sandbox, tmp_path):
    one = dataclasses.replace(suite, assignment=dataclasses.replace(suite.assignment, input_sets=1))
    grader = Grader(course, one, sandbox)
    path = compose(tmp_path, "seeded", SUBMISSIONS / "buggy" / "softmax_over_queries.py")
    alice, bob = (grader.grade(read_submission(path, name)) for name in ("alice", "bob"))
    assert alice.seed == bob.seed and _failures(alice) == _failures(bob)


def test_notebook_with_magics_and_shell_lines_is_graded(grade, tmp_path):
    code = PLAIN.read_text()
    imports, rest = code.split("\n\n\ndef score", 1)
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Week 7"),
        nbformat.v4.new_code_cell("%matplotlib inline\n!pip install nothing\n" + imports),
        # Jupyter's display() before the definitions in the same cell: they must still be defined.
        nbformat.v4.new_code_cell("display('shown first')\ndef score" + rest),
        nbformat.v4.new_code_cell("%%time\nprint(softmax(np.zeros((1, 2))))"),
        nbformat.v4.new_code_cell("%%bash\necho not python"),
        nbformat.v4.new_code_cell("undefined_name + 1"),
        nbformat.v4.new_code_cell("raise RuntimeError('a demo cell ran')", metadata={"tags": ["demo"]}),
    ])
    path = tmp_path / "nb_student.ipynb"
    nbformat.write(notebook, path)
    result = grade(path)
    assert result.score == 100
    assert any("code cell 5 raised NameError" in note for note in result.notes)
    assert not any("a demo cell ran" in note for note in result.notes)  # cells tagged demo are not run
    assert "[0.5 0.5]" in result.printed
    assert "'shown first'" in result.printed


def test_long_output_keeps_its_beginning_and_its_end(grade, course, tmp_path):
    """What a process prints last (a traceback's error line) says why it failed: output beyond the limit
    loses its middle, not its end, and what is kept stays within the limit."""
    filler = "".join(f"filler line {n:05d} of what a training loop prints\n" for n in range(3000))
    path = tmp_path / "talkative.py"
    path.write_text(PLAIN.read_text() + "\n\nprint('FIRST LINE')\nprint(" + repr(filler) + ", end='')\n"
                    "print('LAST LINE')\n")
    result = grade(path)
    assert result.score == 100
    limit = course.assignment("w07_attention").limits.output_kib * 1024
    assert result.printed.startswith("FIRST LINE") and result.printed.endswith("LAST LINE\n")
    assert "more output not kept]" in result.printed and len(result.printed.encode()) < limit + 100
    assert "filler line 02999" in result.printed and "filler line 01500" not in result.printed


def test_a_notebook_of_nbformat_3_is_graded(grade, tmp_path):
    """IPython 2's format: cells in worksheets, a code cell's text under "input"."""
    from nbformat.v3 import new_code_cell, new_notebook, new_text_cell, new_worksheet
    from nbformat.v3.nbjson import writes
    imports, rest = PLAIN.read_text().split("\n\n\ndef score", 1)
    notebook = new_notebook(worksheets=[new_worksheet(cells=[
        new_text_cell("markdown", source="# Week 7"), new_code_cell(input=imports),
        new_code_cell(input="def score" + rest)])])
    path = tmp_path / "old_format.ipynb"
    path.write_text(writes(notebook))
    assert '"worksheets"' in path.read_text() and '"input"' in path.read_text()
    result = grade(path)
    assert (result.score, result.problem, result.notes) == (100, "", ())


def test_files_are_read_as_python_and_jupyter_read_them(grade, tmp_path):
    """A Windows editor's byte-order mark and line ends, and a coding line (PEP 263): `python file.py`
    runs each, so each loads; the latin-1 file's own top-level assert checks its text was decoded as such."""
    code = PLAIN.read_text()
    bom = tmp_path / "windows.py"
    bom.write_bytes(b"\xef\xbb\xbf" + code.replace("\n", "\r\n").encode())
    latin = tmp_path / "latin.py"
    latin.write_bytes(b"# -*- coding: latin-1 -*-\n" + code.encode() + b'\nassert "caf\xe9" == "caf\\u00e9"\n')
    notebook = tmp_path / "notepad.ipynb"
    notebook.write_bytes(b"\xef\xbb\xbf" + nbformat.writes(nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(code)])).encode())
    for path in (bom, latin, notebook):
        result = grade(path)
        assert (result.score, result.problem) == (100, ""), path.name


def _functions_of(code: str) -> dict[str, str]:
    """The top-level defs of `code`, by name, each with its text."""
    parts = code.split("\n\n\ndef ")
    return {part.split("(", 1)[0]: "def " + part for part in parts[1:]}


def test_a_function_written_but_never_defined_is_found_where_it_stopped(grade, tmp_path):
    imports, _ = PLAIN.read_text().split("\n\n\ndef score", 1)
    defs = _functions_of(PLAIN.read_text())
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(imports + "\n\n" + "\n\n".join(
        defs[name] for name in ("score", "additive_score", "causal_mask", "padding_mask", "apply_mask"))),
        # a library the grader does not have, imported above the definition in the same cell
        nbformat.v4.new_code_cell("import seaborn_is_not_here as sns\n\n" + defs["softmax"]),
        # a syntax error below the definition: nothing in the cell runs
        nbformat.v4.new_code_cell(defs["context"] + "\nbroken = (\n"),
        # defined inside another block
        nbformat.v4.new_code_cell("if False:\n    " + defs["attention"].replace("\n", "\n    ")),
        # under a name close to the stub's
        nbformat.v4.new_code_cell(defs["attention_torch"].replace("def attention_torch", "def attention_torh")),
    ])
    path = tmp_path / "stopped.ipynb"
    nbformat.write(notebook, path)
    result = grade(path)
    messages = {t.function: t.message for t in result.tests if t.status != "passed"}
    assert set(messages) == {"softmax", "context", "attention", "attention_torch"}
    assert messages["softmax"].startswith("softmax() is in code cell 2 at line 3, but that cell raised "
                                          "ModuleNotFoundError at line 1: No module named 'seaborn_is_not_here' "
                                          "before reaching it (the grader has no such module")
    assert messages["context"].startswith("context() is in code cell 3 at line 1, but that cell has a syntax error")
    assert messages["attention"].startswith("attention() is defined only inside another block (code cell 4, line 2)")
    assert messages["attention_torch"] == ("your file does not define attention_torch(), only attention_torh(); "
                                           "keep the function names of the stub")
    assert all("Restart & Run All" in messages[f] for f in ("softmax", "context"))


def test_a_function_written_in_a_markdown_or_raw_cell_is_found_there(grade, tmp_path):
    """A cell turned into markdown (Esc, M) or raw shows the code and never runs it: the student wrote the
    function, and the message says where, not that the file lacks it. Prose that names a def does not count."""
    imports, _ = PLAIN.read_text().split("\n\n\ndef score", 1)
    defs = _functions_of(PLAIN.read_text())
    code = [imports, *(defs[name] for name in ("score", "additive_score", "causal_mask", "padding_mask",
                                                 "apply_mask", "attention", "attention_torch"))]
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("Write `def context(A, V)` below; it returns A V."),
        *(nbformat.v4.new_code_cell(c) for c in code),
        nbformat.v4.new_markdown_cell("My softmax:\n```python\n" + defs["softmax"] + "```"),
        nbformat.v4.new_raw_cell(defs["context"]),
    ])
    path = tmp_path / "text_cells.ipynb"
    nbformat.write(notebook, path)
    result = grade(path)
    messages = {t.function: t.message for t in result.tests if t.status != "passed"}
    assert messages["softmax"].startswith("softmax() is written only in a markdown cell (the notebook's cell 10, "
                                          "counting every cell), at line 3, which Jupyter shows as text and never "
                                          "runs. If that is your code, make it a code cell")
    assert messages["context"].startswith("context() is written only in a raw cell (the notebook's cell 11, counting "
                                          "every cell), at line 1")


def test_an_exception_raised_in_a_helper_names_its_cell_line_and_function(grade, tmp_path):
    """attention fails in the softmax it calls, two cells away: the place names softmax's cell and softmax, not
    a bare line number the student would look for in attention's cell. An import the grader lacks says so."""
    imports, _ = PLAIN.read_text().split("\n\n\ndef score", 1)
    defs = _functions_of(PLAIN.read_text())
    broken_softmax = "def softmax(S):\n    from scipy_is_not_here import softmax as sp\n    return sp(S, axis=-1)\n"
    cells = [imports, *(defs[name] for name in ("score", "additive_score", "causal_mask", "padding_mask",
                                                  "apply_mask")), broken_softmax,
             *(defs[name] for name in ("context", "attention", "attention_torch"))]
    path = tmp_path / "helper.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    result = grade(path)
    by_name = {t.name: t.message for t in result.tests}
    hint = "No module named 'scipy_is_not_here' (the grader has no such module"
    assert by_name["softmax.lecture_example"].startswith(
        f"softmax raised ModuleNotFoundError at code cell 7, line 2: {hint}")
    assert by_name["attention.lecture_example"].startswith(
        f"attention raised ModuleNotFoundError at code cell 7, line 2, in softmax: {hint}")
    as_py = tmp_path / "helper.py"
    as_py.write_text("\n\n".join(cells))
    message = next(t.message for t in grade(as_py).tests if t.name == "attention.lecture_example")
    line = "\n\n".join(cells).splitlines().index("    from scipy_is_not_here import softmax as sp") + 1
    assert message.startswith(f"attention raised ModuleNotFoundError at line {line}, in softmax: {hint}")


def test_pytorch_threads_a_file_asks_for_are_not_started(grade_once, tmp_path):
    """Threads count against the sandbox's process limit: 64 asked at the top level, or in a call, had the worker exit
    or the call time out ("look for a loop that never ends"), 12 points of a correct attention_torch."""
    path = tmp_path / "threads.py"
    path.write_text(PLAIN.read_text().replace("def attention_torch(Q, K, V, allowed=None, scale=None):\n",
                                              "def attention_torch(Q, K, V, allowed=None, scale=None):\n"
                                              "    torch.set_num_threads(64)\n") + "\ntorch.set_num_threads(64)\n")
    assert "torch.set_num_threads(64)\n    " in path.read_text()
    result = grade_once(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != "passed"]


def test_a_file_that_asks_for_its_users_name_at_its_top_level_loads(grade, tmp_path):
    """The sandbox's uid has no entry in /etc/passwd: `getpass.getuser()` at a file's top level raised KeyError and
    a correct file did not load (0 points). Its processes have a user name in $USER and $LOGNAME."""
    path = tmp_path / "author.py"
    path.write_text("import getpass\nAUTHOR = getpass.getuser()\n" + PLAIN.read_text())
    result = grade(path)
    assert result.score == result.max_score, (result.problem, [t.message for t in result.tests if t.status != "passed"])


def test_an_operation_the_sandbox_refuses_says_so(grade, tmp_path):
    """multiprocessing works on the student's machine and not in the sandbox: the message says that the sandbox
    refused it, not only "Permission denied"."""
    path = tmp_path / "pool.py"
    path.write_text(PLAIN.read_text() + "\n\nimport multiprocessing\n\n\ndef context(A, V):\n"
                    "    with multiprocessing.Pool(2) as pool:\n        return pool.apply(np.matmul, (A, V))\n")
    message = next(t.message for t in grade(path).tests if t.name == "context.lecture_example")
    assert message.startswith("context raised PermissionError at line "), message
    assert message.endswith("(the sandbox refused it: graded code has no network, no multiprocessing and no writing "
                            "outside its working folder; do the work in the function itself)")


def test_a_socket_the_sandbox_refuses_says_the_grader_has_no_network(grade, tmp_path):
    """Only Unix sockets may be made in grading: socket.socket() and create_connection raise PermissionError there,
    whose advice is that there is no network, not the sandbox's refusals in general."""
    path = tmp_path / "connect.py"
    path.write_text(PLAIN.read_text() + "\n\nimport socket\n\n\ndef context(A, V):\n"
                    "    socket.create_connection(('127.0.0.1', 80), timeout=1).close()\n    return A @ V\n")
    message = next(t.message for t in grade(path).tests if t.name == "context.lecture_example")
    assert message.startswith("context raised PermissionError at line "), message
    assert message.endswith("(graded code runs without a network: download nothing, and read only what the function "
                            "is given)"), message


def test_a_download_at_the_top_of_a_file_says_the_grader_has_no_network(grade, tmp_path):
    """The student's own `python file.py` downloads fine; the problem must not send them there to find the error."""
    path = tmp_path / "download.py"
    path.write_text(PLAIN.read_text() + "\n\nimport urllib.request\n\n"
                    "data = urllib.request.urlopen('http://example.com', timeout=5).read()\n")
    result = grade(path)
    assert result.did_not_load and result.score == 0
    assert "raised URLError" in result.problem and "(graded code runs without a network: download nothing" in \
        result.problem
    assert result.problem.endswith("Your own `python` may not show this error: remove that line from the file's "
                                   "top level (top-level code should only import and define) and hand the file in "
                                   "again")
    # Likewise a data file of the student's, which the sandbox's empty folder does not have.
    path.write_text(PLAIN.read_text() + "\n\nW = np.load('weights.npy')\n")
    problem = grade(path).problem
    assert "raised FileNotFoundError" in problem and "(graded code runs in an empty folder with your file alone" in \
        problem and "Your own `python` may not show this error" in problem


def test_a_function_in_a_cell_that_hung_is_found_there(tmp_path):
    """The session's report of a cell stopped while loading (what Session.open returns after skipping it)."""
    path = tmp_path / "hung.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np"),
                                                   nbformat.v4.new_code_cell("def softmax(S):\n    return S\n\n"
                                                                             "while True:\n    pass")]), path)
    load = LoadReport(frozenset(), stopped=(("code cell 2", "was still running at the load limit of 10 s (which "
                                                            "counts the code before it too) and was stopped"),))
    message = undefined_messages(read_submission(path), load, {"softmax"})["softmax"]
    assert message.startswith("softmax() is in code cell 2 at line 1, but that cell was still running at the load "
                              "limit of 10 s (which counts the code before it too) and was stopped while loading, so "
                              "the whole cell was skipped")


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_json_lines_follow_the_gradescope_shape(tmp_path):
    buggy = compose(tmp_path, "bob", SUBMISSIONS / "buggy" / "causal_hides_diagonal.py")
    done = run_cli("grade", "w07_attention", REFERENCE, buggy, "--json", "--db", tmp_path / "grades.db")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(line["student"] for line in lines) == ["bob", "reference"]
    lines.sort(key=lambda line: line["student"] != "reference")
    for line in lines:
        assert {"student", "assignment", "score", "max_score", "seed", "tests"} <= line.keys()
        for test in line["tests"]:
            assert {"name", "function", "score", "max_score", "status", "visibility", "message",
                    "misconception"} <= test.keys()
            assert test["status"] in {"passed", "failed", "error", "timeout"}
            assert test["visibility"] in {"public", "hidden"}
    assert lines[0]["score"] == 100
    failed = {t["name"] for t in lines[1]["tests"] if t["status"] == "failed"}
    assert "causal_mask.lower_triangle" in failed
    assert lines[1]["score"] < 100


def test_an_error_raised_in_a_function_that_passes_its_checks_points_at_the_ones_that_fail(grade_once, tmp_path):
    """A transposed score makes attention's call of context raise inside context, which passes its own checks: the
    message names where it raised, and then the likely cause."""
    result = grade_once(compose(tmp_path, "score_transposed", SUBMISSIONS / "buggy" / "score_transposed.py"))
    message = next(t.message for t in result.tests if t.name == "attention.lecture_example")
    assert ", in context:" in message
    assert ("context passes its own checks, so what attention gives it is the likely cause. attention calls score, "
            "which fails its own checks: fix that first") in message
    assert all("passes its own checks" not in t.message for t in result.tests if t.function == "score")
    # Only what attention calls is named: a detached attention_torch fails its own checks too, and is no cause.
    both = tmp_path / "both.py"
    both.write_text("\n\n".join((SUBMISSIONS / "buggy" / f"{name}.py").read_text()
                                  for name in ("score_transposed", "torch_detached")))
    result = grade_once(compose(tmp_path, "score_transposed_torch_detached", both))
    message = next(t.message for t in result.tests if t.name == "attention.lecture_example")
    assert "attention calls score, which fails its own checks" in message and "attention_torch" not in message


def test_an_attention_torch_returning_a_then_c_is_told_so_not_given_a_shape(grade_once, tmp_path):
    path = tmp_path / "torch_ac.py"
    path.write_text(PLAIN.read_text() + "\n\n_torch = attention_torch\n\n\ndef attention_torch(*args, **kwargs):\n"
                    "    C, A = _torch(*args, **kwargs)\n    return A, C\n")
    tests = {t.name: t for t in grade_once(path).tests}
    lecture = tests["attention_torch.lecture_example"]
    assert lecture.message.startswith("attention_torch returned (A, C): its first value has the weights' shape"), \
        lecture.message
    assert "attention_torch return the context first" in tests["attention_torch.agrees_with_sdpa"].explanation
