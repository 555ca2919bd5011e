"""The reason a hand-in's top level failed is told in the words that fit what it did, graded through the real
sandbox: a .py that waits for input() or runs an exported notebook's magics, and a notebook whose imports
cell failed, which leaves names undefined for every check that uses them."""
from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import numpy
import pytest

from autograder.grading.statuses import PASSED
from autograder.grading.submission import read_submission
from autograder.grading.taken_names import SWITCHES
from autograder.outputs import audience
from autograder.sandbox.kept_names import same_function
from autograder.text import joined

from conftest import PLAIN, SUBMISSIONS, compose, manifest

PLAIN_LINES = PLAIN.read_text().splitlines()
FIRST_DEF = next(i for i, line in enumerate(PLAIN_LINES) if line.startswith("def "))
FUNCTIONS = "\n".join(PLAIN_LINES[FIRST_DEF:])
IMPORTS = "\n".join(line for line in PLAIN_LINES[:FIRST_DEF] if line.startswith(("import", "from")))


def test_a_py_that_calls_input_at_its_top_level_is_told_to_guard_it(grade_once, tmp_path):
    path = tmp_path / "asks.py"
    path.write_text(f"{IMPORTS}\n{FUNCTIONS}\n\nprint('demo')\nname = input('your name: ')\n")
    result = grade_once(path)
    assert result.did_not_load
    assert "input() waits for someone to type, and the grader types nothing" in result.problem
    assert 'if __name__ == "__main__":' in result.problem and "Run `python" not in result.problem
    # No check called the file: what its top level printed is the student's to see, with no note about hidden checks.
    assert "demo" in audience.submission_output(result, audience.STUDENT)
    assert audience.submission_output_note(result, audience.STUDENT) == ""


@pytest.mark.parametrize("name", sorted(manifest("numpy_versions")))
def test_a_py_that_uses_a_name_this_numpy_lacks_is_told_which_numpy_grades_it(grade_once, tmp_path, name):
    """`NEG_INF = -np.infty` at the top level: NumPy 2 raises AttributeError, NumPy 1.x does not, so "Run `python
    file.py` to see the error" alone sent a student on NumPy 1.x to a command that shows nothing."""
    result = grade_once(compose(tmp_path, name, SUBMISSIONS / "numpy_versions" / f"{name}.py"))
    assert result.did_not_load and "raised AttributeError" in result.problem, result.problem
    assert "Write that name as the grader's NumPy has it (see above), and hand the file in again" in result.problem
    assert "Run `python" not in result.problem, result.problem
    assert _numpy_hint(manifest("numpy_versions")[name]["name"]) in result.problem, result.problem


def _numpy_hint(name: str) -> str:
    return (f"(the grader runs NumPy {numpy.__version__}, which has no {name}: if your own `python` runs this line "
            "without an error, your NumPy is another version, where it still exists. Write it as NumPy")


def test_a_name_this_numpy_lacks_in_a_cell_or_a_call_is_told_which_numpy_grades_it(grade_once, tmp_path):
    """Not only a .py's top level: a notebook cell's note, and a check whose call raised it (here a function that
    reads np.infty when called), say which NumPy grades the file too."""
    uses_it = (SUBMISSIONS / "numpy_versions" / "removed_in_numpy_2.py").read_text().replace(
        "NEG_INF = -np.infty\n", "").replace("= NEG_INF", "= -np.infty")
    path = tmp_path / "in_a_call.py"
    path.write_text(PLAIN.read_text() + "\n\n" + uses_it)
    failed = [t.message for t in grade_once(path).tests if t.name.startswith("apply_mask.") and t.status != PASSED]
    assert failed and all(_numpy_hint("np.infty") in message for message in failed), failed
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(PLAIN.read_text()), nbformat.v4.new_code_cell("LIMIT = -np.infty")]
    path = tmp_path / "cell.ipynb"
    nbformat.write(notebook, path)
    notes = grade_once(path).notes
    assert any("code cell 2" in note and _numpy_hint("np.infty") in note for note in notes), notes


def test_a_py_exported_with_magics_is_told_what_get_ipython_is(grade_once, tmp_path):
    path = tmp_path / "exported.py"
    path.write_text(f"{IMPORTS}\nget_ipython().run_line_magic('matplotlib', 'inline')\n{FUNCTIONS}\n")
    problem = grade_once(path).problem
    assert "get_ipython() exists only in Jupyter" in problem and "hand in the notebook itself" in problem, problem


