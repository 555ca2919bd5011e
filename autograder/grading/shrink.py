"""Shrinking a failing randomized check to the smallest input sizes that still fail.

Greedy, as property-based testing's shrinkers are: try the big jumps of
`Sizes.jumps()` (everything at its least, then one size at a time), then the
one-step reductions of `Sizes.smaller()` in order (most aggressive first);
move to the first one that still fails, and start over from there, never
running the same sizes twice. A size that, lowered alone to its least, made
the failure go away is needed: the jumps keep it from then on, so the other
sizes fall to their least together and it is not lowered alone again from
each new start (a quarter fewer re-runs, so more checks get their smallest
example within the budget). Right after everything at its least, the sizes
the file's earlier functions shrank to are tried: a function that calls a
wrong one mostly fails where that one does. Stop when no reduction fails,
after `MAX_RUNS` re-runs of the check, or when the submission's `ShrinkBudget`
is spent: a number of re-runs, which decides where shrinking stops, so the
same file gets the same examples at every grading whatever the machine's
load; and a cap of wall-clock time for code that is slow at every size. A
failing file costs little more than a right one. The
caller re-runs the check with a fresh Trial (same seed) in a child of the
submission once every graded call has been answered
(autograder.grading.explain), so the smaller failure is one the student's
code really produced and no re-run can change a point. A new child is
started before the budget's clock runs: its start is a fixed cost that a
loaded machine stretches, and counting it would make the example depend on
the machine's load rather than on the file.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.authoring.checks import Sizes

MAX_RUNS = 20  # re-runs per check: enough to walk (2, 3) × 5 × 7 × 4 × 3 down to ones
# Re-runs per submission, all checks together. The most a week-7 file needed, with no limit at all, was 18
# (a class of 200 mostly failing files): about 25 ms on a quiet machine, half a graded run.
MAX_SUBMISSION_RUNS = 24
# The time cap, for code slow at every size, which no count of re-runs bounds. Not a share of the graded run:
# a graded run whose calls were planned for an earlier student of its input set is cheaper than its re-runs,
# so such a cap stopped the same file at different points in different batches.
SUBMISSION_SHARE = 0.1  # of a submission's time budget
# Wall-clock seconds: the 24 re-runs take 0.06 s on a quiet machine; with 2 ms added to each call (64 calls),
# 0.19 s, and beside the test suite's other worker more: a cap of 0.25 s then stopped them before the count did.
MAX_SUBMISSION_SECONDS = 0.5


@dataclass
class ShrinkBudget:
    """What one submission may spend shrinking, all its checks together: re-runs, and wall-clock seconds.

    The re-runs decide: the same file stops at the same point whatever the machine's load. The seconds
    only cap code that is slow at every size.
    """

    seconds: float
    runs: int = MAX_SUBMISSION_RUNS
    spent: float = 0.0
    ran: int = 0

    @classmethod
    def for_submission(cls, submission_seconds: float) -> ShrinkBudget:
        """The budget of a submission whose time limit is `submission_seconds`. Shrinking is feedback: its
        re-runs cost less than a graded run, so a failing file costs little more than a right one.
        A new child's start, where one is needed, is not counted (see the module's docstring)."""
        return cls(min(MAX_SUBMISSION_SECONDS, SUBMISSION_SHARE * submission_seconds))

    def exhausted(self) -> bool:
        return self.ran >= self.runs or self.spent >= self.seconds

    def charge(self, seconds: float) -> None:
        """One re-run, which took `seconds`."""
        self.ran += 1
        self.spent += seconds


@dataclass(frozen=True)
class Shrunk:
    """The smallest failing run found: its sizes, the attempt at those sizes, and the re-runs it took."""

    sizes: Sizes
    attempt: Any
    runs: int


def shrink(sizes: Sizes, size: int, rerun: Callable[[Sizes], Any], budget: ShrinkBudget,
           max_runs: int = MAX_RUNS, guesses: Sequence[Sizes] = ()) -> Shrunk | None:
    """Walk `sizes` down while the check keeps failing; None if nothing smaller fails.

    size: `input_size` of the original failing run. A reduction is taken
        only if its inputs are no bigger, and the result only if they are
        smaller, so a check whose inputs do not depend on its sizes is never
        reported as "shrunk".
    rerun(sizes): runs the check at those sizes; returns an attempt with
        `.status` ("failed" when it still fails) and `.calls` ((Call, Reply) pairs).
    guesses: other checks' smallest failures in the same file, tried (as `Sizes.following` maps them)
        right after everything at its least. One that fails is walked down from like any smaller failure;
        one that passes costs its run.
    """
    best, best_attempt, best_size, runs = sizes, None, size, 0
    tried = {sizes}  # the same sizes give the same inputs: a second run would only repeat the first
    needed: set[str] = set()  # sizes that, lowered alone to their least, made the failure go away
    again = True
    while again:  # after a smaller failure, or a size found needed: the jumps from there are new
        again = False
        for candidate in _candidates(best, needed, [sizes.following(g) for g in guesses] if best == sizes else []):
            if candidate in tried:
                continue
            if runs >= max_runs or budget.exhausted():
                return _found(best, best_attempt, best_size, size, runs)
            tried.add(candidate)
            started = time.monotonic()
            attempt = rerun(candidate)
            budget.charge(time.monotonic() - started)
            runs += 1
            candidate_size = input_size(attempt.calls)
            if attempt.status == "failed" and candidate_size <= best_size:
                best, best_attempt, best_size, again = candidate, attempt, candidate_size, True
                break
            found = set(_lowered_alone(best, candidate)) - needed if attempt.status == "passed" else set()
            if found:
                needed |= found
                again = True
                break
    return _found(best, best_attempt, best_size, size, runs)


def _candidates(best: Sizes, needed: set[str], guesses: list[Sizes]) -> list[Sizes]:
    """What to try from `best`, in order: its jumps (everything at its least first), then `guesses`, then
    its one-step reductions."""
    jumps = best.jumps(frozenset(needed))
    at = 1 if jumps and jumps[0] == best.smallest() else 0
    return [*jumps[:at], *guesses, *jumps[at:], *best.smaller()]


def _lowered_alone(best: Sizes, candidate: Sizes) -> list[str]:
    """The one size `candidate` lowers to its least from `best`, if that is all it changes; else nothing."""
    changed = [name for (name, value), (_, old) in zip(candidate.named, best.named) if value != old]
    least = best.smallest()
    return changed if len(changed) == 1 and candidate[changed[0]] == least[changed[0]] else []


def input_size(calls: list) -> int:
    """How big a run's inputs are: array entries plus integer arguments (sizes such as a count)."""
    return sum(_size(value) for call, _ in calls for value in (*call.args, *call.kwargs.values()))


def _size(value) -> int:
    if isinstance(value, np.ndarray):
        return int(value.size)
    if isinstance(value, (tuple, list)):
        return sum(_size(v) for v in value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return abs(int(value))
    return 0


def _found(sizes, attempt, size, original_size, runs) -> Shrunk | None:
    if attempt is None or size >= original_size:
        return None
    return Shrunk(sizes, attempt, runs)
