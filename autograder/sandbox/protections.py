"""What containment workers get on this machine: bubblewrap where it runs, a loud fallback where not.

`probe` finds the strongest protection: bubblewrap with no network, its own
PID namespace, a private /tmp and a read-only view of the system and of the
workers' Python, and nothing else; or, where bubblewrap cannot start, plain
processes under a user id of their own. `Protections` says which, for
`autograder doctor` and for every result.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.sandbox import seccomp

WORKER_UID_BASE = 61000  # workers run as 61000 + job slot when the grader is root


SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # writable by every user, so by a fallback worker too


WORKER_PYTHON = "AUTOGRADER_WORKER_PYTHON"  # names the interpreter workers run, if not the grader's own


class SandboxError(RuntimeError):
    """The worker process could not be started or stopped answering."""


@dataclass(frozen=True)
class Interpreter:
    """The Python the workers run: its path, and the directories it needs (prefixes, package folders)."""

    path: str
    dirs: tuple[str, ...]


@dataclass(frozen=True)
class Protections:
    """What containment the workers on this machine get."""

    mode: str  # "bwrap" or "fallback"
    reason: str  # why the fallback was chosen; empty for bwrap
    separate_user: bool  # workers run under their own uid (so a process-count limit works)
    python: Interpreter
    fix: str = ""  # what to do about the reason, for the warning: it differs with why bubblewrap did not start

    @property
    def warning(self) -> str:
        if self.mode == "bwrap":
            return ""
        if self.separate_user:
            what = ("Student code runs as a plain process under a user id of its own, with resource limits: it has "
                    "the network and sees every file other users may read, so grading is refused where those "
                    "include the course's secrets.")
        elif os.geteuid() == 0:
            what = ("No other user can run the workers' Python here, so the fallback refuses to run student code "
                    "(it would run as root).")
        else:
            what = ("Student code would run under your own user id and could read everything you can, so grading "
                    "with hidden checks is refused; public checks (`autograder check`) still run.")
        fix = self.fix or "Run without `--sandbox fallback` to use bubblewrap where it works."
        return f"WARNING: bubblewrap is not in use ({self.reason}). {what} {fix}"

    def rows(self) -> list[tuple[str, bool]]:
        """(protection, active) pairs for `autograder doctor`."""
        strong = self.mode == "bwrap"
        return [
            ("separate worker process per submission, forked from a zygote", True),
            ("the zygote never holds a submission: each child receives its source after the fork", True),
            ("zygote and children not dumpable: no /proc/<pid>/mem or ptrace between them", True),
            (f"seccomp filter in every child: no ptrace, process_vm_readv/writev, System V IPC, keyrings, or "
             f"signals to the zygote ({platform.machine()})", seccomp.supported()),
            ("a fresh scratch directory with a random 128-bit name per submission; scratch space wiped and "
             "checked between submissions (restart when it cannot be)", True),
            ("arguments in shared memory the grader reads back; gradients, timings and process counts "
             "established by the grader, never taken from the worker", True),
            ("shared memory sealed at its size (no shrink, grow or new seal, by any descriptor) and never mapped "
             "by the grader, which reads it with pread/pwrite through a file description of its own",
             hasattr(os, "MFD_ALLOW_SEALING")),
            ("no descriptor in a worker but its own socket and output: nothing inherited from the zygote", True),
            ("every grading behind a process boundary (grade, --cluster workers, gradescope-run, replay, check): "
             "a grader that dies is that submission's internal error after one retry, never the command's end",
             True),
            ("an exception a check raises is an internal error (kept, flagged, graded again), never the student's",
             True),
            ("grading refused where workers could read the solutions, course.yaml, results or other "
             "submissions", True),
            ("resource limits: address space, CPU time, file size, open files", True),
            ("per-call and per-submission wall-clock timeouts, whole process tree killed", True),
            ("empty environment, private working directory", True),
            ("workers run under a user id of their own (never root), with a process-count limit",
             self.separate_user),
            ("bubblewrap: no network", strong),
            ("bubblewrap: own PID namespace", strong),
            ("bubblewrap: private /tmp, read-only system and Python", strong),
            ("bubblewrap: no view of the course, solutions, results or home directories", strong),
        ]


def probe(requested: str = "auto", python: str | None = None) -> Protections:
    """Find the strongest protection this machine supports.

    requested: "auto" (bwrap if it works), "bwrap" (raise if it does not) or
    "fallback" (skip bwrap, for machines or tests that need to).
    python: the interpreter workers run; default $AUTOGRADER_WORKER_PYTHON,
    else the grader's own.
    """
    root = os.geteuid() == 0
    interpreter = worker_interpreter(python)
    if requested == "fallback":
        problem = "the fallback was requested"
    else:
        found = _bwrap_problem(root, interpreter)
        if found is None:
            return Protections("bwrap", "", root, interpreter)
        problem, fix = found
        if requested == "bwrap":
            raise SandboxError(f"bubblewrap was requested but {problem}. {fix} Or run with --sandbox auto.")
        return Protections("fallback", problem, root and _runs_as(WORKER_UID_BASE, interpreter), interpreter, fix)
    return Protections("fallback", problem, root and _runs_as(WORKER_UID_BASE, interpreter), interpreter)


def worker_interpreter(python: str | None = None) -> Interpreter:
    """The workers' interpreter (see `probe`) and the directories it needs, asked of that interpreter."""
    path = os.path.abspath(python or os.environ.get(WORKER_PYTHON) or sys.executable)
    if path == os.path.abspath(sys.executable):
        return Interpreter(path, _python_dirs(sys.prefix, sys.base_prefix, sys.executable, sys.path))
    script = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.executable, sys.path]))"
    try:
        done = subprocess.run([path, "-I", "-c", script], capture_output=True, text=True, timeout=60)
        return Interpreter(path, _python_dirs(*json.loads(done.stdout)))
    except (OSError, ValueError, TypeError, subprocess.TimeoutExpired):
        raise SandboxError(f"{path} (${WORKER_PYTHON}) could not be run as a Python interpreter; point it at "
                           "the python of an environment with this course's packages, or unset it") from None


