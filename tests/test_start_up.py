"""Issue 24: what `grade` does before its first result, kept cheap without trusting anything it should not.

The reference's timings come from the user's cache folder for a fresh store,
and only when that entry is this suite version's, this machine's, whole and
private, and go there only when measured on a quiet machine; the sandbox
launched while the suite loads is the one its grading process grades with,
and it ends with that process however that ends. What the command loads for
good (PyTorch, the suite) is loaded without garbage collections and left out
of later ones (grading.collector); a student's process still collects. Where there is a processor for
each job, each job's sandbox keeps to one, and its grading process stays free to run anywhere.
"""
from __future__ import annotations

import dataclasses
import gc
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import nbformat
import pytest

from autograder.authoring.protocol import Call
from autograder.grading import calibration, collector, suite_cache
from autograder.grading.batch import processors_for
from autograder.grading.boundary import GradingProcess, grade_submission
from autograder.grading.course import load_course
from autograder.grading.grader import Grader
from autograder.grading.station import SandboxError, Setup, launch_sandbox, protections_for, refuse_secrets, warm_grader
from autograder.grading.store import Store
from autograder.grading.submission import read_submission
from autograder.grading.suite import load_suite
from autograder.sandbox.limits import Limits
from autograder.sandbox.protections import probe
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

from conftest import FIXTURES, ROOT, run_cli

