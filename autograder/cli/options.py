"""Options several commands share, and where their defaults come from."""
from __future__ import annotations

import argparse
from pathlib import Path

from autograder.grading.batch import default_db
from autograder.grading.course import find_course, load_course
from autograder.grading.station import KINDS, REQUESTS

ASSIGNMENT_HELP = "assignment name from course.yaml"


def course(command: argparse.ArgumentParser) -> None:
    command.add_argument("--course", type=Path, help="course.yaml to use (default: the nearest one)")


def sandbox(command: argparse.ArgumentParser) -> None:
    weaker = [kind.name for kind in KINDS if not kind.strong_isolation]
    command.add_argument("--sandbox", choices=REQUESTS, default="auto",
                         help=f"auto uses the first of {', '.join(kind.name for kind in KINDS)} that works here "
                              f"(weaker: {', '.join(weaker)})")


def stored_assignment(command: argparse.ArgumentParser, help: str) -> None:
    """The assignment of stored results: --assignment, or named first as `grade` takes it (`report ASSIGNMENT`);
    main() takes the one given (`named_assignment`)."""
    command.add_argument("named_assignment", nargs="?", metavar="assignment", help=f"{help} (or --assignment)")
    command.add_argument("--assignment", help=help)


def named_assignment(args: argparse.Namespace) -> str | None:
    """The assignment named first or with --assignment (stored_assignment); an error where the two differ."""
    named, option = getattr(args, "named_assignment", None), getattr(args, "assignment", None)
    if named and option and named != option:
        raise argparse.ArgumentTypeError(f"two assignments were given, {named} and --assignment {option}; give one")
    return named or option


def results_db(command: argparse.ArgumentParser) -> None:
    command.add_argument("--db", type=Path, help="results database (default: grades.db beside course.yaml)")


def db_path(args) -> Path:
    """--db, or grades.db beside the course's course.yaml."""
    return args.db or default_db(load_course(args.course or find_course()))


def count(text: str) -> int:
    """An argparse type: a whole number of 1 or more (`--jobs 0` or `-3` is a typo, not a request)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give 1 or more") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1; give 1 or more, or leave the option out for "
                                         "the default")
    return value
