"""What a failing check's feedback adds once its points are fixed: the misconception, the smallest failing input.

Runs once every graded call of a submission has been answered (autograder.grading.plan
says why). The diagnosis looks only at the graded calls. Shrinking needs new
calls that depend on the verdicts, so they are sent only then: to the graded
child itself while it is still open (`GradedChild`), else to a new child
(`FreshChild`), started only for a submission that has something to shrink.
Either way, whatever that child answers can change an example, never a point.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from autograder.authoring.checks import UNENDING_HINT
from autograder.authoring.misconceptions import Misconception
from autograder.grading.attempt import Attempt
from autograder.grading.calibration import CallLimit
from autograder.grading.results import CheckResult
from autograder.grading.statuses import ERROR, PASSED
from autograder.grading.suite import SuiteCheck
from autograder.sandbox.replies import CallFailed, Stopped, WorkerDied

# Where the child said a stopped call was (sandbox.stopped_at): "line 69, in helper (`print("x:", x)`)".
_PRINTING = re.compile(r"\(`\s*print\(")
# A stopped call writing a file (its line opens, saves or writes one; `Path.write_text`, PIL's `image.save(path)`)
# or plotting (its line draws or saves a figure, or it was inside matplotlib or PIL, the image library).
_WRITING = re.compile(r"\(`[^`]*(\bopen\(|np\.save|\.savetxt\(|\.tofile\(|\.to_csv\(|\.save\(|\.dump\(|"
                      r"\.write\(|\.write_text\(|\.write_bytes\()")
_PLOTTING = re.compile(r"\(`[^`]*\b(plt\.|matplotlib|savefig|imshow|subplots|\.plot\(|\.show\(|\.figure\()"
                       r"|, inside (matplotlib|PIL)$")
# A place the child named with a loop of the student's around it (sandbox.stopped_at._loop).
_LOOPING = re.compile(r", (in the loop `|in the comprehension|in a call of itself|called entry by entry)"
                      r"|\(`\s*(async )?(for|while)\b")
VECTORISED_HINT = ("{why}: the code is vectorised but still too slow. Look for an array far larger than the answer "
                   "(a broadcast over more axes than needed, a copy or a `np.tile` of the inputs), work done twice, "
                   "or a slow dtype (np.longdouble and object arrays compute several to hundreds of times slower "
                   "than float64)")
# Said after WaitCredit.spent's "(… of it in the operating system: allocating or touching memory …)".
MEMORY_HINT = ("look for a very large array made in the call: a table or cache built on its first call belongs at "
               "the top level of the file, built once")


@dataclass
class Judged:
    """One check's verdict from the graded calls, and what explaining it needs.

    tried: the judged run (None when the check made no calls: a missing
    function, work not sent again after a timeout).
    cause: what the file's text shows stops the check's function (grading.compiled), or "": no idea about its
    code is named for a timeout then.
    """

    entry: SuiteCheck
    result: CheckResult
    tried: Attempt | None = None
    cause: str = ""

    def explainable(self) -> bool:
        """A wrong answer or a raise that a reply shows; a stopped call left nothing to explain."""
        tried = self.tried
        return tried is not None and tried.status in ("failed", "error") and not tried.stopped


class GradedChild:
    """The graded child, for the calls that depend on verdicts once every graded call has been answered.

    session: the graded Session, still open. A failing submission is spared a second fork and load: in a
    mostly buggy class, its sandbox's processor time went from 42 to 36 ms (docs/performance.md). The
    child may notice the re-runs (it saw the same seeded inputs at full size) and answer them
    differently: that changes its own example at most, as noticing among the re-runs always could.
    """

    def __init__(self, session):
        self._session = session
        self._begun = False

    def open(self) -> None:
        """The re-runs begin: they get a budget of their own, as a new child's session would."""
        if not self._begun:
            self._session.begin_feedback()
            self._begun = True

    def call(self, call):
        self.open()
        return self._session.call(call)


class FreshChild:
    """A new child of the submission for the calls that depend on verdicts; started on its first call.

    start: returns an unopened Session. Use only after the graded session
    has closed: the sandbox runs one submission's processes at a time.
    """

    def __init__(self, start: Callable):
        self._start = start
        self._session = None
        self._failure = ""
        self.killed_processes = 0

    def open(self) -> None:
        """Start and load the child now, if not yet: its start is a fixed cost, not part of any re-run."""
        if self._session is None and not self._failure:
            self._session = self._start()
            load = self._session.open()
            if load.failure:
                self._failure = f"the file could not be loaded again for its example: {load.failure}"

    def call(self, call):
        self.open()
        if self._failure:
            raise WorkerDied(self._failure)
        return self._session.call(call)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self.killed_processes = self._session.killed_processes
            self._session = None

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def with_explanation(result: CheckResult, idea: Misconception | None, example: str) -> CheckResult:
    """`result` with its misconception and example filled in; its status and points unchanged."""
    return dataclasses.replace(result, misconception=idea.id if idea else None,
                               explanation=idea.sentence if idea else "", example=example)


