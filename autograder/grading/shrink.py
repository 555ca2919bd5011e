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
after `MAX_RUNS` re-runs, or when the submission's shrinking time is spent
(`ShrinkBudget`: a share of the graded run's own time, so a failing file
costs little more than a right one). The caller re-runs the check with a fresh Trial (same
seed) in a child of the submission once every graded call has been answered
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
SUBMISSION_SHARE = 0.1  # of a submission's time budget that shrinking may use, all checks together
MAX_SUBMISSION_SECONDS = 0.25  # a re-run takes a few ms: room for some 80 of them
GRADED_SHARE = 0.5  # of the graded run's wall time (loading and every check): so a failing file costs at most ~1.5x


@dataclass
class ShrinkBudget:
    """Wall-clock seconds one submission may spend shrinking, all its checks together."""

    seconds: float
    spent: float = 0.0

    @classmethod
    def for_submission(cls, submission_seconds: float, graded_seconds: float) -> ShrinkBudget:
        """The budget of a submission whose time limit is `submission_seconds` and whose graded run took
        `graded_seconds`: shrinking is feedback, and must not make grading a failing file much slower than
        grading a right one, which takes about as long as that graded run. A new child's start, where one
        is needed, is not counted (see the module's docstring); both shares are of times measured under the
        same load."""
        return cls(min(MAX_SUBMISSION_SECONDS, SUBMISSION_SHARE * submission_seconds, GRADED_SHARE * graded_seconds))

    def left(self) -> float:
        return self.seconds - self.spent


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
            if runs >= max_runs or budget.left() <= 0:
                return _found(best, best_attempt, best_size, size, runs)
            tried.add(candidate)
            started = time.monotonic()
            attempt = rerun(candidate)
            budget.spent += time.monotonic() - started
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
