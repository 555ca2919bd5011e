"""A call stopped at its limit is told where its code was: the cell, line, function and text of the deepest line
of the student's own file, as the child said when the grader stopped it. The child's word decides nothing. It is
told too what the operating system counted of it, read from outside the sandbox: processor time, and any wait for
a processor added to its limit."""
from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import time

import nbformat
import pytest

from autograder.authoring.checks import UNENDING_HINT
from autograder.grading.explain import not_computing, stopped_advice
from autograder.grading.statuses import PASSED, TIMEOUT
from autograder.sandbox.replies import CallTimedOut
from autograder.sandbox.stopped_at import MAX_WAIT_SECONDS, RUN_SECONDS, AnswerWait, place_text
from autograder.sandbox.waiting import processor_use

from conftest import PLAIN, SUBMISSIONS, compose, manifest

COMPILED = manifest("compiled")

SPINS_IN_A_HELPER = '''
def _spin(S):
    k = 0
    while k >= 0:
        k += 1
'''
SOFTMAX_CALLS_IT = '''
def softmax(S):
    _spin(S)
'''


def _timed_out(result) -> dict:
    return {test.name: test.message for test in result.tests if test.status == TIMEOUT}


def test_a_loop_in_a_helper_of_another_cell_is_named_by_cell_line_function_and_text(grade, tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(PLAIN.read_text()), nbformat.v4.new_markdown_cell("A helper:"),
                      nbformat.v4.new_code_cell(SPINS_IN_A_HELPER), nbformat.v4.new_code_cell(SOFTMAX_CALLS_IT)]
    path = tmp_path / "s0001.ipynb"
    nbformat.write(notebook, path)
    result = grade(path)
    said = _timed_out(result)["softmax.lecture_example"]
    computed = re.search(r"within ([\d.]+) s and was stopped[^;]*; the operating system counted (\d+\.\d\d) s of "
                         r"processor time for it(, and its limit was extended by the \d+\.\d\d s it waited for a "
                         r"processor)?; it was at ", said)
    assert computed and float(computed.group(2)) >= float(computed.group(1)) / 2, said  # it spun all along
    # The helper's cell is the notebook's second code cell (the markdown cell between is not counted).
    assert re.search(r"; it was at code cell 2, line (4, in _spin \(`while k >= 0:`\)|5, in _spin \(`k \+= 1`\))",
                     said), said
    assert all(test.status == PASSED for test in result.tests if test.function not in ("softmax", "attention"))


def test_a_sleep_is_named_in_the_function_that_called_it(grade, tmp_path):
    path = tmp_path / "s0002.py"
    path.write_text(PLAIN.read_text() + "\n\nimport time\n\n\ndef context(A, V):\n    time.sleep(1000)\n")
    said = _timed_out(grade(path))
    line = path.read_text().splitlines().index("    time.sleep(1000)") + 1
    # A sleeping call may still be counted a clock tick or two (0.01 s each) on a busy machine: never more.
    assert re.search(r"; the operating system counted 0\.0[0-2] s of processor time for it(, and its limit was "
                     rf"extended by the \d\.\d\d s it waited for a processor)?; it was at line {line} "
                     r"\(`time\.sleep\(1000\)`\)",
                     said["context.lecture_example"]), said["context.lecture_example"]
    # attention calls the student's own context: the place is in context, which the message names.
    assert f"; it was at line {line}, in context (`time.sleep(1000)`)" in said["attention.lecture_example"]


def test_a_child_that_does_not_answer_is_stopped_as_before_without_a_place(grade, tmp_path):
    path = compose(tmp_path, "s0003")
    path.write_text(path.read_text() + "\n\nimport signal\n\n\ndef softmax(S):\n"
                    "    signal.signal(signal.SIGUSR2, signal.SIG_IGN)\n    while True:\n        pass\n")
    said = _timed_out(grade(path))["softmax.lecture_example"]
    assert "did not return within" in said and "it was at" not in said


