"""Issue 22: `make demo` and `make test` install bubblewrap on a fresh machine, or stop first with the command.

bubblewrap stays installed (others on this machine need it): each run gets a PATH of its own that lacks
`bwrap`, and an `apt-get` (and `sudo`) that only record what they were asked to do, since really installing
cannot be tested on a machine that has everything. Running as another user is real (setpriv).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "system-deps"
RECORDER = '#!/bin/sh\necho "${{0##*/}} $*" >> "{log}"\n'
# A sudo that works without a password: drops `-n` and runs the rest, as root would.
SUDO = '#!/bin/sh\necho "sudo $*" >> "{log}"\n[ "$1" = -n ] && shift\nexec "$@"\n'
NO_SUDO = '#!/bin/sh\necho "sudo $*" >> "{log}"\necho "sudo: a password is required" >&2\nexit 1\n'


@pytest.fixture
def place():
    """A folder every user can enter, holding the script, a PATH folder and the log of what was run."""
    folder = Path(tempfile.mkdtemp(prefix="system-deps-", dir="/tmp"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def _run(place: Path, *, tools: dict[str, str], bwrap: bool, as_nobody: bool) -> subprocess.CompletedProcess:
    """The script with PATH holding only `sh`, `id`, `true`, the given fake tools and, if `bwrap`, the real bwrap."""
    bin_dir = place / "bin"
    bin_dir.mkdir()
    for name in ("sh", "id", "true") + (("bwrap",) if bwrap else ()):
        (bin_dir / name).symlink_to(shutil.which(name))
    log = place / "ran.log"
    for name, text in tools.items():
        (bin_dir / name).write_text(text.format(log=log))
        (bin_dir / name).chmod(0o755)
    script = place / "system-deps"
    shutil.copy(SCRIPT, script)
    script.chmod(0o755)
    prefix = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"] if as_nobody else []
    return subprocess.run([*prefix, "/bin/sh", str(script)], capture_output=True, text=True, timeout=60, cwd=place,
                          env={"PATH": str(bin_dir), "PYTHON": "/usr/bin/python3", "HOME": str(place)})


def _ran(place: Path) -> list[str]:
    log = place / "ran.log"
    return log.read_text().splitlines() if log.exists() else []


needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="runs the script as another user: needs root and setpriv")
needs_system_python = pytest.mark.skipif(not Path("/usr/bin/python3").is_file(), reason="no /usr/bin/python3")


@needs_root
@needs_system_python
def test_without_root_or_sudo_it_installs_nothing_and_prints_the_one_command(place):
    done = _run(place, tools={"apt-get": RECORDER, "sudo": NO_SUDO}, bwrap=False, as_nobody=True)
    assert done.returncode == 1
    assert "lacks bubblewrap" in done.stderr and "Nothing was installed" in done.stderr
    assert "    apt-get update && apt-get install -y bubblewrap\n" in done.stderr
    assert _ran(place) == ["sudo -n true"]  # asked whether sudo works, and nothing else


@needs_root
@needs_system_python
def test_without_sudo_at_all_it_says_the_same(place):
    done = _run(place, tools={"apt-get": RECORDER}, bwrap=False, as_nobody=True)
    assert done.returncode == 1 and "apt-get install -y bubblewrap" in done.stderr
    assert _ran(place) == []


@needs_root
@needs_system_python
def test_with_password_less_sudo_it_installs_through_sudo(place):
    done = _run(place, tools={"apt-get": RECORDER, "sudo": SUDO}, bwrap=False, as_nobody=True)
    assert done.returncode == 0, done.stderr
    assert _ran(place) == ["sudo -n true", "sudo -n sh -c apt-get update && apt-get install -y bubblewrap",
                           "apt-get update", "apt-get install -y bubblewrap"]


@needs_system_python
@pytest.mark.skipif(os.geteuid() != 0, reason="the root path")
def test_as_root_it_runs_apt_get(place):
    done = _run(place, tools={"apt-get": RECORDER}, bwrap=False, as_nobody=False)
    assert done.returncode == 0, done.stderr
    assert _ran(place) == ["apt-get update", "apt-get install -y bubblewrap"]


@needs_system_python
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed here")
def test_with_everything_installed_it_does_nothing(place):
    done = _run(place, tools={"apt-get": RECORDER, "sudo": SUDO}, bwrap=True, as_nobody=False)
    assert done.returncode == 0 and done.stderr == ""
    assert _ran(place) == []


def test_make_and_ci_use_the_one_script():
    makefile = (ROOT / "Makefile").read_text()
    assert "sh scripts/system-deps" in makefile and "install: system-deps" in makefile
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get" not in ci and "make check" in ci
