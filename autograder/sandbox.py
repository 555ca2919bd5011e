"""Starting the untrusted workers: bubblewrap where it runs, a loud fallback where not.

A `Sandbox` is one zygote process serving one grading job. Inside bubblewrap
it has no network, its own PID namespace (it is PID 1 there), a private
/tmp, a read-only view of the system and of the Python installation — and no
view of the course repository, solutions/, the results database, other
submissions or home directories. Where bubblewrap is missing or cannot start,
the zygote is a plain process with resource limits, an empty environment and
a temporary working directory, and every result says so.

The grader keeps its end of every channel: a control socket to the zygote
and, per submission, a socket and an output pipe whose far ends it hands to
the zygote over SCM_RIGHTS.
"""
from __future__ import annotations

import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from autograder import processes, wire

WORKER_UID_BASE = 61000  # workers run as 61000 + job slot when the grader is root
START_SECONDS = 120.0

# Runs in a fresh interpreter: read the worker's source from stdin and start it.
BOOT = """\
import json, sys, types
blob = json.loads(sys.stdin.buffer.read())
package = types.ModuleType("autograder"); package.__path__ = []; sys.modules["autograder"] = package
for name, source in blob["modules"]:
    module = types.ModuleType(name); sys.modules[name] = module
    exec(compile(source, name, "exec"), module.__dict__)
    setattr(package, name.rsplit(".", 1)[1], module)
sys.modules["autograder.worker"].zygote_main(blob["config"])
"""


class SandboxError(RuntimeError):
    """The worker process could not be started or stopped answering."""


@dataclass(frozen=True)
class Protections:
    """What containment the workers on this machine get."""

    mode: str  # "bwrap" or "fallback"
    reason: str  # why the fallback was chosen; empty for bwrap
    separate_user: bool  # workers run under their own uid (so a process-count limit works)

    @property
    def warning(self) -> str:
        if self.mode == "bwrap":
            return ""
        return (f"WARNING: bubblewrap is not in use ({self.reason}). Student code runs as a plain "
                "process with resource limits only: it can read the course files and use the "
                "network. Install bubblewrap (apt-get install -y bubblewrap) and check with "
                "`autograder doctor`.")

    def rows(self) -> list[tuple[str, bool]]:
        """(protection, active) pairs for `autograder doctor`."""
        strong = self.mode == "bwrap"
        return [
            ("separate worker process per submission, forked from a zygote", True),
            ("resource limits: address space, CPU time, file size, open files", True),
            ("per-call and per-submission wall-clock timeouts, whole process tree killed", True),
            ("empty environment, private working directory", True),
            ("process-count limit (workers run under their own uid)", self.separate_user),
            ("bubblewrap: no network", strong),
            ("bubblewrap: own PID namespace", strong),
            ("bubblewrap: private /tmp, read-only system and Python", strong),
            ("bubblewrap: no view of the course, solutions, results or home directories", strong),
        ]


def probe(requested: str = "auto") -> Protections:
    """Find the strongest protection this machine supports.

    requested: "auto" (bwrap if it works), "bwrap" (raise if it does not) or
    "fallback" (skip bwrap, for machines or tests that need to).
    """
    root = os.geteuid() == 0
    if requested == "fallback":
        return Protections("fallback", "the fallback was requested", root and _interpreter_is_public())
    problem = _bwrap_problem(root)
    if problem is None:
        return Protections("bwrap", "", root)
    if requested == "bwrap":
        raise SandboxError(f"bubblewrap was requested but {problem}. Install it with "
                           "`apt-get install -y bubblewrap`, or run with --sandbox auto.")
    return Protections("fallback", problem, root and _interpreter_is_public())


