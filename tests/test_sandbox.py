"""Issue 3: hostile submissions, graded end to end in the real sandbox.

For every attack: the attacked functions score 0, honest functions keep their
points, the submission finishes in bounded time, no file outside the sandbox
changes, no process of the submission survives, and the feedback says what
happened in plain words.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

import pytest

from autograder.grading.grader import Grader
from autograder.grading.submission import read_submission
from autograder.sandbox.limits import Limits
from autograder.sandbox.protections import probe
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

from conftest import (
    PARTS_OF_ATTENTION,
    PLAIN,
    ROOT,
    SUBMISSIONS,
    bwrap_works,
    compose,
    manifest,
    module_spec,
    private_course,
    run_cli,
)

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
ATTACKS = {name: attack for name, attack in manifest("attacks").items() if "tested_in" not in attack}
ATTACK_PORT = 8765  # the network attack's default; the sandbox clears the environment
# What the feedback must say, in plain words, for each attack.
SAYS = {
    "patch_allclose": "softmax of the worked example's scores differs from the expected values",
    "lying_subclass": "differs from the expected values",
    "object_array": "object",
    "import_reference": "differs from the expected values",
    "exit_in_function": "softmax stopped the worker process (it exited with status 0); graded code must never end "
                        "its process: remove the os._exit()",
    "sys_exit_in_function": "causal_mask called sys.exit()",
    "infinite_loop_in_function": "softmax did not return within 5 s and was stopped",
    "sleep_in_function": "context did not return within 5 s and was stopped",
    "allocate_huge": "MemoryError",
    "return_huge": "MemoryError",
    "return_huge_broadcast": "could not be sent back",
    "return_gigabyte": "context returned 1.2 GB, far more than an answer to this call can be",
    "print_flood": "softmax printed more than 16 MB of output and was stopped",
    "fork_flood": "processes running after it returned, which the grader stopped; do not start processes",
    "exit_at_import": "not loaded: student.py, line 105 stopped the worker process (it exited with status 0)",
    "sys_exit_at_import": "called sys.exit() (or exit(), or raised SystemExit) while loading; Python stops a file at "
                          "its first error",
    # Stopped at the load limit, then loaded again with its definitions alone (sandbox.slow_cells): the loop goes.
    "import_hang_ignoring_signals": "the file's top-level code ran past the load limit, while line 113 was running; "
                                    "so that its functions could be graded, only its definitions were run",
}
STOPPED_WHILE_LOADING = {"exit_at_import", "sys_exit_at_import"}
CONTAINED_IN_FALLBACK = ["exit_in_function", "infinite_loop_in_function", "daemon", "print_flood",
                         "sys_exit_at_import", "return_gigabyte", "fork_flood"]


def _require_bwrap():
    if not bwrap_works():
        if os.environ.get("CI"):
            pytest.fail("CI must test the bubblewrap path, but bwrap is missing or cannot start here")
        pytest.skip("bubblewrap is not installed or cannot start on this machine (apt-get install -y bubblewrap)")


@pytest.fixture(scope="module")
def bwrap_grader(course, suite):
    _require_bwrap()
    with Sandbox(probe("bwrap"), suite.assignment.preload) as box:
        yield Grader(course, suite, box)


@pytest.fixture(scope="module")
def fallback_grader(course, suite, public_python):
    with Sandbox(probe("fallback", python=public_python), suite.assignment.preload) as box:
        yield Grader(course, suite, box)


def _snapshot(folder: Path) -> dict:
    """Every file under the folder — the submission's own — with its size and mtime."""
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


def _grade_attack(grader, tmp_path, attack):
    (tmp_path / "class").mkdir()
    path = compose(tmp_path / "class", "student", SUBMISSIONS / "attacks" / f"{attack}.py")
    before = _snapshot(tmp_path)
    result = grader.grade(read_submission(path))
    assert _snapshot(tmp_path) == before
    for written in (ROOT / "results.json", ROOT / "grades.db", Path.cwd() / "results.json",
                    Path("/autograder/results/results.json"), ROOT / "daemon_was_here.txt"):
        assert not written.exists(), f"{written} was written"
    assert grader.sandbox.submission_processes() == 0, "a process of the submission survived grading"
    assert result.seconds < grader.suite.assignment.limits.submission_seconds + 15
    return result


def _honest_checks_pass(result, suite, attacked: set):
    affected = attacked | ({"attention"} if attacked & PARTS_OF_ATTENTION else set())
    uses = {entry.name: set(entry.check.functions) for entry in suite.checks}
    lost = [(t.name, t.message) for t in result.tests if t.status != "passed" and not uses[t.name] & affected]
    assert lost == []


def _everything_said(result) -> str:
    return "\n".join([result.problem, *result.notes, *(t.message for t in result.tests)])


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_is_contained_in_bubblewrap(bwrap_grader, suite, tmp_path, attack):
    attacked = set(ATTACKS[attack]["attacked"])
    result = _grade_attack(bwrap_grader, tmp_path, attack)
    assert result.sandbox == "bwrap" and result.isolated
    # Known by a field, not by its message: only a file stopped at its top level did not load.
    assert result.did_not_load == (attack in STOPPED_WHILE_LOADING), result.problem
    by_function = result.by_function()
    for function in attacked:
        assert by_function[function][0] == 0, f"{function} kept points under attack"
    _honest_checks_pass(result, suite, attacked)
    if attack in SAYS:
        assert SAYS[attack] in _everything_said(result)


