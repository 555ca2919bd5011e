"""The fallback kind: plain processes with resource limits, under a user id of their own where it can.

It always starts, so `protections.KINDS` ends with it. It keeps nothing of the machine from student
code: workers have the network and see every file other users may read, which is why grading is
refused wherever those include the course's secrets (preflight.refuse_readable), and refused outright
where workers would run as root or as the grader's own user.
"""
from __future__ import annotations

import os
import subprocess
import tempfile

from autograder.sandbox.kind import WORKER_UID_BASE, Interpreter, Isolation, Kind, Launch, worker_environment

SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # writable by every user, so by a fallback worker too


class Fallback(Kind):
    """The zygote as a plain process in a private folder, started under the worker uid by Popen."""

    name = "fallback"
    label = "fallback (weaker)"
    isolation = Isolation(no_network=False, pid_namespace=False, private_system=False, hides_course=False)

    def problem(self, root: bool, python: Interpreter) -> tuple[str, str] | None:
        return None

    def separate_user(self, root: bool, python: Interpreter) -> bool:
        return root and _runs_as(WORKER_UID_BASE, python)

    def launch(self, uid: int | None, tmp_mib: int, python: Interpreter) -> Launch:
        # A private scratch folder inside one the workers cannot rename or replace.
        host = tempfile.TemporaryDirectory(prefix="autograder-work-")
        os.chmod(host.name, 0o711)
        scratch = os.path.join(host.name, "scratch")
        os.mkdir(scratch, 0o700)
        if uid is None:
            return Launch([], scratch, worker_environment(scratch), scratch, host_folder=host)
        os.chown(scratch, uid, uid)
        # The workers can write to the machine's shared folders: what their uid owns there goes too.
        return Launch([], scratch, worker_environment(scratch), scratch, host_folder=host, sweep=list(SHARED_FOLDERS),
                      user={"user": uid, "group": uid, "extra_groups": []})

    def warning(self, reason: str, fix: str, separate_user: bool) -> str:
        if separate_user:
            what = ("Student code runs as a plain process under a user id of its own, with resource limits: it has "
                    "the network and sees every file other users may read, so grading is refused where those "
                    "include the course's secrets.")
        elif os.geteuid() == 0:
            what = ("No other user can run the workers' Python here, so the fallback refuses to run student code "
                    "(it would run as root).")
        else:
            what = ("Student code would run under your own user id and could read everything you can, so grading "
                    "with hidden checks is refused; public checks (`autograder check`) still run.")
        fix = fix or "Run without `--sandbox fallback` to use bubblewrap where it works."
        return f"WARNING: bubblewrap is not in use ({reason}). {what} {fix}"

    def readable_fix(self, separate_user: bool) -> str:
        if separate_user:
            return super().readable_fix(separate_user)
        return ("the fallback sandbox runs student code under your own user id, which can read everything you "
                "can. Make bubblewrap work here (`autograder doctor` says why it does not), or run the grader "
                "as root so that workers get a user id of their own")


def _runs_as(uid: int, python: Interpreter) -> bool:
    """Whether `uid` can run the workers' interpreter with NumPy: every folder on the way is open to it."""
    try:
        done = subprocess.run([python.path, "-I", "-c", "import numpy"], user=uid, group=uid, extra_groups=[],
                              cwd="/", env=worker_environment("/"), capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