MARKED = (0.125, 3)  # what no measurement of the tiny reference gives: proof an entry was read back


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny assignment (tests/fixtures/tiny) in a course of its own: (course, suite)."""
    root = tmp_path_factory.mktemp("tiny")
    for part in ("assignments", "solutions"):
        shutil.copytree(FIXTURES / "tiny" / part / "tiny", root / part / "tiny")
    (root / "course.yaml").write_text(
        "course: {name: Tiny, seed_salt: s}\ndefaults:\n  tolerance:\n    float32: {rtol: 1.0e-5, atol: 1.0e-6}\n"
        "    float64: {rtol: 1.0e-9, atol: 1.0e-12}\nassignments:\n  tiny:\n    title: Doubling\n    module: tiny\n"
        "    preload: [numpy]\n    checks: {double.small: 1, double.matches_reference: 1}\n")
    course = load_course(root / "course.yaml")
    return course, load_suite(course, "tiny")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder of this test's own (XDG_CACHE_HOME), and the path of the tiny suite's entry."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return suite_cache.cache_folder()


@pytest.fixture
def quiet_machine(tmp_path):
    """A /proc/stat whose counts never move: nothing else ran on this machine while the reference was timed
    (the tests run beside each other, so the real one seldom says so)."""
    path = tmp_path / "stat"
    path.write_text("cpu  7456835 81985 1444961 2315455 41206 0 10530 88367 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    return str(path)


def _times(course, suite, db, machine_stat, say=None) -> dict:
    with Store(db) as store:
        found = calibration.cached_reference_times(course, suite, store, machine_stat=machine_stat, say=say)
        assert store.reference_times(suite.version, calibration.machine()) == {
            name: (t.seconds, t.calls) for name, t in found.items()}  # the store keeps what was used
    return {name: (t.seconds, t.calls) for name, t in found.items()}


def _mark(suite) -> None:
    suite_cache.write_entry(calibration.CACHE_KIND, suite.version, calibration.machine(),
                            {entry.name: list(MARKED) for entry in suite.checks})


def _entry(folder):
    (path,) = folder.glob(f"{calibration.CACHE_KIND}-*.json")
    return path


def test_a_fresh_store_takes_the_times_this_machine_cached_for_this_suite_version(tiny, cache, tmp_path,
                                                                                  quiet_machine):
    course, suite = tiny
    measured = _times(course, suite, tmp_path / "first.db", quiet_machine)
    assert all(seconds < 0.1 for seconds, _ in measured.values())
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE(_entry(cache).stat().st_mode) == 0o600
    _mark(suite)
    said: list[str] = []
    assert _times(course, suite, tmp_path / "second.db", quiet_machine, said.append) == {
        entry.name: MARKED for entry in suite.checks}
    # Another suite version (a changed check, reference or grader) never reads this version's entry.
    changed = dataclasses.replace(suite, version="0123456789abcdef")
    again = _times(course, changed, tmp_path / "third.db", quiet_machine, said.append)
    assert said == []  # a quiet machine: nothing to tell the TA
    assert set(again) == set(measured) and MARKED not in again.values()
    assert len(list(cache.glob(f"{calibration.CACHE_KIND}-*.json"))) == 2


def _garbage(path):
    path.write_bytes(b"\xff\xfe not json at all")


def _cut_short(path):
    path.write_text(path.read_text()[:40])


def _other_machine(path):
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "machine": "another host | 64 cores"}))


def _other_format(path):
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "format": suite_cache.FORMAT + 1}))


def _check_missing(path):
    data = json.loads(path.read_text())
    data["value"].pop("double.small")
    path.write_text(json.dumps(data))


def _negative_time(path):
    data = json.loads(path.read_text())
    data["value"]["double.small"] = [-1.0, 3]
    path.write_text(json.dumps(data))


def _writable_by_others(path):
    path.chmod(0o666)


def _symlink(path):
    target = path.with_name("elsewhere.json")
    path.rename(target)
    path.symlink_to(target)


def _open_folder(path):
    path.parent.chmod(0o777)


@pytest.mark.parametrize("spoil", [_garbage, _cut_short, _other_machine, _other_format, _check_missing,
                                   _negative_time, _writable_by_others, _symlink, _open_folder],
                         ids=lambda spoil: spoil.__name__.strip("_"))
def test_a_corrupt_stale_or_unsafe_cache_entry_is_ignored(tiny, cache, tmp_path, spoil, quiet_machine):
    course, suite = tiny
    _mark(suite)
    spoil(_entry(cache))
    measured = _times(course, suite, tmp_path / "g.db", quiet_machine)
    assert set(measured) == {entry.name for entry in suite.checks} and MARKED not in measured.values()
    if spoil is _open_folder:
        assert suite_cache.read_entry(calibration.CACHE_KIND, suite.version, calibration.machine()) is None
    else:  # measured again, and the entry written anew for the next fresh store
        kept = suite_cache.read_entry(calibration.CACHE_KIND, suite.version, calibration.machine())
        assert {name: tuple(value) for name, value in kept.items()} == measured


def test_times_measured_on_a_busy_machine_grade_their_store_but_are_not_cached(tiny, cache, tmp_path):
    """Processor time runs slow while a core's other half computes: such times must not loosen the limits of
    every later store on this machine. Busy here is real: a loop on every processor, read from /proc/stat."""
    course, suite = tiny
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    said: list[str] = []
    try:
        time.sleep(0.2)  # running before the first reading
        measured = _times(course, suite, tmp_path / "busy.db", calibration.MACHINE, said.append)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    assert set(measured) == {entry.name for entry in suite.checks}  # and the store keeps them (`_times`)
    assert not list(cache.glob(f"{calibration.CACHE_KIND}-*.json"))
    (note,) = said
    assert "timed on a busy machine (other processes kept" in note and "grade into a fresh --db" in note


def test_the_rest_of_the_machine_is_read_from_the_kernels_counts(tmp_path):
    machine, own = tmp_path / "stat", tmp_path / "self"
    machine.write_text("cpu  1000 50 200 9000 40 3 7 300 0 0\ncpu0 500 25 100 4500 20 1 3 150 0 0\n")
    own.mkdir()
    # /proc/<pid>/stat: the command may hold spaces and parentheses; utime and stime follow its ")".
    (own / "stat").write_text("4242 (a (b) c) R 1 4242 4242 0 -1 4194560 100 0 0 0 120 30 0 0 20 0 1 0 5 0 0\n")
    (own / "schedstat").write_text("1500000000 20000000 42\n")
    reading = calibration.machine_reading(str(machine), str(own))
    tick = calibration.TICK
    assert (reading.busy, reading.own) == ((1000 + 50 + 200 + 3 + 7) / tick, 150 / tick)  # no idle, iowait, steal
    assert calibration.machine_reading(str(tmp_path / "absent"), str(own)) is None
    before = calibration.MachineReading(busy=10.0, own=2.0, at=100.0)
    # In 2 s the machine ran 3 s, this process 1 s of them: the others kept one processor busy.
    assert calibration.others_busy(before, calibration.MachineReading(13.0, 3.0, 102.0)) == pytest.approx(1.0)
    assert calibration.others_busy(before, calibration.MachineReading(10.5, 3.0, 102.0)) == 0.0
    assert calibration.others_busy(before, None) == float("inf")
    assert calibration.others_busy(before, calibration.MachineReading(10.0, 2.0, 100.01)) == float("inf")


def _zygote(grader) -> int:
    """Runs in the grading process: the pid of the zygote its Grader grades with."""
    return grader.sandbox.zygote_pid()


def _gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat_file:
                if stat_file.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow  # a sandbox and a grading process of its own for each: make test runs it
@pytest.mark.parametrize("ending", ["ended", "killed"])
def test_the_grading_process_grades_with_the_sandbox_launched_for_it_and_it_ends_with_that_process(tiny, ending):
    course, suite = tiny
    protections = protections_for("auto")
    launched = launch_sandbox(protections, suite.assignment)
    try:
        refuse_secrets(protections, [], [launched])  # waits for it, as `grade` does before handing it over
        zygote = launched.zygote_pid()
        assert zygote and not _gone(zygote, 0)
        process = GradingProcess(Setup(course, suite, protections), launched)
        assert process.run(_zygote) == zygote  # not a sandbox of its own
        if ending == "killed":  # as the out-of-memory killer would: the zygote sees its owner go and ends
            os.kill(process.pid, signal.SIGKILL)
            assert _gone(zygote)
        process.end()
        assert _gone(zygote)
    finally:
        launched.close()


def _placed(grader) -> list[set[int]]:
    """Runs in the grading process: the processors it, its zygote, and a zygote its sandbox starts again may use."""
    sandbox = grader.sandbox
    placed = [os.sched_getaffinity(0), os.sched_getaffinity(sandbox.zygote_pid())]
    sandbox.close()  # as after scratch files that could not be removed
    sandbox.start()
    return [*placed, os.sched_getaffinity(sandbox.zygote_pid())]


def test_each_sandbox_keeps_to_a_processor_of_its_own_only_when_there_is_one_for_each():
    usable = sorted(os.sched_getaffinity(0))
    assert processors_for(len(usable)) == usable
    assert processors_for(len(usable) + 1) == [None] * (len(usable) + 1)
    if len(usable) > 1:
        assert processors_for(len(usable) - 1) == [None] * (len(usable) - 1)


@pytest.mark.slow  # a sandbox and a grading process of its own for each: make test runs it
@pytest.mark.parametrize("handed_over", [True, False])
def test_a_sandbox_given_a_processor_keeps_its_zygotes_to_it_and_the_grading_process_stays_free(tiny, handed_over):
    course, suite = tiny
    protections = protections_for("auto")
    everywhere = os.sched_getaffinity(0)
    processor = max(everywhere)
    launched = launch_sandbox(protections, suite.assignment) if handed_over else None
    try:
        process = GradingProcess(Setup(course, suite, protections, processor=processor), launched)
        try:
            assert process.run(_placed) == [everywhere, {processor}, {processor}]
        finally:
            process.end()
    finally:
        if launched is not None:
            launched.close()


def test_the_command_builds_the_class_wide_cases_while_its_sandboxes_start(course, suite, tiny):
    """warm_grader grades the reference in this process, as the probe will; grading processes forked after it
    share what it built (the T = 512 cases), and it stops as soon as it is told the sandbox is up."""
    warm = warm_grader(course, suite)
    assert set(warm._shared) == {"score.long_sequence", "attention.long_sequence"}
    sharing = Grader(course, suite, None, shares_with=warm)
    assert sharing._shared is warm._shared and sharing._reference is warm._reference
    assert warm_grader(course, suite, enough=lambda: True)._shared == {}
    tiny_course, tiny_suite = tiny
    assert warm_grader(tiny_course, dataclasses.replace(tiny_suite, reference=None)) is None


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_grade_with_a_fresh_database_reads_and_survives_the_cache(tiny, tmp_path, monkeypatch):
    """Through the command: a fresh database takes the cached times; a cut-short entry is measured around.
    (Whether the command writes the entry depends on how busy the machine is; the tests above cover that.)"""
    course, suite = tiny
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "s1.py").write_text("def double(x):\n    return 2 * x\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    _mark(suite)
    entry = _entry(tmp_path / "xdg" / "autograder")
    for db in ("1.db", "2.db"):
        graded = run_cli("grade", "tiny", folder, "--jobs", "1", "--db", tmp_path / db, "--course", course.path)
        assert graded.returncode == 0 and "graded 1 submission in" in graded.stderr, graded.stderr[-2000:]
        with Store(tmp_path / db) as store:
            times = set(store.reference_times(suite.version, calibration.machine()).values())
        if db == "1.db":
            assert times == {MARKED}
        else:
            assert times and MARKED not in times
        entry.write_text("{")  # cut short, as a full disk might leave it
    assert entry.read_text() == "{" or json.loads(entry.read_text())["suite_version"] == suite.version


@pytest.mark.slow  # a whole command in a subprocess: make test runs it
def test_a_notebook_class_with_one_job_is_graded(tiny, tmp_path):
    """One job, one sandbox launched ahead: the notebook reader is prepared while it starts. (--jobs below 1,
    which once launched none ahead, is refused: test_terminal_lines.)"""
    course, _ = tiny
    folder = tmp_path / "class"
    folder.mkdir()
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def double(x):\n    return 2 * x")])
    (folder / "s1.ipynb").write_text(nbformat.writes(notebook))
    graded = run_cli("grade", "tiny", folder, "--jobs", "1", "--db", tmp_path / "g.db", "--course", course.path)
    assert graded.returncode == 0 and "graded 1 submission in" in graded.stderr, graded.stderr[-2000:]


@pytest.mark.slow  # a sandbox of its own, started cold: make test runs it
def test_the_sandboxs_own_start_is_not_the_first_submissions_time(suite, tmp_path):
    """The first session of a sandbox still starting waits for its zygote (PyTorch's import, the warm-up):
    with a budget shorter than that wait, the submission must still load and answer."""
    path = tmp_path / "attention.py"
    path.write_text("def score(Q, K, scale=None):\n    return 7\n")
    cold = Sandbox(probe("auto"), suite.assignment.preload, warmup=suite.assignment.warmup)
    try:
        cold.launch()  # as `grade` does while the suite loads; the first spawn waits for it
        started = time.monotonic()
        with Session(cold, read_submission(path).worker_spec("attention"), Limits(), budget=0.5) as session:
            load = session.open()
            assert time.monotonic() - started > 0.5  # the zygote's start alone outlasted the budget
            assert not load.failure, load.failure
            assert session.call(Call("score", (1, 2))).value == 7
    finally:
        cold.close()


# Loads the course's suite (PyTorch with it) in a fresh interpreter; prints what the collector did meanwhile.
LOADING = """
import gc, json, sys
from autograder.grading.course import load_course
from autograder.grading.suite import load_suite
course = load_course(sys.argv[1])
collected = []
gc.callbacks.append(lambda phase, info: phase == "stop" and collected.append(info["generation"]))
load_suite(course, "w07_attention")
gc.callbacks.clear()
print(json.dumps({"collected": collected, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                  "tracked": len(gc.get_objects()), "torch": "torch" in sys.modules}))
"""


def test_the_suite_and_its_libraries_load_without_collections_and_are_left_out_of_later_ones():
    """Issue 24: a full collection walks PyTorch's objects (0.2 s a time) and frees nothing; the command
    loading the suite ran three."""
    shown = json.loads(subprocess.run([sys.executable, "-c", LOADING, str(ROOT / "course.yaml")],
                                      capture_output=True, text=True, timeout=120, check=True).stdout)
    assert (shown["collected"], shown["enabled"], shown["torch"]) == ([], True, True)
    assert shown["frozen"] > 100_000 > shown["tracked"]  # PyTorch's objects are frozen; what comes after is not


def _collector(grader) -> tuple:
    """Runs in the grading process: how its garbage collector stands."""
    return gc.isenabled(), gc.get_freeze_count(), gc.get_threshold()[0]


@pytest.mark.slow  # a grading process and a sandbox of their own: make test runs it
def test_a_grading_process_collects_only_what_it_makes_and_a_students_process_still_collects(tiny, tmp_path):
    course, suite = tiny
    setup = Setup(course, suite, protections_for("auto"))
    inherited = gc.get_freeze_count()  # what this process froze (the suites it loaded), which a fork keeps frozen
    process = GradingProcess(setup)
    try:
        enabled, frozen, young = process.run(_collector)
    finally:
        process.end()
    # The grading process froze more than it was forked with: the rest of what it inherited, and its station.
    assert enabled and frozen > inherited and young == collector.YOUNG_OBJECTS
    path = tmp_path / "tiny.py"  # a student's file that needs its process's collector on
    path.write_text("import gc\n\nif not gc.isenabled():\n    raise RuntimeError('no garbage collection')\n\n\n"
                    "def double(x):\n    return 2 * x\n")
    result = grade_submission(setup, read_submission(path, "s1"))
    assert (result.problem, result.score, result.max_score) == ("", 2, 2), result


@pytest.mark.slow  # a grading process and a sandbox of its own: make test runs it
def test_a_grading_process_whose_sandbox_does_not_start_in_time_is_killed_and_the_command_told(tiny):
    """A start that never ends (a library hanging at import, a swapping machine) had left `grade`, and every task of
    a Dask worker, waiting for ever. Here the limit is shorter than any start, so the real start overruns it."""
    course, suite = tiny
    process = GradingProcess(Setup(course, suite, protections_for("auto")))
    with pytest.raises(SandboxError, match=r"did not start its sandbox within 0\.001 s.*run the same command again"):
        process.ready(seconds=0.001)
    assert process.exitcode is not None and not process.alive()