def test_each_check_a_failed_imports_cell_broke_names_that_cell(grade_once, tmp_path):
    path = tmp_path / "imports.ipynb"
    cells = [f"from no_such_progress_bar import bar\n{IMPORTS}", FUNCTIONS, "name = input('name: ')"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    result = grade_once(path)
    broken = [t for t in result.tests if "name 'np' is not defined" in t.message]
    assert broken and all(t.status != PASSED for t in broken)
    for test in broken:
        assert "The cause: code cell 1 failed while loading: it raised ModuleNotFoundError" in test.message
        assert "No module named 'no_such_progress_bar'" in test.message and "(bar, " in test.message
    assert any("input() waits for someone to type" in note for note in result.notes), result.notes


def test_a_stub_cell_run_after_the_answer_is_named_as_the_definition_graded(grade_once, tmp_path):
    path = tmp_path / "stub_after.ipynb"
    stub = 'def softmax(S):\n    """Softmax over the last axis."""\n    raise NotImplementedError'
    cells = [IMPORTS, FUNCTIONS, "x = 1", stub]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    result = grade_once(path)
    assert {t.function for t in result.tests if t.status != PASSED} == {"softmax", "attention"}
    softmax_line = FUNCTIONS.splitlines().index(next(line for line in FUNCTIONS.splitlines()
                                                     if line.startswith("def softmax("))) + 1
    assert [note for note in result.notes if "is defined" in note] == [
        f"softmax() is defined 2 times (code cell 2, line {softmax_line}; code cell 4, line 1): each def replaces the "
        "one before it, so only the last that ran was graded. Keep one definition of softmax()"]


def test_an_old_version_kept_in_a_string_is_no_second_definition(grade_once, tmp_path):
    """Old attempts commented out in a triple-quoted block never run: no note says they may have been graded."""
    path = tmp_path / "kept_in_a_string.py"
    path.write_text(f'{IMPORTS}\n{FUNCTIONS}\n\n"""\ndef softmax(S):\n    return S\n\ndef causal_mask(n):\n'
                    '    return None\n"""\n')
    result = grade_once(path)
    assert result.score == result.max_score
    assert [note for note in result.notes if "is defined" in note] == [], result.notes


def test_signatures_for_type_checkers_are_no_second_definition(grade_once, tmp_path):
    """`@typing.overload` defs come before the one that runs, as typing requires: the note had told the student to
    keep one definition."""
    path = tmp_path / "overloads.py"
    overloads = ("\n\nimport typing\nfrom typing import overload\n\n\n@overload\n"
                 "def score(Q: np.ndarray, K: np.ndarray) -> np.ndarray: ...\n\n\n@typing.overload\n"
                 "def score(Q: np.ndarray, K: np.ndarray, scale: float) -> np.ndarray: ...\n")
    path.write_text(f"{IMPORTS}\n{overloads}\n{FUNCTIONS}")
    result = grade_once(path)
    assert result.score == result.max_score
    assert [note for note in result.notes if "is defined" in note] == [], result.notes


def test_a_function_defined_many_times_lists_the_first_definitions_and_the_one_graded(grade_once, tmp_path):
    path = tmp_path / "many.py"
    versions = "".join(f"\n\ndef softmax(S):\n    raise ValueError('version {n}')\n" for n in range(9))
    path.write_text(f"{IMPORTS}\n{FUNCTIONS}{versions}")
    lines = path.read_text().splitlines()
    defs = [number for number, line in enumerate(lines, start=1) if line.startswith("def softmax(")]
    note = next(note for note in [*grade_once(path).notes] if note.startswith("softmax() is defined"))
    assert note.startswith(f"softmax() is defined 10 times (line {defs[0]}; line {defs[1]}; line {defs[2]}; 6 more; "
                           f"line {defs[-1]}): each def replaces"), note


def test_a_function_deleted_or_replaced_after_its_def_ran_is_told_so(grade_once, tmp_path):
    """A .py file's later line that deletes a function (`del softmax`) or takes its name: the def is there and ran,
    so "your file does not define softmax()" would send the student looking for a def they can see."""
    path = tmp_path / "taken_back.py"
    path.write_text(f"{IMPORTS}\n{FUNCTIONS}\ndel softmax\ncontext = None\n")
    result = grade_once(path)
    messages = {t.function: t.message for t in result.tests if t.name.endswith(".lecture_example")}
    lines = path.read_text().splitlines()
    for function in ("softmax", "context"):
        line = next(n for n, row in enumerate(lines, start=1) if row.startswith(f"def {function}("))
        assert messages[function] == (
            f"{function}() is defined in your file at line {line}, which ran, but by the end of the file the "
            f"name {function} no longer held a function: a later line deleted or replaced it (`del {function}`, or "
            f"`{function} = ...`). Keep that name for your function"), messages[function]


def test_a_notebooks_function_whose_name_a_later_cell_takes_is_graded_as_its_cells_left_it(grade_once, tmp_path):
    """`score = score(Q, Q)` in a demo cell after the check cells: Jupyter's check cells, and nbgrader, had passed
    every function, and grade failed score and, through it, attention (68/100). Now each is graded as the notebook
    last defined it, and a note names the cell."""
    path = tmp_path / "taken_back.ipynb"
    cells = [IMPORTS, FUNCTIONS, "del softmax\ncontext = None\nQ = np.ones((2, 3))", "score = score(Q, Q)",
             "from torch.nn.functional import softmax as causal_mask"]  # a library's function over it
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    result = grade_once(path)
    assert result.score == result.max_score, [t.message for t in result.tests if t.message]
    notes = sorted(note for note in result.notes if "took the name" in note)
    assert [note.split(" took the name ")[0] for note in notes] == ["code cell 3", "code cell 3", "code cell 4",
                                                                     "code cell 5"], notes
    assert notes[2].startswith("code cell 4 took the name score for something else (`score = ...`, an import of that "
                               "name, or `del score`); score() was graded as your notebook last defined it, but in "
                               "Jupyter every cell after that one that calls score() gets the other thing"), notes


@pytest.mark.parametrize("name", sorted(manifest("notebooks")))
def test_a_notebook_whose_later_cell_takes_a_name_its_functions_read_scores_as_nbgrader_gives(grade_once, name):
    """A helper reused as a variable name near the end (`masked = causal_mask(6).sum(axis=-1)`): nbgrader, whose
    check cell runs right after the answer, gave 100; grade called attention with the array, 0/20. Each name a graded
    function or its helpers read is now as the check cells saw it (a built-in hidden later, through a decorator, a
    helper of the same name defined after the check cell), and a note names the cell and the name."""
    result = grade_once(SUBMISSIONS / "notebooks" / manifest("notebooks")[name].get("file", f"{name}.ipynb"))
    expected = manifest("notebooks")[name].get("score", 100)
    assert (result.score, result.max_score) == (expected, 100), [t.message for t in result.tests if t.message]
    notes = sorted(note for note in result.notes if " took the name " in note or " again, after the check " in note
                   or " first defines " in note or " had run" in note)
    taken = manifest("notebooks")[name]["taken"]
    assert len(notes) == len(taken), notes
    for other, where in taken.items():
        users = [f"{user}()" for user in where["by"]]
        if where.get("changed") == "switch":  # a library switch a later cell changed: calls start as the check saw it
            assert any(note.startswith(f"{where['cell']} {SWITCHES[other][0]} after the check cell of {joined(users)} "
                                       f"had run; {joined(users)} {'was' if len(users) == 1 else 'were'} graded with "
                                       "the setting as that check cell saw it") for note in notes), notes
            continue
        if where.get("changed") == "data":  # changed in place: graded with a copy as the check cell saw it
            start = f"{where['cell']} changed {other} in place after the check cell of {joined(users)} had run: "
            assert any(note.startswith(f"{start}{joined(users)}, which read") for note in notes), notes
            continue
        if where.get("first"):  # bound only after the check cell: graded unbound, as the check cell ran it
            checks = " and ".join(f"{user}'s" for user in where["by"])
            assert f"{where['cell']} first defines {other} after {checks} check cell; Jupyter and nbgrader ran the " \
                f"check before it, where {other} was not defined yet, and so did the grader: define {other} in the " \
                "answer cell or above" in notes, notes
            continue
        if where.get("defined") and not users:  # the graded function itself, defined again after its check cell
            assert any(note.startswith(f"{where['cell']} defined {other}() again, after the check cell of {other}() "
                                       f"had run: {other}() was graded as that check cell ran it") for note in notes)
            assert not [note for note in result.notes if note.startswith(f"{other}() is defined ")], result.notes
            continue
        graded = f"{joined(users)}, which read{'s' if len(users) == 1 else ''} it, " \
            f"{'was' if len(users) == 1 else 'were'} graded with {other} as it was before that cell, as the check " \
            "cells in Jupyter and nbgrader saw it"
        if where.get("defined"):
            assert f"{where['cell']} defined {other} again, after the check cell of {joined(users)} had run: " \
                f"{graded}. Jupyter and nbgrader grade the definition a check cell runs with, so if the new {other} " \
                "is a fix, put it in the answer cell above the check cell; if it is another helper, give it a name " \
                "of its own" in notes, notes
        else:
            assert f"{where['cell']} took the name {other} for something else (`{other} = ...`, an import of that " \
                f"name, or `del {other}`); {graded}, but in Jupyter every cell after that one that calls " \
                f"{' or '.join(users)} gets the other thing. Give the other thing a name of its own" in notes, notes


def test_a_graded_function_copied_word_for_word_after_its_check_is_no_news(grade_once, tmp_path):
    copied = SUBMISSIONS / "notebooks" / "graded_function_copied_after_the_checks.ipynb"
    result = grade_once(copied)
    assert result.score == result.max_score
    assert [note for note in result.notes if "softmax" in note] == [], result.notes
    # A cell after the copy that defines another softmax is news: the note names that cell.
    notebook = nbformat.read(copied, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("def softmax(x):\n    return np.exp(x) / np.exp(x).sum()\n"))
    nbformat.write(notebook, tmp_path / "then_another.ipynb")
    result = grade_once(tmp_path / "then_another.ipynb")
    assert result.score == result.max_score
    assert [note.split(":")[0] for note in result.notes if "softmax" in note] == [
        "code cell 28 defined softmax() again, after the check cell of softmax() had run"], result.notes


def _compiled(source: str, cell: str, blank_lines: int):
    """The function `source` defines, compiled as a notebook's cell `cell` with `blank_lines` above it."""
    namespace = {}
    exec(compile("\n" * blank_lines + source, f"<notebook {cell}>", "exec"), namespace)
    return next(value for name, value in namespace.items() if name != "__builtins__")


ANSWER = """def softmax(S, axis=-1, *, eps=0.0):
    \"\"\"Softmax over `axis`.\"\"\"
    e = np.exp(S - S.max(axis=axis, keepdims=True))
    return e / (e.sum(axis=axis, keepdims=True) + eps) if [i for i in range(2)] else None
"""


@pytest.mark.parametrize("changed, same", [
    ("", True), ("keepdims=True))\n    return", False), ("axis=-1, *", False), ("eps=0.0", False), ("range(2)", False),
    ("Softmax over", False)])
def test_a_word_for_word_copy_is_told_from_a_changed_one_wherever_it_stands(changed, same):
    copy = ANSWER
    if changed:  # one small change: a statement, a default, a keyword default's sign, a nested constant, the docstring
        copy = ANSWER.replace(changed, {"keepdims=True))\n    return": "keepdims=True)) * 1\n    return",
                                        "axis=-1, *": "axis=1, *", "eps=0.0": "eps=-0.0", "range(2)": "range(3)",
                                        "Softmax over": "Soft max over"}[changed], 1)
    assert same_function(_compiled(copy, "27", 40), _compiled(ANSWER, "14", 3)) is same


@pytest.mark.parametrize("name", sorted(name for name, entry in manifest("notebooks").items() if "notes" in entry))
def test_a_notebook_is_graded_with_the_cells_nbgrader_puts_back_and_told_of_those_it_cannot(grade_once, name):
    """Whole released notebooks, each compared with a real `nbgrader autograde`. An answer cell changed to Markdown or
    Raw (nbgrader runs it as code: 100) had scored 59; an edited locked imports cell (nbgrader puts it back: 71) had
    counted, 100 and no word; a deleted test cell, or one that lost its metadata (nbgrader: that function 0) had no
    word. Each is now graded as nbgrader grades it, or keeps its points with a note saying what nbgrader gives."""
    entry = manifest("notebooks")[name]
    result = grade_once(SUBMISSIONS / "notebooks" / f"{name}.ipynb")
    assert (result.score, result.max_score) == (entry.get("score", 100), 100), \
        [t.message for t in result.tests if t.message]
    said = [note for note in result.notes if "nbgrader's autograde" in note]
    assert len(said) == len(entry["notes"]) and all(any(words in note for note in said) for words in entry["notes"]), \
        said


def test_a_fix_above_the_check_cell_is_graded_and_the_definitions_note_still_names_it(grade_once, tmp_path):
    """graded_function_fixed_below_its_check with its fix moved above softmax's check cell: that check ran the fix,
    so the fix is graded (100, as nbgrader gives), and the note that only the last def that ran was graded, true
    here, is still given; a fix below the check gets the note that it was not (the manifest's fixture)."""
    notebook = nbformat.read(SUBMISSIONS / "notebooks" / "graded_function_fixed_below_its_check.ipynb", as_version=4)
    check = next(i for i, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("grade_id") ==
                 "test_softmax")
    notebook.cells.insert(check, notebook.cells.pop(check + 1))
    path = tmp_path / "fixed_above.ipynb"
    nbformat.write(notebook, path)
    result = grade_once(path)
    assert result.score == result.max_score == 100, [t.message for t in result.tests if t.message]
    assert [note.split(":")[0] for note in result.notes if "softmax()" in note] == [
        "softmax() is defined 2 times (code cell 14, line 1; code cell 15, line 2)"], result.notes


def test_a_released_markdown_cell_made_code_is_not_run_as_nbgrader_makes_it_markdown_again(tmp_path):
    """The locked introduction changed to a code cell: nbgrader gives it its released type back and never runs it;
    the grader had run it, a syntax error in the first cell."""
    notebook = nbformat.read(SUBMISSIONS / "notebooks" / "test_cell_deleted.ipynb", as_version=4)
    intro = notebook.cells[0]
    assert intro.metadata["nbgrader"]["cell_type"] == "markdown"
    intro.update(cell_type="code", outputs=[], execution_count=None)
    path = tmp_path / "intro_as_code.ipynb"
    nbformat.write(notebook, path)
    cells = read_submission(path).cells
    assert cells[0].source.startswith("import math") and not any("# Week 7" in cell.source for cell in cells)


def test_autograd_switched_off_above_a_check_cell_is_blamed_on_the_cells_before_that_check(grade_once):
    """Autograd off at attention_torch's check cell costs its gradient checks in nbgrader and here alike; the message
    names the cells run before that check cell, not the file's top-level code (a notebook's last cell, run after the
    check, no longer counts: autograd_switched_off_after_its_check)."""
    result = grade_once(SUBMISSIONS / "notebooks" / "autograd_switched_off_before_its_check.ipynb")
    messages = [t.message for t in result.tests if t.function == "attention_torch" and t.score < t.max_score]
    assert messages and all("left on by the cells run before its check cell" in m for m in messages), messages
    assert not any("top-level code" in m for m in messages), messages


def test_a_value_a_function_reads_is_as_its_check_cell_saw_it_and_its_own_state_as_its_calls_left_it(grade_once,
                                                                                                     tmp_path):
    """A constant softmax reads, set again by a later exploring cell (`TEMPERATURE = 5.0`): nbgrader's check cell had
    seen 1.0 and passed softmax. A global score keeps for itself (`global CALLS`), changed by every demo call, is
    the function's own state: it is never undone, and no note blames the cells that called score."""
    path = tmp_path / "temperature.ipynb"
    softmax = FUNCTIONS.replace("shifted = S - np.max(S, axis=-1, keepdims=True)",
                                "shifted = (S - np.max(S, axis=-1, keepdims=True)) / TEMPERATURE")
    counted = softmax.replace('    Q = np.asarray(Q)\n', '    global CALLS\n    CALLS += 1\n    Q = np.asarray(Q)\n', 1)
    assert counted != softmax != FUNCTIONS
    cells = [IMPORTS, "TEMPERATURE = 1.0\nCALLS = 0", counted, "print(score(np.ones((2, 3)), np.ones((4, 3))))",
             "TEMPERATURE = 5.0  # flatter weights?\nprint(softmax(np.arange(4.0)), CALLS)", "score(np.ones((1, 2)), "
             "np.ones((1, 2)))"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    result = grade_once(path)
    assert result.score == result.max_score == 100, [t.message for t in result.tests if t.message]
    notes = [note for note in result.notes if "took the name" in note]
    assert len(notes) == 1 and notes[0].startswith("code cell 5 took the name TEMPERATURE for something else"), notes
    assert "attention() and softmax(), which read it, were graded with TEMPERATURE as it was" in notes[0], notes


def test_a_name_first_bound_after_the_check_cell_in_a_branch_that_never_runs_costs_nothing(grade_once, tmp_path):
    """A graded function sees a name first bound after its check cell as unbound (its check cell raised NameError in
    nbgrader); where it reads the name only in a branch the checks never take, nbgrader's check passed, and so do
    the grader's."""
    notebook = nbformat.read(SUBMISSIONS / "notebooks" / "helper_first_defined_after_its_check.ipynb", as_version=4)
    answer = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer_attention")
    answer.source = ("def attention(Q, K, V, allowed=None, scale=None):\n    S = score(Q, K, scale)\n"
                     "    if isinstance(scale, str):  # exploring only, never checked\n        S = masked(S, allowed)\n"
                     "    A = softmax(S if allowed is None else apply_mask(S, allowed))\n    return context(A, V), A")
    path = tmp_path / "branch.ipynb"
    nbformat.write(notebook, path)
    result = grade_once(path)
    assert (result.score, result.max_score) == (100, 100), [t.message for t in result.tests if t.message]


def test_a_py_file_whose_later_line_takes_a_helpers_name_is_graded_as_an_import_sees_it(grade_once, tmp_path):
    """A module has no check cells: its functions see what `import` leaves, so the same helper taken at the end of a
    .py file still costs attention its points, and the error names the line."""
    path = tmp_path / "helper_taken.py"
    path.write_text(f"{PLAIN.read_text()}\n\ndef masked(S, allowed):\n    return S if allowed is None else "
                    "apply_mask(S, allowed)\n\n\ndef attention(Q, K, V, allowed=None, scale=None):\n"
                    "    A = softmax(masked(score(Q, K, scale), allowed))\n    return context(A, V), A\n\n\n"
                    "masked = causal_mask(6).sum(axis=-1)\n")
    result = grade_once(path)
    attention = [t for t in result.tests if t.function == "attention"]
    assert attention and all(t.status != PASSED for t in attention)
    assert "'numpy.ndarray' object is not callable" in attention[0].message, attention[0].message
    assert result.score == result.max_score - 20 and not [n for n in result.notes if "took the name" in n]


def test_more_code_than_any_solution_needs_is_not_loaded_and_never_parsed(tmp_path):
    # Forty cells each just under the grader's parse limit had the grading process parse 10 MB (60 s) and the
    # worker pass its load limit compiling it: "could not grade", the grader's fault. Now the file's own reason.
    cell = "# autograder\nif False:\n    y = (" + "a," * 120_000 + ")\nx = !ls"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FUNCTIONS)] +
                                        [nbformat.v4.new_code_cell(cell) for _ in range(40)])
    path = tmp_path / "heavy.ipynb"
    nbformat.write(notebook, path)
    submission = read_submission(path)
    assert "more than 1.0 million characters of code" in submission.problem and "resubmit" in submission.problem
    long_py = tmp_path / "long.py"
    long_py.write_text(FUNCTIONS + "\n#" + "x" * (1 << 20))
    assert "million characters of code" in read_submission(long_py).problem
    assert read_submission(PLAIN).problem == ""


