"""The commands' temporary folders and the signals that stop them.

What a killed command left is removed, and nothing else is.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from autograder.cli.workdir import _host, command_workdir, remove_leftovers


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_only_this_users_folders_of_dead_commands_on_this_machine_are_removed(tmp_path):
    host, dead = _host(), _dead_pid()
    left = tmp_path / f"autograder-zip-{host}-{dead}-abc123"
    (left / "class").mkdir(parents=True)
    (left / "class" / "ann.py").write_text("def score(): pass\n")
    running = tmp_path / f"autograder-zip-{host}-{os.getpid()}-def456"
    elsewhere = tmp_path / f"autograder-zip-otherhost-{dead}-ghi789"  # a /tmp shared with another machine
    regrade = tmp_path / f"autograder-regrade-{host}-{dead}-jkl012"
    for folder in (running, elsewhere, regrade):
        folder.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the command's")
    (tmp_path / f"autograder-zip-{host}-{dead}-link01").symlink_to(outside)
    removed = remove_leftovers("zip", host, tmp_path)
    assert removed == [left] and not left.exists()
    assert running.is_dir() and elsewhere.is_dir() and regrade.is_dir() and (outside / "keep.txt").is_file()


def test_a_commands_folder_is_named_for_it_and_gone_when_it_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile reads TMPDIR once, then keeps it
    with command_workdir("zip") as folder:
        assert folder.parent == tmp_path and folder.name.startswith(f"autograder-zip-{_host()}-{os.getpid()}-")
        assert folder.stat().st_mode & 0o777 == 0o700
    assert not folder.exists()


def test_a_command_started_with_nohup_goes_on_after_a_hangup(tmp_path):
    script = ("import os, signal, sys\n"
              "from autograder.cli import _stopped_by_signals\n"
              "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"  # what nohup does before it starts the command
              "with _stopped_by_signals():\n"
              "    os.kill(os.getpid(), signal.SIGHUP)\n"
              "    try:\n"
              "        os.kill(os.getpid(), signal.SIGTERM)\n"
              "    except KeyboardInterrupt as stopped:\n"
              "        print(type(stopped).__name__, stopped)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Stopped SIGTERM"
