"""The bubblewrap kind: no network, its own PID namespace, a private /tmp and a read-only view of the
system and of the workers' Python, and nothing else of the machine.

It works where the bwrap command is installed and may create namespaces; `Bubblewrap.problem` says
why not, and what to do, in each case it knows (README: Sandbox, Fallback).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from autograder.sandbox.kind import WORKER_UID_BASE, Interpreter, Isolation, Kind, Launch, worker_environment


class Bubblewrap(Kind):
    """Each zygote inside `bwrap`, PID 1 of its namespace; workers switch to their uid with setpriv."""

    name = "bwrap"
    label = "bubblewrap"
    isolation = Isolation(no_network=True, pid_namespace=True, private_system=True, hides_course=True)

    def problem(self, root: bool, python: Interpreter) -> tuple[str, str] | None:
        return _bwrap_problem(root, python)

    def separate_user(self, root: bool, python: Interpreter) -> bool:
        return root  # setpriv inside the sandbox needs the capabilities only root's bwrap has

    def launch(self, uid: int | None, tmp_mib: int, python: Interpreter) -> Launch:
        return Launch(bwrap_command(uid, tmp_mib, python), scratch="/tmp")


KEEP_FALLBACK = ("Or keep the fallback: it refuses to grade wherever workers could read the course's secrets "
                 "(README: Sandbox, Fallback).")
# What bwrap says when the kernel or the container will not give it namespaces (unprivileged user
# namespaces disabled, an AppArmor restriction, a container without CAP_SYS_ADMIN or with a seccomp profile).
_NAMESPACE_SIGNS = ("namespace", "uid map", "gid map", "setgroups", "operation not permitted", "permission denied",
                    "no space left on device")


def _bwrap_problem(root: bool, python: Interpreter) -> tuple[str, str] | None:
    """(why bubblewrap cannot be used, what to do about it), or None when it works."""
    if shutil.which("bwrap") is None:
        return ("the bwrap command is not installed",
                f"Install it (apt-get install -y bubblewrap) and check with `autograder doctor`. {KEEP_FALLBACK}")
    command = bwrap_command(WORKER_UID_BASE if root else None, 16, python) + [python.path, "-I", "-c", "pass"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:  # its message would be the whole command line
        return "bwrap did not run a Python within 30 s", _unknown_fix()
    except OSError as error:
        return f"bwrap could not start ({error})", _unknown_fix()
    if done.returncode == 0:
        return None
    said = done.stderr.decode(errors="replace").strip()
    last = (said.splitlines() or ["no message"])[-1][:300]
    if any(sign in said.lower() for sign in _NAMESPACE_SIGNS):
        return f"bwrap is installed but cannot create namespaces here ({last})", _namespace_fix(root)
    return f"bwrap could not start ({last})", _unknown_fix()


def _namespace_fix(root: bool) -> str:
    """What lets bubblewrap create namespaces on this machine, from the kernel settings that forbid them."""
    if root:
        # Root needs no unprivileged namespaces: what is missing is a capability the container withholds.
        where = ("This grader runs as root, so the container (or its seccomp or AppArmor profile) withholds what "
                 "bwrap needs: run it privileged (docker run --privileged, or --cap-add SYS_ADMIN with "
                 "--security-opt seccomp=unconfined --security-opt apparmor=unconfined)")
    else:
        forbidding = {"kernel.unprivileged_userns_clone": ("0", "1"), "user.max_user_namespaces": ("0", "15000"),
                      "kernel.apparmor_restrict_unprivileged_userns": ("1", "0")}
        steps = [f"sysctl -w {name}={allowing}" for name, (forbidden, allowing) in forbidding.items()
                 if _sysctl(name) == forbidden]
        where = ("Enable unprivileged user namespaces as root (" + ("; ".join(steps) if steps else
                 "sysctl -w kernel.unprivileged_userns_clone=1 on Debian, user.max_user_namespaces=15000, or "
                 "kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 24.04") +
                 "; in a container, run it privileged), or run the grader as root")
    return f"{where}, then check with `autograder doctor`. {KEEP_FALLBACK}"


def _unknown_fix() -> str:
    return f"Run `bwrap --ro-bind / / true` to see why, then check with `autograder doctor`. {KEEP_FALLBACK}"


def _sysctl(name: str) -> str:
    """A kernel setting (`kernel.unprivileged_userns_clone`) as text; "" where this kernel has none."""
    try:
        return (Path("/proc/sys") / name.replace(".", "/")).read_text().strip()
    except OSError:
        return ""


THP_SETTINGS = "/sys/kernel/mm/transparent_hugepage"


def bwrap_command(uid: int | None, tmp_mib: int, python: Interpreter) -> list[str]:
    """bwrap and its options, to put before the workers' interpreter: as `uid` (None: ours), `tmp_mib` of /tmp."""
    command = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--as-pid-1",
               "--hostname", "sandbox", "--clearenv"]
    for name, value in worker_environment("/tmp").items():
        command += ["--setenv", name, value]
    command += ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            command += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            command += ["--ro-bind", name, name]
    # /etc/fonts: matplotlib asks fontconfig (fc-list) for fonts, which prints an error into the student's
    # output when its configuration is missing. /etc is made readable, or the workers' uid could not reach it.
    command += ["--perms", "0755", "--dir", "/etc"]
    for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/fonts"):
        command += ["--ro-bind-try", name, name]
    # glibc reads the transparent-huge-page mode from /sys before using it (see worker_environment);
    # the folders above it are made readable, or the workers' uid could not reach it.
    if os.path.isdir(THP_SETTINGS):
        for parent in ("/sys", "/sys/kernel", "/sys/kernel/mm"):
            command += ["--perms", "0755", "--dir", parent]
        command += ["--ro-bind", THP_SETTINGS, THP_SETTINGS]
    # /tmp comes before the Python environment: a virtualenv under /tmp (a fresh clone there)
    # is then bound on top of the tmpfs instead of hidden by it.
    # /dev/pts, covered by an empty read-only tmpfs, leaves /dev/ptmx pointing at nothing: every devpts
    # instance draws on one pool for the whole machine (kernel.pty.max), which 55 processes opening ptys
    # took down to the host's reserve. Nothing graded needs a terminal.
    command += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/pts", "--remount-ro", "/dev/pts",
                "--perms", "1777", "--size", str(tmp_mib << 20), "--tmpfs", "/tmp", "--chdir", "/tmp"]
    python_dirs = [Path(d) for d in python.dirs]
    # Create the parents of the Python bind mounts readable, or an unprivileged
    # uid could not reach an interpreter that lives under /root.
    parents = sorted({p for d in python_dirs for p in d.parents}, key=lambda p: len(p.parts))
    for parent in parents:
        if str(parent) not in ("/", "/tmp", "/usr", "/proc", "/dev") and not str(parent).startswith(
                ("/usr/", "/proc/", "/dev/")):
            command += ["--perms", "0755", "--dir", str(parent)]
    for directory in python_dirs:
        command += ["--ro-bind", str(directory), str(directory)]
    if uid is not None:
        command += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                    "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all"]
    return command