def test_a_notebook_of_more_json_than_any_notebook_holds_is_refused_unparsed(tmp_path):
    # 17 million empty objects in a cell's metadata (51 MB) had the grading process hold 1.5 GB while parsing.
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FUNCTIONS)])
    notebook.cells[0].metadata["junk"] = [{}] * 600_000
    path = tmp_path / "junk.ipynb"
    nbformat.write(notebook, path)
    problem = read_submission(path).problem
    assert "holds 600,0" in problem and "JSON objects and lists" in problem and "resubmit" in problem, problem


@pytest.mark.parametrize("name", sorted(manifest("floods")))
def test_a_log_printed_past_the_output_cap_while_loading_costs_no_function(grade_once, name):
    """A training log printed at every step, at a .py's top level (before or after its defs) or in a notebook cell
    that defines a helper: stopped at the output cap, the file did not load (0) or the cell was dropped with its
    helper (59), while the same log stopped at the load limit cost nothing. It is now loaded once more with its
    definitions alone, as that is, and told so."""
    unit = manifest("floods")[name]["unit"]
    [path] = (SUBMISSIONS / "floods").glob(f"{name}.*")
    result = grade_once(path)
    assert (result.score, result.max_score) == (100, 100), (result.problem, [t.message for t in result.tests
                                                                             if t.message])
    said = " ".join(result.notes)
    if path.suffix == ".py":
        assert (f"the file's top-level code printed more than 16 MB of output, while {unit} was running; so that its "
                "functions could be graded, only its definitions were run") in said, said
        assert 'Print less' in said and '`if __name__ == "__main__":`' in said, said
    else:
        assert (f"{unit} printed more than 16 MB of output and was stopped; so that its functions could be graded, "
                "only its definitions were run") in said, said
    assert "ran past the load limit" not in said, said