def _bwrap_problem(root: bool) -> str | None:
    if shutil.which("bwrap") is None:
        return "the bwrap command is not installed"
    command = _bwrap_command(WORKER_UID_BASE if root else None, 16) + [_python(), "-I", "-c", "pass"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap could not start ({error})"
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return f"bwrap could not start ({last})"
    return None


def _interpreter_is_public() -> bool:
    """Whether an unprivileged uid can run this Python (every directory on the way is o+x)."""
    paths = {Path(sys.executable).resolve(), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    for path in paths:
        for part in [path, *path.parents]:
            try:
                if not part.stat().st_mode & 0o001:
                    return False
            except OSError:
                return False
    return True


def _python() -> str:
    """This interpreter's path without `..` parts, which may not exist inside the sandbox."""
    return os.path.abspath(sys.executable)


def _python_dirs() -> list[Path]:
    """Directories the worker's interpreter needs: its prefixes and library paths.

    Package directories that lie outside the prefixes (linked in by a .pth
    file) count too; other sys.path entries (a project root) never do.
    """
    dirs = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent.parent}
    dirs |= {Path(entry).resolve() for entry in sys.path
             if Path(entry).name in ("site-packages", "dist-packages") and Path(entry).is_dir()}
    # A directory inside another one is already bound with it.
    return sorted(d for d in dirs if not any(other in d.parents for other in dirs))


def _bwrap_command(uid: int | None, tmp_mib: int) -> list[str]:
    command = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--as-pid-1",
               "--hostname", "sandbox", "--clearenv"]
    for name, value in _worker_environment("/tmp").items():
        command += ["--setenv", name, value]
    command += ["--ro-bind", "/usr", "/usr"]
    for name in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(name):
            command += ["--symlink", os.readlink(name), name]
        elif os.path.isdir(name):
            command += ["--ro-bind", name, name]
    for name in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
        command += ["--ro-bind-try", name, name]
    # /tmp comes before the Python environment: a virtualenv under /tmp (a fresh clone there)
    # is then bound on top of the tmpfs instead of hidden by it.
    command += ["--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--size", str(tmp_mib << 20), "--tmpfs", "/tmp", "--chdir", "/tmp"]
    python_dirs = _python_dirs()
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


