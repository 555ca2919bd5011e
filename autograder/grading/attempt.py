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


_BLAME = " (a fault in the suite, not in the student's code; fix the check, then grade again)"


class SuiteFault(Exception):
    """A check raised something no student can be blamed for: a bug in the suite (see the module's docstring)."""

    def __init__(self, check: str, error: BaseException):
        self.where = check_frame(error)
        at = f" at {self.where}" if self.where else ""
        super().__init__(f"the check {check} raised {type(error).__name__}: {error}{at}{_BLAME}")
        self.check = check
        self.details = "".join(traceback.format_exception(error))


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
        entry.check.run(trial)
    except CheckFailed as failure:
        return Attempt(FAILED, failure.message, failure.hint, failure=failure, **ran)
    except StudentError as error:
        return Attempt(ERROR, str(error), **ran)
    except CallFailed as stopped:
        return Attempt(TIMEOUT if stopped.how.timed_out else ERROR, str(stopped), stopped=stopped, **ran)
    except Exception as error:  # noqa: BLE001 - whatever else a check raises is the suite's fault
        raise SuiteFault(entry.name, error) from error
    return Attempt(PASSED, **ran)