def test_a_py_whose_definitions_still_print_past_the_cap_is_not_sent_to_look_for_an_error(grade_once, tmp_path):
    """A table score reads, built by a function that prints at every step: the load with the definitions alone keeps
    it and prints as much, and the cap stops that load too, so the file does not load. Running the file shows no
    error: it is told to guard its demo, not that Python stopped at its first error."""
    path = tmp_path / "chatty.py"
    table = "def build():\n    for i in range(400_000):\n        print('debug line', i, 'x' * 40)\n    return 1.0\n"
    path.write_text(f"{IMPORTS}\n\n\n{table}\n\nSCALE = build()\n\n\n"
                    f"{FUNCTIONS.replace(') * scale', ') * scale * SCALE', 1)}\n")
    result = grade_once(path)
    assert result.did_not_load and "printed more than" in result.problem, result.problem
    assert "first error" not in result.problem and "to see the error" not in result.problem, result.problem
    assert 'if __name__ == "__main__":' in result.problem


def test_a_template_raise_in_a_function_another_calls_is_blamed_on_that_one(grade_once, tmp_path):
    """context left as the stub: attention, which is written, raised its NotImplementedError. attention is not "not
    implemented", and a NotImplementedError of a student's own words is reported as any exception is."""
    path = tmp_path / "stub_context.py"
    path.write_text(PLAIN.read_text() + '\n\ndef context(A, V):\n    raise NotImplementedError("context")\n'
                    '\n\n_score = score\n\n\ndef score(Q, K, scale=None):\n    if np.ndim(Q) > 2:\n'
                    '        raise NotImplementedError("batched inputs are not supported yet")\n'
                    '    return _score(Q, K, scale)\n')
    tests = {t.name: t.message for t in grade_once(path).tests}
    assert tests["context.lecture_example"].startswith("context is not implemented yet")
    attention = tests["attention.lecture_example"]
    assert "not implemented yet" not in attention and "in context" in attention, attention
    assert "context still raises the template's NotImplementedError" in attention
    batched = tests["score.shape_rows_are_queries"]
    assert "not implemented" not in batched and "batched inputs are not supported yet" in batched, batched
    assert "given Q: a float64 array of shape (2, 5, 4)" in batched


