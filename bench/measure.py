"""Measuring a command: wall time and the peak memory of its whole process tree.

Memory is the sum of PSS (proportional set size) over the process and all its
descendants, sampled every half second (reading it walks page tables, so
sampling more often slows the run being measured): PSS splits shared pages
(the forked graders and zygotes share PyTorch's) between the processes that
map them, so the sum is the memory the tree really costs.
"""
from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass

from autograder.sandbox import processes


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_pss_mib: float
    returncode: int
    stdout: str
    stderr: str


def pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_pss_mib(root: int) -> float:
    return sum(pss_kib(pid) for pid in [root, *processes.descendants(root)]) / 1024


def run_measured(command: list[str], cwd=None, env=None) -> Run:
    """Run `command` to completion, sampling its tree's memory."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    peak = [0.0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], tree_pss_mib(process.pid))
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return Run(seconds, peak[0], process.returncode, stdout, stderr)


def environment(**extra) -> dict:
    return {**os.environ, **extra}
