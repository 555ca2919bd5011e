"""Which of a student's hand-ins counts: course.yaml's `submissions: {policy, max, missing}`.

- `last` (the default, and the behaviour before attempts were kept): the
  last hand-in counts.
- `best`: the hand-in with the highest total after the late rule
  (grading.late) counts; of two equal, the later.
- `last_on_time`: the last hand-in handed in by the student's due time (their
  extension, plus the grace) counts; when none was, the last one does, with
  its penalty.
- `max: N`: hand-ins after the N-th are graded and kept, but flagged and never
  counted.
- `missing: blank | zero`: what an LMS export writes for a student on the
  roster with no hand-in (blank: the LMS shows it as not submitted).

The student's feedback says which hand-in counts and why (`counted_results`
adds it to the result's notes). Nothing here is stored: a changed policy
takes effect at the next export or report, as a changed late rule does.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from autograder.grading.history import Attempt
from autograder.grading.late import LateRule, assess_result
from autograder.grading.results import SubmissionResult

POLICIES = ("last", "best", "last_on_time")
MISSING = ("blank", "zero")


@dataclass(frozen=True)
class SubmissionPolicy:
    """An assignment's `submissions` settings. limit: the most hand-ins that count (None: any number)."""

    policy: str = "last"
    limit: int | None = None
    missing: str = "blank"


@dataclass(frozen=True)
class Choice:
    """The hand-in that counts for one student, and why.

    reason: one sentence for the student ("" when there is nothing to say: a
    single hand-in counted as always). over_limit: numbers of the hand-ins
    after `max`, graded and kept but not counted.
    """

    counted: Attempt
    handed_in: int
    reason: str
    over_limit: tuple[int, ...] = ()


def choose(attempts: list[Attempt], policy: SubmissionPolicy, rule: LateRule | None) -> Choice:
    """The hand-in `policy` counts of one student's `attempts` (in the order handed in; at least one). A hand-in
    with no file of the assignment (a folder holding only a PDF) counts toward no limit and is never counted over
    one that had a file: it was no attempt at the work, and with `max: 1` it had used up the student's hand-in."""
    with_files = [a for a in attempts if a.sha256] or attempts
    allowed = with_files[:policy.limit] if policy.limit else with_files
    over = tuple(a.number for a in with_files[len(allowed):])
    if policy.policy == "best":
        counted = max(reversed(allowed), key=lambda a: assess_result(rule, a.current.result).total)
        why = f"it has your highest total after the late rule ({_points(total_of(counted, rule))} points)"
    elif policy.policy == "last_on_time":
        on_time = [a for a in allowed if assess_result(rule, a.current.result).days == 0]
        counted = (on_time or allowed)[-1]
        why = ("it is your last hand-in by the due time" if on_time else
               "none of your hand-ins was on time, so the last one counts, with its penalty")
    else:
        counted = allowed[-1]
        why = "it is your last hand-in" + (f" within the limit of {policy.limit}" if over else "")
    reason = f"Hand-in {counted.number} of {len(attempts)} counts: {why} (policy: {policy.policy})." \
        if len(attempts) > 1 else ""
    if over:
        reason += (f" {_numbers(over)} came after the limit of {policy.limit} hand-ins: graded and kept, but not "
                   "counted.")
    return Choice(counted, len(attempts), reason.strip(), over)


def total_of(attempt: Attempt, rule: LateRule | None) -> float:
    """The hand-in's current total after the late rule."""
    return assess_result(rule, attempt.current.result).total


def counted_result(choice: Choice) -> SubmissionResult:
    """The counted hand-in's current result, its notes first saying which hand-in counts and why, and whether a
    regrade's lower score was held back (`regrade --no-decrease`)."""
    current = choice.counted.current
    later = [e for e in choice.counted.entries if e.held and e.order > current.order]
    notes = [note for note in (choice.reason, later[-1].held if later else "") if note]
    result = current.result
    return dataclasses.replace(result, notes=(*notes, *result.notes)) if notes else result


def counted_results(by_student: dict[str, list[Attempt]], policy: SubmissionPolicy,
                    rule: LateRule | None) -> tuple[list[SubmissionResult], list[str]]:
    """(the result that counts for each student, by student; the students with hand-ins over the limit)."""
    results, over = [], []
    for student in sorted(by_student):
        choice = choose(by_student[student], policy, rule)
        results.append(counted_result(choice))
        if choice.over_limit:
            over.append(student)
    return results, over


def _numbers(numbers: tuple[int, ...]) -> str:
    if len(numbers) == 1:
        return f"Hand-in {numbers[0]}"
    return "Hand-ins " + ", ".join(map(str, numbers[:-1])) + f" and {numbers[-1]}"


def _points(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")