def test_a_plot_at_the_top_level_prints_no_fontconfig_error(grade_once, tmp_path):
    # matplotlib asks fontconfig for the system's fonts when it first builds its font list, in the worker's fresh
    # home; without the system's /etc/fonts that prints an error the student did not cause into their output.
    path = tmp_path / "plots.py"
    plot = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
            "figure, axes = plt.subplots()\naxes.plot([1, 2, 3])\naxes.set_title('weights')\n"
            "figure.savefig('weights.png')\nprint('plotted')\n")
    path.write_text(f"{IMPORTS}\n{FUNCTIONS}\n\n{plot}")
    result = grade_once(path)
    assert result.score == 100 and "plotted" in result.printed
    assert "Fontconfig" not in result.printed, result.printed


def test_a_top_level_demo_past_the_memory_limit_is_told_of_the_limit_not_sent_to_run_the_file(grade_once, tmp_path):
    """A self-test at the top level that builds a large array runs on a laptop and raised MemoryError here, with
    advice to run `python file.py`, which shows nothing."""
    path = tmp_path / "big_demo.py"
    path.write_text(f"{IMPORTS}\n{FUNCTIONS}\n\nbig = np.ones((8, 4096, 4096, 8))\n")
    problem = grade_once(path).problem
    assert "MemoryError" in problem and "each submission is given a few GB at most here" in problem, problem
    assert "to see the error" not in problem, problem


