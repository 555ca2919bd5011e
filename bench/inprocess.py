"""The in-process limit: the same suite on the same notebooks, without a sandbox, one Grader kept per process.

Each student's code runs in the grading process itself, and every check runs
against it through `autograder.sandbox.inprocess` (the message code a
sandboxed call uses, minus the sandbox): what grading costs when nothing is
isolated. Only for trusted code: the benchmark's honest notebooks.

    python bench/inprocess.py COURSE_FOLDER [--jobs 2]   # prints: <submissions> <seconds once loaded>
"""
from __future__ import annotations

import argparse
import multiprocessing
import time
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from autograder.grading.calibration import time_reference
from autograder.grading.course import load_course
from autograder.grading.discover import find_submissions
from autograder.grading.grader import Grader
from autograder.grading.submission import read_submission
from autograder.grading.suite import load_suite
from autograder.sandbox.inprocess import InProcessSession
from autograder.sandbox.load_report import LoadReport

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENT = "w07_attention"


def grade_all(loaded: tuple, paths: list[tuple[str, Path]], graded) -> None:
    """Grade `paths` ((student, file) pairs) in this process with one Grader; put how many on `graded`.

    loaded: (course, suite, reference times), inherited through fork.
    """
    course, suite, reference = loaded
    grader = Grader(course, suite, None, reference)
    for student, path in paths:
        submission = read_submission(path, student)
        namespace: dict = {}
        for source in submission.worker_spec(suite.assignment.module)["sources"]:
            exec(compile(source, str(path), "exec"), namespace)
        defined = frozenset(name for name, value in namespace.items() if callable(value))
        seed = suite.assignment.seed_for(course.seed_salt, student)
        grader.run_checks(InProcessSession(namespace, suite.assignment.limits), LoadReport(defined), seed)
    graded.put(len(paths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    # As `autograder grade` does: the suite (and torch) loaded and the reference timed once, then the
    # grading processes forked from this one, each computing on one thread as a sandboxed worker does.
    torch.set_num_threads(1)
    threadpool_limits(limits=1)
    course = load_course(ROOT / "course.yaml")
    suite = load_suite(course, ASSIGNMENT)
    loaded = (course, suite, time_reference(course, suite))
    found = find_submissions([args.folder], ASSIGNMENT, "attention", args.folder)
    found = [(item.student, item.path) for item in found]
    shares = [found[i::args.jobs] for i in range(args.jobs)]
    context = multiprocessing.get_context("fork")
    graded = context.Queue()
    started = time.perf_counter()
    jobs = [context.Process(target=grade_all, args=(loaded, share, graded)) for share in shares]
    for job in jobs:
        job.start()
    count = sum(graded.get() for _ in jobs)
    for job in jobs:
        job.join()
    print(count, time.perf_counter() - started)


if __name__ == "__main__":
    main()
