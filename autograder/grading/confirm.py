"""Which timeouts are run again before they count: those of calls that ran out of time without computing.

A call stopped at its limit without having used its limit's processor time
(CallTimedOut.idle, from the kernel's account read outside the sandbox) was
neither computing nor waiting for a processor, which sandbox.waiting gives
back. It slept, or something held it up: a disk the other job keeps busy, a
stall of the machine. The first is the submission's, the second is not. Where
the kernel shows the call asleep in `time.sleep` at its deadline
(CallTimedOut.asleep), the wait was its own, and its timeout counts at once.
Otherwise one run cannot tell them apart; a run in a fresh worker can, since
a hold-up seldom strikes the same call twice. So such checks are graded again
(with the checks their timeout kept from running), and the second run is the
grade. A function that sleeps some other way (waiting on a thread of its own,
say) sleeps again and costs its limit twice; one that loops used the
processor, and its timeout counts at once, as does one whose cause the file's
text shows (Judged.cause: a function compiled with torch.compile, which
compiles in processes of its own and so looks idle). Idle timeouts in a wait of the
file's own asking in more than HELD_UP_FUNCTIONS functions are the file's
waiting, and count at once. A second run
whose worker did not load the file as the first did (it could not start, or
the file defined other functions) decides nothing: the first run's verdicts
stand, and the feedback says why.
"""
from __future__ import annotations

from autograder.grading.explain import Judged
from autograder.grading.statuses import TIMEOUT
from autograder.grading.suite import SuiteCheck
from autograder.sandbox.load_report import LoadReport
from autograder.sandbox.replies import CallTimedOut, Stopped

# A hold-up of the machine strikes a call or two, not most of a file's functions: a file whose calls waited, each
# in a wait of its own asking, in more functions than this waits by itself, and grading it again (its top-level code,
# its reloads and every wait again) had doubled its time: a file that slept 9 s at load and waited in every function
# took 107 s instead of 53 s. Calls held up otherwise (stopped, in a disk wait) are graded again however many.
HELD_UP_FUNCTIONS = 2


def to_run_again(judged: list[Judged]) -> list[SuiteCheck]:
    """The checks to grade again, in suite order: each stopped at an idle timeout, and each not run because
    a function of such a check had timed out (Grader._not_run); none if no timeout was idle, or if more than
    HELD_UP_FUNCTIONS functions were idle in a wait of their own (CallTimedOut.resting: not stopped, in a disk wait
    or running, as a machine's hold-up leaves a process)."""
    idle = [one.entry for one in judged if _idle_timeout(one)]
    functions = {name for entry in idle for name in entry.check.functions}
    if len({one.entry.function for one in judged if _idle_timeout(one) and one.tried.stopped.resting}) > \
            HELD_UP_FUNCTIONS:
        return []
    skipped = [one.entry for one in judged if one.tried is None and one.result.status == TIMEOUT
               and functions & set(one.entry.check.functions)]
    chosen = {entry.name for entry in idle + skipped}
    return [one.entry for one in judged if one.entry.name in chosen]


def merged(first: list[Judged], again: list[Judged]) -> list[Judged]:
    """The first run's verdicts, with those graded again replaced by the second run's."""
    second = {one.entry.name: one for one in again}
    return [second.get(one.entry.name, one) for one in first]


def decided(entries: list[SuiteCheck], first: LoadReport, second: LoadReport,
            again: list[Judged]) -> tuple[list[Judged], str]:
    """What the second run (`again`, loaded as `second`) decides of `entries`, and the note that says so.

    first: how the graded run loaded. A second run loaded otherwise decides nothing: ([], why).
    """
    why = ""
    if second.failure:
        why = f"the fresh worker could not load your file ({second.failure})"
    elif second.functions != first.functions:
        why = "your file did not define the same functions the second time it was loaded"
    held = (f"{_names(entries)}: a call ran out of time without using the processor (it slept or waited, or the "
            "machine held it up), so these checks")
    if why:
        return [], (f"{held} were to be graded again in a fresh worker, but {why}; the first run's verdicts stand. "
                    "If you think the machine held your code up, ask for a regrade")
    return again, f"{held} were graded again in a fresh worker, and that run is your grade"


def _names(entries: list[SuiteCheck]) -> str:
    names = ", ".join(entry.name for entry in entries[:3])
    return names + (f" and {len(entries) - 3} more checks" if len(entries) > 3 else "")


def _idle_timeout(one: Judged) -> bool:
    stopped = one.tried.stopped if one.tried is not None else None
    return (isinstance(stopped, CallTimedOut) and stopped.how is Stopped.TIMEOUT and stopped.idle
            and not stopped.asleep and not one.cause)
