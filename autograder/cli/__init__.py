"""The `autograder` command line: one module per kind of user.

- grading (TAs): grade, replay, checks, doctor;
- gradescope (Gradescope's machines): gradescope-run, which the bundle's run_autograder calls;
- outputs (TAs, instructors): report, export, gradescope-bundle;
- course (TAs, instructors): regrade, history, and the LMS exports (export canvas|moodle|blackboard);
- assignments (instructors, students): new, release, check;
- cluster (TAs): slurm;
- similarity (instructors): a code-similarity report of a class.
"""
from __future__ import annotations

import argparse
import os
import sys

from autograder.cli import assignments, cluster, course, gradescope, grading, outputs, similarity
from autograder.cluster import ClusterError
from autograder.grading.course import CourseError
from autograder.grading.discover import LayoutError
from autograder.grading.station import SandboxError
from autograder.grading.store import StoreError
from autograder.nbgrader import ReleaseError
from autograder.outputs import ExportError
from autograder.text import safe


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except (CourseError, SandboxError, LayoutError, StoreError, ReleaseError, ExportError, ClusterError) as error:
        print(f"autograder: {safe(error)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `autograder export csv | head`: the reader has all it wanted
        # Python's documented remedy: point stdout at devnull so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:
        print(f"autograder: {safe(error.strerror or error)} ({safe(error.filename or 'no file name')}); check that "
              "path and its permissions, then run again", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autograder: interrupted; results already stored are kept", file=sys.stderr)
        return 130


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="autograder", description="Grade programming assignments against hidden "
                                                                 "checks, with student code sandboxed.")
    commands = top.add_subparsers(dest="command", required=True)
    for module in (grading, gradescope, outputs, course, assignments, cluster, similarity):
        module.add_commands(commands)
    return top