def test_syntax_a_newer_python_accepts_is_told_which_python_grades_it(grade_once, tmp_path):
    # Python 3.12's f-strings may reuse their quotes: the student's own `python file.py` runs this line, and the
    # message sent them there to see an error it does not show.
    demo = 'if __name__ == "__main__":\n    names = ["C", "A"]\n    print(f"returns {", ".join(names)}")\n'
    path = tmp_path / "newer.py"
    path.write_text(f"{IMPORTS}\n{FUNCTIONS}\n\n{demo}")
    problem = grade_once(path).problem
    assert "SyntaxError" in problem and "The grader runs Python 3." in problem, problem
    assert "if your own Python runs this line without an error, it is a newer one" in problem
    notebook = tmp_path / "newer.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"{IMPORTS}\n{FUNCTIONS}\n{demo}")]),
                   notebook)
    assert "The grader runs Python 3." in grade_once(notebook).problem
    # Python 3.12's type alias, which a student on 3.12 runs without an error: "invalid syntax" here.
    alias = tmp_path / "alias.py"
    alias.write_text(f"{IMPORTS}\ntype Array = np.ndarray\n{FUNCTIONS}\n")
    problem = grade_once(alias).problem
    assert "invalid syntax" in problem and "`type Array = np.ndarray` as `Array = np.ndarray`" in problem, problem
    # Any other syntax error is the same in every Python: no hint sends the student to look for a newer one.
    missing_colon = tmp_path / "colon.py"
    missing_colon.write_text(f"{IMPORTS}\n{FUNCTIONS}\n\ndef helper(x)\n    return x\n")
    problem = grade_once(missing_colon).problem
    assert "SyntaxError" in problem and "expected ':'" in problem and "newer" not in problem, problem
    # Python says "invalid syntax" of many a typo too: only the statements a newer Python added get the hint.
    typo = tmp_path / "typo.py"
    typo.write_text(f"{IMPORTS}\n{FUNCTIONS}\n\nx = 1 2\n")
    problem = grade_once(typo).problem
    assert "invalid syntax" in problem and "newer" not in problem, problem


