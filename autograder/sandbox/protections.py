"""What containment workers get on this machine: the strongest kind of sandbox that works here.

`KINDS` lists the kinds, strongest first: bubblewrap (bubblewrap.py) with no network, its own PID
namespace, a private /tmp and a read-only view of the system and of the workers' Python, and nothing
else; then the loud fallback (fallback.py), plain processes under a user id of their own. `probe`
takes the first that works, and `Protections` says which, for `autograder doctor` and every result.
A new kind is one file and one entry in `KINDS`.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from autograder.sandbox import seccomp
from autograder.sandbox.bubblewrap import Bubblewrap
from autograder.sandbox.fallback import Fallback
from autograder.sandbox.kernel import (
    KILLED_FIRST,
    KILLED_NEXT,
    NAMES,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_DUMPABLE,
    PR_SET_PDEATHSIG,
)
from autograder.sandbox.kind import Interpreter, Kind
from autograder.text import safe

WORKER_PYTHON = "AUTOGRADER_WORKER_PYTHON"  # names the interpreter workers run, if not the grader's own
CAP_DAC_OVERRIDE, CAP_SYS_RESOURCE = 1, 24  # capability bits: open another user's file; set an oom_score_adj floor

KINDS: tuple[Kind, ...] = (Bubblewrap(), Fallback())  # strongest first; the last one always starts
REQUESTS = ("auto",) + tuple(kind.name for kind in KINDS)  # what `--sandbox` takes


class SandboxError(RuntimeError):
    """The worker process could not be started or stopped answering."""


class MissingProtections(SandboxError):
    """The zygote could not set process controls every submission is promised (kernel.set_controls).

    missing: {control's name: why}, as the zygote reported it before anything else ran in it.
    """

    missing: dict[str, str]

    @classmethod
    def of(cls, kind: Kind, missing) -> MissingProtections:
        """The refusal for what the zygote reported (a plain constructor, so the error pickles)."""
        missing = ({safe(name, 40): safe(why, 200) for name, why in missing.items()}
                   if isinstance(missing, dict) else {"process controls": "the report was unreadable"})
        shown = ", ".join(f"{name} ({why})" for name, why in missing.items())
        refused = cls(f"the worker could not set {shown}, which the {kind.label} sandbox needs to keep submissions "
                      "apart, so no student code was run. The kernel, or a container's seccomp profile, forbids "
                      "that prctl: allow it (e.g. docker run with a --security-opt seccomp= profile that permits "
                      "prctl), then check with `autograder doctor`. Nothing was graded.")
        refused.missing = missing
        return refused


@dataclass(frozen=True)
class Protections:
    """What containment the workers on this machine get."""

    kind: Kind
    reason: str  # why a stronger kind is not in use; empty for the strongest
    separate_user: bool  # workers run under their own uid (so a process-count limit works)
    python: Interpreter
    fix: str = ""  # what to do about the reason, for the warning: it differs with why the stronger kind did not start

    @property
    def mode(self) -> str:
        """The kind's short name, as results store it ("bwrap", "fallback")."""
        return self.kind.name

    @property
    def warning(self) -> str:
        """What to tell the user before grading; "" where the kind is as strong as it should be."""
        return self.kind.warning(self.reason, self.fix, self.separate_user)

    def rows(self, missing: Collection[str] = ()) -> list[tuple[str, bool]]:
        """(protection, active) pairs for `autograder doctor`.

        missing: the names of the process controls (kernel.NAMES) a worker here could not set
        (preflight.worker_check); the rows they stand for show as inactive.
        """
        namespace = self.kind.isolation.pid_namespace
        return [
            ("separate worker process per submission, forked from a zygote", True),
            ("the zygote never holds a submission: each child receives its source after the fork", True),
            ("zygote and children not dumpable: no /proc/<pid>/mem or ptrace between them",
             NAMES[PR_SET_DUMPABLE] not in missing),
            ("the zygote ends with the grader, and each child with the zygote (parent-death signal)",
             NAMES[PR_SET_PDEATHSIG] not in missing),
            ("processes a submission leaves stay where they are found and killed: "
             + ("the zygote is PID 1 of its namespace" if namespace else "the zygote is their subreaper"),
             namespace or NAMES[PR_SET_CHILD_SUBREAPER] not in missing),
            (f"seccomp filter in every child: no ptrace, process_vm_readv/writev, System V IPC, keyrings, "
             f"signals to the zygote, changes to its limits and scheduling, sockets but Unix ones, or larger "
             f"socket buffers ({platform.machine()})",
             seccomp.supported()),
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
            (f"when memory runs out the kernel ends a submission's processes first (oom_score_adj {KILLED_FIRST}), "
             f"then its zygote ({KILLED_NEXT}), before the grader; a zygote ended all the same has the file graded "
             "again in a fresh sandbox, never charged as the student's crash", True),
            (f"oom_score_adj floor: no process a submission starts can lower its own below the zygote's "
             f"{KILLED_NEXT}" + ("" if oom_floor_holds() else " (needs CAP_SYS_RESOURCE: a helper a submission "
                                 "starts can lower its own to 0)"), oom_floor_holds()),
            ("resource limits: address space, CPU time, file size, open files", True),
            ("per-call and per-submission wall-clock timeouts, whole process tree killed", True),
            ("empty environment, private working directory", True),
            ("workers run under a user id of their own (never root), with a process-count limit",
             self.separate_user),
        ] + self.kind.isolation.rows()


def oom_floor_holds() -> bool:
    """Whether this grader's write into each zygote's oom_score_adj is also a floor (kernel.kill_order): it needs
    CAP_SYS_RESOURCE, and to open the zygote's file, root's once the zygote is not dumpable (root, or
    CAP_DAC_OVERRIDE). Docker withholds CAP_SYS_RESOURCE by default, and this grader then sets no floor."""
    try:
        with open("/proc/self/status") as status:
            mask = next((int(line.split()[1], 16) for line in status if line.startswith("CapEff:")), 0)
    except (OSError, ValueError):
        return False
    return bool(mask >> CAP_SYS_RESOURCE & 1) and (os.geteuid() == 0 or bool(mask >> CAP_DAC_OVERRIDE & 1))


def probe(requested: str = "auto", python: str | None = None) -> Protections:
    """Find the strongest protection this machine supports.

    requested: "auto" (the first of KINDS that works here) or a kind's name (REQUESTS): that kind,
    or SandboxError if it does not work here ("fallback", for machines or tests that need it).
    python: the interpreter workers run; default $AUTOGRADER_WORKER_PYTHON, else the grader's own.
    """
    root = os.geteuid() == 0
    interpreter = worker_interpreter(python)
    if requested != "auto":
        kind = kind_named(requested)
        found = kind.problem(root, interpreter)
        if found is not None:
            raise SandboxError(f"{kind.label} was requested but {found[0]}. {found[1]} Or run with --sandbox auto.")
        reason = "" if kind == KINDS[0] else f"--sandbox {kind.name} was requested"
        return Protections(kind, reason, kind.separate_user(root, interpreter), interpreter)
    reason = fix = ""
    for kind in KINDS:
        found = kind.problem(root, interpreter)
        if found is None:
            return Protections(kind, reason, kind.separate_user(root, interpreter), interpreter, fix)
        if not reason:  # the strongest kind's problem is the one worth fixing
            reason, fix = found
    raise SandboxError(f"no kind of sandbox starts here ({reason}). {fix}")


def kind_named(name: str) -> Kind:
    """The kind `--sandbox name` asks for."""
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise SandboxError(f"there is no sandbox called {name!r}: run with --sandbox set to one of {', '.join(REQUESTS)}")


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

