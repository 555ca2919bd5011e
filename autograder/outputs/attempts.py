"""A student's hand-ins and a regrade's moves, as text for a terminal and as JSON lines (`history`, `regrade`)."""
from __future__ import annotations

import json

from autograder.grading.attempts import SubmissionPolicy, choose
from autograder.grading.history import Attempt
from autograder.grading.late import LateRule, assess_result
from autograder.grading.regrade import Move
from autograder.grading.retract import withdrawn
from autograder.text import command, counted, one_line

SHORT_SHA = 12


def history_rows(attempts: list[Attempt], policy: SubmissionPolicy, rule: LateRule | None) -> list[dict]:
    """One row per result kept, oldest hand-in first: what it was, and whether it counts (and if not, why). A
    retracted hand-in (grading.retract) keeps its number and says when and why; the others are chosen from."""
    standing = [attempt for attempt in attempts if not withdrawn(attempt)]
    choice = choose(standing, policy, rule) if standing else None
    rows = []
    for attempt in attempts:
        current = attempt.current
        for entry in attempt.entries:
            result = entry.result
            if entry.retracted:
                back = command("retract", [result.assignment, result.student], ["--handin", attempt.number, "--undo"])
                status = f"{one_line(entry.retracted, 600)} (`{back}` puts it back)"
            elif entry.held:
                status = "held back: a regrade scored lower (--no-decrease)"
            elif entry is not current:
                status = "replaced by a later grading of this hand-in"
            elif attempt.number in choice.over_limit:
                status = f"over the limit of {policy.limit} hand-ins: not counted"
            else:
                status = "counts" if attempt is choice.counted else f"not counted (policy: {policy.policy})"
            late = assess_result(rule, result)
            rows.append({"student": result.student, "hand_in": attempt.number, "graded_at": result.graded_at,
                         "submitted_at": late.submitted_at, "sha256": result.sha256,
                         "suite_version": result.suite_version, "score": result.score, "max_score": result.max_score,
                         "total": late.total, "counts": status == "counts", "status": status,
                         "internal_error": bool(result.internal_error), "retracted": entry.retracted})
    return rows


def history_lines(attempts: list[Attempt], policy: SubmissionPolicy, rule: LateRule | None) -> list[str]:
    """`history --json`: one JSON object per result."""
    return [json.dumps(row) for row in history_rows(attempts, policy, rule)]


def format_history(student: str, attempts: list[Attempt], policy: SubmissionPolicy, rule: LateRule | None) -> str:
    """`history`: a table of every result kept of the student's hand-ins, and which one counts."""
    lines = [f"{student}: {counted(len(attempts), 'hand-in')} (policy: {policy.policy}"
             + (f", at most {policy.limit} count" if policy.limit else "") + ")",
             f"{'#':>3}  {'graded at':<26}{'handed in':<34}{'sha256':<14}{'suite':<18}{'points':>14}"
             f"{'total':>9}  status"]
    for row in history_rows(attempts, policy, rule):
        points = f"{row['score']:g} / {row['max_score']:g}"
        lines.append(f"{row['hand_in']:>3}  {row['graded_at']:<26}{row['submitted_at'] or 'unknown':<34}"
                     f"{row['sha256'][:SHORT_SHA]:<14}{row['suite_version'][:16]:<18}{points:>14}{row['total']:>9g}  "
                     f"{row['status']}")
    return "\n".join(lines + [line for line in [_counted_line(attempts, policy, rule)] if line])


def _counted_line(attempts: list[Attempt], policy: SubmissionPolicy, rule: LateRule | None) -> str:
    """Which hand-in counts and why, as the feedback says it; with some retracted, in `history`'s numbers, and that
    the feedback numbers only those left (a retracted hand-in is as if never handed in)."""
    standing = [attempt for attempt in attempts if not withdrawn(attempt)]
    if len(standing) == len(attempts):
        return choose(attempts, policy, rule).reason
    gone = [attempt.number for attempt in attempts if withdrawn(attempt)]
    said = f"{counted(len(gone), 'hand-in')} retracted ({', '.join(map(str, gone))}): counted nowhere"
    if not standing:
        return f"{said}, so there is no result for this student in any report or export."
    counts = choose(standing, policy, rule).counted.number
    return (f"Hand-in {counts} counts (policy: {policy.policy}); {said}, and the student's feedback numbers only "
            f"the {counted(len(standing), 'hand-in')} left.")


def move_row(move: Move) -> dict:
    return {"student": move.student, "before": move.before, "after": move.after,
            "flipped": [{"check": name, "before": was, "after": now} for name, was, now in move.flipped],
            "kept_earlier": move.held}


def move_lines(moved: list[Move]) -> list[str]:
    """`regrade --json`: one JSON object per moved student: student, before, after, the flipped checks."""
    return [json.dumps(move_row(move)) for move in moved]


def format_moves(moved: list[Move]) -> str:
    """`regrade`: a table of the students whose total or any check's verdict changes."""
    if not moved:
        return "no student's total or check verdicts change"
    width = max(20, *(len(m.student) + 2 for m in moved))
    lines = [f"{'student':<{width}}{'before':>9}{'after':>9}  checks that flipped"]
    for move in moved:
        flipped = ", ".join(f"{name} {was}→{now}" for name, was, now in move.flipped) or "none (points only)"
        kept = "  (earlier result kept: --no-decrease)" if move.held else ""
        lines.append(f"{move.student:<{width}}{move.before:>9g}{move.after:>9g}  {flipped}{kept}")
    return "\n".join(lines)
