"""Issue 10: one submission can never touch another, and nothing a student sends stops the batch.

Every attack class has its fixture in tests/fixtures/submissions/attacks/ and is
graded for real: in bubblewrap, in the same sandbox (the same job) as honest
submissions graded before and after it, so that anything it leaves behind or
finds would show in their results.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.grading.grader import Grader
from autograder.grading.submission import read_submission
from autograder.sandbox.limits import Limits
from autograder.sandbox.protections import SandboxError, probe
from autograder.sandbox.session import Session
from autograder.sandbox.uids import SLOTS, lease_uid
from autograder.sandbox.worker import PENDING_SIGNALS
from autograder.sandbox.zygote import Sandbox

from conftest import FIXTURES, PLAIN, SUBMISSIONS, bwrap_works, compose, module_spec, run_cli

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
ATTACKS = SUBMISSIONS / "attacks"
CAP_SYS_RESOURCE = 24  # what writes an oom_score_adj floor (kernel.killed_first)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _require_bwrap():
    if not bwrap_works():
        if os.environ.get("CI"):
            pytest.fail("CI must test the bubblewrap path, but bwrap is missing or cannot start here")
        pytest.skip("bubblewrap is not installed or cannot start on this machine (apt-get install -y bubblewrap)")


@pytest.fixture(scope="module", params=["bwrap", "fallback"])
def job(request, course, suite):
    """One grading job: a Grader with its own sandbox, graded in turn like a batch job does."""
    if request.param == "bwrap":
        _require_bwrap()
        protections = probe("bwrap")
    else:
        protections = probe("fallback", python=request.getfixturevalue("public_python"))
    with Sandbox(protections, suite.assignment.preload) as box:
        yield Grader(course, suite, box)


def honest(folder, name: str):
    """plain.py with a marker only this student's code holds (a snooper looks for it)."""
    path = folder / f"{name}.py"
    path.write_text(f"# HONEST-MARKER-{name}\n" + PLAIN.read_text() + f"\n\n_MINE = 'HONEST-MARKER-{name}'\n")
    return path


def attack(folder, name: str, student: str | None = None):
    return compose(folder, student or name, ATTACKS / f"{name}.py")


def everything_said(result) -> str:
    return "\n".join([result.problem, *result.notes, result.printed,
                      *(f"{t.message} {t.hint} {t.example}" for t in result.tests)])


def test_no_child_can_read_or_write_the_zygotes_memory(job, tmp_path):
    poisoner = job.grade(read_submission(attack(tmp_path, "poison_zygote")))
    # The attack raises at import to say what worked, so its file does not load: the reason carries its report.
    note = poisoner.problem
    assert note.startswith("not loaded") and "poison_zygote" in note and "proc-mem: denied" in note, note
    assert re.search(r"process_vm_readv: -\d+", note) and re.search(r"ptrace: -\d+", note), note
    assert "signal: denied (PermissionError)" in note, note  # the zygote's seccomp filter, loaded by the child
    after = job.grade(read_submission(honest(tmp_path, "after")))
    assert after.score == 100, [(t.name, t.message) for t in after.tests if t.status != "passed"]


def test_no_child_can_have_the_kernel_signal_the_zygote_or_make_namespaces(job, tmp_path):
    """A pipe with O_ASYNC had the kernel send the zygote SIGINT for the child, which ended it: the next student
    waited for a new sandbox. The filter refuses naming an owner, and the zygote ignores what it would be sent."""
    zygote = job.sandbox.zygote_pid()
    attacker = job.grade(read_submission(attack(tmp_path, "signal_zygote_by_sigio")))
    note = attacker.problem
    for what in ("setown", "fiosetown", "unshare"):
        assert f"{what}: denied (PermissionError)" in note, note
    assert job.grade(read_submission(honest(tmp_path, "after"))).score == 100
    assert job.sandbox.zygote_pid() == zygote  # the same zygote: never restarted
    ignored = _status_mask(zygote, "SigIgn")
    assert all(ignored >> (number - 1) & 1 for number in (signal.SIGINT, signal.SIGTERM, signal.SIGIO)), hex(ignored)