def test_a_py_with_notebook_lines_is_graded_as_the_notebook_ran_it(grade_once, tmp_path):
    """Colab's "Download .py" keeps `!pip` lines, and students paste `%matplotlib inline` into a .py: as a module the
    file was a syntax error (0 points), told to look for a newer Python's statements."""
    path = tmp_path / "colab.py"
    path.write_text(f'"""Automatically generated by Colab."""\n\n!pip install -q torch\n{IMPORTS}\n'
                    f"%matplotlib inline\nfiles = !ls\n{FUNCTIONS}\n")
    result = grade_once(path)
    assert result.score == result.max_score and not result.problem, result.problem
    assert any("holds lines only a notebook runs" in note for note in result.notes), result.notes
    # With another syntax error besides, nothing runs; the notebook line Python stopped at is named as one.
    broken = tmp_path / "broken.py"
    broken.write_text(f"{IMPORTS}\n!pip install torch\n{FUNCTIONS}\n\ndef helper(x)\n    return x\n")
    problem = grade_once(broken).problem
    assert "That line is a notebook command" in problem and "newer" not in problem, problem


def test_a_notebook_cell_with_a_top_level_await_runs_as_in_jupyter(grade_once, tmp_path):
    # IPython runs a cell's top-level `await` (autoawait); compiled as plain Python it was a SyntaxError, and the
    # cell that also held the definitions left the notebook with 0 points.
    path = tmp_path / "awaits.ipynb"
    cell = f"import asyncio\n{IMPORTS}\nawait asyncio.sleep(0)\n{FUNCTIONS}"
    # A task one cell starts, a later cell awaits: IPython keeps one event loop for the kernel.
    cells = ["async def prepare():\n    return 1\n\ntask = asyncio.create_task(prepare())\nawait asyncio.sleep(0)",
             f"ready = await task\n{FUNCTIONS}"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in (cell, *cells)]), path)
    result = grade_once(path)
    assert result.score == result.max_score and not result.problem, (result.problem, result.notes)
    assert not any("raised" in note for note in result.notes), result.notes


def test_a_py_with_an_error_only_compiling_finds_is_not_loaded_with_that_error(grade_once, tmp_path):
    # ast.parse accepts a `return` outside a function; compiling each statement then killed the worker, and the
    # student was told the file "could not be graded", not why.
    path = tmp_path / "stray_return.py"
    path.write_text(f"{IMPORTS}\n{FUNCTIONS}\nreturn None\n")
    result = grade_once(path)
    assert result.did_not_load and "SyntaxError: 'return' outside function" in result.problem, result.problem


def test_a_notebook_of_another_kernel_is_told_so_not_given_python_advice(grade_once, tmp_path):
    # An R notebook's syntax error had advice about Python 3.12's f-strings.
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("score <- function(Q, K) {\n  Q %*% t(K)\n}")])
    notebook.metadata["kernelspec"] = {"display_name": "R", "language": "R", "name": "ir"}
    path = tmp_path / "r_student.ipynb"
    nbformat.write(notebook, path)
    problem = grade_once(path).problem
    assert "This notebook was made for the R kernel (its kernelspec)" in problem and "f-string" not in problem, problem


def test_a_name_a_stopped_or_trimmed_cell_would_have_set_is_traced_to_that_cell(tmp_path):
    # softmax used SCALE_EPS, set in a demo cell that then looped past the load limit: every softmax check said
    # only "name 'SCALE_EPS' is not defined", and the note that the cell was skipped never named it.
    from autograder.grading.loading import with_load_causes
    from autograder.grading.results import CheckResult
    from autograder.sandbox.load_report import LoadReport

    cells = [IMPORTS, "SCALE_EPS = 1e-12\nwhile True:\n    pass", "OFFSET = 0.0\nfor _ in range(10**9):\n    pass",
             "def softmax(S):\n    return np.exp(S - OFFSET) / SCALE_EPS"]
    path = tmp_path / "stopped.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]), path)
    load = LoadReport(frozenset({"softmax"}), stopped=(("code cell 2", "was still running at the load limit"),),
                      trimmed=(("code cell 3", 2.5),))
    tests = [CheckResult(f"softmax.{n}", "softmax", "hidden", "error", 0.0, 1.0,
                         message=f"softmax raised NameError at line 2: name '{name}' is not defined")
             for n, name in enumerate(("SCALE_EPS", "OFFSET"))]
    first, second = with_load_causes(tests, read_submission(path), load)
    assert "The cause: code cell 2 was still running at the load limit while loading; so the names it would have " \
           "defined from there on (SCALE_EPS) are missing. Make that cell quick" in first.message, first.message
    assert "The cause: code cell 3 ran only its definitions" in second.message and "(OFFSET)" in second.message


def test_a_notebook_whose_cell_of_functions_failed_after_the_imports_cell_is_told_both(grade_once, tmp_path):
    """An imports cell that fails on a module the grader lacks leaves the later names undefined: the cell of
    functions then raised NameError (`dataclass`), and the reason named only the first cell."""
    path = tmp_path / "two_failures.ipynb"
    cells = [f"{IMPORTS}\nimport tqdm_not_installed_here\nfrom dataclasses import dataclass",
             f"@dataclass\nclass Config:\n    scale: float = 1.0\n\n\n{FUNCTIONS}"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells]), path)
    problem = grade_once(path).problem
    assert "code cell 1 raised ModuleNotFoundError" in problem, problem
    assert "; then code cell 2, which defines " in problem and "raised NameError" in problem, problem
    assert "'dataclass'" in problem, problem