def _worker_environment(home: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": home, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _worker_sources() -> list[tuple[str, str]]:
    here = Path(__file__).parent
    return [(f"autograder.{name}", (here / f"{name}.py").read_text()) for name in ("wire", "worker")]


class Sandbox:
    """One zygote process and the submissions it forks, for one grading job.

    preload: modules the zygote imports once (e.g. ("numpy", "torch")).
    slot: the job's index, which picks the worker uid when the grader is root.
    fresh: start a new zygote for every submission (the slow baseline the
        zygote is measured against).
    """

    def __init__(self, protections: Protections, preload=("numpy",), slot: int = 0,
                 tmp_mib: int = 256, fresh: bool = False):
        self.protections = protections
        self.preload = tuple(preload)
        self.uid = WORKER_UID_BASE + slot if protections.separate_user else None
        self.tmp_mib = tmp_mib
        self.fresh = fresh
        self._process: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._parser: wire.FrameParser | None = None
        self._zygote_pid = 0
        self._scratch: tempfile.TemporaryDirectory | None = None
        self._log = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Launch the zygote and wait until it has imported its modules."""
        ours, theirs = socket.socketpair()
        self._log = tempfile.TemporaryFile()
        if self.protections.mode == "bwrap":
            command = _bwrap_command(self.uid, self.tmp_mib)
            scratch, as_init, env, cwd = "/tmp", True, None, None
        else:
            self._scratch = tempfile.TemporaryDirectory(prefix="autograder-work-")
            scratch, as_init = self._scratch.name, False
            command, env, cwd = [], _worker_environment(scratch), scratch
            if self.uid is not None:
                os.chown(scratch, self.uid, self.uid)
        command += [_python(), "-I", "-c", BOOT]
        config = {"control_fd": theirs.fileno(), "preload": list(self.preload), "scratch": scratch,
                  "as_init": as_init}
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log,
            env=env, cwd=cwd, start_new_session=True, pass_fds=(theirs.fileno(),), **self._fallback_user())
        theirs.close()
        self._control, self._parser = ours, wire.FrameParser(limit=1 << 20)
        try:
            self._process.stdin.write(json.dumps({"modules": _worker_sources(), "config": config}).encode())
            self._process.stdin.close()
            self._expect("ready", START_SECONDS)
        except (OSError, SandboxError) as error:
            message = self._startup_log()
            self.close()
            raise SandboxError(f"the worker process did not start: {message or error}. "
                               "Run `autograder doctor` to see what this machine supports.") from None
        self._zygote_pid = self._find_zygote()

    def close(self) -> None:
        """Kill the zygote and everything under it."""
        if self._process is not None:
            if self._zygote_pid:
                processes.kill_descendants(self._zygote_pid)
            self._process.kill()
            self._process.wait()
        if self._control is not None:
            self._control.close()
        if self._scratch is not None:
            self._scratch.cleanup()
        if self._log is not None:
            self._log.close()
        self._process = self._control = self._scratch = self._log = None
        self._zygote_pid = 0

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    # -------------------------------------------------------------- per submission

    def spawn(self, spec: dict) -> tuple[socket.socket, int, int]:
        """Fork a fresh child for one submission.

        spec: what the child runs (see worker._child_main). Returns the
        grader's ends — a socket for calls and the read end of the child's
        stdout/stderr pipe — and the child's pid as the zygote knows it.
        """
        for attempt in (1, 2):
            if self._process is None:
                self.start()
            ours, theirs = socket.socketpair()
            out_read, out_write = os.pipe()
            try:
                frame = wire.pack({"op": "spawn", **spec, "scratch": self._scratch_dir()}, [])
                socket.send_fds(self._control, [b"".join(frame)], [theirs.fileno(), out_write])
                spawned = self._expect("spawned", 30.0)
                return ours, out_read, spawned["pid"]
            except (OSError, SandboxError):
                ours.close()
                os.close(out_read)
                self.close()  # the zygote died (perhaps killed by a submission): start afresh
                if attempt == 2:
                    raise
            finally:
                theirs.close()
                os.close(out_write)
        raise AssertionError("unreachable")

    def clean(self) -> tuple[int, dict]:
        """Kill every process the last submission left, reap them, wipe scratch files.

        Returns how many processes had to be killed, and how each reaped
        child ended (pid -> ["exit", code] or ["signal", name]).
        """
        if self._process is None:
            return 0, {}
        inside = self.process_count()
        if inside is not None:
            killed = inside - 1  # everything but the zygote, which kills them as PID 1 of the namespace
        else:
            killed = processes.kill_descendants(self._zygote_pid)
        exits = self._ask_zygote_to_clean()
        if self._process is not None and inside is not None and self.process_count() != 1:
            # The zygote lives inside the sandbox too, so its work is checked from outside.
            processes.kill_descendants(self._zygote_pid)
            exits.update(self._ask_zygote_to_clean())
        if self.fresh:
            self.close()
        return killed, exits

    def _ask_zygote_to_clean(self) -> dict:
        try:
            wire.send(self._control, {"op": "clean"})
            exits = self._expect("clean", 30.0).get("exits")
            return exits if isinstance(exits, dict) else {}
        except (OSError, SandboxError):
            self.close()
            return {}

    def process_count(self) -> int | None:
        """Live processes in the sandbox's PID namespace, zygote included; None outside bubblewrap.

        Read from outside through the zygote's root, so nothing the
        submission does inside can change the answer; cheap enough to ask
        after every call.
        """
        if self.protections.mode != "bwrap" or not self._zygote_pid:
            return None
        return processes.live_count(f"/proc/{self._zygote_pid}/root/proc")

    def submission_processes(self) -> int:
        """Live processes the current submission is running (its child and anything it started)."""
        if self._process is None:
            return 0
        inside = self.process_count()
        if inside is not None:
            return inside - 1  # the zygote
        return processes.live_descendants(self._zygote_pid)

    # -------------------------------------------------------------- internals

    def _scratch_dir(self) -> str:
        return "/tmp" if self.protections.mode == "bwrap" else self._scratch.name

    def _fallback_user(self) -> dict:
        """Popen arguments that run a fallback zygote under the worker uid."""
        if self.protections.mode == "bwrap" or self.uid is None:
            return {}  # inside bubblewrap, setpriv switches the uid
        return {"user": self.uid, "group": self.uid, "extra_groups": []}

    def _expect(self, event: str, seconds: float) -> dict:
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            selector.register(self._control, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise SandboxError(f"the worker did not answer within {seconds:.0f} s")
                data = self._control.recv(1 << 16)
                if not data:
                    raise SandboxError("the worker process exited")
                for header, _ in self._parser.feed(data):
                    if header.get("event") == event:
                        return header

    def _find_zygote(self) -> int:
        """Global pid of the zygote: bwrap's single child, or the process itself."""
        if self.protections.mode != "bwrap":
            return self._process.pid
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            children = [pid for pid, parent in processes.parent_map().items() if parent == self._process.pid]
            if len(children) == 1:
                return children[0]
            time.sleep(0.01)
        raise SandboxError("could not find the worker process inside bubblewrap")

    def _startup_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        lines = self._log.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""

