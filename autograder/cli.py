"""The `autograder` command line."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from autograder.batch import default_db, grade_batch, plan_batch
from autograder.course import CourseError, find_course, load_course
from autograder.discover import LayoutError, find_submissions
from autograder.progress import Progress
from autograder.results import SubmissionResult
from autograder.sandbox import SandboxError, probe
from autograder.store import Store, StoreError
from autograder.suite import load_suite


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (CourseError, SandboxError, LayoutError, StoreError) as error:
        print(f"autograder: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autograder: interrupted; results already stored are kept", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="autograder", description="Grade attention assignments safely.")
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade student files against the hidden suite")
    grade.add_argument("assignment", help="assignment name from course.yaml, e.g. w07_attention")
    grade.add_argument("paths", nargs="+", type=Path,
                       help=".py/.ipynb files, a folder of them, an nbgrader course or submitted/ folder, or a zip")
    grade.add_argument("--jobs", type=int, default=0, help="parallel graders (default: number of cores)")
    grade.add_argument("--db", type=Path, help="results database (default: grades.db beside course.yaml)")
    grade.add_argument("--force", action="store_true", help="regrade submissions already graded and unchanged")
    grade.add_argument("--json", action="store_true", help="one Gradescope-style JSON object per line")
    _common(grade)
    grade.set_defaults(run=_grade)

    doctor = commands.add_parser("doctor", help="show which sandbox protections this machine supports")
    doctor.add_argument("--sandbox", choices=("auto", "bwrap", "fallback"), default="auto")
    doctor.set_defaults(run=_doctor)
    return parser


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")
    command.add_argument("--sandbox", choices=("auto", "bwrap", "fallback"), default="auto",
                         help="auto uses bubblewrap when it works; fallback skips it (weaker)")


def _grade(args) -> int:
    course = load_course(args.course or find_course())
    suite = load_suite(course, args.assignment)
    with tempfile.TemporaryDirectory(prefix="autograder-zip-") as workdir, \
            Store(args.db or default_db(course)) as store:
        found = find_submissions(args.paths, suite.assignment.name, suite.assignment.module, Path(workdir))
        if not found:
            raise LayoutError("no submissions found in " + ", ".join(map(str, args.paths)))
        plan = plan_batch(found, store, suite, args.force)
        protections = probe(args.sandbox)
        if protections.warning:
            print(protections.warning, file=sys.stderr)
        progress = Progress(len(plan.todo), skipped=len(plan.skipped))
        graded = []

        def on_result(result):
            graded.append(result)
            progress.update(result)
            if args.json:
                print(json.dumps(result.to_json()), flush=True)

        grade_batch(course, suite, protections, plan.todo, store, args.jobs or os.cpu_count() or 1, on_result)
        progress.finish()
        skipped = [store.result(suite.assignment.name, item.student) for item in plan.skipped]
        if args.json:
            for result in skipped:
                print(json.dumps(result.to_json()), flush=True)
        else:
            print(format_results(graded + skipped))
        print(f"results are in {store.path}; `autograder report` writes the feedback", file=sys.stderr)
    return 0


def _doctor(args) -> int:
    protections = probe(args.sandbox)
    print(f"sandbox mode: {protections.mode}" + (f" ({protections.reason})" if protections.reason else ""))
    for name, active in protections.rows():
        print(f"  [{'x' if active else ' '}] {name}")
    if protections.warning:
        print(protections.warning)
    return 0


def format_results(results: list[SubmissionResult]) -> str:
    """Per-function tables for a few submissions; a class summary for many."""
    if len(results) <= 3:
        return "\n".join(format_result(r) for r in results)
    results = sorted(results, key=lambda r: r.student)
    lines = [f"{'student':<20}{'points':>14}  flags"]
    for result in results:
        flags = sorted({t.status for t in result.tests} - {"passed", "failed"})
        if result.problem:
            flags.append("could not grade")
        if result.sandbox != "bwrap":
            flags.append("reduced sandbox")
        lines.append(f"{result.student:<20}{f'{result.score:g} / {result.max_score:g}':>14}  {', '.join(flags)}")
    mean = sum(r.score for r in results) / len(results)
    lines.append(f"{len(results)} submissions, mean {mean:.1f} / {results[0].max_score:g}")
    return "\n".join(lines)


def format_result(result: SubmissionResult) -> str:
    """A readable per-function table and the failing checks' messages."""
    lines = [f"{result.student}: {result.score:g} / {result.max_score:g} points "
             f"({result.assignment}, sandbox {result.sandbox}, seed {result.seed}, {result.seconds:.1f} s)"]
    if result.problem:
        lines.append(f"  could not grade: {result.problem}")
    lines += [f"  note: {note}" for note in result.notes]
    lines.append(f"  {'function':<18}{'points':>12}  checks passed")
    for function, (got, possible) in result.by_function().items():
        tests = [t for t in result.tests if t.function == function]
        passed = sum(t.status == "passed" for t in tests)
        lines.append(f"  {function:<18}{f'{got:g} / {possible:g}':>12}  {passed} / {len(tests)}")
    failing = [t for t in result.tests if t.status != "passed"]
    if failing and not result.problem:
        lines.append("  not passed:")
        for test in failing:
            lines.append(f"    {test.name} [{test.status}, {test.visibility}]: {test.output}")
    return "\n".join(lines)
