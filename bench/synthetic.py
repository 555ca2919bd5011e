"""A results store filled without grading: what reading a large class costs, measured in seconds.

Each hand-in of a class folder gets a result built of the real result
dataclasses and saved with the real `Store.save`, carrying what `grade`
would have stored: the file's SHA-256 (by the hand-in rule), the time it was
handed in (as discovery finds it) and the current suite's version. So a
rerun of `grade` on that folder finds every hand-in current and skips it,
and report, export and history read a store shaped as grading leaves it:
every check of the suite, about 15 % of students failing one, with a
message, a misconception and a little printed output.

    python bench/synthetic.py CLASS DB [--assignment w07_attention] [--course course.yaml]
"""
from __future__ import annotations

import argparse
import datetime
import tempfile
from pathlib import Path

from autograder.grading.course import load_course
from autograder.grading.discover import find_submissions
from autograder.grading.found import Found
from autograder.grading.handin import file_sha256
from autograder.grading.results import CheckResult, SubmissionResult
from autograder.grading.store import Store
from autograder.grading.suite import Suite, load_suite

ROOT = Path(__file__).resolve().parents[1]
GRADED_AT = datetime.datetime(2026, 11, 21, 9, 0, tzinfo=datetime.UTC)


def fill_store(db: Path, suite: Suite, paths: list[Path]) -> int:
    """Store a current result for every hand-in under `paths`, as `grade` would; returns how many."""
    settings = suite.assignment
    with tempfile.TemporaryDirectory(prefix="bench-synthetic-") as workdir:
        found = find_submissions(paths, settings.name, settings.module, Path(workdir))
        with Store(db) as store:
            for number, item in enumerate(found):
                store.save(synthetic_result(item, suite, number))
    return len(found)


def synthetic_result(item: Found, suite: Suite, number: int) -> SubmissionResult:
    """The result of hand-in `item`, the `number`th of its class: every check passed but, for about one student in
    seven, one that failed (which one turns with `number`)."""
    failing = number % len(suite.checks) if number % 7 == 3 else None
    tests = tuple(_check(check, index == failing, number) for index, check in enumerate(suite.checks))
    return SubmissionResult(
        student=item.student, assignment=suite.assignment.name, file=str(item.path),
        sha256=file_sha256(item.path, item.root), suite_version=suite.version, seed=number, sandbox="bwrap",
        tests=tests, score=sum(t.score for t in tests), max_score=sum(t.max_score for t in tests),
        printed=f"step {number}: loss 0.{number % 1000:03d}\n" * 3, seconds=0.5 + (number % 10) / 10,
        graded_at=(GRADED_AT + datetime.timedelta(seconds=number)).isoformat(),
        submitted_at=item.submitted_at, submitted_at_source=item.submitted_at_source)


def _check(check, failed: bool, number: int) -> CheckResult:
    if not failed:
        return CheckResult(check.name, check.function, check.visibility, "passed", check.points, check.points,
                           seconds=0.01)
    return CheckResult(check.name, check.function, check.visibility, "failed", 0.0, check.points,
                       message=f"{check.function}(x) differs from the expected value at index {number % 16}",
                       hint="check the axis you reduce over", misconception="wrong_axis",
                       explanation="the sum runs over the wrong axis", seconds=0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the class folder, as `grade` takes it")
    parser.add_argument("db", type=Path, help="the results database to fill")
    parser.add_argument("--assignment", default="w07_attention")
    parser.add_argument("--course", type=Path, default=ROOT / "course.yaml")
    args = parser.parse_args()
    course = load_course(args.course)
    count = fill_store(args.db, load_suite(course, args.assignment), [args.folder])
    print(f"stored {count} results of {args.assignment} in {args.db}")


if __name__ == "__main__":
    main()