def test_what_the_child_says_is_shown_only_as_plain_bounded_text():
    assert place_text({"line": 5, "code": "while True:"}, "softmax") == "line 5 (`while True:`)"
    assert place_text({"line": 2, "cell": "code cell 3", "in": "softmax", "code": "x"}, "softmax") == \
        "code cell 3, line 2 (`x`)"
    for nonsense in ({}, {"line": "5"}, {"line": 0}, {"line": True}, {"line": 5.0}):
        assert place_text(nonsense, "softmax") == ""
    shown = place_text({"line": 1, "in": "\x1b[2Jevil\u202e", "code": "y" * 10_000}, "softmax")
    assert "\x1b" not in shown and "\u202e" not in shown and len(shown) < 300


# Each stops a call in a check with no advice of its own about speed. Waiting: at the scale check's size only
# (T = 512), so score's smaller checks pass first, as a slowness idea would need.
_STOPPED = {
    "waiting": ("score", "import subprocess, sys\n    if Q.shape[-2] >= 512:\n"
                "        subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])\n",
                "it was waiting (for a thread or process it started"),
    "memory": ("context", "while True:\n        np.ones(50_000_000)\n", "look for a very large array made in the call"),
}


@pytest.mark.slow  # each stopped call waits out the 5 s limit these tests grade with
@pytest.mark.parametrize("what", sorted(_STOPPED))
def test_a_call_stopped_while_waiting_or_touching_memory_is_told_so_not_about_loops(grade, tmp_path, what):
    function, code, advice = _STOPPED[what]
    text = PLAIN.read_text()
    head = next(line for line in text.splitlines() if line.startswith(f"def {function}("))
    path = tmp_path / f"{what}.py"
    path.write_text(text.replace(head, f"{head}\n    {code}", 1))
    stopped = [t for t in grade(path).tests if t.status == TIMEOUT and t.function == function]
    ran = [t for t in stopped if not t.message.startswith("not run: ")]  # the others name the check that ran
    assert ran and all(advice in t.message and "Python loop" not in t.message for t in ran), "\n".join(
        t.message for t in stopped)
    assert all(f"in {ran[0].name}" in t.message and "so it was not called again" in t.message
               for t in stopped if t not in ran)
    assert not any(t.misconception for t in stopped), [(t.name, t.misconception) for t in stopped]


def test_a_call_stopped_in_a_print_is_told_to_take_the_prints_out_and_no_slowness_idea_is_named():
    printing = CallTimedOut("score did not return within 0.1 s and was stopped")
    printing.where = 'line 69, in softmax (`print("softmax input:", S)`)'
    assert not_computing(printing) and stopped_advice(printing, "compute the whole grid").startswith(
        "it was printing when it was stopped: take the prints out")
    computing = CallTimedOut("score did not return within 0.1 s and was stopped")
    computing.where = "line 12 (`for i in range(n):`)"
    assert not not_computing(computing) and stopped_advice(computing, "compute the whole grid") == \
        "compute the whole grid"


def test_a_call_the_machine_kept_from_a_processor_is_told_so_not_told_it_waited_for_a_thread():
    held = CallTimedOut("softmax did not return within 0.114 s and was stopped")
    held.idle = held.busy = True
    advice = stopped_advice(held, "compute the whole grid")
    assert advice.startswith("the machine was too busy to run it") and "thread" not in advice, advice
    assert not_computing(held)
    waiting = CallTimedOut("softmax did not return within 0.114 s and was stopped")
    waiting.idle = True
    assert stopped_advice(waiting).startswith("it used little processor time: it was waiting")


def test_which_functions_are_compiled_with_torch_compile_is_read_from_their_last_top_level_binding(tmp_path):
    """torch.compile compiles again for every new input shape, seconds each time: such a file lost 14 points to
    timeouts told to look for a loop that never ends."""
    from autograder.grading.compiled import COMPILED_ADVICE, stop_causes
    from autograder.grading.submission import read_submission
    path = tmp_path / "compiled.py"
    path.write_text("import torch\n\n\ndef _eager(Q, K, V, allowed=None, scale=None):\n    return Q, K\n\n\n"
                    "attention_torch = torch.compile(_eager)\n\n\n@torch.compile(backend='inductor')\n"
                    "def score(Q, K, scale=None):\n    return Q\n\n\ndef softmax(S):\n    return S\n")
    graded = {"attention_torch", "score", "softmax", "context"}
    assert stop_causes(read_submission(path), graded) == {
        name: COMPILED_ADVICE.format(function=name) for name in ("attention_torch", "score")}
    # A notebook's last binding decides: compiled in one cell, then defined plainly in a later one.
    notebook = tmp_path / "compiled.ipynb"
    cells = [path.read_text(), "def attention_torch(Q, K, V, allowed=None, scale=None):\n    return Q, K\n"]
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in cells]), notebook)
    assert set(stop_causes(read_submission(notebook), graded)) == {"score"}


