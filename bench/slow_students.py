"""What each slow student of bench/batch.py's class costs, graded alone, and the share that leaves a class.

The slow students (bench/make_class.py's SLOW_MIX: an endless loop, a sleep, two files whose every
function loops in Python, a right file whose first call computes for half a second) and a plain one
(correct/plain.py) are graded with the full hidden suite and calibrated limits, in one process with
one sandbox, as a grading job grades them, --repeat times each after one warm-up. Printed for each:
the mean time of its grading, what it costs over the plain file, and its checks stopped at their
limits (with the limit). Then, for the slow students of a class of --students with --slow-percent
of them slow (bench/batch.py's), their cost over the plain students they replace, and what that
leaves of a plain class graded once loaded at each --rate with --jobs jobs, were nothing else to
cost anything: the share kept is at most T / (T + extra / jobs), T = students / rate.

    python bench/slow_students.py [--repeat 5] [--students 200] [--slow-percent 5] [--jobs 2] [--rate 30,35,40,45]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import Counter
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from autograder.grading.calibration import time_reference
from autograder.grading.course import load_course
from autograder.grading.grader import Grader
from autograder.grading.statuses import TIMEOUT
from autograder.grading.submission import read_submission
from autograder.grading.suite import load_suite
from autograder.sandbox.protections import probe
from autograder.sandbox.zygote import Sandbox

from make_class import ASSIGNMENT, SLOW_MIX, Mix, code_for, plan

ROOT = Path(__file__).resolve().parents[1]
PLAIN = ("correct", "plain")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--slow-percent", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rate", default="30,35,40,45", help="plain rates once loaded, submissions/s")
    args = parser.parse_args()
    costs = graded_alone([PLAIN, *dict.fromkeys(SLOW_MIX)], args.repeat)
    plain = costs[PLAIN][0]
    print(f"each graded alone, mean of {args.repeat}, one sandbox, full hidden suite, calibrated limits")
    print(f"{'student':40s} {'ms':>7s} {'over plain':>11s}  checks stopped at their limits")
    for (kind, name), (seconds, stopped) in costs.items():
        print(f"{kind + ' ' + name:40s} {1000 * seconds:7.0f} {1000 * (seconds - plain):11.0f}  {stopped or '-'}")
    slow = Counter((kind, name) for _, kind, name in plan(args.students, (), 0, Mix(0, args.slow_percent))
                   if (kind, name) in costs and (kind, name) != PLAIN)
    extra = sum(count * (costs[student][0] - plain) for student, count in slow.items())
    print(f"\n{sum(slow.values())} slow students of {args.students} ({args.slow_percent} %): {extra:.2f} s over the "
          f"plain students they replace, {extra / args.jobs:.2f} s of wall time spread over {args.jobs} jobs")
    for rate in (float(r) for r in args.rate.split(",")):
        plain_seconds = args.students / rate
        print(f"  a plain class graded at {rate:g}/s once loaded ({plain_seconds:.1f} s): at most "
              f"{100 * plain_seconds / (plain_seconds + extra / args.jobs):.0f} % kept with the slow students")


def graded_alone(students: list[tuple[str, str]], repeat: int) -> dict[tuple[str, str], tuple[float, str]]:
    """For each (kind, fixture) of make_class: (mean seconds of its grading, its checks stopped at their limits)."""
    torch.set_num_threads(1)
    threadpool_limits(limits=1)  # as each grading job runs
    course = load_course(ROOT / "course.yaml")
    suite = load_suite(course, ASSIGNMENT)
    costs = {}
    with tempfile.TemporaryDirectory() as folder, \
            Sandbox(probe("auto"), suite.assignment.preload, warmup=suite.assignment.warmup) as sandbox:
        grader = Grader(course, suite, sandbox, time_reference(course, suite))
        for kind, name in students:
            path = Path(folder) / f"{kind}_{name}.py"
            path.write_text(code_for(kind, name))
            submission = read_submission(path)
            grader.grade(submission)  # the warm-up: its input set planned, as for every student after the first
            results = [grader.grade(submission) for _ in range(repeat)]
            stopped = ", ".join(f"{test.name} ({grader.time_limits[test.name].seconds:.3g} s)"
                                for test in results[-1].tests if test.status == TIMEOUT and test.seconds > 0)
            costs[kind, name] = (statistics.mean(result.seconds for result in results), stopped)
    return costs


if __name__ == "__main__":
    main()
