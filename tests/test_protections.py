"""Issue 15: the fallback warning says why bubblewrap could not start and what to do in each case.
Issue 23: each kind of sandbox is an object the rest of the package asks, and a failed protection is
reported and refused.

The real probe runs against a real PATH: one without bwrap, and one whose bwrap is a script that fails
as bwrap fails where namespaces are forbidden (or for another reason). A real seccomp filter makes the
kernel refuse a process control, as a container's profile can.
"""
from __future__ import annotations

import argparse
import ast
import errno
import os
import pickle
import platform
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.cli import options
from autograder.sandbox import bubblewrap, kernel, processes
from autograder.sandbox.protections import KINDS, REQUESTS, SandboxError, kind_named, probe

from conftest import PLAIN, ROOT, private_course, repository_env, run_cli

# What bwrap prints where unprivileged user namespaces are disabled (Debian's message).
NO_NAMESPACES = ("bwrap: No permissions to creating new namespace, likely because the kernel does not allow "
                 "non-privileged user namespaces. On e.g. debian this can be enabled with "
                 "'sysctl kernel.unprivileged_userns_clone=1'.")


def _fake_bwrap(folder: Path, message: str) -> str:
    """A PATH whose bwrap fails with `message`, as the real one does when it cannot start."""
    folder.mkdir(exist_ok=True)
    script = folder / "bwrap"
    script.write_text(f"#!/bin/sh\necho {message!r} >&2\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return f"{folder}{os.pathsep}/usr/bin{os.pathsep}/bin"


def test_a_missing_bwrap_says_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing here
    found = probe("auto")
    assert found.mode == "fallback" and found.reason == "the bwrap command is not installed"
    assert "apt-get install -y bubblewrap" in found.warning and "namespaces" not in found.warning
    assert "keep the fallback" in found.warning


def test_a_bwrap_that_cannot_create_namespaces_says_how_to_allow_them(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_bwrap(tmp_path / "bin", NO_NAMESPACES))
    found = probe("auto")
    assert found.mode == "fallback" and "bwrap is installed but cannot create namespaces here" in found.reason
    assert "apt-get install" not in found.warning and "keep the fallback" in found.warning
    if os.geteuid() == 0:  # root needs no unprivileged namespaces: the container withholds a capability
        assert "--privileged" in found.warning
    else:
        assert "unprivileged user namespaces" in found.warning and "sysctl" in found.warning
    with pytest.raises(SandboxError, match="cannot create namespaces") as raised:
        probe("bwrap")
    assert found.fix in str(raised.value)


def test_the_non_root_fix_names_the_settings_and_running_as_root():
    fix = bubblewrap._namespace_fix(root=False)
    assert "sysctl -w" in fix and "run the grader as root" in fix and "keep the fallback" in fix


def test_another_bwrap_failure_says_how_to_see_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", _fake_bwrap(tmp_path / "bin", "bwrap: execvp python: No such file or directory"))
    found = probe("auto")
    assert found.reason == "bwrap could not start (bwrap: execvp python: No such file or directory)"
    assert "bwrap --ro-bind / / true" in found.warning and "apt-get install" not in found.warning


def test_doctor_shows_the_reason_and_the_fix(tmp_path):
    path = _fake_bwrap(tmp_path / "bin", "bwrap: setting up uid map: Permission denied")
    done = run_cli("doctor", env={"PATH": path})
    # 1 where the fallback cannot grade here either (as root with the workers' Python under /root); doctor says so.
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    assert "sandbox: fallback (weaker), because bwrap is installed but cannot create namespaces here" in done.stdout
    assert "WARNING: bubblewrap is not in use" in done.stdout and "autograder doctor" in done.stdout


# ---------------------------------------------------------------- kinds of sandbox (issue 23)

def test_the_kinds_registry_drives_the_sandbox_choices():
    parser = argparse.ArgumentParser()
    options.sandbox(parser)
    choice = next(action for action in parser._actions if action.dest == "sandbox")
    assert tuple(choice.choices) == REQUESTS == ("auto", *(kind.name for kind in KINDS))
    assert all(kind.name in choice.help for kind in KINDS)
    assert [kind_named(name) for name in REQUESTS[1:]] == list(KINDS)
    with pytest.raises(SandboxError, match="one of auto, bwrap, fallback"):
        probe("nsjail")
    done = run_cli("doctor", "--sandbox", "nsjail")
    assert done.returncode == 2 and "invalid choice: 'nsjail'" in done.stderr


def test_each_kind_says_what_it_gives():
    names = [kind.name for kind in KINDS]
    assert len(set(names)) == len(names) and {"bwrap", "fallback"} <= set(names)  # the ids stored results hold
    assert all(kind.label and isinstance(kind.strong_isolation, bool) for kind in KINDS)
    assert KINDS[0].strong_isolation and not KINDS[-1].strong_isolation
    found = probe("fallback")
    assert found.kind == KINDS[-1] and found.mode == KINDS[-1].name and "WARNING" in found.warning
    assert KINDS[-1].problem(os.geteuid() == 0, found.python) is None  # the last kind always starts
    # Grading processes receive the protections pickled: the kind they get is the same kind.
    assert pickle.loads(pickle.dumps(found)) == found


def _compared_names(path: Path, names: set[str]) -> list[int]:
    """Lines of `path` that compare something with one of `names` (==, !=, in, or a match case)."""
    def constants(node) -> set:
        parts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return {part.value for part in parts if isinstance(part, ast.Constant)}

    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(constants(o) & names for o in [node.left, *node.comparators]):
            lines.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and constants(node.value) & names:
            lines.append(node.lineno)
    return lines


def test_no_module_outside_the_sandbox_compares_a_sandbox_name():
    """Outputs and grading ask the kind (or the result) what they need; only sandbox/ knows the names."""
    names = {kind.name for kind in KINDS}
    assert _compared_names(ROOT / "tests" / "test_isolation.py", names)  # the scan does find comparisons
    package = ROOT / "autograder"
    comparing = {str(path.relative_to(ROOT)) for path in package.rglob("*.py")
                 if "sandbox" not in path.relative_to(package).parts[:1] and _compared_names(path, names)}
    assert comparing == set()


def test_a_process_control_that_cannot_be_set_is_returned_not_dropped():
    assert kernel.prctl(kernel.PR_SET_PDEATHSIG, 1000) == os.strerror(errno.EINVAL)  # no signal 1000
    assert kernel.set_controls([(kernel.PR_SET_PDEATHSIG, 1000), (kernel.PR_SET_PDEATHSIG, 0)]) == \
        {"PR_SET_PDEATHSIG": os.strerror(errno.EINVAL)}


def test_read_proc_reads_a_whole_stat_file_and_raises_for_a_gone_process():
    stat = processes.read_proc(f"/proc/{os.getpid()}/stat")
    assert stat.startswith(f"{os.getpid()} (".encode()) and stat.endswith(b"\n")
    with pytest.raises(OSError):
        processes.read_proc("/proc/0-no-such-process/stat")

# Runs the command under a seccomp filter (inherited by the workers) that fails prctl(PR_SET_DUMPABLE)
# with EPERM, as a container's profile might.
DENY_DUMPABLE = """
import errno, os, sys
from autograder.sandbox import seccomp
from autograder.sandbox.kernel import PR_SET_DUMPABLE
seccomp.load([(seccomp._LOAD, 0, 0, seccomp._NR), (seccomp._JEQ, 0, 3, {prctl}),
              (seccomp._LOAD, 0, 0, seccomp._ARG0), (seccomp._JEQ, 0, 1, PR_SET_DUMPABLE),
              (seccomp._RET, 0, 0, seccomp.RET_ERRNO | errno.EPERM), (seccomp._RET, 0, 0, seccomp.RET_ALLOW)])
os.execv(sys.executable, [sys.executable, "-m", "autograder", *sys.argv[1:]])
"""
PRCTL = {"x86_64": 157, "aarch64": 167}  # the prctl system call's number


@pytest.mark.skipif(platform.machine() not in PRCTL, reason="no prctl number for this machine here")
@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_protection_the_worker_could_not_set_is_reported_by_doctor_and_refused(tmp_path, public_python):
    def denied(*args, cwd):
        return subprocess.run([sys.executable, "-c", DENY_DUMPABLE.format(prctl=PRCTL[platform.machine()]),
                               *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600,
                              env=repository_env(AUTOGRADER_WORKER_PYTHON=public_python))

    doctor = denied("doctor", "--sandbox", "fallback", cwd=tmp_path)  # no course here: the protections only
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    assert "[ ] zygote and children not dumpable" in doctor.stdout
    assert "[x] the zygote ends with the grader" in doctor.stdout  # only the control that failed
    said = f"the worker could not set PR_SET_DUMPABLE ({os.strerror(errno.EPERM)})"
    assert said in doctor.stdout and "permits prctl" in doctor.stdout and "autograder doctor" in doctor.stdout
    graded = denied("grade", "w07_attention", PLAIN, "--sandbox", "fallback", "--db", tmp_path / "g.db",
                    "--course", private_course(tmp_path), cwd=ROOT)
    assert graded.returncode == 2 and said in graded.stderr and "Nothing was graded" in graded.stderr
    assert not (tmp_path / "g.db").exists()


def test_doctor_says_whether_the_oom_score_floor_holds(tmp_path):
    """Only a grader with CAP_SYS_RESOURCE writes the zygote's oom_score_adj as a floor (kernel.kill_order); without
    it a helper a submission starts by exec may lower its own to 0. `doctor` had no line for it. Asked of the real
    command, with the capability this process has and, through setpriv, without it."""
    has_it = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                      if line.startswith("CapEff:")), 16) >> 24 & 1 and os.geteuid() == 0
    done = run_cli("doctor", cwd=tmp_path)  # no course here: the protections alone
    assert "Traceback" not in done.stderr, done.stderr
    floor = next(line for line in done.stdout.splitlines() if "oom_score_adj floor" in line)
    assert floor.startswith("  [x]" if has_it else "  [ ]") and ("CAP_SYS_RESOURCE" in floor) != bool(has_it), floor
    assert "[x] when memory runs out the kernel ends a submission's processes first" in done.stdout
    if shutil.which("setpriv") and os.geteuid() == 0:
        without = subprocess.run(["setpriv", "--inh-caps=-sys_resource", "--bounding-set=-sys_resource",
                                  sys.executable, "-m", "autograder", "doctor"], cwd=tmp_path, capture_output=True,
                                 text=True, timeout=600, env=repository_env())
        assert ("  [ ] oom_score_adj floor: no process a submission starts can lower its own below the zygote's 500 "
                "(needs CAP_SYS_RESOURCE: a helper a submission starts can lower its own to 0)") in without.stdout, \
            without.stdout + without.stderr
