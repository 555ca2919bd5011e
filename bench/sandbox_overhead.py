"""Per-submission overhead of the sandbox: a fresh worker process per submission vs a zygote fork.

Both are measured in this run, on this machine, with the same submission
(tests/fixtures/submissions/correct/plain.py) and the assignment's preloads
(NumPy and PyTorch): open a session (start or fork a worker, load the file),
make one small call, close it (kill and sweep). The check suite is not run,
so what is printed is the sandbox's own cost.

    python bench/sandbox_overhead.py [--fresh 5] [--zygote 40] [--sandbox auto|bwrap|fallback]
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from autograder.authoring.protocol import Call
from autograder.grading.course import load_course
from autograder.grading.submission import read_submission
from autograder.sandbox.protections import probe
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

ROOT = Path(__file__).resolve().parents[1]


def per_submission(sandbox: Sandbox, spec: dict, limits, count: int) -> list[float]:
    """Wall-clock seconds of open + one call + close, `count` times."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        with Session(sandbox, spec, limits) as session:
            session.open()
            session.call(Call("softmax", (np.zeros((2, 3)),)))
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh", type=int, default=5, help="submissions with a fresh process each")
    parser.add_argument("--zygote", type=int, default=40, help="submissions forked from the zygote")
    parser.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "fallback"))
    args = parser.parse_args()
    course = load_course(ROOT / "course.yaml")
    assignment = course.assignment("w07_attention")
    spec = read_submission(ROOT / "tests/fixtures/submissions/correct/plain.py").worker_spec(assignment.module)
    protections = probe(args.sandbox)
    print(f"sandbox: {protections.mode}; preload: {', '.join(assignment.preload)}")

    with Sandbox(protections, assignment.preload, fresh=True, warmup=assignment.warmup) as sandbox:
        fresh = per_submission(sandbox, spec, assignment.limits, args.fresh)
    with Sandbox(protections, assignment.preload, warmup=assignment.warmup) as sandbox:
        sandbox.start()  # the zygote's one-time start is not a per-submission cost
        zygote = per_submission(sandbox, spec, assignment.limits, args.zygote)

    for name, times in (("fresh process per submission", fresh), ("zygote fork per submission", zygote)):
        print(f"{name:<30} median {statistics.median(times) * 1000:8.1f} ms   "
              f"mean {statistics.mean(times) * 1000:8.1f} ms   (n={len(times)})")
    print(f"ratio fresh / zygote (medians): {statistics.median(fresh) / statistics.median(zygote):.1f}x")


if __name__ == "__main__":
    main()
