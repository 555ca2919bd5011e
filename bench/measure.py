"""Measuring a command: wall time, the peak memory of its whole process tree, and where its processor time went.

Memory is the sum of PSS (proportional set size) over the process and all its
descendants, sampled every half second (reading it walks page tables, so
sampling more often slows the run being measured): PSS splits shared pages
(the forked graders and zygotes share PyTorch's) between the processes that
map them, so the sum is the memory the tree really costs.

Processor time is read from each process's /proc/<pid>/stat every quarter
second and split by part of the grader (`ProcessorTime`).
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass, field

from autograder.sandbox import processes

TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.25  # processor time; memory every second sample


@dataclass
class ProcessorTime:
    """Processor seconds (user + system) of a measured command's process tree, by part of the grader.

    command: the command's own process. grading: the processes it forked (the same command line), the
    grading jobs. zygotes: the sandboxes' zygotes, their start (the preload's import) and every fork.
    submissions: the zygotes' children, one per submission, charged to their zygote by the kernel when it
    reaps them (cutime, cstime), so none is missed however short it lived; submissions_kernel: of which in
    the kernel (page faults, the exit's teardown). zygotes_start: of the zygotes' own, what they had used
    when their first child was seen (the preload's import); the rest is mostly forking. other: bubblewrap
    and anything else. A process other than a submission's loses what it used after the last reading, at
    most a quarter second.
    """

    command: float = 0.0
    grading: float = 0.0
    zygotes: float = 0.0
    zygotes_start: float = 0.0
    submissions: float = 0.0
    submissions_kernel: float = 0.0
    other: float = 0.0

    @property
    def total(self) -> float:
        return self.command + self.grading + self.zygotes + self.submissions + self.other


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_pss_mib: float
    returncode: int
    stdout: str
    stderr: str
    processor: ProcessorTime = field(default_factory=ProcessorTime)


def pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_mib(tree: list[int]) -> float:
    """PSS of the processes in `tree` (a root and its descendants, as `_ProcessorReadings.read` walked them), in MiB."""
    return sum(pss_kib(pid) for pid in tree) / 1024


class _ProcessorReadings:
    """The last /proc/<pid>/stat reading of every process seen in one command's tree, and its part.

    A process's part is decided again at each reading from its command line, read then: a process that
    has just forked, and has not run its own program yet, still shows its parent's.
    """

    def __init__(self, root: int):
        self.root = root
        self.parts: dict[int, str] = {}
        self.ticks: dict[int, tuple[int, int, int, int]] = {}  # utime, stime, cutime, cstime
        self.started: dict[int, int] = {}  # zygote -> its utime + stime when its first child was seen

    def read(self) -> list[int]:
        """Read every process of the tree once; returns the tree, root first (the memory sample's too)."""
        parents = processes.parent_map()
        command_line = _command_line(self.root)
        tree = [self.root, *processes.descendants(self.root, parents)]
        for pid in tree:  # parents before children
            parent = parents.get(pid)
            if self.parts.get(parent) in ("zygotes", "submission"):
                self.parts[pid] = "submission"  # charged to its zygote when reaped
                if self.parts[parent] == "zygotes" and parent in self.ticks and parent not in self.started:
                    self.started[parent] = sum(self.ticks[parent][:2])
                continue
            line = command_line if pid == self.root else _command_line(pid)
            if pid == self.root or not line:  # no command line: a zombie, which keeps the part it had
                self.parts.setdefault(pid, "command" if pid == self.root else "other")
            else:
                self.parts[pid] = _part(line, command_line)
            try:
                fields = processes.read_proc(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()
                self.ticks[pid] = tuple(int(x) for x in fields[11:15])
            except (OSError, ValueError, IndexError):
                continue
        return tree

    def split(self) -> ProcessorTime:
        split = ProcessorTime()
        for pid, (utime, stime, cutime, cstime) in self.ticks.items():
            part = self.parts[pid]
            setattr(split, part, getattr(split, part) + (utime + stime) / TICK)
            if part == "zygotes":
                split.zygotes_start += self.started.get(pid, utime + stime) / TICK
                split.submissions += (cutime + cstime) / TICK
                split.submissions_kernel += cstime / TICK
        return split


def _part(line: list[bytes], command_line: list[bytes]) -> str:
    """A process's part by its command line: a fork of the command grades; the sandbox runs `python -c`."""
    if line == command_line:
        return "grading"
    if line and os.path.basename(line[0]).startswith(b"python") and b"-c" in line:
        return "zygotes"
    return "other"


def _command_line(pid: int) -> list[bytes]:
    """The process's arguments; [] when it is gone or a zombie (whose command line reads empty)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            data = f.read()
    except OSError:
        return []
    return data.split(b"\0") if data else []


def run_measured(command: list[str], cwd=None, env=None) -> Run:
    """Run `command` to completion, sampling its tree's memory and processor time."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    peak = [0.0]
    readings = _ProcessorReadings(process.pid)
    done = threading.Event()

    def sample():
        count = 0
        while not done.is_set():
            tree = readings.read()
            if count % 2 == 0:
                peak[0] = max(peak[0], tree_pss_mib(tree))
            count += 1
            done.wait(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return Run(seconds, peak[0], process.returncode, stdout, stderr, readings.split())


def environment(**extra) -> dict:
    return {**os.environ, **extra}
