"""Why a class's results are out of different maximums, for the class report: results kept from an earlier suite
by `regrade --no-decrease` (a regrade under the current suite scored them lower), or graded under an earlier suite
and not regraded since, are out of the points that suite had."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from autograder.grading.regrade import kept_by_no_decrease
from autograder.grading.results import SubmissionResult
from autograder.text import counted

KEPT = "kept from an earlier suite by regrade --no-decrease"
EARLIER = "graded under an earlier suite"


@dataclass(frozen=True)
class OutOf:
    """usual: the maximum the class is out of (that of the results regraded or graded last); why: student ->
    why their result is out of another maximum; note: one sentence saying which results are out of which ("" when
    every result is out of `usual`)."""

    usual: float
    why: dict[str, str]
    note: str


def out_of(results: list[SubmissionResult]) -> OutOf:
    """The maximums of `results` (at least one), and why any result is out of another than most."""
    current = [r for r in results if not kept_by_no_decrease(r)] or results
    counts = Counter(r.max_score for r in current)
    usual = max(counts, key=lambda maximum: (counts[maximum], maximum))
    why = {r.student: KEPT if kept_by_no_decrease(r) else EARLIER for r in results if r.max_score != usual}
    groups = Counter((r.max_score, why[r.student]) for r in results if r.student in why)
    parts = [f"{counted(n, 'result')} {reason} {'is' if n == 1 else 'are'} out of {maximum:g}"
             + (" (the current suite scored them lower)" if reason == KEPT else " (`autograder regrade` grades them "
                                                                                "under the current suite)")
             for (maximum, reason), n in sorted(groups.items())]
    return OutOf(usual, why, "; ".join(parts))