# What the general advice for a stopped call sends a student to look for (explain.stopped_advice), none of which a
# compiled function has; and what else the kernel saw of it, compiling in processes of its own (idle, waiting).
GENERAL_ADVICE = (UNENDING_HINT, "look for a loop", "Python loop", "vectorised but still too slow",
                  "array far larger", "it was waiting", "the machine was too busy", "look for a very large array")


@pytest.mark.slow  # each stopped call waits out the 5 s limit these tests grade with
@pytest.mark.parametrize("name", sorted(COMPILED))
def test_a_function_compiled_with_torch_compile_is_told_that_alone_when_stopped(grade, tmp_path, name):
    """attention_torch = torch.compile(attention_torch) was first told to look for a loop that never ends and to
    run the function on a small input (where it returns at once), then that torch.compile was the cause."""
    from autograder.grading.compiled import COMPILED_ADVICE
    function = COMPILED[name]["function"]
    result = grade(compose(tmp_path, name, SUBMISSIONS / "compiled" / f"{name}.py"))
    stopped = {test.name: test for test in result.tests if test.status == TIMEOUT}
    assert set(stopped) == set(COMPILED[name]["fails"]), {t.name: t.message for t in result.tests if t.status != PASSED}
    advice = COMPILED_ADVICE.format(function=function)
    for test in stopped.values():
        assert test.message.endswith(advice), test.message
        assert not [said for said in GENERAL_ADVICE if said in test.message], test.message
        assert not test.misconception and not test.explanation, (test.name, test.misconception)
    # Compiling in processes of its own, it can look idle: it is not graded again as a machine's hold-up could be.
    assert not any("graded again" in note for note in result.notes), result.notes


def test_no_slowness_idea_is_named_for_a_timeout_whose_cause_the_file_shows(course, suite):
    """score's scale check names `score_python_loops` when score passed its smaller checks: not when score is
    compiled with torch.compile, which has no loop to drop."""
    from autograder.grading.compiled import COMPILED_ADVICE
    from autograder.grading.explain import Judged
    from autograder.grading.grader import Grader
    from autograder.grading.results import CheckResult
    entry = suite.check("score.long_sequence")
    stopped = CheckResult(entry.name, "score", "hidden", TIMEOUT, 0.0, entry.points, "score was stopped")
    earlier = [CheckResult("score.lecture_example", "score", "hidden", PASSED, 1.0, 1.0, "")]
    grader = Grader(course, suite, None)
    assert grader._name_slowness(Judged(entry, stopped), earlier).misconception == "score_python_loops"
    compiled = Judged(entry, stopped, cause=COMPILED_ADVICE.format(function="score"))
    assert grader._name_slowness(compiled, earlier).misconception is None


def test_an_endless_loop_is_still_told_to_look_for_a_loop_that_never_ends(grade, tmp_path):
    result = grade(compose(tmp_path, "s0004", SUBMISSIONS / "attacks" / "infinite_loop_in_function.py"))
    said = _timed_out(result)["softmax.lecture_example"]
    assert "(`while True:`)" in said or "(`pass`)" in said, said
    assert said.endswith(f"; {UNENDING_HINT}") and "torch.compile" not in said, said