def test_no_child_can_hold_memory_in_files_of_memory_the_limits_do_not_count(job, tmp_path):
    """A memfd filled and never mapped counts toward no RLIMIT_AS and no resident size: 60 a process, in each of
    the submission's processes, held gigabytes past its memory limit, where the out-of-memory killer could not
    tell whose they were."""
    note = job.grade(read_submission(attack(tmp_path, "hold_memory_in_memfds"))).problem
    assert "memfd: denied (PermissionError)" in note and "memfd_secret: denied" in note, note
    assert job.grade(read_submission(honest(tmp_path, "after"))).score == 100


def test_no_child_can_hold_kernel_memory_in_extended_attributes(job, tmp_path):
    """Extended attributes on scratch files are kernel memory that no memory limit and no tmpfs size counts: 1.4 GiB
    in one load limit, from 64 KiB values on many files."""
    note = job.grade(read_submission(attack(tmp_path, "hold_memory_in_xattrs"))).problem
    for call in ("setxattr", "fsetxattr", "lsetxattr"):
        assert f"{call}: denied (PermissionError)" in note, note
    assert job.grade(read_submission(honest(tmp_path, "after"))).score == 100


def _said(result, pattern: str) -> re.Match:
    """The line an attack printed at load, read with `pattern`; its functions kept every point."""
    assert result.score == 100 and not result.problem, (result.problem, result.notes)
    found = re.search(pattern, result.printed)
    assert found, result.printed
    return found


def test_no_child_can_take_the_machines_aio_pool(job, tmp_path):
    """Every AIO context's events come from one pool for the whole machine (fs.aio-max-nr): a load that made
    contexts in a loop took it all, and every other process on the machine got EAGAIN from io_setup."""
    said = _said(job.grade(read_submission(attack(tmp_path, "hold_aio_contexts"))),
                 r"aio: (\d+) contexts, stopped by (\w+); machine's events (\d+) before, (\d+) while held")
    assert said.group(1, 2) == ("0", "EPERM"), said.group(0)
    assert int(said.group(4)) <= int(said.group(3)), said.group(0)  # nothing of the pool taken


def test_no_child_can_take_the_machines_pty_pool(job, tmp_path):
    """Every devpts instance draws on one pool for the whole machine (kernel.pty.max): 55 helpers opening /dev/ptmx
    took it down to the host's reserve. bubblewrap leaves none to open; the fallback uses the machine's /dev."""
    said = _said(job.grade(read_submission(attack(tmp_path, "hold_ptys"))),
                 r"ptys: (\d+) opened, stopped by (\w+); openpty: ([^;]+); machine's ptys (\d+) before, (\d+) while")
    if job.sandbox.protections.mode == "bwrap":
        assert said.group(1, 2, 3) == ("0", "ENOENT", "ENOENT"), said.group(0)
        assert int(said.group(5)) <= int(said.group(4)), said.group(0)


def test_no_child_can_hold_kernel_memory_in_posix_timers(job, tmp_path):
    """Each POSIX timer is kernel memory that no address-space, file or process limit counts: 80,000 in 3 s. Each
    holds a signal queued in advance, which RLIMIT_SIGPENDING counts."""
    said = _said(job.grade(read_submission(attack(tmp_path, "hold_posix_timers"))),
                 r"posix timers: (\d+) made in \S+ s, stopped by (\w+)")
    assert int(said.group(1)) <= PENDING_SIGNALS and said.group(2) == "EAGAIN", said.group(0)
    assert job.grade(read_submission(honest(tmp_path, "after"))).score == 100


def test_no_child_can_undo_being_what_the_kernel_ends_first(job, tmp_path):
    """The zygote sets oom_score_adj 1000, which every child inherits, so that the kernel ends a submission's processes
    first when memory runs out. A child that made itself dumpable again (prctl PR_SET_DUMPABLE) owned its /proc files
    and wrote 0 there; so could a helper it started by exec, which the kernel makes dumpable. Read from outside."""
    source = PLAIN.read_text() + "\n\n" + (ATTACKS / "undo_killed_first.py").read_text()
    with Session(job.sandbox, module_spec(tmp_path, source), Limits(call_seconds=5.0)) as session:
        report = session.open()
        assert not report.failure and not report.problems, report
        assert Path(session.child_proc(), "oom_score_adj").read_text().strip() == "1000"
        said = re.search(r"oom: (.*)", session.output.text())
    assert said, session.output.text()
    for refused in ("write EACCES", "dumpable EPERM", "write again EACCES", "mm EPERM", "after 1000"):
        assert refused in said.group(1), said.group(0)
    if _status_mask(os.getpid(), "CapEff") >> CAP_SYS_RESOURCE & 1:  # the grader wrote 1000 as a floor, which
        assert "exec'd helper: dumpable 1, write EACCES, now 1000" in said.group(1), said.group(0)  # binds it too
    assert job.grade(read_submission(honest(tmp_path, "after"))).score == 100


