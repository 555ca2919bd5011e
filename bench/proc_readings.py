"""A session's processor readings (sandbox.waiting): files kept open against files opened at every reading.

The grader reads a child's processor use after each batch of replies, about 69 times a submission.
Both ways are timed in this run, on the same live child of a real sandbox (the assignment's preload,
correct/plain.py loaded), in alternating rounds: `processor_use(proc)` opens the child's schedstat and
stat and the machine's /proc/stat each time (the peer); `processor_use(proc, files=ProcFiles())` reads
them again through descriptors kept open, /proc/stat at most once a clock tick.

    python bench/proc_readings.py [--rounds 5] [--readings 2000] [--sandbox auto|bwrap|fallback]
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from autograder.grading.course import load_course
from autograder.grading.submission import read_submission
from autograder.sandbox.protections import REQUESTS, probe
from autograder.sandbox.session import Session
from autograder.sandbox.waiting import ProcFiles, processor_use
from autograder.sandbox.zygote import Sandbox

ROOT = Path(__file__).resolve().parents[1]
# Counted over the mostly buggy class of bench/batch.py (docs/performance.md, eighteenth pass).
READINGS_PER_SUBMISSION = 69


def microseconds(read, readings: int) -> float:
    """Mean time of one `read()`, in microseconds."""
    started = time.perf_counter()
    for _ in range(readings):
        read()
    return (time.perf_counter() - started) / readings * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--readings", type=int, default=2000)
    parser.add_argument("--sandbox", choices=REQUESTS, default="auto")
    args = parser.parse_args()
    assignment = load_course(ROOT / "course.yaml").assignment("w07_attention")
    spec = read_submission(ROOT / "tests" / "fixtures" / "submissions" / "correct" / "plain.py").worker_spec(
        assignment.module)
    fresh, kept = [], []
    with Sandbox(probe(args.sandbox), assignment.preload, warmup=assignment.warmup) as sandbox, \
            Session(sandbox, spec, assignment.limits) as session:
        session.open()
        proc = session.child_proc()
        files = ProcFiles()
        try:
            for _ in range(args.rounds):
                fresh.append(microseconds(lambda: processor_use(proc), args.readings))
                kept.append(microseconds(lambda: processor_use(proc, files=files), args.readings))
        finally:
            files.close()
    opened, open_ = statistics.median(fresh), statistics.median(kept)
    print(f"bench/proc_readings.py: one reading of a live child's processor use ({sandbox.protections.kind.label}), "
          f"median of {args.rounds} rounds of {args.readings}")
    print(f"  opened at every reading (the peer): {opened:.1f} us")
    print(f"  kept open (ProcFiles):              {open_:.1f} us = {open_ / opened:.2f}x; at "
          f"{READINGS_PER_SUBMISSION} readings a submission, {(opened - open_) * READINGS_PER_SUBMISSION / 1000:.1f} "
          "ms less of the grading process's time")


if __name__ == "__main__":
    main()
