"""Issue 22: a hand-in that does not load is flagged "not loaded", reason first, in every output.

A small class is graded and reported through the real command line (real
sandbox, real notebooks written with nbformat); the tests read the terminal
table, grades.csv, the class report and the feedback it wrote. The process
count is checked on files that exit: an exiting worker is not a process left
running.
"""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import warnings

import nbformat
import numpy as np
import pytest

from autograder.authoring.protocol import Call
from autograder.grading import loading
from autograder.grading.loading import load_notes, not_loaded
from autograder.grading.results import CheckResult
from autograder.grading.submission import read_submission
from autograder.sandbox.limits import Limits
from autograder.sandbox.load_report import LoadReport
from autograder.sandbox.session import MAX_LOAD_ATTEMPTS, Session

from conftest import PLAIN, SUBMISSIONS, compose, manifest, run_cli

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`

PLAIN_LINES = PLAIN.read_text().splitlines()
FIRST_DEF = next(i for i, line in enumerate(PLAIN_LINES) if line.startswith("def "))
FUNCTIONS = "\n".join(PLAIN_LINES[FIRST_DEF:])
IMPORTS = "\n".join(line for line in PLAIN_LINES[:FIRST_DEF] if line.startswith(("import", "from")))
# Line by line: where each broken file breaks, and what its reason must say (in its own file name).
NOT_LOADED = {
    "frank": "frank.py, line 62: SyntaxError",
    "importer": "importer.py, line 2 raised ModuleNotFoundError: No module named 'no_such_module'",
    "exiter": "exiter.py, line 5 stopped the worker process (it exited with status 0)",
    "quitter": "quitter.py, line 4 called sys.exit()",
    "broken": "broken.ipynb is not a valid notebook: its JSON is broken at line 1, column",
    "cellfail": "cellfail.ipynb, code cell 2 raised SyntaxError",
}


def _notebook(path, *sources):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(notebook, path)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(terminal output, report folder) for a class of one good file and files that do not load."""
    root = tmp_path_factory.mktemp("loading")
    compose(root, "plain")
    lines = FUNCTIONS.splitlines()
    frank = [IMPORTS, *[""] * (61 - IMPORTS.count("\n") - 1), "def broken(:", *lines]  # line 62
    (root / "frank.py").write_text("\n".join(frank) + "\n")
    (root / "importer.py").write_text(f"{IMPORTS.splitlines()[0]}\nimport no_such_module\n{IMPORTS}\n{FUNCTIONS}\n")
    (root / "exiter.py").write_text((SUBMISSIONS / "attacks/exit_at_import.py").read_text() + FUNCTIONS + "\n")
    (root / "quitter.py").write_text(f"import sys\n\n\nsys.exit(0)\n{IMPORTS}\n{FUNCTIONS}\n")
    (root / "broken.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "def score(')
    _notebook(root / "cellfail.ipynb", IMPORTS, FUNCTIONS.replace("def softmax(S):", "def softmax(S:"))
    # A failing demo cell does not stop a notebook whose functions are defined: it is graded, and told.
    _notebook(root / "demofail.ipynb", IMPORTS, FUNCTIONS, "print(undefined_name)")
    # A progress-bar habit: the failing cell's note says the grader lacks the module, not just that it raised.
    _notebook(root / "progress.ipynb", "from tqdm import tqdm", IMPORTS, FUNCTIONS)
    db, out = root / "grades.db", root / "report"
    done = run_cli("grade", "w07_attention", root, "--db", db, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    reported = run_cli("report", "--db", db, "--out", out)
    assert reported.returncode == 0, reported.stderr
    return done, out


def test_the_terminal_table_flags_each_and_explains_the_flag(graded):
    done, _ = graded
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if "/ 100" in line}
    for student in NOT_LOADED:
        assert rows[student].rstrip().endswith("not loaded"), rows[student]
    assert rows["plain"].rstrip().endswith("100 / 100") and "not loaded" not in rows["demofail"]
    assert re.search(r"^  not loaded: the file did not load", done.stdout, re.M)
    # The progress lines lead with the reason, in the student's own file name.
    for student, reason in NOT_LOADED.items():
        assert f"{student}: 0/100 (not loaded: {reason}" in done.stderr, student


def test_a_module_the_grader_lacks_is_named_as_such_not_as_a_bug_to_reproduce(graded):
    # `python importer.py` on the student's own machine, which has the module, would show no error.
    done, _ = graded
    line = next(line for line in done.stderr.splitlines() if line.startswith("[") and "importer: 0/100" in line)
    assert "No module named 'no_such_module' (the grader has no such module" in line
    assert "Remove that import, or move it into the function that needs it" in line
    assert "Run `python importer.py`" not in line
    frank = next(line for line in done.stderr.splitlines() if line.startswith("[") and "frank: 0/100" in line)
    assert "Run `python frank.py` to see the error" in frank and "no such module" not in frank


def test_grades_csv_has_the_flag_and_the_reason_first(graded):
    _, out = graded
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    for student, reason in NOT_LOADED.items():
        assert rows[student]["problem"].startswith(f"not loaded: {reason}"), rows[student]["problem"]
        assert rows[student]["flags"] == "not loaded" and rows[student]["killed_processes"] == "0"
    assert rows["frank"]["problem"].count("line 62") == 1 and "attention.py" not in rows["frank"]["problem"]
    assert "nothing in it ran" in rows["frank"]["problem"] and "still ran" not in rows["frank"]["problem"]
    assert rows["demofail"]["flags"] == "" and rows["demofail"]["total"] == "100"
    # A broken notebook's message is whole sentences: where, what, and what to do.
    broken = rows["broken"]["problem"]
    assert "(unterminated string)" in broken and broken.endswith("save it again and resubmit")


def test_the_report_lists_them_as_not_loaded(graded):
    _, out = graded
    html = (out / "index.html").read_text()
    body = re.search(r'<table id="flagged">(.*?)</table>', html, re.S).group(1)
    for student in NOT_LOADED:
        row = next(r for r in body.split("<tr ")[1:] if f">{student}</a>" in r)
        assert '<td class="flags">not loaded</td>' in row
    assert "<dt class=\"flags\">not loaded</dt>" in html


def test_feedback_opens_with_the_reason_and_says_not_run_once(graded):
    _, out = graded
    for student in NOT_LOADED:
        text = (out / "feedback" / f"{student}.md").read_text()
        total = next(line for line in text.splitlines() if line.startswith("**Total"))
        assert "Your file did not load, so no check could run" in total, total
        assert "does not define" not in text and "Checks to revisit" not in text
        assert "left running" not in text  # an exiting file left nothing running
    demo = (out / "feedback" / "demofail.md").read_text()
    assert "code cell 3 raised NameError" in demo and "the rest of the notebook still ran" in demo
    assert "no such module" not in demo
    progress = (out / "feedback" / "progress.md").read_text()
    assert "**Total: 100 / 100 points.**" in progress
    assert ("code cell 1 raised ModuleNotFoundError at line 1: No module named 'tqdm' (the grader has no such "
            "module: import only the libraries the assignment names, and keep your own code in this one file); the "
            "rest of the notebook still ran") in progress


def test_an_exiting_worker_is_not_counted_as_processes_left(grade, tmp_path):
    """os._exit at import and in a function: the worker's own child exits; nothing else ran, so nothing is blamed."""
    for round in range(3):  # the race (the child still tearing down when counted) is not won every time
        at_import = tmp_path / f"exit_import_{round}.py"
        at_import.write_text((SUBMISSIONS / "attacks/exit_at_import.py").read_text())
        in_function = compose(tmp_path, f"exit_call_{round}", SUBMISSIONS / "attacks/exit_in_function.py")
        for path in (at_import, in_function):
            result = grade(path)
            assert result.killed_processes == 0, (path.name, result.notes)
            assert not any("process" in note for note in result.notes)


def test_grade_says_what_it_does_before_the_first_result(graded):
    """A sign of life: what `grade` is doing, in order, before the progress lines (plain lines: not a terminal)."""
    done, _ = graded
    lines = done.stderr.splitlines()
    steps = ["autograder grade: starting", "9 submissions of w07_attention found", "loading the suite",
             "checking the sandbox", "timing the reference and starting 1 sandbox", "[1/9] "]
    where = [next(i for i, line in enumerate(lines) if line.startswith(step)) for step in steps]
    assert where == sorted(where) and where[0] == 0, lines[:8]


def test_two_hanging_cells_are_skipped_and_the_rest_still_loads_and_runs(sandbox, suite, tmp_path):
    """Each hanging cell spoils a load, and the budget holds one load and the calls: the spoiled loads are
    given back, so a notebook with two endless demo cells still loads its functions and they still run."""
    path = tmp_path / "two_hangs.ipynb"
    _notebook(path, "def double(x):\n    return 2 * x", "while True:\n    pass", "import time\ntime.sleep(60)")
    limits = Limits(load_seconds=0.5, call_seconds=0.5)
    spec = read_submission(path).worker_spec(suite.assignment.module)
    with Session(sandbox, spec, limits, budget=0.8) as session:  # under two loads' worth
        report = session.open()
        assert not report.failure, report.failure
        assert [unit for unit, _ in report.stopped] == ["code cell 2"]  # its loop, stopped, defines nothing
        assert [unit for unit, _ in report.trimmed] == ["code cell 3"]  # its import ran, not its wait
        assert "double" in report.functions
        assert session.call(Call("double", (3,))).value == 6


def test_a_thread_the_top_level_left_running_is_named(sandbox, suite, tmp_path):
    # A spinning daemon thread cost a random check its time limit, with advice about loops in the function.
    path = tmp_path / "thread.ipynb"
    _notebook(path, "def double(x):\n    return 2 * x",
              "import threading\nthreading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()")
    spec = read_submission(path).worker_spec(suite.assignment.module)
    with Session(sandbox, spec, Limits(load_seconds=2.0, call_seconds=0.5), budget=3.0) as session:
        report = session.open()
    assert report.threads == 1 and "double" in report.functions, report
    [note] = [n for n in load_notes(report, True, read_submission(path), set()) if "thread" in n]
    assert note.startswith("the file's top-level code left 1 thread running after loading; threads share"), note


def test_a_stopped_cell_is_told_of_the_processes_it_left_running(sandbox, suite, tmp_path):
    # A cell that started three busy processes and then waited was stopped, and they with it, without a word.
    path = tmp_path / "forks.ipynb"
    _notebook(path, "def double(x):\n    return 2 * x",
              "import subprocess, sys, time\nkept = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) "
              "for _ in range(2)]\ntime.sleep(60)")
    spec = read_submission(path).worker_spec(suite.assignment.module)
    with Session(sandbox, spec, Limits(load_seconds=1.0, call_seconds=0.5), budget=2.0) as session:
        report = session.open()
        assert "double" in report.functions, report
    [(cell, why)] = report.stopped
    assert cell == "code cell 2" and why.endswith("and was stopped, and the 2 processes it had started with it"), why


def test_a_cell_stopped_for_its_output_runs_its_definitions_once_and_the_cap_holds_there_too(sandbox, suite, tmp_path):
    """A cell that defines a helper and then prints a log past the output cap was skipped whole, the helper with it,
    while a cell stopped at the load limit keeps its definitions. It now runs its definitions alone in the next load,
    told so; a cell whose definitions themselves print as much (a table built by a chatty function) is stopped there
    too, by the same cap, and skipped whole."""
    log = "for step in range(100_000):\n    print('step', step, 'loss', 1.0 / (step + 1))\n"
    chatty = "def noisy():\n" + "".join(f"    {line}\n" for line in log.splitlines()) + "    return 3\n"
    path = tmp_path / "logs.ipynb"
    _notebook(path, f"def double(x):\n    return 2 * x\n{log}", f"{chatty}\nTABLE = noisy()\n\n\ndef triple(x):\n"
              "    return TABLE * x\n", "def four(x):\n    return 4 * x")
    spec = read_submission(path).worker_spec(suite.assignment.module, graded={"double", "triple", "four"})
    with Session(sandbox, spec, Limits(load_seconds=5.0, max_output_mib=1), budget=10.0) as session:
        report = session.open()
        assert {"double", "four"} <= report.functions and "triple" not in report.functions, report
        assert session.call(Call("double", (3,))).value == 6
    assert report.flooded == (("code cell 1", "printed more than 1 MB of output"),) and not report.trimmed, report
    [(cell, why)] = report.stopped
    assert cell == "code cell 2" and why.startswith("printed more than 1 MB of output and was stopped"), why
    notes = load_notes(report, True, read_submission(path), {"double", "triple", "four"})
    assert any(note.startswith("code cell 1 printed more than 1 MB of output and was stopped; so that its functions "
                               "could be graded, only its definitions were run") for note in notes), notes


def test_demo_cells_that_together_outlast_the_load_limit_run_only_their_imports_and_every_function_loads(
        sandbox, suite, tmp_path):
    """A short demo after each function, each finishing but together past the load limit (which counts the cells
    before the one running): every load had run the same demos again and been stopped a cell further on, and the
    functions after them were never loaded (31/100 for a notebook of nine 3 s demos). A demo that ran for a tenth
    of the limit now runs only its definitions in the next load."""
    demo = "import time\nstarted = time.monotonic()\nwhile time.monotonic() - started < 0.25:\n    pass"
    functions = [f"def f{n}(x):\n    return {n} * x" for n in range(6)]
    path = tmp_path / "demos.ipynb"
    _notebook(path, *[cell for function in functions for cell in (function, demo)])
    spec = read_submission(path).worker_spec(suite.assignment.module)
    with Session(sandbox, spec, Limits(load_seconds=0.6, call_seconds=0.5), budget=5.0) as session:
        report = session.open()
        assert not report.gave_up and not report.failure, report
        assert {f"f{n}" for n in range(6)} <= report.functions, report
        assert session.call(Call("f5", (3,))).value == 15
    assert report.trimmed and all(took is None or took >= 0.06 for _, took in report.trimmed), report.trimmed
    notes = load_notes(report, True, read_submission(path), set())
    assert any(re.search(r"ran for \d+\.\d s, and the notebook.s cells", note) and "only its definitions were" in note
               for note in notes), notes


def test_a_notebook_stopped_at_every_load_is_graded_on_the_cells_before_the_first_stop(sandbox, suite, tmp_path):
    """More hanging cells than loads the grader tries, each hanging where it sets a name a function reads (so not a
    demo to trim): each load is stopped at a later cell, and the cells before the first stopped one loaded every
    time. The last load runs only those, so their functions are graded. Demo cells that hang are trimmed to their
    definitions first, so a function after them is graded too."""
    path = tmp_path / "hangs.ipynb"
    hanging = "while True:\n    TABLE += 1"
    _notebook(path, "TABLE = 0\ndef double(x):\n    return 2 * x + 0 * TABLE", *[hanging] * (MAX_LOAD_ATTEMPTS + 1))
    spec = read_submission(path).worker_spec(suite.assignment.module)
    with Session(sandbox, spec, Limits(load_seconds=0.3, call_seconds=0.5), budget=0.5) as session:
        report = session.open()
        assert not report.gave_up and not report.failure and "double" in report.functions
        assert session.call(Call("double", (3,))).value == 6
    stopped = dict(report.stopped)
    ran = [cell for cell, why in stopped.items() if why.startswith("was still running at the load limit of 0.3 s")]
    assert ran == [f"code cell {n}" for n in range(2, len(ran) + 2)] and len(ran) >= 3, stopped
    assert all(why.startswith("was not run: the loads before had each been stopped at a later cell")
               for cell, why in stopped.items() if cell not in ran) and len(stopped) == MAX_LOAD_ATTEMPTS + 1
    path = tmp_path / "demo_hangs.ipynb"
    _notebook(path, "def double(x):\n    return 2 * x", *["import math\nwhile True:\n    pass"] * 8,
              "def triple(x):\n    return 3 * x")
    spec = read_submission(path).worker_spec(suite.assignment.module)
    with Session(sandbox, spec, Limits(load_seconds=0.3, call_seconds=0.5), budget=0.5) as session:
        report = session.open()
        assert {"double", "triple"} <= report.functions and not report.gave_up, report
        assert session.call(Call("triple", (3,))).value == 9
    assert len(report.trimmed) + len(report.stopped) == 8 and not report.gave_up, report


def test_a_notebook_whose_loads_were_all_stopped_is_told_which_cells_and_why(tmp_path):
    """Where even the cells before the first stopped one no longer load in time (a machine slower at the last load):
    "not loaded", with each cell named, not the worker's failure ("could not grade", which tells the TA to fix a
    cause and grade again)."""
    cells = [f"code cell {n}" for n in range(2, MAX_LOAD_ATTEMPTS + 2)]
    report = LoadReport(frozenset(), stopped=tuple((cell, "was still running at the load limit") for cell in cells),
                        gave_up=True)
    _notebook(tmp_path / "hangs.ipynb", "def double(x):\n    return 2 * x")
    problem = not_loaded(read_submission(tmp_path / "hangs.ipynb"), report, {"double"})
    assert problem.startswith(f"not loaded: hangs.ipynb: loading stopped at {MAX_LOAD_ATTEMPTS} cells in turn "
                              f"({', '.join(cells)}), each of which was still running at the load limit (which "
                              "counts the cells before it too) or ended the worker process")
    assert "Restart & Run All finishes quickly" in problem


def test_a_file_whose_name_says_the_other_kind_is_read_by_what_it_holds_with_a_note(tmp_path):
    """A notebook renamed attention.py for an upload page, and code saved as .ipynb, are graded as what they are;
    JSON, however broken, stays a notebook and is told what is wrong with it."""
    renamed = tmp_path / "renamed.py"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLAIN.read_text())]), renamed)
    notebook = read_submission(renamed, "s1")
    assert (notebook.kind, notebook.problem) == ("ipynb", "") and len(notebook.cells) == 1
    assert notebook.note.startswith("renamed.py is a Jupyter notebook (JSON) with a .py name, so it was read as")
    code = tmp_path / "code.ipynb"
    code.write_bytes(b"\xef\xbb\xbf" + PLAIN.read_bytes())
    module = read_submission(code, "s2")
    assert (module.kind, module.problem, module.source) == ("py", "", PLAIN.read_text())
    assert module.note.startswith("code.ipynb is not a notebook (it is plain text, not JSON), so it was read as")
    for broken in (b'{"cells": [', b"[[[["):
        code.write_bytes(broken)
        assert read_submission(code, "s3").problem.startswith("code.ipynb is not a valid notebook")


def test_a_notebook_off_the_format_is_read_with_a_note_and_no_unused_format_checker(tmp_path):
    # jsonschema imports every format checker that is installed, 1.3 s of them with Jupyter's packages,
    # and nbformat uses none (grading.submission): a fresh process reads a notebook without them, and the
    # validation still notes what is off the format.
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLAIN.read_text())])
    notebook.metadata["kernelspec"] = {"name": 3}  # the format wants a name and a display name, as text
    path = tmp_path / "off_format.ipynb"
    path.write_text(json.dumps(notebook))
    checkers = ("rfc3987_syntax", "rfc3986_validator", "rfc3339_validator", "isoduration", "fqdn", "webcolors",
                "jsonpointer", "uri_template")
    script = ("import importlib.util, sys; from pathlib import Path; "
              f"print([m for m in {checkers!r} if importlib.util.find_spec(m) is None]); "
              "from autograder.grading.submission import read_submission; "
              f"s = read_submission(Path({str(path)!r}), 's1'); print(s.problem or s.note); "
              f"print([m for m in {checkers!r} if sys.modules.get(m) is not None])")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    missing, note, loaded = out.splitlines()
    assert missing == "[]"  # installed, so the test can tell
    assert note.startswith("off_format.ipynb does not fully follow the notebook format (") and "graded anyway" in note
    assert loaded == "[]"


def _version_4(change):
    notebook = json.loads(json.dumps(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"),
                                                                     nbformat.v4.new_code_cell("y = 2")])))
    change(notebook)
    return json.dumps(notebook)


OFF_FORMAT = {
    "as written": _version_4(lambda nb: None),
    "a kernelspec name that is a number": _version_4(lambda nb: nb["metadata"].update(kernelspec={"name": 3})),
    "no minor version": _version_4(lambda nb: nb.pop("nbformat_minor")),
    "a key the format does not know": _version_4(lambda nb: nb.update(extra=1)),
    "a cell's outputs that are not a list": _version_4(lambda nb: nb["cells"][0].update(outputs=3)),
    "two cells with one id": _version_4(lambda nb: nb["cells"][1].update(id=nb["cells"][0]["id"])),
    "a cell without an id": _version_4(lambda nb: nb["cells"][0].pop("id")),
    "version 3": nbformat.v3.nbjson.writes(nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(
        cells=[nbformat.v3.new_code_cell("x = 1")])])),
}


@pytest.mark.parametrize("text", OFF_FORMAT.values(), ids=OFF_FORMAT.keys())
def test_a_notebook_is_noted_off_the_format_exactly_when_nbformat_finds_it_so(tmp_path, text):
    # A version-4 file is validated as parsed, not read a second time by nbformat (grading.submission).
    path = tmp_path / "handin.ipynb"
    path.write_text(text)
    submission = read_submission(path, "s1")
    found: dict = {}
    try:
        with warnings.catch_warnings():  # a cell without an id: nbformat warns, as the grader keeps it from doing
            warnings.simplefilter("ignore")
            nbformat.reads(text, as_version=4, capture_validation_error=found)
    except Exception as error:  # noqa: BLE001 - nbformat's own reader fails on some damaged files
        found["ValidationError"] = error
    assert not submission.problem
    assert [cell.source for cell in submission.cells] == ["x = 1", "y = 2"][:len(submission.cells)]
    assert ("does not fully follow the notebook format" in submission.note) == bool(found), submission.note


def test_a_failure_names_a_graded_function_it_calls_that_fails_its_own_checks(grade_once, tmp_path):
    """softmax normalizes over the queries: attention, which calls it, fails too, and its messages show only numbers.
    Each of attention's failures now says where to start; an attention that computes its weights itself is not
    pointed at softmax, whatever softmax does."""
    calls_it = grade_once(compose(tmp_path, "calls_softmax", SUBMISSIONS / "buggy" / "softmax_over_queries.py"))
    failed = {t.name: t.message for t in calls_it.tests if t.status != "passed"}
    pointer = "attention calls softmax, which fails its own checks: fix that first"
    assert any(name.startswith("attention.") for name in failed)
    assert all((pointer in message) == name.startswith("attention.") for name, message in failed.items()), failed
    inline = tmp_path / "own_weights.py"
    inline.write_text(compose(tmp_path, "x", SUBMISSIONS / "buggy" / "softmax_over_queries.py").read_text() + """

def attention(Q, K, V, allowed=None, scale=None):
    S = np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)  # the scale forgotten
    if allowed is not None:
        S = np.where(allowed, S, -np.inf)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return A @ np.asarray(V), A
""")
    own = [t for t in grade_once(inline).tests if t.function == "attention" and t.status != "passed"]
    assert own and not any("own checks" in t.message for t in own), [t.message for t in own]



def test_a_part_that_is_only_too_slow_is_pointed_at_for_timeouts_not_for_wrong_values(tmp_path):
    """score right but too slow, attention masking after its softmax: the wrong weights are attention's own
    doing, and only its timeout may be score's."""
    path = compose(tmp_path, "slow_score_mask_after", SUBMISSIONS / "slow" / "score_grid_loop.py")
    path.write_text(path.read_text() + "\n\n" + (SUBMISSIONS / "buggy" / "mask_after_softmax.py").read_text())
    checks = [CheckResult("score.matches_reference", "score", "hidden", "passed", 1.0, 1.0),
              CheckResult("score.long_sequence", "score", "hidden", "timeout", 0.0, 1.0, message="too slow"),
              CheckResult("attention.causal_rows", "attention", "hidden", "failed", 0.0, 1.0, message="wrong A"),
              CheckResult("attention.long_sequence", "attention", "hidden", "timeout", 0.0, 1.0, message="too slow")]
    messages = {t.name: t.message for t in loading.with_failing_parts(checks, read_submission(path))}
    assert messages["attention.causal_rows"] == "wrong A"
    assert "attention calls score, which fails its own checks" in messages["attention.long_sequence"]


def test_a_file_with_hundreds_of_its_own_functions_is_graded_on_the_graded_ones(grade_once, tmp_path):
    """Only 500 names of the loaded file are sent back: 500 helpers of its own whose names sort first (f000, ...)
    had pushed score, padding_mask and softmax out of the list, and they were graded as missing."""
    path = tmp_path / "many_helpers.py"
    path.write_text(PLAIN.read_text() + "\n\nfor _n in range(500):\n    globals()[f'f{_n:03d}'] = lambda x: x\n")
    result = grade_once(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != "passed"]


def test_a_figure_drawn_after_ipython_is_imported_costs_the_cell_nothing(grade_once, tmp_path):
    """pyplot's first figure, once IPython is imported (by the cell, or by the zygote for classmates who import
    it), registers a redraw with the shell's `events`: the notebook's shell had none, so the cell stopped there and
    every function defined after the plot was lost (60 points)."""
    source = PLAIN.read_text()
    split = source.index("def context(")
    path = tmp_path / "plots.ipynb"
    _notebook(path, "import IPython\nimport matplotlib.pyplot as plt\n" + source[:split],
              "plt.plot([1, 2, 3])\nplt.ion()\n" + source[split:])
    result = grade_once(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != "passed"]
    assert not any("events" in note for note in result.notes), result.notes


def test_a_slow_cell_keeps_its_definitions_and_what_the_functions_read():
    """A table built once at the top (`LOOKUP = ...`, however slow) is the functions' to use, a helper defined in a
    demo cell is kept, and a demo's `S` is not a function's own `S`: only what no function needs goes."""
    from autograder.sandbox.slow_cells import trimmed_after

    sources = ["import numpy as np", "LOOKUP = np.ones(3)\nfor _ in range(10**8):\n    pass",
               "def softmax(S):\n    A = np.exp(S) * LOOKUP[0]\n    return A / A.sum(-1, keepdims=True)",
               "import time\nS = np.ones(4)\ntime.sleep(3)\nprint(softmax(S))",
               "def show(x):\n    print(x)\nwhile True:\n    show(1)", "class Model:\n    pass",
               "X = np.ones(2)\nfor _ in range(10**8):\n    pass",
               "print(X.shape)\ndef context(A, V):\n    return A @ V"]
    labels = [f"code cell {n}" for n in range(1, 9)]
    # Each kept line stays where it was, so a traceback's line numbers are the student's.
    assert trimmed_after(0, labels, sources) == [(1, "code cell 2", "LOOKUP = np.ones(3)\n\n"),
                                                 (3, "code cell 4", "import time\n\n\n"),
                                                 (4, "code cell 5", "def show(x):\n    print(x)\n\n"),
                                                 (6, "code cell 7", "X = np.ones(2)\n\n"),  # a def cell's top reads X
                                                 (7, "code cell 8", "\ndef context(A, V):\n    return A @ V")]
    from autograder.sandbox.slow_cells import definitions_of

    decorated = ("import functools\n@functools.lru_cache(maxsize=None)\ndef f(n):\n    return n\n"
                 "import time; time.sleep(3)")
    assert definitions_of(decorated, set()) == "import functools\n@functools.lru_cache(maxsize=None)\ndef f(n):\n" \
                                               "    return n\n"  # its decorator kept; a line that also sleeps not


def test_a_slow_cell_keeps_its_def_whatever_its_demo_reads_after_it():
    """`def softmax` then a 25 s benchmark in one answer cell: what the benchmark read after the def (`_t0`) was taken
    for what the functions read, so the benchmark was kept, stopped again, and the cell skipped whole, def and all
    (−41 points). A demo before the def keeps only what it sets that the cell's code before the def reads."""
    from autograder.sandbox.slow_cells import definitions_of, read_by_functions

    after = "def softmax(S):\n    return S\nimport time\n_t0 = time.time()\nwhile time.time() - _t0 < 25:\n    _ = 1\n"
    before = ("import time\n_t0 = time.time()\nwhile time.time() - _t0 < 25:\n    _ = 1\n"
              "def context(A, V):\n    return A\n")
    for source, kept in ((after, "def softmax(S):\n    return S\nimport time\n\n\n\n"),
                         (before, "import time\n_t0 = time.time()\n\n\ndef context(A, V):\n    return A\n")):
        assert definitions_of(source, read_by_functions([source])) == kept


def test_a_py_trimmed_to_its_definitions_keeps_every_way_it_defines_and_what_they_read():
    """A demo loop between two defs, a value printed before them, defs under `if` or `try`, a table's size: the
    trim had kept the loop (it reads its own `n`) and the slow value, and dropped the `if` and `try` with their
    defs, and the flag the `if` reads: 0 or 74 points for files whose definitions load at once."""
    from autograder.sandbox.slow_cells import module_definitions

    source = ("import time\nN = 3\nTABLE = [0] * N\nHAVE = True\nloss = time.sleep(30)\nprint(loss)\n"
              "def f():\n    return TABLE\nfor n in (1, 2):\n    time.sleep(15)\n    print(n, f())\n"
              "if HAVE:\n    def g():\n        return 1\ntry:\n    def h():\n        return 2\nexcept ImportError:\n"
              "    pass\n")
    kept = module_definitions(source)
    assert "sleep" not in kept and "print" not in kept, kept
    for line in ("N = 3", "TABLE = [0] * N", "HAVE = True", "if HAVE:", "def g", "try:", "def h", "def f"):
        assert line in kept, (line, kept)
    namespace = {}
    exec(compile(kept, "kept", "exec"), namespace)
    assert (namespace["f"](), namespace["g"](), namespace["h"]()) == ([0, 0, 0], 1, 2)


@pytest.mark.parametrize("demo", ["time.sleep(30)", "for _ in range(10**9):\n    pass"])
def test_a_py_whose_demo_after_its_functions_runs_past_the_limit_is_graded_on_its_definitions(sandbox, suite, tmp_path,
                                                                                              demo):
    """A .py that trains a model or sleeps after its functions stopped at the load limit, as `import` would, and
    had 0 points; the same code as a notebook had 100. Loaded once more with its definitions alone, it is graded,
    with a note; a file that is nothing but the demo still does not load."""
    path = tmp_path / "attention.py"
    path.write_text(PLAIN.read_text() + f"\n\nimport time\n{demo}\n")
    with Session(sandbox, read_submission(path).worker_spec("attention"), Limits(load_seconds=0.5)) as session:
        load = session.open()
        assert not load.stopped and load.trimmed == ((f"line {len(PLAIN_LINES) + 4}", None),), load
        assert "softmax" in load.functions
        assert session.call(Call("softmax", (np.zeros((1, 2)),))).value.tolist() == [[0.5, 0.5]]
    notes = load_notes(load, True, read_submission(path), {"softmax"})
    assert any("only its definitions were run" in note and '`if __name__ == "__main__":`' in note
               and f"while line {len(PLAIN_LINES) + 4} was running" in note for note in notes), notes
    path.write_text(f"import time\n{demo}\n")
    with Session(sandbox, read_submission(path).worker_spec("attention"), Limits(load_seconds=0.5)) as session:
        load = session.open()
    assert load.hung and load.stopped and not load.trimmed, load


@pytest.mark.parametrize("demo", sorted(manifest("demos")))
def test_a_py_whose_demo_runs_past_the_limit_is_graded_on_its_definitions_and_what_they_need(sandbox, tmp_path,
                                                                                             demo):
    """A timing loop after the functions (the manifest says what each had cost): its names are not what the
    functions read, however their parameters, locals or nested helpers are named, so the loop goes; what sets a
    global they read stays, whether it names it, fills it in place or calls a function that sets it through
    `global`. Masked attention then answers right; the note names the line the load was stopped at."""
    path = compose(tmp_path, demo, SUBMISSIONS / "demos" / f"{demo}.py")
    X = np.random.default_rng(1).standard_normal((3, 4))
    weights = np.tril(np.exp(X @ X.T / 2))
    with Session(sandbox, read_submission(path).worker_spec("attention"), Limits(load_seconds=0.5)) as session:
        load = session.open()
        assert not load.hung and not load.stopped and "attention" in load.functions, load
        assert session.call(Call("softmax", (np.zeros((1, 2)),))).value.tolist() == [[0.5, 0.5]]
        _, A = session.call(Call("attention", (X, X, X, np.tril(np.ones((3, 3), dtype=bool))))).value
        assert np.allclose(A, weights / weights.sum(axis=-1, keepdims=True)), A
    line = manifest("demos")[demo]["line"]
    assert load.trimmed == ((f"line {line}", None),), load
    notes = load_notes(load, True, read_submission(path), {"attention"})
    assert any(f"ran past the load limit, while line {line} was running; so that its functions could be graded, "
               "only its definitions were run" in note for note in notes), notes


def test_a_graded_function_bound_by_assignment_is_kept_by_the_trim(sandbox, tmp_path):
    """`causal_mask = causal_mask_fast` reads nothing a function reads, so the trim dropped it, and a file whose demo
    ran past the limit was told it "does not define causal_mask(), only causal_mask_loop()" (93 points). A binding
    of a function the checks call stays, with what it needs."""
    fast = ("def causal_mask_fast(n_q, n_k=None):\n    return np.tril(np.ones((n_q, n_k or n_q), dtype=bool))\n\n\n"
            "causal_mask = causal_mask_fast\n")
    path = tmp_path / "attention.py"
    path.write_text(PLAIN.read_text().replace("def causal_mask(", "def causal_mask_loop(") + "\n\n" + fast
                    + "\nimport time\nfor trial in range(8):\n    time.sleep(0.1)\n")
    spec = read_submission(path).worker_spec("attention", graded={"causal_mask", "attention"})
    with Session(sandbox, spec, Limits(load_seconds=0.5)) as session:
        load = session.open()
        assert load.trimmed and "causal_mask" in load.functions, load
        assert session.call(Call("causal_mask", (2,))).value.tolist() == [[True, False], [True, True]]


def test_a_demo_cell_setting_a_functions_local_names_is_trimmed_in_a_notebook_too():
    """The same loop in a notebook's cell: a function's parameters and locals (`Q`, `A`) are not what it reads from
    the notebook, so neither the cell's trim nor the trim of every cell after a stopped one keeps the loop."""
    from autograder.sandbox.slow_cells import definitions_of, read_by_functions, trimmed_after

    sources = ["import numpy as np\n\ndef attention(Q, K, V):\n    A = Q @ K.T\n    return A @ V, A\n",
               "def helper(Q):\n    return Q\nrng = np.random.default_rng(0)\nfor trial in range(1500):\n"
               "    Q = rng.standard_normal((4, 4))\n    C, A = attention(Q, Q, Q)\n"]
    kept = "def helper(Q):\n    return Q\n\n\n\n\n"
    assert definitions_of(sources[1], read_by_functions(sources), {"np"}) == kept
    assert trimmed_after(0, ["code cell 1", "code cell 2"], sources) == [(1, "code cell 2", kept)]


def test_a_py_whose_slow_top_level_its_functions_need_is_loaded_twice_at_most(sandbox, tmp_path):
    """A table the functions read, built past the limit in the file's first statement: kept by the trim, so the
    trimmed load is stopped too, and the file does not load, after two loads (the trimmed one had been keyed as the
    first statement, and trimmed again at each stop)."""
    path = tmp_path / "attention.py"
    path.write_text("TABLE = __import__('time').sleep(30) or 1\n\n\ndef softmax(S):\n    return S * TABLE\n\n\n"
                    "print(softmax(2))\n")
    with Session(sandbox, read_submission(path).worker_spec("attention"), Limits(load_seconds=0.5)) as session:
        load = session.open()
    assert load.hung and load.stopped and not load.trimmed and not load.gave_up, load  # six loads had given up


def test_a_slow_cell_keeps_the_calls_that_set_its_libraries_up_and_not_a_figures():
    """The functions run under `torch.set_default_dtype(torch.float64)` in Jupyter, slow demo or not; `ax.set_title`
    would fail once the trim removed the `ax` it is called on."""
    from autograder.sandbox.slow_cells import definitions_of, imported

    sources = ["import numpy as np\nimport torch\nfrom numpy import random",
               "torch.set_default_dtype(torch.float64)\nnp.seterr(all='raise')\nrandom.seed(0)\n"
               "fig, ax = plt.subplots()\nax.set_title('demo')\ntorch.manual_seed(1)\nprint(np.ones(2))"]
    assert imported(sources) == {"np", "torch", "random"}
    assert definitions_of(sources[1], set(), imported(sources)) == (
        "torch.set_default_dtype(torch.float64)\nnp.seterr(all='raise')\nrandom.seed(0)\n\n\n"
        "torch.manual_seed(1)\n")


def test_a_notebook_exported_as_python_is_graded_as_its_cells(grade_once, tmp_path):
    """Jupyter's "Save and Export As → Python" (nbconvert) writes the released test cells' imports of the course's
    checks and each magic as get_ipython(): run as a module, its first such line stopped it, for 0. Graded as the
    notebook's cells, it scores as the notebook does, and a failing cell is named by the file's own line."""
    from nbconvert import PythonExporter

    test_cell = 'from autograder.nbgrader.inkernel import check_function\n\ncheck_function("score", globals())'
    cells = [f"%matplotlib inline\n{IMPORTS}", FUNCTIONS, test_cell, "print(a_demo_name_never_set)",
             "!autograder check attention.ipynb"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells])
    script, _ = PythonExporter().from_notebook_node(notebook)
    path = tmp_path / "exported.py"
    path.write_text(script)
    result = grade_once(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != "passed"]
    said = " ".join(result.notes)
    assert "was written from a notebook" in said, said
    line = script.splitlines().index("print(a_demo_name_never_set)") + 1
    assert f"code cell 4 raised NameError at line {line}" in said, said
    # A module with cell markers but nothing only a notebook runs stays a module.
    plain = tmp_path / "percent.py"
    plain.write_text(f"# %%\n{IMPORTS}\n\n# %%\n{FUNCTIONS}\n")
    assert not any("written from a notebook" in note for note in grade_once(plain).notes)


def test_a_cell_trimmed_without_running_is_told_so_in_a_sentence(tmp_path):
    """A cell whose time the load never measured (it came after the cells had used the load limit) had the note
    "code cell 5 the notebook's cells together ran past the load limit"."""
    path = tmp_path / "nb.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), path)
    report = LoadReport(functions=frozenset(), trimmed=(("code cell 5", None), ("code cell 2", 3.25)))
    notes = load_notes(report, True, read_submission(path), set())
    assert any(note.startswith("code cell 5 came after the notebook's cells together ran past the load limit")
               for note in notes), notes
    assert any(note.startswith("code cell 2 ran for 3.2 s, and the notebook's cells together ran past")
               for note in notes), notes


def test_a_demo_block_with_an_import_of_its_own_or_feeding_a_demo_helper_is_trimmed_away():
    """A demo under `if RUN_DEMO:` or `with torch.no_grad():` that imports `time` itself had been kept whole (an
    import anywhere in it counted as a definition), and a benchmark loop appending to `timings` was kept because a
    demo helper, `summary`, reads `timings`: each ran again past the limit, and a correct file scored 0. Only the
    graded functions, and what they read in turn, decide what a demo must keep; an import they need stays."""
    from autograder.sandbox.slow_cells import module_definitions

    source = ("import numpy as np\ntry:\n    import torch\nexcept ImportError:\n    torch = None\n"
              "RUN_DEMO = True\ntimings = []\n"
              "def helper(x):\n    return np.asarray(x)\n"
              "def softmax(S):\n    return helper(S) if torch is not None else S\n"
              "def summary():\n    print(np.mean(timings))\n"
              "if RUN_DEMO:\n    import time\n    while True:\n        time.sleep(1)\n"
              "with np.errstate(all='ignore'):\n    import time\n    while True:\n        time.sleep(1)\n"
              "for _ in range(10 ** 9):\n    timings.append(softmax(np.ones(2)))\n")
    kept = module_definitions(source, graded=["softmax"])
    assert "while" not in kept and "append" not in kept and "sleep" not in kept, kept
    for line in ("import torch", "torch = None", "def helper", "def softmax", "def summary"):
        assert line in kept, (line, kept)
    namespace = {}
    exec(compile(kept, "kept", "exec"), namespace)
    assert namespace["softmax"]([1.0]).tolist() == [1.0]