def test_a_call_stopped_plotting_or_writing_a_file_is_told_to_do_that_outside_the_graded_function():
    """A debug plot in softmax timed out and was told to look for a loop that never ends: it had none."""
    for where, advice in (('line 106 (`fig.savefig("weights.png")`)', "it was plotting when it was stopped"),
                          ("line 104 (`fig, ax = plt.subplots()`), inside matplotlib", "it was plotting"),
                          ("line 3, in softmax (`draw(A)`), inside matplotlib", "it was plotting"),
                          ('line 9 (`np.save("weights.npy", A)`)', "it was writing a file when it was stopped"),
                          ("line 9 (`with open('log.txt', 'a') as f:`)", "it was writing a file"),
                          ('line 111, in softmax (`Path("w.txt").write_text(str(A))`)', "it was writing a file"),
                          ('line 7, in log (`Path("w.npy").write_bytes(A.tobytes())`)', "it was writing a file"),
                          ("line 104, in _save_heatmap (`img.resize((4096, 4096)).save(path, optimize=True)`), inside "
                           "PIL", "it was writing a file"),
                          ("line 3, in draw (`img = img.resize((4096, 4096))`), inside PIL", "it was plotting")):
        stopped = CallTimedOut("softmax did not return within 0.1 s and was stopped")
        stopped.where = where
        said = stopped_advice(stopped, "compute the whole grid")
        assert said.startswith(advice) and "cell of its own" in said and "loop" not in said, (where, said)
        assert not_computing(stopped)


def test_a_call_stopped_outside_any_python_loop_is_told_it_is_vectorised_not_to_drop_loops_it_has_none_of():
    """softmax in np.longdouble timed out and was told to stop looping over queries and keys: it had no loop."""
    long_operation = CallTimedOut("attention did not return within 0.115 s and was stopped")
    long_operation.spent = "the operating system counted 0.11 s of processor time for it (0.06 s of it in the ..."
    long_operation.in_kernel = True  # np.longdouble's arrays: much of its time went allocating them
    in_a_library = CallTimedOut("softmax did not return within 0.1 s and was stopped")
    in_a_library.where = "line 35 (`return scipy.special.softmax(S, axis=-1)`), inside scipy"
    for stopped in (long_operation, in_a_library):
        said = stopped_advice(stopped, "compute the whole T × T grid with array operations instead of Python loops")
        assert "the code is vectorised but still too slow" in said and "np.longdouble" in said, said
        assert "instead of Python loops" not in said and not_computing(stopped)
    for where in ("line 9, in score (`S[i, j] = q @ k`), in the loop `for j in range(Nk):`",
                  "line 4, in _softmax (`return _softmax(S[1:])`), in a call of itself (recursion)",
                  "line 2, in one (`return math.exp(x)`), called entry by entry from library code (as np.vectorize "
                  "does)", "line 12 (`for i in range(n):`)",
                  "line 8, in softmax (`math.exp(v)`), in the comprehension that begins on line 7"):
        looping = CallTimedOut("score did not return within 0.1 s and was stopped")
        looping.where = where
        assert stopped_advice(looping, "drop the loops") == "drop the loops" and not not_computing(looping), where
    unwatched = CallTimedOut("causal_mask did not return within 0.5 s and was stopped")  # in-process: never asked
    assert stopped_advice(unwatched, "drop the loops") == "drop the loops"


# matplotlib imported, and a figure saved, at the top: what it imports on its first figure would otherwise be
# imported in the call, which is then timed again warm (sandbox.grace), with a message of its own.
PLOTS_FOREVER = '''
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

_fig, _ax = plt.subplots()
_ax.imshow(np.eye(2))
_fig.savefig(io.BytesIO())


def softmax(S):
    fig, ax = plt.subplots()
    while True:
        ax.imshow(np.asarray(S).reshape(-1, np.shape(S)[-1]))
        fig.savefig(io.BytesIO())
'''
ONE_LONG_CALL = '''

def softmax(S):
    big = np.random.default_rng(0).random((3500, 3500))
    for _ in range(100):  # a loop of its own, but each turn one library call of many seconds with no Python code
        big = np.linalg.svd(big)[0]  # inside it (matrix_power's products had some): it answers in none of them
'''