def _runs_as(uid: int, python: Interpreter) -> bool:
    """Whether `uid` can run the workers' interpreter with NumPy: every folder on the way is open to it."""
    try:
        done = subprocess.run([python.path, "-I", "-c", "import numpy"], user=uid, group=uid, extra_groups=[],
                              cwd="/", env=worker_environment("/"), capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


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
    except (OSError, subprocess.TimeoutExpired) as error:
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


def _python_dirs(prefix: str, base_prefix: str, executable: str, path: list) -> tuple[str, ...]:
    """Directories an interpreter needs: its prefixes and library paths.

    Package directories that lie outside the prefixes (linked in by a .pth
    file) count too; other sys.path entries (a project root) never do.
    """
    dirs = {Path(prefix).resolve(), Path(base_prefix).resolve(), Path(executable).resolve().parent.parent}
    dirs |= {Path(entry).resolve() for entry in path
             if Path(entry).name in ("site-packages", "dist-packages") and Path(entry).is_dir()}
    # A directory inside another one is already bound with it.
    return tuple(str(d) for d in sorted(d for d in dirs if not any(other in d.parents for other in dirs)))


THP_SETTINGS = "/sys/kernel/mm/transparent_hugepage"


def bwrap_command(uid: int | None, tmp_mib: int, python: Interpreter) -> list[str]:
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
    for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
        command += ["--ro-bind-try", name, name]
    # glibc reads the transparent-huge-page mode from /sys before using it (see worker_environment);
    # the folders above it are made readable, or the workers' uid could not reach it.
    if os.path.isdir(THP_SETTINGS):
        for parent in ("/sys", "/sys/kernel", "/sys/kernel/mm"):
            command += ["--perms", "0755", "--dir", parent]
        command += ["--ro-bind", THP_SETTINGS, THP_SETTINGS]
    # /tmp comes before the Python environment: a virtualenv under /tmp (a fresh clone there)
    # is then bound on top of the tmpfs instead of hidden by it.
    command += ["--proc", "/proc", "--dev", "/dev",
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


def worker_environment(home: str) -> dict[str, str]:
    """The zygote's whole environment (children then clear it to PATH, HOME and TMPDIR).

    One thread per library: the jobs already fill the cores. glibc's malloc on transparent huge pages:
    the zygote's ~150 MB of heap (most of it PyTorch's) then takes ~70 page-table entries instead of
    ~37,000, and copying those was most of the cost of forking each submission's child (about 5 ms
    less per submission, bench/submission_profile.py). Older glibc ignores the setting.
    """
    return {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": home, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
