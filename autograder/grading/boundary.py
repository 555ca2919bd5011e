"""One process boundary around every grading, in every command that grades.

Student code runs only in the sandbox, but the process that grades can still
die: a signal, the out-of-memory killer, a crash in a native library, a
suite that kills the interpreter. So no command grades in its own process.
A `GradingProcess` is a fork of the command holding one grading station
(grading.station: a sandbox and its Grader); it is given one piece of work at a time over its own pipe, so a
death is pinned on the work it held. `grade` keeps one per job
(grading.batch), each Dask worker thread keeps one (cluster.warm), and
`gradescope-run`, `replay` and `check` run their one grading in one
(`grade_apart`). Work whose process died is tried once more in a fresh
process; if that dies too, the submission's result is "could not grade:
internal error", with how each process ended kept for the instructor, and
the command goes on with the others.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from autograder.grading import collector
from autograder.grading.grader import Grader
from autograder.grading.grader_faults import internal_error_result, sandbox_fields
from autograder.grading.probe import EnvironmentRefused
from autograder.grading.results import SubmissionResult
from autograder.grading.station import Sandbox, SandboxError, Setup, start_station
from autograder.grading.submission import Submission
from autograder.sandbox.kernel import PR_SET_PDEATHSIG, prctl

RETRIES = 1  # work whose process died is tried this many more times, each in a fresh process
# A sandbox starts in seconds (its zygote imports NumPy and PyTorch) even on a busy machine; one that has not
# started by then never will (a library hanging at import, a machine swapping), and the command must say so.
START_SECONDS = 300.0
_READY = object()  # what `GradingProcess._next` returns for the process's "sandbox started"

# How a signal that ended a grading process usually came about, for the instructor.
_SIGNAL_CAUSES = {
    signal.SIGKILL: "was killed with SIGKILL, most likely by the out-of-memory killer",
    signal.SIGSEGV: "crashed with a segmentation fault (SIGSEGV), in the grader or a library it uses",
    signal.SIGBUS: "crashed with a bus error (SIGBUS): memory it had mapped went away",
    signal.SIGABRT: "aborted (SIGABRT): a library it uses gave up",
}


class StartTimedOut(SandboxError):
    """The grading process had not started its sandbox within its limit, and was killed."""


@dataclass(frozen=True)
class Lost:
    """Work that gave no result: its process died (`died`), or the work raised. `cause` is for the instructor."""

    cause: str
    died: bool = True


class GradingProcess:
    """A forked process with its own sandbox and Grader, running `work(grader, *args)` one at a time.

    It is killed when the thread that forked it ends (so that no grader
    outlives a command killed with -9): fork it from a thread that outlives it.
    Forked with os.fork, not multiprocessing: a Dask worker is a daemonic
    multiprocessing process, which multiprocessing lets start no children.
    """

    def __init__(self, setup: Setup, sandbox: Sandbox | None = None):
        """sandbox: one launched here for this job (station.launch_sandbox), which the process takes over;
        None: the process starts its own."""
        self.setup = setup
        ours, theirs = socket.socketpair()
        pid = os.fork()  # shares the loaded suite (and torch) instead of loading it again
        if pid == 0:
            ours.close()
            code = 0
            try:
                _serve(setup, Connection(theirs.detach()), sandbox)
            except BaseException:  # noqa: BLE001 - the process must never return into the command's code
                traceback.print_exc()
                code = 1
            finally:
                os._exit(code)
        theirs.close()
        if sandbox is not None:
            sandbox.hand_over()
        self._sandbox = sandbox  # reaped here when the process has ended
        self.pid = pid
        self.connection = Connection(ours.detach())
        self.exitcode: int | None = None  # once it has ended: its exit status, or minus the signal that killed it
        self.busy = False
        self._started = False  # it said its sandbox has started

    def give(self, work: Callable[..., Any], *args) -> None:
        """Start `work(grader, *args)` in the process; `receive` gives its result."""
        self.busy = True
        try:
            self.connection.send((work, args))
        except OSError:
            pass  # it died already; receive() says how

    def ready(self, seconds: float | None = None) -> None:
        """Wait until the process's sandbox has started; SandboxError if it could not, StartTimedOut if it did not
        within `seconds` (START_SECONDS by default; the process is then killed), or the process died."""
        seconds = START_SECONDS if seconds is None else seconds
        if not self._started:
            if not self.connection.poll(seconds):
                self.busy = True  # so that end() kills it rather than asking it to finish
                self.end()
                raise StartTimedOut(f"the grading process (job {self.setup.slot}) did not start its sandbox within "
                                    f"{seconds:g} s, where it takes seconds: this machine may be out of memory "
                                    "or overloaded, or a library hangs at import. Check the machine's memory and load "
                                    "(`free -h`, `uptime`), then run the same command again")
            outcome = self._next()
            if isinstance(outcome, Lost):
                raise SandboxError(f"the sandbox could not start: {outcome.cause}")

    def receive(self) -> Any:
        """The result of the work given, or Lost. Raises SandboxError when the sandbox could not start."""
        outcome = self._next()
        if outcome is _READY:
            outcome = self._next()
        self.busy = False
        return outcome

    def _next(self) -> Any:
        try:
            kind, payload = self.connection.recv()
        except (EOFError, OSError):
            self._join(10)
            return Lost(_how_it_ended(self.exitcode, self.setup.slot))
        if kind == "fatal":
            raise SandboxError(payload)
        if kind == "refused":
            raise EnvironmentRefused(payload)
        if kind == "ready":
            self._started = True
            return _READY
        return Lost(payload, died=False) if kind == "raised" else payload

    def run(self, work: Callable[..., Any], *args) -> Any:
        """`work(grader, *args)` in this process: its result, or Lost."""
        self.give(work, *args)
        return self.receive()

    def alive(self) -> bool:
        return not self._join(0)

    def end(self) -> None:
        """Let an idle process finish (its sandbox closes with it); kill a busy one, or one that does not finish.
        Once ended (here, or by `ready` on a start that overran), nothing more."""
        if self.connection.closed:
            return
        if not self.busy:
            try:
                self.connection.send(None)
            except OSError:
                pass
        if not self._join(0 if self.busy else 30):
            os.kill(self.pid, signal.SIGKILL)
            self._join(10)
        self.connection.close()
        if self._sandbox is not None:
            self._sandbox.close()

    def _join(self, seconds: float) -> bool:
        """Wait up to `seconds` for the process to end; whether it has (its status then in `exitcode`)."""
        deadline = time.monotonic() + seconds
        while self.exitcode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exitcode = os.waitstatus_to_exitcode(status)
            elif time.monotonic() >= deadline:
                return False
            else:
                time.sleep(0.01)
        return True


def grade_apart(setup: Setup, work: Callable[..., Any], *args) -> Any:
    """`work(grader, *args)` in a grading process of its own, again in a fresh one if that dies; or Lost.

    For the commands that grade one thing (gradescope-run, replay, check).
    Raises SandboxError when the sandbox cannot start.
    """
    causes = []
    for _ in range(1 + RETRIES):
        process = GradingProcess(setup)
        try:
            outcome = process.run(work, *args)
        finally:
            process.end()
        if not (isinstance(outcome, Lost) and outcome.died):
            return outcome
        causes.append(outcome.cause)
    return Lost(tried(causes))


def grade_submission(setup: Setup, submission: Submission) -> SubmissionResult:
    """One submission graded behind the boundary; a grading that gave no result is its internal error."""
    outcome = grade_apart(setup, _grade, submission)
    if not isinstance(outcome, Lost):
        return outcome
    return internal_error_result(submission.student, setup.suite, str(submission.path), submission.sha256,
                                 f"{outcome.cause} while grading {submission.path}", 0.0,
                                 **sandbox_fields(setup.protections))


def _grade(grader: Grader, submission: Submission) -> SubmissionResult:
    return grader.grade(submission)


def tried(causes: list[str]) -> str:
    """The instructor's account of work whose every grading process died."""
    if len(causes) == 1:
        return causes[0]
    return f"graded {len(causes)} times, each in a fresh process: " + "; then ".join(causes)


