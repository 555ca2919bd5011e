"""One run of one check: its verdict and the calls it made, or a fault in the check itself.

Who is to blame is decided by what the check raised. CheckFailed (a wrong
answer) and StudentError (the student's function raised, or did something
else no answer can come of) are the student's; so is a call the sandbox
stopped. Anything else is the suite's own bug, which no student may pay for:
it leaves `attempt` as SuiteFault, and the grader makes the submission an
internal error, kept with the traceback for the instructor and graded again
by the next run.
"""
from __future__ import annotations

import ast
import inspect
import signal
import textwrap
import threading
import traceback
from dataclasses import dataclass, field

from autograder.authoring.checks import CheckFailed, Sizes, StudentError, Trial
from autograder.grading.results import CheckResult
from autograder.grading.statuses import ERROR, FAILED, PASSED, TIMEOUT
from autograder.grading.suite import CHECK_MODULES, SUITE_PACKAGE, SuiteCheck
from autograder.sandbox.replies import CallFailed


@dataclass
class Attempt:
    """One run of one check: its verdict and the calls it made.

    status: one of statuses.STATUSES; message, hint: for the student.
    failure: the CheckFailed raised, whose expected value a public example may show.
    stopped: the CallFailed the sandbox stopped one of its calls with (its `how` says how), or None.
    calls: (Call, Reply) pairs in order; sizes: the sizes the run used.
    changed: (function, message) for each call that changed an argument in place (Trial.changed), whatever
    the verdict on its values: grading.changed_arguments charges it once per function.
    """

    status: str
    message: str = ""
    hint: str = ""
    failure: CheckFailed | None = None
    stopped: CallFailed | None = None
    calls: list = field(default_factory=list)
    sizes: Sizes | None = None
    changed: list = field(default_factory=list)


@dataclass(frozen=True)
class Replayed:
    """One check run again as graded: its verdict, the run (None if it made no calls), and
    how many calls of the checks before it were sent first, as when it was graded (Grader.replay)."""

    result: CheckResult
    tried: Attempt | None = None
    earlier_calls: int = 0


# A check's own code (not its calls to the student, which have limits of their own) may run this long in wall-clock
# time: the checks of this course take well under a second each; one caught in an endless loop would hang grading.
CHECK_SECONDS = 30.0

_BLAME = " (a fault in the suite, not in the student's code; fix the check, then grade again)"


class SuiteFault(Exception):
    """A check raised something no student can be blamed for: a bug in the suite (see the module's docstring)."""

    def __init__(self, check: str, error: BaseException, did: str = "", where: str = "", why: str = ""):
        """did: what the check did, where it is not "raised <error>"; where: its place, where `error` has none;
        why: after the place, why that is a fault."""
        self.where = check_frame(error) or where
        at = f" at {self.where}" if self.where else ""
        did = did or f"raised {type(error).__name__}: {error}"
        super().__init__(f"the check {check} {did}{at}{'; ' + why if why else ''}{_BLAME}")
        self.check = check
        self.details = "".join(traceback.format_exception(error))


class _Overran(BaseException):
    """Raised into a check's code at CHECK_SECONDS (BaseException, so a check's `except Exception` lets it pass)."""


def run_check(entry: SuiteCheck, trial: Trial, seconds: float = CHECK_SECONDS) -> None:
    """Run `entry`'s check on `trial`, passing on what it raises; SuiteFault if it returns a value or its code runs
    longer than `seconds` of wall-clock time.

    A check passes by returning None; a value it returns (`return np.allclose(...)`, `return False`) would
    otherwise be taken for a pass whatever it says. The limit is SIGALRM's, so only in the main thread (where the
    grading processes run checks); elsewhere a check runs unlimited.
    """
    clock = _Clock(seconds)
    try:
        with clock:
            returned = entry.check.run(trial)
    except _Overran as overran:
        raise SuiteFault(entry.name, overran, f"ran longer than {seconds:g} s (an endless loop?)") from None
    if clock.rang:  # it rang where the check or a reference call swallowed it
        raise SuiteFault(entry.name, RuntimeError("overran"), f"ran longer than {seconds:g} s (an endless loop?)",
                         _defined_at(entry.check.run))
    if returned is not None:
        raise SuiteFault(entry.name, TypeError(f"returned {returned!r}"), f"returned {_short(returned)} instead of "
                         "None", _returned_at(entry.check.run), "a check passes by returning nothing and fails by "
                         "raising (expect_close, expect_equal, ... or fail()), so what it returns is never looked "
                         "at: pass that value to an expect_ function instead")


