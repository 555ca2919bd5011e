"""Commands for assignments: new (scaffold one), release (through nbgrader), check (students' public checks)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.cli import options
from autograder.cli.grading import INTERNAL_ERROR_STATUS
from autograder.grading.boundary import grade_submission
from autograder.grading.course import find_course, load_course
from autograder.grading.found import LayoutError
from autograder.grading.manifest import public_course
from autograder.grading.station import Setup, protect
from autograder.grading.submission import SUFFIXES, read_submission
from autograder.grading.suite import load_public_suite, load_suite
from autograder.outputs import audience
from autograder.outputs.terminal import format_check
from autograder.text import one_line, safe


def add_commands(commands) -> None:
    new = commands.add_parser("new", help="scaffold a new assignment: stub, checks, reference, source notebook and "
                                          "its course.yaml entry, as a working example to edit")
    new.add_argument("name", help="the assignment's name, e.g. week08_convolution")
    new.add_argument("--module", help="the file students hand in, without .py/.ipynb (default: the name)")
    options.course(new)
    new.set_defaults(run=_new)

    release = commands.add_parser("release", help="generate the students' version through nbgrader "
                                                  "(notebook, stub, public checks) and scan it for leaks")
    release.add_argument("assignment", help=options.ASSIGNMENT_HELP)
    release.add_argument("--out", type=Path, help="release folder; the assignment goes in OUT/ASSIGNMENT "
                                                  "(default: release/ beside course.yaml, nbgrader's)")
    release.add_argument("--gradebook", type=Path, help="nbgrader database to record the assignment in; a relative "
                                                        "path is relative to the folder of course.yaml (default: "
                                                        "nbgrader's, gradebook.db there)")
    release.add_argument("--rebuild", action="store_true", help="first regenerate the source notebook's answer, "
                                                                 "test and written cells and public_manifest.json "
                                                                 "from the reference, the stub and course.yaml")
    options.course(release)
    release.set_defaults(run=_release)

    check = commands.add_parser("check", help="run the public checks on your .py or .ipynb file (for students, "
                                              "in the assignment folder they were given)")
    check.add_argument("file", type=Path, help="your .py or .ipynb file")
    # `grade ASSIGNMENT FILE`'s habit: read, to say that check needs the file alone, not refused as unknown.
    check.add_argument("extra", nargs="*", type=Path, help=argparse.SUPPRESS)
    check.add_argument("--dir", type=Path, help="the assignment folder you were given, holding public_checks.py "
                                                "and public_manifest.json (default: the file's folder)")
    options.sandbox(check)
    check.set_defaults(run=_check)


def _new(args) -> int:
    from autograder.nbgrader.scaffold import new_assignment  # notebooks (nbformat): imported by the commands using them
    course = load_course(args.course or find_course())
    written = new_assignment(course, args.name, args.module)
    for path in written:
        print(f"wrote {path}")
    print(f"next: `autograder grade {args.name} solutions/{args.name}/reference.py --db {args.name}-try.db` grades "
          "the reference (100 %) into a database of its own, not the course's results, "
          f"`autograder release {args.name}` releases it; then make it your own (README: Writing a new assignment)",
          file=sys.stderr)
    return 0


def _release(args) -> int:
    from autograder.nbgrader.release import release
    from autograder.nbgrader.source import source_notebook_path
    course = load_course(args.course or find_course())
    suite = load_suite(course, args.assignment)
    done = release(course, suite, args.out or course.root / "release", args.gradebook, args.rebuild)
    for what in done.added:
        print(f"{source_notebook_path(suite.assignment)}: {what}; write its heading's text there", file=sys.stderr)
    for path in done.rebuilt:
        print(f"regenerated {path} from the reference, the stub and course.yaml; review and commit it",
              file=sys.stderr)
    print(f"released {suite.assignment.name} to {done.folder}: {', '.join(done.files)}")
    print(f"  {done.points:g} autograded points (the same checks as `autograder grade`) and {done.written:g} "
          "hand-graded; nothing from solutions/ or the hidden checks was found in it")
    print(f"next: give students {done.folder}, or `nbgrader release_assignment {suite.assignment.name}` "
          "with nbgrader's exchange", file=sys.stderr)
    return 0


def _check(args) -> int:
    if args.extra:
        files = " ".join(str(path) for path in [args.file, *args.extra] if path.suffix in SUFFIXES)
        raise LayoutError(f"check takes one file only, not {1 + len(args.extra)} words: the assignment is read from "
                          f"the folder the file is in (its public_checks.py); run `autograder check "
                          f"{files or 'my_work.ipynb'}`")
    if not args.file.is_file() or args.file.suffix not in SUFFIXES:
        raise LayoutError(f"{args.file} is not a .py or .ipynb file; pass the file you will hand in, "
                          "e.g. `autograder check my_work.ipynb`")
    folder = args.dir or args.file.resolve().parent
    suite = load_public_suite(folder)
    course = public_course(suite.assignment, folder)
    protections = protect(args.sandbox, log=sys.stderr)  # public checks hide nothing: no secret to refuse
    # The student id is the module name, as in the notebook's public cells: the same inputs, the same messages.
    # The grading process probes first: without a reference, the preload imported in a child under the limits.
    result = grade_submission(Setup(course, suite, protections, command="autograder check"),
                              read_submission(args.file, student=suite.assignment.module))
    passed = [t for t in result.tests if t.status == "passed"]
    lines = [f"{args.file.name}: {len(passed)} of {len(result.tests)} public checks passed "
             f"({result.score:g} / {result.max_score:g} points of the public checks)"]
    if result.problem:  # a file that did not load says so itself ("not loaded: <file>, line 3 ...")
        lines.append(f"  {'' if result.did_not_load else 'could not check: '}{one_line(result.problem)}")
    lines += [f"  note: {one_line(note)}" for note in result.notes]
    lines += [format_check(test) for test in result.tests]
    printed = audience.submission_output(result, audience.STUDENT)  # public checks only: the student's to see
    if printed.strip():
        lines += ["  what your code printed:", *(f"    {line}" for line in printed.strip().splitlines()[:20])]
    if len(passed) == len(result.tests) and not result.problem:
        lines.append("All public checks passed. Hidden checks on other inputs run when you are graded.")
    else:
        lines.append("Fix the checks marked above and run this again. Hidden checks run when you are graded.")
    print(safe("\n".join(lines)))
    if result.internal_error:
        # No instructor sees a student's own run: the details are shown here, to pass on.
        print(safe(f"autograder: the checker itself failed (not because of your code). Send this to your "
                   f"instructor:\n{result.internal_error}"), file=sys.stderr)
        return INTERNAL_ERROR_STATUS
    return 0 if len(passed) == len(result.tests) and not result.problem else 1