def with_error_sources(results: list[CheckResult], judged: list[Judged]) -> list[CheckResult]:
    """`results` with a pointer added to each check whose function raised inside another of the file's graded
    functions that passes all its own checks: that one is where it raised, not the likely cause (a transposed
    score makes `context`'s matrix product raise inside the function that calls both). Which of the functions it
    calls fail their own checks is read from the file's text later (grading.loading.with_failing_parts)."""
    failing = {result.function for result in results if result.status != PASSED}
    graded = {result.function for result in results}
    raised_in = {one.entry.name: _raised_in(one.tried) for one in judged}
    pointed = []
    for result in results:
        where = raised_in.get(result.name, "")
        if result.status == ERROR and where in graded - failing - {result.function}:
            result = dataclasses.replace(result, message=f"{result.message}. {where} passes its own checks, so "
                                         f"what {result.function} gives it is the likely cause")
        pointed.append(result)
    return pointed


def _raised_in(tried: Attempt | None) -> str:
    """The graded function a check's last raise came from (the worker's word: it only words a pointer)."""
    raised = next((reply.raised for _, reply in reversed(tried.calls) if reply.raised is not None), None) \
        if tried is not None and tried.status == ERROR else None
    return raised.within if raised is not None else ""


def not_computing(stopped: CallFailed | None) -> bool:
    """Whether a stopped call was not computing in a Python loop when stopped: waiting (idle), printing, plotting,
    writing a file, or in one long array operation (`_vectorised`). Ideas about Python loops are not named for it."""
    where = getattr(stopped, "where", "")
    return getattr(stopped, "idle", False) or any(pattern.search(where) for pattern in (_PRINTING, _PLOTTING,
                                                                                      _WRITING)) \
        or (stopped is not None and _vectorised(stopped))


def _vectorised(stopped: CallFailed) -> bool:
    """Whether a stopped call was in no Python loop of the file: the child named a place without one, or named none
    (a Python loop answers at its next line; one long NumPy or PyTorch operation does not, within the wait). Only
    of a call a sandbox watched (what the kernel counted of it, `spent`, is said only then): a call in this process
    (nbgrader's kernels) is never asked where it was."""
    where, watched = getattr(stopped, "where", ""), getattr(stopped, "spent", "")
    return bool(where or watched) and not _LOOPING.search(where)


def timeout_message(timeout: CallFailed, limit: CallLimit, slow_hint: str = "", cause: str = "") -> str:
    """A timeout's message, with how the limit compares with the reference, what the kernel and the child saw of
    the call, and what to look for (`stopped_advice`). The comparison is for a call stopped at its own limit, not
    one the submission's budget stopped."""
    message = str(timeout)
    if limit.reference and timeout.how is Stopped.TIMEOUT and getattr(timeout, "at_limit", True):
        ratio = limit.seconds / max(limit.reference, 1e-9)
        message += f" ({ratio:.0f}× the reference's {limit.reference * 1000:.2g} ms)"
    seen = (getattr(timeout, "spent", ""), f"it was at {timeout.where}" if getattr(timeout, "where", "") else "")
    message += "".join(f"; {part}" for part in seen if part)
    return f"{message}; {stopped_advice(timeout, slow_hint, cause)}"


def stopped_advice(stopped: CallFailed, slow_hint: str = "", cause: str = "") -> str:
    """What to look for in a call stopped at its limit, from what the kernel and the child saw of it: a sleep, a
    wait, a print or memory before the check's own advice (`slow_hint`) or the general one. A cause known for it is
    the advice alone, since the rest would send the student looking for another: `cause`, what the file's text
    shows stops the function (grading.compiled.stop_causes: what its call looked like from outside, idle while
    compiling or in one long library operation, points elsewhere), else the sandbox's (CallTimedOut.cause)."""
    if cause or getattr(stopped, "cause", ""):
        return cause or stopped.cause
    if getattr(stopped, "asleep", False):  # the wait is the cause: no other advice
        return "it was asleep (time.sleep) when it was stopped: take the sleep out of your code"
    if getattr(stopped, "busy", False):  # the machine's doing, not the code's: no advice about the code
        return ("the machine was too busy to run it: the call spent most of its time ready to run but waiting for a "
                "processor, which other work on the machine kept busy; this says nothing about your code. If this "
                "check's points were lost, ask for a regrade")
    if getattr(stopped, "idle", False):
        return ("it used little processor time: it was waiting (for a thread or process it started, a lock or "
                "input), not computing; do the work in the function itself, without waiting for anything")
    if _PRINTING.search(getattr(stopped, "where", "")):
        return "it was printing when it was stopped: take the prints out (printing a large array whole takes long)"
    if _WRITING.search(getattr(stopped, "where", "")):
        return ("it was writing a file when it was stopped: take that out of the graded function; write files in a "
                "cell of its own, from what the function returns")
    if _PLOTTING.search(getattr(stopped, "where", "")):
        return ("it was plotting when it was stopped: take the plot out of the graded function (drawing and saving a "
                "figure takes far longer than the computation); plot in a cell of its own, on what the function "
                "returns")
    if getattr(stopped, "in_kernel", False) and not slow_hint:
        return MEMORY_HINT
    if _vectorised(stopped):
        return VECTORISED_HINT.format(why="no Python loop of yours was around that line" if getattr(
            stopped, "where", "") else "no line of yours answered when it was stopped, so it was inside one long "
            "library operation (NumPy, PyTorch), not a Python loop")
    return slow_hint or UNENDING_HINT