def test_a_py_saved_as_latin_1_is_graded_and_told_to_save_it_as_utf_8(grade_once, tmp_path):
    """A .py saved as Latin-1 (or Windows' cp1252) with an accent in a comment and no coding line: Python refuses it
    ("SyntaxError: Non-UTF-8 code"), while the grader read it as UTF-8 with replacements and said nothing, so the
    student's `python file.py` failed on a file that had full marks."""
    path = tmp_path / "latin.py"
    path.write_bytes(f"# Auteur : Fran\xe7ois\n{IMPORTS}\n{FUNCTIONS}\n".encode("latin-1"))
    refused = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=60)  # as Python reads it
    assert "SyntaxError: Non-UTF-8 code" in refused.stderr, refused.stderr
    result = grade_once(path)
    assert result.score == result.max_score and not result.problem, result.problem
    note = next((note for note in result.notes if "not saved as UTF-8" in note), "")
    assert "latin.py is not saved as UTF-8: line 1 holds the byte 0xe7" in note and "Python itself refuses" in note \
        and "Save it as UTF-8" in note, result.notes
    # Saved as UTF-8, or with a coding line that names its encoding, it is read as Python reads it, and no note.
    for name, data in (("utf8.py", f"# Fran\xe7ois\n{IMPORTS}\n{FUNCTIONS}\n".encode()),
                       ("coded.py", f"# -*- coding: latin-1 -*-\n# Fran\xe7ois\n{IMPORTS}\n{FUNCTIONS}\n"
                                    .encode("latin-1"))):
        (tmp_path / name).write_bytes(data)
        assert not any("UTF-8" in note for note in grade_once(tmp_path / name).notes)


def test_a_py_whose_coding_line_is_the_fault_is_told_to_mend_that_line(grade_once, tmp_path):
    """A coding line naming no encoding Python knows had full marks and no note, though Python refuses the file
    ("SyntaxError: encoding problem: bogus-enc"); a UTF-8 file whose coding line says ascii was told its byte 0xc3
    was "the Windows or Latin-1 code of 'Ã'" and to save it as UTF-8, which it already was."""
    bogus, ascii_line = tmp_path / "bogus.py", tmp_path / "asciidecl.py"
    bogus.write_bytes(f"# -*- coding: bogus-enc -*-\n{IMPORTS}\n{FUNCTIONS}\n".encode())
    ascii_line.write_bytes(f"# -*- coding: ascii -*-\n# caf\xe9\n{IMPORTS}\n{FUNCTIONS}\n".encode())
    refused = subprocess.run([sys.executable, bogus], capture_output=True, text=True, timeout=60)
    assert "SyntaxError: encoding problem: bogus-enc" in refused.stderr, refused.stderr
    notes = " ".join(grade_once(bogus).notes)
    assert "bogus.py: line 1, its coding line, names the encoding 'bogus-enc', which Python does not know" in notes \
        and "encoding problem: bogus-enc" in notes and "Delete that line" in notes, notes
    notes = " ".join(grade_once(ascii_line).notes)
    assert "asciidecl.py is saved as UTF-8, but line 1, its coding line, says it is ascii: line 2 holds the byte " \
        "0xc3" in notes and "Delete the coding line" in notes, notes
    assert "Latin-1 code" not in notes and "Save it as UTF-8" not in notes, notes


def _logging_notebook(path, items: int, scratch: int):
    """A correct released notebook whose graded functions each append to a call log of `items` numbers made after
    the imports, with `scratch` cells `x0 = 0` ... at the end."""
    notebook = nbformat.read(SUBMISSIONS / "notebooks" / "dict_changed_in_place_after_its_check.ipynb", as_version=4)
    notebook.cells = [cell for cell in notebook.cells if not cell.source.startswith('CFG["axis"] = 0')]
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith("answer_"):
            cell.source = re.sub(r"^(def \w+\(.*\):\n)", r"\1    LOG.append(1.0)\n", cell.source, flags=re.M)
    at = next(i for i, cell in enumerate(notebook.cells) if cell.metadata.get("nbgrader", {}).get("grade_id") ==
              "imports")
    notebook.cells.insert(at + 1, nbformat.v4.new_code_cell(f"LOG = [float(i) for i in range({items})]  # call log"))
    notebook.cells += [nbformat.v4.new_code_cell(f"x{i} = {i}  # scratch") for i in range(scratch)]
    nbformat.write(notebook, path)
    return path


def test_the_graders_own_comparing_after_each_cell_is_not_the_notebooks_load_time(grade, tmp_path):
    """A list near the 4 MB kept for each check cell (39,000 numbers) that every graded function appends to: the
    grader compared it again for every function after every later cell, on the notebook's load clock. A correct
    notebook took over a minute to grade, its trivial scratch cells were stopped at the load limit and named as
    slow. Each global is now compared once a cell, by identity first, and the grader's work is off the clock."""
    control = grade(_logging_notebook(tmp_path / "short_log.ipynb", 10, 30))
    result = grade(_logging_notebook(tmp_path / "long_log.ipynb", 39_000, 30))
    assert (control.score, result.score) == (100, 100), [t.message for t in result.tests if t.message]
    assert not [note for note in result.notes if "load limit" in note or " ran for " in note], result.notes
    assert result.seconds < 5 * control.seconds + 2, (result.seconds, control.seconds)