def test_reading_the_filesystem_finds_no_course_file(bwrap_grader, tmp_path):
    _require_bwrap()
    result = _grade_attack(bwrap_grader, tmp_path, "read_neighbours")
    said = _everything_said(result)
    for secret in ("/work", "solutions", "grades.db", "/home/", str(tmp_path), "hidden_checks"):
        assert secret not in said


def test_network_attack_reaches_nothing(bwrap_grader, tmp_path):
    received = []
    with socket.create_server(("127.0.0.1", ATTACK_PORT), reuse_port=True) as server:
        server.settimeout(0.2)
        stop = threading.Event()

        def listen():
            while not stop.is_set():
                try:
                    connection, _ = server.accept()
                except OSError:
                    continue
                received.append(connection.recv(100))
                connection.close()

        thread = threading.Thread(target=listen)
        thread.start()
        try:
            result = _grade_attack(bwrap_grader, tmp_path, "network")
        finally:
            stop.set()
            thread.join()
    assert received == []
    assert result.score == result.max_score  # the attack failed, and padding_mask is otherwise honest


def test_daemon_is_killed_and_its_files_stay_inside(bwrap_grader, tmp_path):
    heartbeats = set(Path("/tmp").glob("daemon_alive_*"))  # a fallback run may have left some
    result = _grade_attack(bwrap_grader, tmp_path, "daemon")
    assert result.score == result.max_score
    assert result.killed_processes >= 1
    assert set(Path("/tmp").glob("daemon_alive_*")) == heartbeats
    assert not list(tmp_path.rglob("daemon_was_here.txt"))


def test_printed_fake_results_stay_in_the_students_output(tmp_path):
    path = compose(tmp_path, "faker", SUBMISSIONS / "attacks" / "fake_results_print.py")
    done = run_cli("grade", "w07_attention", path, "--json", "--db", tmp_path / "grades.db")
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and '"student": "faker"' in lines[0]
    assert "All tests passed" not in done.stderr
    assert "All tests passed" in lines[0]  # kept, as the student's captured output
    assert not (tmp_path / "results.json").exists()


@pytest.mark.parametrize("attack", CONTAINED_IN_FALLBACK)
def test_fallback_contains_what_it_can(fallback_grader, suite, tmp_path, attack):
    attacked = set(ATTACKS[attack]["attacked"])
    result = _grade_attack(fallback_grader, tmp_path, attack)
    assert result.sandbox == "fallback"
    for function in attacked:
        assert result.by_function()[function][0] == 0
    _honest_checks_pass(result, suite, attacked)


def test_a_submission_is_what_the_kernel_ends_first_when_memory_runs_out(sandbox, tmp_path):
    """Each child the zygote forks carries oom_score_adj 1000 and the zygote 500, read from outside: a submission's
    processes, each within its limit, may together touch more than the machine has, and the kernel then ends them,
    then the zygote, never the grader. The zygote at 1000 too, and larger than its children, had been ended first,
    which cost the submission graded in it a check as if its code had crashed. The kernel's own score decides."""
    spec = module_spec(tmp_path, "def nothing():\n    return None\n")
    zygote = Path(f"/proc/{sandbox.zygote_pid()}")
    with Session(sandbox, spec, Limits(call_seconds=5.0)) as session:
        assert not session.open().failure
        child = Path(session.child_proc())
        assert (child / "oom_score_adj").read_text().strip() == "1000"
        assert (zygote / "oom_score_adj").read_text().strip() == "500"
        assert int((child / "oom_score").read_text()) > int((zygote / "oom_score").read_text())
    assert int((zygote / "oom_score").read_text()) > int(Path("/proc/self/oom_score").read_text())


def test_doctor_reports_protections():
    done = run_cli("doctor")
    assert done.returncode == 0
    assert "resource limits" in done.stdout and "[x] separate worker process" in done.stdout
    if bwrap_works():
        assert "sandbox: bubblewrap\n" in done.stdout and "[x] no network" in done.stdout
    fallback = run_cli("doctor", "--sandbox", "fallback")
    assert "sandbox: fallback (weaker), because --sandbox fallback was requested" in fallback.stdout
    assert "[ ] no network" in fallback.stdout and "[ ] own PID namespace" in fallback.stdout
    assert "WARNING: bubblewrap is not in use" in fallback.stdout


def test_fallback_grading_says_so_loudly(tmp_path, public_python):
    path = compose(tmp_path, "alice")
    done = run_cli("grade", "w07_attention", path, "--sandbox", "fallback", "--json", "--db", tmp_path / "g.db",
                   "--course", private_course(tmp_path), env={"AUTOGRADER_WORKER_PYTHON": public_python})
    assert "WARNING: bubblewrap is not in use" in done.stderr
    assert '"sandbox": "fallback"' in done.stdout and '"score": 100' in done.stdout


def test_a_python_environment_under_tmp_still_runs_in_bubblewrap(tmp_path):
    """A fresh clone under /tmp keeps its virtualenv there, where the sandbox mounts its own /tmp."""
    _require_bwrap()
    env_dir = Path(tempfile.mkdtemp(dir="/tmp", prefix="venv-under-tmp-"))
    env_dir.chmod(0o755)  # as a cloned project is; the worker's uid must read the environment
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
        # The new environment borrows this one's packages, as a .pth file links them in.
        site_packages = next(env_dir.glob("lib/python*/site-packages"))
        (site_packages / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
        done = subprocess.run([str(env_dir / "bin" / "python"), "-m", "autograder", "grade", "w07_attention",
                               str(PLAIN), "--sandbox", "bwrap", "--json", "--db", str(tmp_path / "g.db")],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(env_dir)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["sandbox"] == "bwrap" and result["score"] == result["max_score"]
