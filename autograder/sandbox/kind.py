"""What a kind of sandbox is: the protections it gives, and how it starts the zygote.

Each kind is one class in a file of its own (bubblewrap.py, fallback.py). `protections.KINDS` lists
them, strongest first, and `protections.probe` takes the first that works on this machine. The rest
of the package asks the kind what it needs (`strong_isolation`, `label`, `launch`, whether the
zygote has a PID namespace of its own) and never compares names: `name` is only the short id a
result stores, and stays the same so that stored results still read.
"""
from __future__ import annotations

import tempfile
from dataclasses import astuple, dataclass, field
from typing import ClassVar

WORKER_UID_BASE = 61000  # workers run as 61000 + job slot when the grader is root

READABLE_FIX = ("make them unreadable to other users, e.g. `chmod -R o-rwx` on the course's solutions/ and "
                "course.yaml, its results and the class folder (folders on the way to the Python environment may "
                "keep o+x), or make bubblewrap work here")


@dataclass(frozen=True)
class Interpreter:
    """The Python the workers run: its path, and the directories it needs (prefixes, package folders)."""

    path: str
    dirs: tuple[str, ...]


@dataclass(frozen=True)
class Isolation:
    """What a kind keeps from student code beyond what every kind does: each one given or not."""

    no_network: bool
    # The zygote is PID 1 of a namespace of its own: a submission's processes are counted and killed there.
    pid_namespace: bool
    private_system: bool  # a private /tmp, a read-only view of the system and of the workers' Python
    hides_course: bool  # no view of the course, solutions, results or home directories

    def rows(self) -> list[tuple[str, bool]]:
        """(protection, given) pairs for `autograder doctor`, in the fields' order."""
        return [("no network", self.no_network), ("own PID namespace", self.pid_namespace),
                ("private /tmp, read-only system and Python", self.private_system),
                ("no view of the course, solutions, results or home directories", self.hides_course)]


@dataclass
class Launch:
    """How a kind starts one zygote: what wraps the interpreter, and where the zygote works."""

    command: list[str]  # put before `python -I -c BOOT`; empty: the interpreter runs as it is
    scratch: str  # the folder wiped between submissions, as the zygote sees it
    env: dict[str, str] | None = None  # the zygote's environment; None where the wrapper sets it
    cwd: str | None = None
    user: dict = field(default_factory=dict)  # Popen arguments that switch the uid; empty where the wrapper does
    sweep: list[str] = field(default_factory=list)  # shared folders from which the worker uid's files are wiped
    host_folder: tempfile.TemporaryDirectory | None = None  # on the host, wiped and removed when the sandbox closes


class Kind:
    """One kind of sandbox. A subclass sets the class attributes and `problem`, `separate_user` and `launch`."""

    name: ClassVar[str]  # the short id results store and `--sandbox` takes, e.g. "bwrap"
    label: ClassVar[str]  # what outputs show, e.g. "bubblewrap"
    isolation: ClassVar[Isolation]

    @property
    def strong_isolation(self) -> bool:
        """Whether this kind gives every isolation there is: where not, results say the sandbox was reduced."""
        return all(astuple(self.isolation))

    def problem(self, root: bool, python: Interpreter) -> tuple[str, str] | None:
        """(why this kind cannot be used here, what to do about it), or None when it works."""
        raise NotImplementedError

    def separate_user(self, root: bool, python: Interpreter) -> bool:
        """Whether workers run under a user id of their own here (so a process-count limit works)."""
        raise NotImplementedError

    def launch(self, uid: int | None, tmp_mib: int, python: Interpreter) -> Launch:
        """How to start a zygote running as `uid` (None: the grader's own), with `tmp_mib` MiB of /tmp."""
        raise NotImplementedError

    def warning(self, reason: str, fix: str, separate_user: bool) -> str:
        """What the terminal shows before grading: "" where nothing is weaker than it should be."""
        return ""

    def readable_fix(self, separate_user: bool) -> str:
        """What to do when its workers could read the course's secrets (see preflight.refuse_readable)."""
        return READABLE_FIX

    # Kinds hold no state: any two of one class are the same kind, also once pickled to a grading process.
    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def worker_environment(home: str) -> dict[str, str]:
    """The zygote's whole environment, in every kind (children then clear it to PATH, HOME and TMPDIR).

    One thread per library: the jobs already fill the cores. glibc's malloc on transparent huge pages:
    PyTorch's own allocations then lie in 2 MiB pages, so each fork copies, and each child's exit frees,
    one page-table entry per huge page instead of 512. Python's objects stay on Python's allocator: moving
    them to glibc's (PYTHONMALLOC=malloc) once made a session about 5 ms cheaper, but PyTorch's import on
    glibc's malloc takes 0.45 s longer (a zygote's start, bubblewrap, six runs in turn: 2.06 s against
    1.60 s), which one hand-in waits for, and by now whole classes gain nothing from it either (--jobs 2,
    paired runs: 0.997x the wall time for 200 students, 0.99x for 800). Blocks of up to 32 MiB come from the
    heap, which keeps up to 64 MiB free at its top: left to itself, glibc maps each large block on its own
    until one has been freed, so a child faulted in and zeroed fresh pages for the first two arrays of
    each size (a correct file's child: about 30 % fewer page faults; a class, whole commands in turn:
    0.98x the wall time). Older glibc ignores these settings. A fixed hash seed: a file whose answer follows a set's
    or a dict's order of strings gets the same answer, and grade, in every run (sandbox.libraries.seed_random).
    The zygote's interpreter reads these PYTHON variables (it runs with -s -P, not -I): this environment is
    the whole of it, so nothing else can set one.
    """
    return {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": home, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
            "GLIBC_TUNABLES": f"glibc.malloc.hugetlb=1:glibc.malloc.mmap_threshold={32 << 20}:"
                              f"glibc.malloc.trim_threshold={64 << 20}"}