def one_thread() -> None:
    """Jobs already fill the cores; PyTorch's own thread pool in each grader would only contend with them."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _how_it_ended(exitcode: int | None, slot: int) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode)
        except ValueError:
            return f"the grading process (job {slot}) was killed by signal {-exitcode}"
        return f"the grading process (job {slot}) {_SIGNAL_CAUSES.get(name, f'was killed by {name.name}')}"
    return f"the grading process (job {slot}) ended with exit code {exitcode}"


def _serve(setup: Setup, connection, sandbox: Sandbox | None) -> None:
    """The grading process: its own station, running what it is sent until it is sent None."""
    _die_with_parent()
    # The command decides what Ctrl-C, `kill` and a closed terminal mean. Sent to the whole process group (by a
    # terminal, Slurm, systemd), they must not also reach a grading process through the handler it was forked with.
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    one_thread()
    collector.for_grading()  # first: a collection must not walk (and so copy) what the command loaded
    try:
        # Before its first piece of work: an environment that cannot grade the reference grades no one.
        station = start_station(setup, sandbox)
    except SandboxError as error:
        connection.send(("refused" if isinstance(error, EnvironmentRefused) else "fatal", str(error)))
        return
    collector.for_grading()  # and what the station built for good
    connection.send(("ready", None))
    with station as grader:
        while True:
            try:
                order = connection.recv()
            except EOFError:
                return  # the command is gone
            if order is None:
                return
            work, args = order
            try:
                connection.send(("result", work(grader, *args)))
            except Exception:  # noqa: BLE001 - the work's own fault, told to the command as that work's result
                connection.send(("raised", traceback.format_exc()))


def _die_with_parent() -> None:
    """A grader must not outlive a command killed with -9 (its sandbox then dies with it)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(1)