def test_no_child_can_take_the_machines_tcp_memory_or_raise_its_socket_buffers(job, tmp_path):
    """TCP's buffer memory is one count for the whole machine, whatever the network namespace (net.ipv4.tcp_mem): 90
    loopback connections sending unread took 92 % of it, past which every TCP socket on the machine fails. Unix
    socketpairs with SO_SNDBUF raised to 8 MiB held 1.4 GB that no limit counts. Only Unix sockets may be made, at
    their default sizes (at most about 2 x 208 KiB a socket pair, net.core.wmem_default)."""
    said = _said(job.grade(read_submission(attack(tmp_path, "hold_socket_memory"))),
                 r"sockets: ([^;]+); tcp: (\d+) connections, (\d+) KiB sent, stopped by (\w+); machine's tcp pages "
                 r"(\d+) before, (\d+) while held; unix: buffers (\w+), (\d+) KiB queued in one pair")
    families = dict(part.split() for part in said.group(1).split(", "))
    assert set(families.values()) == {"EPERM"} and set(families) >= {"inet", "inet6", "vsock"}, said.group(0)
    assert said.group(2, 3, 4) == ("0", "0", "EPERM"), said.group(0)
    assert int(said.group(6)) - int(said.group(5)) < 2048, said.group(0)  # others' traffic only: not 8 MiB a socket
    assert said.group(7) == "EPERM" and int(said.group(8)) <= 1024, said.group(0)
    assert job.grade(read_submission(honest(tmp_path, "after"))).score == 100


def test_no_child_can_change_the_limits_or_scheduling_the_next_child_inherits(job, tmp_path):
    """prlimit on the zygote (same user, so the kernel allowed it) lowered its hard limits: later students got
    MemoryError at their own lines, or no worker at all. setpriority and sched_* on it starved them."""
    zygote = job.sandbox.zygote_pid()
    before = (_limits(zygote), os.getpriority(os.PRIO_PROCESS, zygote), os.sched_getscheduler(zygote),
              os.sched_getaffinity(zygote))
    note = job.grade(read_submission(attack(tmp_path, "change_zygote_state"))).problem
    for what in ("data", "address space", "read limits", "idle", "pin", "nice", "nice everyone"):
        assert f"{what}: denied (PermissionError)" in note, note
    assert "own: worked" in note, note
    after = (_limits(zygote), os.getpriority(os.PRIO_PROCESS, zygote), os.sched_getscheduler(zygote),
             os.sched_getaffinity(zygote))
    assert after == before
    assert job.grade(read_submission(honest(tmp_path, "after"))).score == 100
    assert job.sandbox.zygote_pid() == zygote


def _limits(pid: int) -> str:
    with open(f"/proc/{pid}/limits") as limits:
        return limits.read()


def _status_mask(pid: int, field: str) -> int:
    """A mask of /proc/<pid>/status in hex (SigIgn, CapEff): bit n - 1 is signal n, bit n capability n."""
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1], 16) for line in status if line.startswith(f"{field}:"))


def test_no_child_can_read_code_graded_before_it(job, tmp_path):
    for name in ("ann", "ben", "cat"):
        assert job.grade(read_submission(honest(tmp_path, name))).score == 100
    snooper = job.grade(read_submission(attack(tmp_path, "snoop_memory")))
    assert "HONEST-MARKER" not in everything_said(snooper)
    assert snooper.score == 100  # it found nothing, so its context is the honest one


def _real_uid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Uid:"))


