"""Issue 12: time limits calibrated from the reference on this machine.

A call's limit is max(call_floor_seconds, call_factor × the reference's time on the check's calls), unless
course.yaml pins it. Correct answers pass with a wide margin, also on a loaded machine; answers that loop
in Python over the T × T grid of slide 24 are stopped at the scale checks, and cost nothing else.
"""
from __future__ import annotations

import json
import multiprocessing
import re
import shutil
import sqlite3
import threading
import time

import pytest

from autograder.authoring.protocol import Call
from autograder.grading import calibration
from autograder.grading.store import Store
from autograder.sandbox.inprocess import InProcessSession

from conftest import PLAIN, ROOT, SUBMISSIONS, compose, manifest, run_cli

SLOW = manifest("slow")
CORRECT = sorted((SUBMISSIONS / "correct").glob("*.py"))


def test_every_check_is_timed_and_the_limits_follow_the_rule(suite, reference):
    limits = suite.assignment.limits
    assert set(reference) == {entry.name for entry in suite.checks}
    assert all(t.seconds > 0 and t.calls >= 1 for t in reference.values())
    for name, limit in calibration.call_limits(suite, reference).items():
        assert limit.reference == reference[name].seconds
        assert limit.seconds == max(limits.call_floor_seconds, limits.call_factor * reference[name].seconds)
    # The scale checks are the work the reference takes longest over, by far: here 1.5 and 4.4 ms against
    # a typical check's 0.03 ms. No ranking between them or against the next checks (0.3 ms) is asked: on a
    # loaded VM a best of five has come out several times its quiet value, and CI saw attention's at 2.5 ms
    # below another check's 2.7 ms.
    seconds = sorted(t.seconds for t in reference.values())
    typical = seconds[len(seconds) // 2]
    assert reference["attention.long_sequence"].seconds > 10 * typical
    assert reference["score.long_sequence"].seconds > 10 * typical


def test_a_limit_pinned_in_course_yaml_wins_and_without_a_reference_the_default_holds(suite, reference):
    pinned = suite.checks[0]
    suite_pinned = type(suite)(suite.assignment, (type(pinned)(pinned.check, pinned.visibility, pinned.points, 7.5),
                                                  *suite.checks[1:]), suite.reference, suite.version)
    assert calibration.call_limits(suite_pinned, reference)[pinned.name].seconds == 7.5
    default = calibration.call_limits(suite, None)
    assert {limit.seconds for limit in default.values()} == {suite.assignment.limits.call_seconds}
    assert calibration.budget(suite, None, default) == suite.assignment.limits.submission_seconds
    calibrated = calibration.call_limits(suite, reference)
    assert calibration.budget(suite, reference, calibrated) < suite.assignment.limits.submission_seconds


def test_the_times_are_cached_per_suite_version_and_machine(course, suite, tmp_path):
    with Store(tmp_path / "g.db") as store:
        measured = calibration.cached_reference_times(course, suite, store)
        assert store.reference_times(suite.version, calibration.machine()) == {
            name: (t.seconds, t.calls) for name, t in measured.items()}
        marked = {name: (0.125, 3) for name in measured}  # what no measurement gives: proof it is read back
        store.save_reference_times(suite.version, calibration.machine(), marked)
        again = calibration.cached_reference_times(course, suite, store)
        assert {name: (t.seconds, t.calls) for name, t in again.items()} == marked
        assert store.reference_times("another suite", calibration.machine()) == {}
    with sqlite3.connect(tmp_path / "g.db") as connection:
        rows = connection.execute("SELECT DISTINCT suite_version, machine FROM reference_times").fetchall()
    assert rows == [(suite.version, calibration.machine())]


@pytest.mark.slow
@pytest.mark.parametrize("slow", sorted(SLOW))
def test_python_loops_over_the_grid_fail_the_scale_checks_and_nothing_else(tmp_path, slow):
    path = compose(tmp_path, slow, SUBMISSIONS / "slow" / f"{slow}.py")
    done = run_cli("grade", "w07_attention", path, "--json", "--db", tmp_path / "g.db")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    failed = {t["name"]: t for t in result["tests"] if t["status"] != "passed"}
    if "may be looser than on a quiet one" in done.stderr and set(failed) < set(SLOW[slow]["fails"]):
        # The reference was timed beside other work (the other test worker) at 2-3x its quiet time: the TA is
        # told the limits are looser, and a loop that finished within them keeps those points. A loop that
        # timed out is checked in full below.
        return
    seconds = {t["name"]: t["seconds"] for t in result["tests"] if t["name"].endswith(".long_sequence")}
    assert set(failed) == set(SLOW[slow]["fails"]), ({n: t["message"] for n, t in failed.items()}, seconds, done.stderr)
    for test in failed.values():
        assert test["status"] == "timeout"
        # The limit (calibrated on this machine, so whatever it measured), how it compares with the reference,
        # and what to change.
        assert re.search(r"did not return within [0-9.]+ s and was stopped \(\d+× the reference's [0-9.]+ ms\)",
                         test["message"]), test["message"]
        assert "instead of Python loops" in test["message"]
    # Named on the function's own scale check, where its small checks all passed; nowhere else.
    named = {t["name"]: t["misconception"] for t in result["tests"] if t["misconception"]}
    idea = SLOW[slow].get("misconception")
    assert named == ({f"{SLOW[slow]['function']}.long_sequence": idea} if idea else {})


def _graded_attack(tmp_path, attack: str, slow: str = "score_grid_loop") -> dict:
    """The JSON result of `grade` (limits calibrated on this machine) for plain.py with slow/<slow>.py's
    function (default: score_grid_loop's score), then the attack, appended."""
    path = compose(tmp_path, attack, SUBMISSIONS / "slow" / f"{slow}.py")
    path.write_text(path.read_text() + "\n\n" + (SUBMISSIONS / "attacks" / f"{attack}.py").read_text())
    done = run_cli("grade", "w07_attention", path, "--json", "--db", tmp_path / "g.db")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_a_timer_a_function_left_armed_costs_no_other_function_a_check(tmp_path):
    """additive_score arms a 10 ms one-shot timer whose handler raises and causal_mask a periodic one, never
    cancelled: they fired in later calls of other functions (score, attention_torch), or in the worker between
    calls, which then read as a worker that exited; the same file scored 90 to 100 from run to run. (A timer that
    fires inside the call of a function that armed it, or called one that did, is that call's.)"""
    path = tmp_path / "timers.py"
    path.write_text(PLAIN.read_text() + "\n\nimport signal\n\n\ndef _raise(signum, frame):\n"
                    "    raise RuntimeError('a timer fired')\n\n\n_additive = additive_score\n"
                    "_causal_mask = causal_mask\n\n\n"
                    "def additive_score(*args):\n    signal.signal(signal.SIGALRM, _raise)\n"
                    "    signal.setitimer(signal.ITIMER_REAL, 0.01)\n    return _additive(*args)\n\n\n"
                    "def causal_mask(n_q, n_k=None):\n    signal.signal(signal.SIGPROF, _raise)\n"
                    "    signal.setitimer(signal.ITIMER_PROF, 0.005, 0.005)\n    return _causal_mask(n_q, n_k)\n")
    done = run_cli("grade", "w07_attention", path, "--json", "--db", tmp_path / "g.db")
    result = json.loads(done.stdout)
    assert result["score"] == result["max_score"], [(t["name"], t["message"]) for t in result["tests"]
                                                   if t["status"] != "passed"]


@pytest.mark.slow
def test_a_helper_process_earns_no_wait_credit(tmp_path):
    """A forked helper computes while the call's thread spins at a low priority on its processor, looking to the
    kernel like a call kept waiting: the helper's time is the submission's, so the call gets no more time."""
    result = _graded_attack(tmp_path, "credit_from_a_helper")
    slow = {t["name"]: t for t in result["tests"] if t["status"] != "passed"}
    messages = {name: t["message"] for name, t in slow.items()}
    assert {name: t["status"] for name, t in slow.items()} == {
        "score.long_sequence": "timeout", "attention.long_sequence": "timeout"}, messages
    for test in slow.values():  # stopped at its limit: no wait was given back, whatever the machine's load
        assert "ran other processes meanwhile" in test["message"] and "was extended" not in test["message"], test



@pytest.mark.slow
def test_a_large_call_is_out_of_the_workers_reach_until_its_clock_starts(tmp_path):
    """Every call of read_ahead looks at what the worker has queued, read or unread: a T = 512 call it found
    there could be worked out on another thread while the small calls before it were answered slowly."""
    result = _graded_attack(tmp_path, "read_ahead")
    assert "LOOKED AHEAD" in result["printed"] and "SAW A LARGE CALL" not in result["printed"], result["printed"]
    slow = {t["name"]: t["status"] for t in result["tests"] if t["status"] != "passed"}
    assert slow == {"score.long_sequence": "timeout", "attention.long_sequence": "timeout"}, slow


@pytest.mark.slow
def test_a_call_marked_returned_before_it_computed_ends_when_its_reply_is_whole(tmp_path):
    """forged_return_mark marks score's T = 512 call returned at once and writes the start of its reply, so the
    grader reads on while it computes: the worker computing while its reply is half written has its marks
    ignored, and the call ends when the grader read the reply's last byte."""
    result = _graded_attack(tmp_path, "forged_return_mark")
    assert "STREAMED EARLY" in result["printed"], result["printed"]
    slow = {t["name"]: t["status"] for t in result["tests"] if t["status"] != "passed"}
    assert slow.get("score.long_sequence") == "timeout", slow


@pytest.mark.slow
def test_a_submission_cannot_have_the_kernel_reap_its_helpers_unseen(tmp_path):
    """helpers_reaped_by_the_kernel ignores SIGCHLD so that helpers computing a T = 512 call while its reply is
    half written leave no processor time and no process behind: the sandbox refuses a new SIGCHLD action."""
    result = _graded_attack(tmp_path, "helpers_reaped_by_the_kernel", slow="softmax_element_loop")
    assert "SIGCHLD REFUSED" in result["printed"] and "HELPERS STARTED" not in result["printed"], result["printed"]
    slow = {t["name"]: t for t in result["tests"] if t["status"] != "passed"}
    assert "attention.long_sequence" in slow, sorted(slow)


@pytest.mark.slow
def test_a_frame_no_call_waits_for_cannot_take_the_blame_for_computing(tmp_path):
    """junk_frame_takes_the_blame computes while a junk frame is half written, then sends its rest and the reply
    together: the reply after it is doubted all the same, and the call times out."""
    result = _graded_attack(tmp_path, "junk_frame_takes_the_blame", slow="softmax_element_loop")
    assert "JUNK EARLY" in result["printed"], result["printed"]
    slow = {t["name"]: t["status"] for t in result["tests"] if t["status"] != "passed"}
    assert slow.get("attention.long_sequence") == "timeout", slow


def _burn(stop):
    while not stop.is_set():
        sum(i * i for i in range(10_000))


@pytest.mark.slow
def test_correct_answers_pass_with_a_margin_while_the_machine_is_loaded(tmp_path):
    """Two grading jobs on two cores, and a third process burning a core: every correct fixture keeps 100."""
    folder = tmp_path / "class"
    folder.mkdir()
    for path in CORRECT + [PLAIN]:
        shutil.copy(path, folder / path.name)
    (folder / "reference.py").write_text((ROOT / "solutions/w07_attention/reference.py").read_text())
    stop = multiprocessing.Event()
    burner = multiprocessing.Process(target=_burn, args=(stop,))
    burner.start()
    try:
        done = run_cli("grade", "w07_attention", folder, "--json", "--jobs", "2", "--db", tmp_path / "g.db")
    finally:
        stop.set()
        burner.join()
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(results) == len(CORRECT) + 1
    lost = {r["student"]: [(t["name"], t["message"]) for t in r["tests"] if t["status"] != "passed"]
            for r in results if r["score"] != 100}
    assert lost == {}


def test_a_call_is_timed_on_its_own_thread_not_the_processs_other_threads(suite):
    """The grader times the reference in a process that may run a progress bar or a Dask client: their
    processor time is not the reference's (it made a 1 ms check outrank the scale checks in a loaded run)."""
    spinning = threading.Event()
    stop = threading.Event()

    def spin():
        spinning.set()
        while not stop.is_set():
            pass

    namespace = {"pause": lambda: time.sleep(0.2)}  # the calling thread lets go of the processor meanwhile
    session = InProcessSession(namespace, suite.assignment.limits)
    spinner = threading.Thread(target=spin, daemon=True)
    spinner.start()
    spinning.wait()
    try:
        session.call(Call("pause"))
    finally:
        stop.set()
        spinner.join()
    assert session.seconds[0] < 0.05, session.seconds


TOP_LEVEL_TABLE = '''
import gc as _gc

_TABLE = [float(i) for i in range(1000)]
_softmax = softmax


def softmax(S, *args, **kwargs):
    print("the table is walked by collections:", any(o is _TABLE for o in _gc.get_objects()))
    return _softmax(S, *args, **kwargs)
'''


def test_what_a_files_top_level_made_is_no_calls_garbage_to_walk(grade, tmp_path):
    # The first collections after the load walked every object the load made, in whichever call allocated next: a
    # top-level table of 19 million numbers cost that call 0.1 s, and slow/set_up_8s_then_grid_loop lost a check of
    # another function on a loaded machine.
    path = tmp_path / "s0001.py"
    path.write_text(PLAIN.read_text() + TOP_LEVEL_TABLE)
    result = grade(path)
    assert result.score == result.max_score, [(t.name, t.message) for t in result.tests if t.status != "passed"]
    assert set(result.printed.splitlines()) == {"the table is walked by collections: False"}, result.printed
