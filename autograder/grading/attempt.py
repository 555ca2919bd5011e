"""One run of one check: its verdict and the calls it made, never an exception."""
from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass, field

from autograder.authoring.checks import CheckFailed, Sizes, StudentError, Trial
from autograder.grading.suite import SuiteCheck
from autograder.sandbox.replies import CallFailed, CallTimedOut, ReplyRejected, WorkerDied

# How a call that produced no reply ended, for the feedback's "what the sandbox stopped".
_STOPPED = ((CallTimedOut, "timeout"), (ReplyRejected, "rejected"), (WorkerDied, "crashed"))


@dataclass
class Attempt:
    """One run of one check: its verdict and the calls it made.

    status: one of results.STATUSES; message, hint: for the student.
    failure: the CheckFailed raised, whose expected value a public example may show.
    stopped: "timeout", "crashed" or "rejected" when the sandbox stopped a call.
    calls: (Call, Reply) pairs in order; sizes: the sizes the run used.
    """

    status: str
    message: str = ""
    hint: str = ""
    failure: CheckFailed | None = None
    stopped: str = ""
    calls: list = field(default_factory=list)
    sizes: Sizes | None = None


def attempt(entry: SuiteCheck, trial: Trial) -> Attempt:
    """Run one check once. A fault in the check itself is reported, not raised."""
    ran = {"calls": trial.calls, "sizes": trial.sizes}
    try:
        entry.check.run(trial)
    except CheckFailed as failure:
        return Attempt("failed", failure.message, failure.hint, failure=failure, **ran)
    except StudentError as error:
        return Attempt("error", str(error), **ran)
    except CallFailed as failure:
        stopped = next((kind for cls, kind in _STOPPED if isinstance(failure, cls)), "crashed")
        return Attempt(failure.status, str(failure), stopped=stopped, **ran)
    except Exception:  # noqa: BLE001 - a bug in a check must not stop the batch
        traceback.print_exc(file=sys.stderr)
        return Attempt("error", f"the grader failed while running {entry.name} (a fault in the check, not in your "
                                "code); your instructor has been shown the details", **ran)
    return Attempt("passed", **ran)