@pytest.mark.slow  # each stopped call waits out the 5 s limit these tests grade with
@pytest.mark.parametrize("code, advice", [(PLOTS_FOREVER, "it was plotting when it was stopped"),
                                          (ONE_LONG_CALL, "the code is vectorised but still too slow")])
def test_a_real_call_stopped_plotting_or_in_one_long_array_operation_is_not_told_about_loops(grade, tmp_path, code,
                                                                                              advice):
    path = tmp_path / "s0004.py"
    path.write_text(PLAIN.read_text() + code)
    said = _timed_out(grade(path))["softmax.lecture_example"]
    assert advice in said and "look for a loop that never ends" not in said, said


STOPPED_IN_PROCESS = """import math

import numpy as np


def black_formatted(S):
    return np.array([
        math.exp(v)
        for v in S.reshape(-1)
    ])


def vectorized(S):
    return np.vectorize(math.exp)(S)


def commented(S):
    return np.exp(np.sort(np.tile(S, (8, 1, 1)), axis=-1) - S.max())  # stable (for every row in S)


@np.errstate(over="ignore")
def _decorated(S):
    return np.exp(np.sort(np.tile(S, (8, 1, 1)), axis=-1) - S.max())


def decorated(S):
    return _decorated(S)
"""


@pytest.mark.parametrize("function, loop", [
    ("black_formatted", "in the comprehension that begins on line 7"),  # its stopped line has no `for`
    ("vectorized", "called entry by entry from library code (as np.vectorize does)"),  # math.exp: no frame of its
    ("commented", ""),  # a comment's `(for every row in S)` is no comprehension
    ("decorated", ""),  # `@np.errstate`'s wrapper between two of the file's frames calls once
])
def test_where_a_stopped_call_was_looping_is_read_from_its_frames_not_the_look_of_its_line(tmp_path, function,
                                                                                           loop):
    """The timeout advice rests on whether the stopped code was looping: a black-formatted comprehension was called
    vectorised, `np.vectorize(math.exp)` "not a Python loop", a comment made a line look like a comprehension, and a
    decorated helper called once was said to be called entry by entry. The file's functions, stopped by a real
    signal in this process as the worker's handler is, are placed as the child would."""
    import importlib.util
    import signal

    import numpy as np

    from autograder.sandbox.stopped_at import _place

    path = tmp_path / "stopped_module.py"
    path.write_text(STOPPED_IN_PROCESS)
    spec = importlib.util.spec_from_file_location("stopped_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # Made before the timer runs. The vectorised functions sort eight copies of it, one call of about 0.2 s: one
    # sort of it alone had finished inside the 10 ms on a fast machine, before the signal came.
    places, S = [], np.random.default_rng(0).standard_normal((4, 512, 512))
    previous = signal.signal(signal.SIGALRM, lambda _signal, frame: places.append(_place(frame, str(path))))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        getattr(module, function)(S)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(places) == 1 and places[0] is not None and places[0]["loop"] == loop, places


def test_the_grader_waits_for_the_childs_answer_in_the_childs_own_running_not_the_wall_clocks():
    # A child the machine gives no processor (here: stopped) is waited for beyond RUN_SECONDS of wall time, up to
    # MAX_WAIT_SECONDS; once it runs, RUN_SECONDS of its running ends the wait. Read from /proc, as the grader does.
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        time.sleep(0.05)  # let the stop take hold
        wait = AnswerWait.begin(functools.partial(processor_use, f"/proc/{child.pid}"))
        time.sleep(3 * RUN_SECONDS)
        assert wait.left() > 0
        time.sleep(MAX_WAIT_SECONDS)
        assert wait.left() == 0.0
        wait = AnswerWait.begin(functools.partial(processor_use, f"/proc/{child.pid}"))
        os.kill(child.pid, signal.SIGCONT)
        give_up = time.monotonic() + 30
        while wait.left() > 0 and time.monotonic() < give_up:
            wait = AnswerWait(wait.read, wait.asked_ran, time.monotonic())  # the wall-clock cap never ends it here
            time.sleep(0.002)
        assert processor_use(f"/proc/{child.pid}").ran - wait.asked_ran >= RUN_SECONDS
    finally:
        child.kill()
        child.wait()
