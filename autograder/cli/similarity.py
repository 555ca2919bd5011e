"""The `similarity` command: a code-similarity report for one assignment's class, for instructors."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.cli import options
from autograder.cli.workdir import command_workdir
from autograder.grading.course import find_course, load_course
from autograder.grading.suite import REFERENCE_FILE
from autograder.text import counted


def add_commands(commands) -> None:
    command = commands.add_parser("similarity", help="a code-similarity report of a class's hand-ins, function by "
                                                      "function, for instructors (never shown to students)")
    command.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    command.add_argument("paths", nargs="*", type=Path,
                         help="hand-ins as `grade` takes them (files, a folder, an nbgrader course, a zip); "
                              "none: the files of the results stored in --db")
    options.results_db(command)
    command.add_argument("--out", type=_folder, required=True, help="folder for pairs.csv, index.html and pairs/")
    command.add_argument("--top", type=_top, default=50, help="pairs given a side-by-side page (default: %(default)s)")
    command.add_argument("--threshold", type=_threshold, default=0.6,
                         help="pair score from which students are grouped (default: %(default)s)")
    command.add_argument("--jobs", type=options.count, default=0,
                         help="processes reading the hand-ins (default: number of cores)")
    options.course(command)
    command.set_defaults(run=_similarity)


def _top(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"pass a whole number of 1 or more (how many of the best pairs get a "
                                         f"side-by-side page), not {text!r}")
    return value


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"pass a pair score from 0 to 1 (0.6 groups students whose code is "
                                         f"mostly shared), not {text!r}")
    return value


def _folder(text: str) -> Path:
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; --out must be a folder (it receives pairs.csv, "
                                         "index.html and pairs/)")
    return path


def _similarity(args) -> int:
    # Imported here: matplotlib and jinja2 would slow every other command's start.
    from autograder.similarity.compare import compare_class
    from autograder.similarity.handins import from_paths, from_store
    from autograder.similarity.report import SMALL_CLASS, write_report

    course = load_course(args.course or find_course())
    settings = course.assignment(args.assignment)
    stub = settings.source_dir / f"{settings.module}.py"
    if not stub.is_file():
        print(f"autograder: {stub} does not exist: the similarity report takes the functions to compare from the "
              f"assignment's stub; check assignments.{args.assignment}.source in {course.path}", file=sys.stderr)
        return 2
    with command_workdir("similarity") as workdir:
        if args.paths:
            submissions, notes = from_paths(args.paths, args.assignment, settings.module, workdir)
        else:
            submissions, notes = from_store(args.db or options.db_path(args), args.assignment)
        reference = settings.solution_dir / REFERENCE_FILE
        comparison = compare_class(args.assignment, submissions, stub, settings.source_dir, notes, args.jobs,
                                   reference if reference.is_file() else None)
    index = write_report(comparison, args.out.resolve(), args.top, args.threshold)
    print(f"compared {counted(len(comparison.students), 'student')} of {args.assignment}: "
          f"{counted(len(comparison.pairs), 'pair')} {'shares' if len(comparison.pairs) == 1 else 'share'} code; "
          f"{sum(p.score >= args.threshold for p in comparison.pairs)} {_scores(comparison.pairs, args.threshold)} "
          f"{args.threshold} or more. "
          f"{counted(len(comparison.notes), 'note')} (students not compared, or in part) on the page.", file=sys.stderr)
    if comparison.wording:
        holds = "holds" if len(comparison.wording) == 1 else "hold"
        print(f"{counted(len(comparison.wording), 'hand-in')} {holds} the reference solution's own wording (comments, "
              f"docstrings or messages no released file holds): {', '.join(w.student for w in comparison.wording[:5])}"
              f"{', …' if len(comparison.wording) > 5 else ''}; listed first on the page", file=sys.stderr)
    if 2 <= len(comparison.students) < SMALL_CLASS:
        print(f"autograder: warning: with {counted(len(comparison.students), 'student')} there are too few to tell "
              "what students write alike from a copy (two honest hand-ins of a textbook idiom can score 0.6 or "
              "more): read a pair's lines before drawing anything from its score, or compare this class together "
              "with another", file=sys.stderr)
    if len(comparison.students) < 2:
        print("autograder: warning: fewer than two hand-ins could be compared, so no pair was; pass the whole class "
              "(its folder, or its --db)", file=sys.stderr)
    print(f"wrote {args.out.resolve() / 'pairs.csv'}; report (for instructors only): {index}")
    return 0


def _scores(pairs, threshold: float) -> str:
    """The verb for how many pairs score at least `threshold`: "scores" for one, "score" otherwise."""
    return "scores" if sum(pair.score >= threshold for pair in pairs) == 1 else "score"
