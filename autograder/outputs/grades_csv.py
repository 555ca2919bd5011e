"""grades.csv: one row per student, the one table of grades every export and report writes.

Points per function, the late penalty (grading.late: `total` is after it,
`raw_total` before), status flags, misconceptions and provenance. Text a
student chose (ids, file names, messages) is made safe for a spreadsheet:
control characters shown as escapes, and a leading "=" and the like made
text, so no cell runs as a formula (OWASP "CSV injection").
"""
from __future__ import annotations

import csv
from typing import TextIO

from autograder.grading.late import Late, LateRule, assess_result
from autograder.grading.results import SubmissionResult, flags
from autograder.text import safe


def function_order(results: list[SubmissionResult]) -> list[str]:
    """Every graded function, in check order (first appearance across the results)."""
    return list(dict.fromkeys(f for r in results for f in r.by_function()))


# late_by: hours after the student's own due time (0 when on time; empty when the assignment has no due time).
LATE_COLUMNS = ("raw_total", "penalty", "late_by", "submitted_at", "submitted_at_source", "penalty_reason")


FLAG_COLUMNS = ("passed", "failed", "errors", "timeouts", "could_not_grade", "problem", "internal_error",
                "reduced_sandbox", "sandbox", "killed_processes", "flags", "misconceptions", "seconds")


PROVENANCE_COLUMNS = ("sha256", "suite_version", "seed", "graded_at", "file")


SHORT_SHA = 12


# A spreadsheet runs a cell starting with one of these as a formula; student-chosen text
# (file names, ids) must stay text (OWASP "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_header(functions: list[str]) -> list[str]:
    """Column names: function columns are written `name()` so `score()` is not mistaken for the total."""
    return ["student", "total", "max", *(f"{f}()" for f in functions), *LATE_COLUMNS, *FLAG_COLUMNS,
            *PROVENANCE_COLUMNS]


def csv_row(result: SubmissionResult, functions: list[str], late: Late | None = None) -> list[str]:
    """One student's row; a function the student's suite did not grade is left empty.

    late: the late rule's verdict on this result (default: none applies, total = raw total).
    """
    counts = result.counts()
    points = result.by_function()
    late = late or Late(result.score)
    return [
        cell(result.student), _number(late.total), _number(result.max_score),
        *(_number(points[f][0]) if f in points else "" for f in functions),
        _number(result.score), _number(late.penalty), "" if late.late_by_hours is None else _number(late.late_by_hours),
        result.submitted_at, result.submitted_at_source, cell(late.reason),
        str(counts["passed"]), str(counts["failed"]), str(counts["error"]), str(counts["timeout"]),
        "1" if result.problem else "0", cell(result.problem), "1" if result.internal_error else "0",
        "0" if result.sandbox == "bwrap" else "1", result.sandbox, str(result.killed_processes),
        cell("; ".join(flags(result) + late.flags())),
        "; ".join(sorted({t.misconception for t in result.tests if t.misconception})),
        f"{result.seconds:.3f}", result.sha256[:SHORT_SHA], result.suite_version, str(result.seed), result.graded_at,
        cell(result.file),
    ]


def write_csv(results: list[SubmissionResult], stream: TextIO, rule: LateRule | None = None) -> list[str]:
    """One row per student (sorted by student), header first; `rule`: the assignment's late rule.

    Each row is built on its own: a student whose stored data cannot make a row is left out and
    returned as "<student>: <why>", and every other row is written.
    """
    functions = function_order(results)
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(csv_header(functions))
    refused = []
    for result in sorted(results, key=lambda r: r.student):
        try:
            row = csv_row(result, functions, assess_result(rule, result))
        except (ValueError, TypeError, KeyError, OverflowError) as error:
            refused.append(f"{safe(result.student, 200)}: its stored result cannot make a row ({safe(error, 200)}); "
                           "regrade it with `autograder grade --force` and export again")
            continue
        writer.writerow(row)
    return refused


def _number(value: float) -> str:
    """Points without float noise: 14.0 -> "14", 2.5 -> "2.5"."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def cell(value: str) -> str:
    """Text for a spreadsheet cell: control characters visible, and never a formula."""
    value = safe(value)
    return "'" + value if value.startswith(_FORMULA_STARTS) else value
