"""The `autograder` command line: one module per kind of user.

- grading (TAs): grade, replay, checks; doctor (TAs, instructors, students): can this machine grade;
- gradescope (Gradescope's machines): gradescope-run, which the bundle's run_autograder calls;
- outputs (TAs, instructors): report, export, gradescope-bundle;
- course (TAs, instructors): regrade, history, and the LMS exports (export canvas|moodle|blackboard);
- retract (TAs): withdraw a hand-in or student stored by mistake, or put it back;
- assignments (instructors, students): new, release, check;
- cluster (TAs): slurm;
- similarity (instructors): a code-similarity report of a class.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import threading

from autograder.cli import (
    assignments,
    cluster,
    course,
    doctor,
    gradescope,
    grading,
    options,
    outputs,
    regrade,
    replay,
    retract,
    similarity,
)
from autograder.cluster import ClusterError
from autograder.grading.course import CourseError
from autograder.grading.found import LayoutError
from autograder.grading.station import SandboxError
from autograder.grading.store import StoreError
from autograder.nbgrader import ReleaseError
from autograder.outputs import ExportError
from autograder.text import safe


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (`kill`, a closed terminal, a batch job's time limit), unwound as Ctrl-C is.

    Python's default for them ends the process on the spot: no `finally` runs, so the sandboxes' and the
    extracted zips' folders (students' hand-ins among them) stayed behind. A KeyboardInterrupt, not an
    Exception, so that no `except Exception` in the grader takes it for one submission's fault.
    """


def _stop(number: int, frame) -> None:
    for other in (signal.SIGTERM, signal.SIGHUP):  # a second one must not cut the clean-up short
        signal.signal(other, signal.SIG_IGN)
    raise Stopped(signal.Signals(number).name)


@contextlib.contextmanager
def _stopped_by_signals():
    """SIGTERM and SIGHUP raise Stopped while the command runs; the caller's own handlers come back after.

    One the command was started with ignored stays ignored: `nohup autograder grade …` goes on after its
    terminal closes.
    """
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {number: signal.signal(number, _stop) for number in (signal.SIGTERM, signal.SIGHUP)
                if signal.getsignal(number) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    if hasattr(args, "named_assignment"):
        try:
            args.assignment = options.named_assignment(args)
        except argparse.ArgumentTypeError as error:
            command.error(str(error))
    try:
        with _stopped_by_signals():
            return args.run(args)
    except (CourseError, SandboxError, LayoutError, StoreError, ReleaseError, ExportError, ClusterError) as error:
        print(f"autograder: {safe(error)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `autograder export csv | head`: the reader has all it wanted
        # Python's documented remedy: point stdout at devnull so the flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:
        print(f"autograder: {_os_error(error)}", file=sys.stderr)
        return 2
    except Stopped as stopped:
        print(f"autograder: stopped by {stopped}; {_after_stop(args)}", file=sys.stderr)
        return 128 + signal.Signals[str(stopped)].value
    except KeyboardInterrupt:
        print(f"autograder: interrupted; {_after_stop(args)}", file=sys.stderr)
        return 130


def _os_error(error: OSError) -> str:
    """What a failed read or write of the system says, and what to do about it."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f", writing {safe(error.filename)}" if error.filename else ""
        return (f"the disk is full ({safe(error.strerror)}{where}); free some space (or write elsewhere with --out "
                "or --db), then run again: a file this command was replacing was left as it was, and results "
                "already stored are kept")
    return (f"{safe(error.strerror or error)} ({safe(error.filename or 'no file name')}); check that path and its "
            "permissions, then run again")


def _after_stop(args) -> str:
    """What a stop midway kept, and what to do: `grade` commits each result as it lands, `regrade` all at once."""
    if args.command == "regrade":
        return ("a regrade keeps its results only once every hand-in is graded (so that no grade moves halfway), "
                "so a stop before then kept none of them: run the same command again")
    if getattr(args, "force", False):  # the same command would grade the whole class again
        return "results already stored are kept: run the same command again without --force to grade the rest"
    return "results already stored are kept: run the same command again to finish"


def parser() -> argparse.ArgumentParser:
    top = options.Parser(prog="autograder", description="Grade programming assignments against hidden "
                                                        "checks, with student code sandboxed.")
    commands = top.add_subparsers(dest="command", required=True)
    for module in (grading, doctor, replay, gradescope, outputs, regrade, course, retract, assignments, cluster,
                   similarity):
        module.add_commands(commands)
    return top