def test_two_graders_on_one_machine_never_share_a_worker_uid(suite, public_python):
    """Two commands each number their jobs from 0; under one uid the fallback's students could signal each
    other's processes and each zygote's clean-up of /tmp would remove the other's files."""
    if os.geteuid() != 0:
        pytest.skip("worker uids are only used when the grader runs as root")
    protections = probe("fallback", python=public_python)
    # A slot far above the jobs' (0, 1, ...): the other test processes' sandboxes, leasing from slot 0 up at the
    # same time, never reach it, so which uid is free here depends on these three sandboxes alone.
    slot = SLOTS - 10
    with Sandbox(protections, (), slot=slot) as first, Sandbox(protections, (), slot=slot) as second:
        assert first.uid != second.uid
        assert _real_uid(first.zygote_pid()) == first.uid and _real_uid(second.zygote_pid()) == second.uid
        taken = first.uid
    with Sandbox(protections, (), slot=slot) as third:  # a closed sandbox frees its uid
        assert third.uid == taken


def test_a_uid_that_cannot_be_locked_is_refused_with_what_to_do(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    with pytest.raises(SandboxError, match="could not lock a worker uid"):
        lease_uid(0, blocked / "locks")
    with pytest.raises(SandboxError, match="not a folder private to this user"):
        lease_uid(0, blocked)


def test_squatting_the_scratch_space_stops_no_later_submission(job, tmp_path):
    for name in ("squat_tmp", "nest_tmp"):
        squatter = job.grade(read_submission(attack(tmp_path, name)))
        assert squatter.score == 100
        assert not any("restarted" in note for note in squatter.notes), squatter.notes  # all of it was removed
    if job.sandbox.uid is not None and job.sandbox.protections.mode == "fallback":
        assert not [p for p in os.listdir("/tmp") if os.lstat(f"/tmp/{p}").st_uid == job.sandbox.uid]
    after = job.grade(read_submission(honest(tmp_path, "after")))
    assert after.score == 100 and not after.problem, [(t.name, t.message) for t in after.tests][:3]


def test_each_submission_starts_in_a_fresh_unpredictable_directory(job, tmp_path):
    places = []
    for name in ("first", "second"):
        path = tmp_path / f"{name}.py"
        path.write_text(PLAIN.read_text() + "\nimport os\nprint('cwd', os.getcwd(), sorted(os.listdir('.')))\n")
        printed = job.grade(read_submission(path)).printed
        places.append(re.search(r"cwd (\S+) \[\]", printed).group(1))
    assert places[0] != places[1]
    for place in places:
        name = os.path.basename(place)
        assert re.fullmatch(r"work-[0-9a-f]{32}", name), name  # 128 random bits, no pid
        assert not os.path.exists(os.path.join(os.path.dirname(place), name)) or job.sandbox.protections.mode == "bwrap"


def test_forged_accounts_of_the_worker_earn_nothing(job, tmp_path):
    result = job.grade(read_submission(attack(tmp_path, "forge_account")))
    verdicts = {t.name: t.status for t in result.tests}
    for name in ("apply_mask.input_unchanged", "softmax.input_unchanged"):
        assert verdicts[name] != "passed", name
    # The forged replies must reach the grader (and be rejected there): a crashed worker (the attack's own code
    # failing, e.g. against a moved worker helper) earns nothing too, but then no forged reply was judged.
    crashed = [(t.name, t.message) for t in result.tests if t.stopped == "crashed"]
    assert not crashed, crashed
    # A rejected reply ends its child, so a later check may meet attention_torch in a fresh child, before the
    # forgery is installed there: the worker's own account then says the output is detached.
    torch_checks = [t for t in result.tests if t.function == "attention_torch"]
    assert torch_checks and all(t.status != "passed" for t in torch_checks), [(t.name, t.message) for t in torch_checks]
    assert any("one gradient per argument" in t.message for t in torch_checks)
    assert all("gradient" in t.message or "autograd graph" in t.message for t in torch_checks)


def test_processes_started_at_load_are_stopped_and_cost_no_function(job, tmp_path):
    result = job.grade(read_submission(attack(tmp_path, "daemon_at_load")))
    assert [(t.name, t.message) for t in result.tests if t.status != "passed"] == []
    assert any("processes" in note and "while loading" in note for note in result.notes), result.notes


def test_a_malformed_reply_is_one_checks_result(job, suite, tmp_path):
    result = job.grade(read_submission(attack(tmp_path, "frame_bomb")))
    softmax = [t for t in result.tests if t.function == "softmax"]
    assert softmax and all(t.status != "passed" for t in softmax)
    assert all("malformed reply" in t.message for t in softmax), [t.message for t in softmax]
    uses = {entry.name: set(entry.check.functions) for entry in suite.checks}
    untouched = [t for t in result.tests if not uses[t.name] & {"softmax", "attention"}]
    assert all(t.status == "passed" for t in untouched), [(t.name, t.message) for t in untouched]


def test_text_no_store_or_terminal_can_take_is_made_safe(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    attack(folder, "hostile_text", "a_hostile")
    honest(folder, "b_honest")
    db = tmp_path / "grades.db"
    done = run_cli("grade", "w07_attention", folder, "--db", db, "--jobs", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    shown = done.stdout + done.stderr
    assert not CONTROL.search(shown), repr(CONTROL.search(shown))
    assert "\\x1b[2J" in shown  # shown, escaped, where the student put it
    with sqlite3.connect(db) as connection:
        students = [row[0] for row in connection.execute("SELECT student FROM submissions ORDER BY student")]
        stored = " ".join(row[0] for row in connection.execute("SELECT message FROM checks"))
    assert students == ["a_hostile", "b_honest"]
    assert "\ufffd" in stored and not CONTROL.search(stored)
    replay = run_cli("replay", "a_hostile", "softmax.lecture_example", "--db", db)
    assert replay.returncode == 0, replay.stderr
    assert not CONTROL.search(replay.stdout + replay.stderr)
    exported = run_cli("export", "csv", "--db", db)
    assert not CONTROL.search(exported.stdout)
    report = run_cli("report", "--db", db, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    markdown = (tmp_path / "report" / "feedback" / "a_hostile.md").read_text()
    assert not CONTROL.search(markdown)


def test_damaged_notebooks_are_read_without_stopping_the_batch(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("nested_notebook", "odd_cells"):
        (folder / f"{name}.ipynb").write_bytes((ATTACKS / f"{name}.ipynb").read_bytes())
    honest(folder, "zed")
    done = run_cli("grade", "w07_attention", folder, "--json", "--db", tmp_path / "g.db", "--jobs", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert "not a valid notebook" in results["nested_notebook"]["problem"]
    odd = results["odd_cells"]
    assert odd["score"] == 100 and not odd["problem"]
    assert any("code cell 1" in note and "not text" in note for note in odd["notes"]), odd["notes"]
    assert results["zed"]["score"] == 100


def test_a_class_mixing_attacks_and_honest_work_grades_the_honest_work_as_alone(tmp_path):
    """The poisoner first, the snooper last, honest work between; one job, then two."""
    _require_bwrap()
    folder = tmp_path / "class"
    folder.mkdir()
    order = [("a0_poison", "poison_zygote"), ("a1_squat", "squat_tmp"), ("a2_daemon", "daemon_at_load"),
             ("a3_text", "hostile_text"), ("a4_bomb", "frame_bomb"), ("a5_forge", "forge_account")]
    for student, name in order:
        attack(folder, name, student)
    honest_names = [f"h{i}_honest" for i in range(6)]
    for name in honest_names:
        honest(folder, name)
    (folder / "m_nested.ipynb").write_bytes((ATTACKS / "nested_notebook.ipynb").read_bytes())
    attack(folder, "snoop_memory", "z_snoop")
    for jobs in ("1", "2"):
        done = run_cli("grade", "w07_attention", folder, "--json", "--jobs", jobs, "--db", tmp_path / f"{jobs}.db")
        assert done.returncode == 0, done.stderr[-3000:]
        results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
        assert len(results) == len(order) + len(honest_names) + 2
        for name in honest_names:
            assert results[name]["score"] == 100, (jobs, name, results[name]["problem"])
        assert "HONEST-MARKER" not in json.dumps(results["z_snoop"])
        assert "internal errors 0" in done.stderr and "hit an internal error" not in done.stderr


def test_doctor_lists_the_isolation_protections():
    done = run_cli("doctor")
    assert done.returncode == 0, done.stderr
    for protection in ("not dumpable", "seccomp", "fresh scratch directory", "source after the fork"):
        assert protection in done.stdout, protection
    if bwrap_works():  # every protection is active (a uid of their own needs a root grader; the oom floor, a
        # grader with CAP_SYS_RESOURCE, which a container may withhold even from root)
        floor = _status_mask(os.getpid(), "CapEff") >> CAP_SYS_RESOURCE & 1
        inactive = [line for line in done.stdout.splitlines() if line.startswith("  [ ]")]
        assert [line for line in inactive if (os.geteuid() == 0 or "user id of their own" not in line)
                and (floor or "oom_score_adj floor" not in line)] == []


@pytest.mark.skipif(os.geteuid() != 0, reason="workers get their own uid only when the grader is root")
def test_the_fallback_refuses_to_run_where_workers_could_read_the_solutions(tmp_path, public_python):
    # The repository's own files are world-readable, so a fallback worker could read solutions/.
    done = run_cli("grade", "w07_attention", PLAIN, "--sandbox", "fallback", "--db", tmp_path / "g.db",
                   env={"AUTOGRADER_WORKER_PYTHON": public_python})
    assert done.returncode == 2
    assert "could read" in done.stderr and "solutions" in done.stderr
    assert "chmod" in done.stderr  # says what to do
    assert not (tmp_path / "g.db").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="workers get their own uid only when the grader is root")
def test_the_fallback_never_runs_student_code_as_root(tmp_path):
    # The workers' Python behind a folder only root may enter, as pyenv's under /root: no worker uid can run it.
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "python").symlink_to(sys.executable)
    env = {"AUTOGRADER_WORKER_PYTHON": str(private / "python")}
    assert not probe("fallback", python=env["AUTOGRADER_WORKER_PYTHON"]).separate_user
    done = run_cli("grade", "w07_attention", PLAIN, "--sandbox", "fallback", "--db", tmp_path / "g.db", env=env)
    assert done.returncode == 2, done.stdout
    assert "would run student code as root" in done.stderr and "AUTOGRADER_WORKER_PYTHON" in done.stderr


def test_a_public_suite_needs_no_secrets_kept(tmp_path, public_python):
    """Students' own machines: `autograder check` has no secret to protect, so the fallback runs."""
    released = subprocess.run([sys.executable, "-m", "autograder", "release", "w07_attention", "--out",
                               str(tmp_path / "release"), "--gradebook", str(tmp_path / "gb.db")],
                              cwd=PLAIN.parents[4], capture_output=True, text=True, timeout=600)
    assert released.returncode == 0, released.stderr
    folder = tmp_path / "release" / "w07_attention"
    done = run_cli("check", PLAIN, "--dir", folder, "--sandbox", "fallback",
                   env={"AUTOGRADER_WORKER_PYTHON": public_python})
    assert done.returncode == 0, done.stdout + done.stderr


FAULTY_CHECK = '''
import os
import numpy as np
from autograder.authoring.checks import Check
from autograder.authoring.compare import expect_close


def double_faulty(t):
    """A check with bugs that only some answers reach: it calls sys.exit, or kills the grading process."""
    got = t.returned("double", np.array([1.0]))
    if got[0] == 7:
        raise SystemExit("a bug in this check")
    if got[0] == 9:
        os._exit(3)
    expect_close(got, np.array([2.0]), t.tol(np.float64), "double([1])")


CHECKS = [Check("double.faulty", double_faulty)]
'''


def _tiny_course(tmp_path):
    """A private copy of the tiny assignment whose hidden check has bugs (tests/fixtures/tiny)."""
    for folder in ("assignments", "solutions"):
        shutil.copytree(FIXTURES / "tiny" / folder / "tiny", tmp_path / folder / "tiny")
    (tmp_path / "solutions" / "tiny" / "hidden_checks.py").write_text(FAULTY_CHECK)
    (tmp_path / "course.yaml").write_text(
        "course: {name: Tiny, seed_salt: s}\ndefaults:\n  tolerance:\n    float32: {rtol: 1.0e-5, atol: 1.0e-6}\n"
        "    float64: {rtol: 1.0e-9, atol: 1.0e-12}\nassignments:\n  tiny:\n    title: Doubling\n    module: tiny\n"
        "    preload: [numpy]\n    checks: {double.small: 1, double.faulty: 1}\n")
    folder = tmp_path / "class"
    folder.mkdir()
    for student, body in (("a_good", "2 * x"), ("b_check_exits", "0 * x + 7"), ("c_kills_grader", "0 * x + 9"),
                          ("d_good", "x + x")):
        (folder / f"{student}.py").write_text(f"def double(x):\n    return {body}\n")
    return tmp_path / "course.yaml", folder


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_fault_in_the_grader_is_one_submissions_result_and_the_batch_goes_on(tmp_path, jobs):
    course, folder = _tiny_course(tmp_path)
    db = tmp_path / "grades.db"
    done = run_cli("grade", "tiny", folder, "--course", course, "--db", db, "--json", "--jobs", jobs)
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert sorted(results) == ["a_good", "b_check_exits", "c_kills_grader", "d_good"]
    assert results["a_good"]["score"] == results["d_good"]["score"] == 2
    broken = ["b_check_exits", "c_kills_grader"]
    for student in broken:
        assert results[student]["problem"].startswith("internal error"), results[student]["problem"]
        assert results[student]["score"] == 0 and results[student]["internal_error"]
    assert "SystemExit: a bug in this check" in results["b_check_exits"]["internal_error"]
    assert "ended with exit code 3" in results["c_kills_grader"]["internal_error"]
    assert done.returncode == 3, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert f"{len(broken)} submissions hit an internal error" in last
    with sqlite3.connect(db) as connection:
        stored = dict(connection.execute("SELECT student, internal_error FROM submissions"))
    assert "SystemExit" in stored["b_check_exits"] and stored["a_good"] == ""
    report = run_cli("report", "--db", db, "--out", tmp_path / "report", "--course", course)
    assert report.returncode == 0, report.stderr
    index = (tmp_path / "report" / "index.html").read_text()
    assert "internal error" in index and "SystemExit: a bug in this check" in index
    feedback = (tmp_path / "report" / "feedback" / "b_check_exits.html").read_text()
    assert "Traceback" not in feedback  # the traceback is the instructor's, not the student's
    rerun = run_cli("grade", "tiny", folder, "--course", course, "--db", db, "--json", "--jobs", jobs)
    regraded = {r["student"] for r in map(json.loads, rerun.stdout.splitlines())}
    assert set(broken) <= regraded  # an internal error is graded again on the next run


def _patch_member(data: bytearray, info: zipfile.ZipInfo, central: int, flag: int | None = None,
                  method: int | None = None, size: int | None = None) -> None:
    """Rewrite a member's header fields in both the local header and the central directory."""
    local = info.header_offset
    for offset_flag, offset_method, offset_size in ((local + 6, local + 8, local + 22), (central + 8, central + 10,
                                                                                           central + 24)):
        if flag is not None:
            struct.pack_into("<H", data, offset_flag, struct.unpack_from("<H", data, offset_flag)[0] | flag)
        if method is not None:
            struct.pack_into("<H", data, offset_method, method)
        if size is not None:
            struct.pack_into("<I", data, offset_size, size)


def test_a_zip_is_extracted_by_what_it_holds_not_what_it_declares(tmp_path):
    archive = tmp_path / "class.zip"
    members = {"ok.py": PLAIN.read_bytes(), "locked.py": PLAIN.read_bytes(), "odd_method.py": PLAIN.read_bytes(),
               "liar.py": b"#" * (60 << 20), "huge.ipynb": b" " * (60 << 20), "n" * 300 + ".py": PLAIN.read_bytes()}
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as bundle:
        infos = {info.filename: info for info in bundle.infolist()}
    central = [m.start() for m in re.finditer(rb"PK\x01\x02", data)]  # one entry per member, in order
    order = list(members)
    for name, changes in (("locked.py", {"flag": 1}), ("odd_method.py", {"method": 9}), ("liar.py", {"size": 100})):
        _patch_member(data, infos[name], central[order.index(name)], **changes)
    archive.write_bytes(bytes(data))
    done = run_cli("grade", "w07_attention", archive, "--json", "--db", tmp_path / "g.db", "--jobs", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert results["ok"]["score"] == 100
    expected = {"locked": "it is encrypted", "odd_method": "compression method (9)", "liar": "damaged",
                "huge": "larger than 50 MB", "n" * 100: "its name is too long"}
    for student, words in expected.items():
        assert student in results, sorted(results)
        assert words in results[student]["problem"] and results[student]["score"] == 0, results[student]["problem"]
    assert all(p.stat().st_size < (51 << 20) for p in tmp_path.rglob("*") if p.is_file() and p != archive)
