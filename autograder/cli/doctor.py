"""`autograder doctor`: which sandbox protections this machine gives, and whether each assignment can be graded."""
from __future__ import annotations

from pathlib import Path

from autograder.cli import options
from autograder.grading.course import CourseError, find_course, load_course
from autograder.grading.manifest import MANIFEST_FILE, public_course
from autograder.grading.station import environment_report, protect, worker_check
from autograder.grading.suite import load_public_suite, load_suite
from autograder.text import safe


def add_commands(commands) -> None:
    doctor = commands.add_parser("doctor", help="show which sandbox protections this machine supports, and probe "
                                                "each assignment: its preload in a worker, the reference's checks")
    options.sandbox(doctor)
    options.course(doctor)
    doctor.add_argument("--dir", type=Path, help="without a course.yaml: the released assignment folder to probe "
                                                 "(default: the current folder)")
    doctor.set_defaults(run=_doctor)


def _doctor(args) -> int:
    protections = protect(args.sandbox)
    print(f"sandbox: {protections.kind.label}" + (f", because {protections.reason}" if protections.reason else ""))
    missing, refusal = worker_check(protections)  # a worker started here, as grading starts one
    for name, active in protections.rows(missing):
        print(f"  [{'x' if active else ' '}] {name}")
    for message in (protections.warning, refusal):
        if message:
            print(message)
    found = _suites_here(args)
    if not found:
        print("no course.yaml here or above, and no released assignment (public_manifest.json) in this folder: "
              "run `autograder doctor` in the course repository or your assignment folder to probe grading too")
        return 1 if refusal else 0
    failed = bool(refusal)
    for course, suite in found:
        if isinstance(suite, CourseError):  # this assignment's files; the others are probed all the same
            failed += 1
            print(safe(f"  [ ] {suite}"))
            continue
        report = environment_report(course, suite, protections)
        failed += not report.ok
        print(safe(_probe_line(suite, report)))
    return 1 if failed else 0


def _suites_here(args) -> list:
    """(course, suite) for every assignment of the nearest course.yaml, or of the released folder (students);
    an assignment whose suite does not load has, instead of its suite, the CourseError that says why."""
    try:
        course = load_course(args.course or find_course())
    except CourseError:
        folder = args.dir or Path.cwd()
        if not (folder / MANIFEST_FILE).is_file():
            return []
        suite = load_public_suite(folder)
        return [(public_course(suite.assignment, folder), suite)]
    return [(course, _suite_or_why(course, name)) for name in course.assignments]


def _suite_or_why(course, name: str):
    try:
        return load_suite(course, name)
    except CourseError as error:
        return CourseError(f"{name}: cannot grade: {error}")


def _probe_line(suite, report) -> str:
    preload = ", ".join(suite.assignment.preload) or "nothing"
    if not report.ok:
        where = ("cannot grade: its reference fails its checks" if report.reference_fault else
                 "cannot grade: its checks have a fault" if report.check_fault else "cannot grade here")
        return f"  [ ] {suite.assignment.name}: {where}: {report.problem}. To fix it: {report.fix}"
    mapped = (f"; a worker maps {report.mapped_mib:.0f} MiB after the preload, and may map "
              f"{suite.assignment.limits.memory_mib} MiB more" if report.mapped_mib else "")
    reference = f", the reference passed all {report.checks} checks" if suite.reference is not None else ""
    return f"  [x] {suite.assignment.name}: {preload} imported in a worker under the limits{reference}{mapped}"