@dataclass
class _Clock:
    """SIGALRM after `seconds`, then every second until stopped: a ring that a check or a reference call swallows
    rings again. `rang` tells that it rang at all."""

    seconds: float
    rang: bool = False
    _previous: object = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            self._previous = signal.signal(signal.SIGALRM, self._ring)
            signal.setitimer(signal.ITIMER_REAL, self.seconds, 1.0)
        return self

    def __exit__(self, *_):
        if self._previous is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)

    def _ring(self, _signum, _frame):
        self.rang = True
        raise _Overran(f"stopped after {self.seconds:g} s")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"a {type(value).__name__}"


def _defined_at(function) -> str:
    code = getattr(function, "__code__", None)
    return f"{code.co_filename} line {code.co_firstlineno}, in {code.co_name}" if code else ""


def _returned_at(function) -> str:
    """Where `function` returns a value ("hidden_checks.py line 9, in f"; lines, if several), else where it starts."""
    code = getattr(function, "__code__", None)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return _defined_at(function)
    lines = sorted({node.lineno + code.co_firstlineno - 1 for node in _own_returns(tree.body[0])})
    if not lines:
        return _defined_at(function)
    return f"{code.co_filename} line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}, in {code.co_name}"


def _own_returns(function: ast.AST):
    """The `return <value>` statements of `function` itself, not of functions or lambdas defined inside it."""
    for node in ast.iter_child_nodes(function):
        if isinstance(node, ast.Return) and node.value is not None:
            yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            yield from _own_returns(node)


def check_frame(error: BaseException) -> str:
    """The innermost line of a check file that `error` passed through ("hidden_checks.py line 12, in f"), or ""."""
    found = ""
    tb = error.__traceback__
    while tb is not None:
        # The reference is a suite module too, left out: where a check called it, the check's own line says which call.
        module = tb.tb_frame.f_globals.get("__name__", "").split(".")
        if module[0] == SUITE_PACKAGE and module[-1] in CHECK_MODULES:
            found = f"{tb.tb_frame.f_code.co_filename} line {tb.tb_lineno}, in {tb.tb_frame.f_code.co_name}"
        tb = tb.tb_next
    return found


def suite_fault_in(details: str) -> str:
    """What the SuiteFault a traceback's text (a result's internal_error) ends with says, without whose fault it
    is ("the check c raised KeyError: 'k' at .../hidden_checks.py line 9, in f"), or "" if it ends otherwise."""
    prefix = f"{SuiteFault.__module__}.{SuiteFault.__qualname__}: "
    lines = [line for line in details.splitlines() if line.startswith(prefix)]
    return lines[-1][len(prefix):].removesuffix(_BLAME) if lines else ""


def attempt(entry: SuiteCheck, trial: Trial) -> Attempt:
    """Run one check once; raises SuiteFault when the check itself fails."""
    ran = {"calls": trial.calls, "sizes": trial.sizes, "changed": trial.changed}
    try:
        run_check(entry, trial)
    except SuiteFault:
        raise
    except CheckFailed as failure:
        return Attempt(FAILED, failure.message, failure.hint, failure=failure, **ran)
    except StudentError as error:
        return Attempt(ERROR, str(error), **ran)
    except CallFailed as stopped:
        return Attempt(TIMEOUT if stopped.how.timed_out else ERROR, str(stopped), stopped=stopped, **ran)
    except Exception as error:  # noqa: BLE001 - whatever else a check raises is the suite's fault
        raise SuiteFault(entry.name, error) from error
    return Attempt(PASSED, **ran)
