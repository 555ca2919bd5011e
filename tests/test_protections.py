"""Issue 15: the fallback warning says why bubblewrap could not start and what to do in each case.

The real probe runs against a real PATH: one without bwrap, and one whose bwrap is a script that fails
as bwrap fails where namespaces are forbidden (or for another reason).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from autograder.sandbox import protections
from autograder.sandbox.protections import SandboxError, probe

from conftest import run_cli

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
    fix = protections._namespace_fix(root=False)
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
    assert "sandbox mode: fallback (bwrap is installed but cannot create namespaces here" in done.stdout
    assert "WARNING: bubblewrap is not in use" in done.stdout and "autograder doctor" in done.stdout
