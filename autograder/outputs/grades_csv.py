"""grades.csv: one row per student, the one table of grades every export and report writes.

Points per function, the late penalty (grading.late: `total` is after it,
`raw_total` before), status flags, misconceptions and provenance. Text a
student chose (ids, file names, messages) is made safe for a spreadsheet:
control characters shown as escapes, and a leading "=" and the like made
text, so no cell runs as a formula (OWASP "CSV injection").
"""
from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from autograder.grading.ids import roster_order
from autograder.grading.late import Late, LateRule, assess_result
from autograder.grading.results import SubmissionResult, flags
from autograder.grading.schema import Field, fields_of
from autograder.text import safe


def function_order(results: list[SubmissionResult]) -> list[str]:
    """Every graded function, in check order (first appearance across the results)."""
    return list(dict.fromkeys(f for r in results for f in r.by_function()))


SHORT_SHA = 12


# A spreadsheet runs a cell starting with one of these as a formula; student-chosen text
# (file names, ids) must stay text (OWASP "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Column:
    """One column of grades.csv: its header and how a student's cell is made, in one place."""

    header: str
    cell: Callable[[SubmissionResult, Late], str]


# Fields a row shows in the columns of `columns` before them, or not at all (why); every other field of
# the result (grading.schema) is a column of its own, named as the field, after those.
SHOWN_OTHERWISE = {
    "student": "the first column",
    "score": "raw_total, and total after any late penalty",
    "max_score": "max",
    "tests": "points per function, the counts and the misconceptions",
    "internal_error": "internal_error, 1 or 0 (the traceback is in the report)",
    "isolated": "reduced_sandbox, its opposite",
    "assignment": "one assignment per file",
    "notes": "the report (free text)",
    "printed": "the report (free text, for instructors)",
}


def columns(functions: list[str], kind: type = SubmissionResult) -> list[Column]:
    """Every column, in order: function columns are written `name()` so `score()` is not mistaken for the total.

    late_by: hours after the student's own due time (0 when on time; empty when the assignment has no due time).
    """
    return [
        Column("student", lambda r, late: cell(r.student)),
        Column("total", lambda r, late: _graded(r, late.total)),
        Column("max", lambda r, late: _number(r.max_score)),
        *(_function_column(f) for f in functions),
        Column("raw_total", lambda r, late: _graded(r, r.score)),
        Column("penalty", lambda r, late: _number(late.penalty)),
        Column("late_by", lambda r, late: "" if late.late_by_hours is None else _number(late.late_by_hours)),
        Column("penalty_reason", lambda r, late: cell(late.reason)),
        Column("passed", lambda r, late: str(r.counts()["passed"])),
        Column("failed", lambda r, late: str(r.counts()["failed"])),
        Column("errors", lambda r, late: str(r.counts()["error"])),
        Column("timeouts", lambda r, late: str(r.counts()["timeout"])),
        Column("could_not_grade", lambda r, late: "1" if r.problem else "0"),
        Column("internal_error", lambda r, late: "1" if r.internal_error else "0"),
        Column("reduced_sandbox", lambda r, late: "0" if r.isolated else "1"),
        Column("flags", lambda r, late: cell("; ".join(flags(r) + late.flags()))),
        Column("misconceptions", lambda r, late: "; ".join(sorted({t.misconception for t in r.tests
                                                                   if t.misconception}))),
        *(_field_column(field) for field in fields_of(kind) if field.name not in SHOWN_OTHERWISE),
    ]


def _function_column(function: str) -> Column:
    """A function's points; empty for a student whose suite did not grade it."""
    def points(result: SubmissionResult, late: Late) -> str:
        got = result.by_function().get(function)
        return "" if got is None else _graded(result, got[0])
    return Column(f"{function}()", points)


def _graded(result: SubmissionResult, points: float | None) -> str:
    """Points as a cell; empty where the grader failed on the file (no grade yet, as the LMS exports leave it)."""
    return "" if result.internal_error else _number(points)


# Fields written as the late rule reads them (grading.late.stated): a Blackboard time, stored without a zone, in UTC.
READ_BY_THE_LATE_RULE = ("submitted_at", "submitted_at_source")


def _field_column(field: Field) -> Column:
    """A field's column, its cell made from the field's type."""
    def value(result: SubmissionResult, late: Late) -> str:
        if field.name in READ_BY_THE_LATE_RULE:
            return cell(getattr(late, field.name))
        return _field_cell(field, getattr(result, field.name))
    return Column(field.name, value)


def _field_cell(field: Field, value) -> str:
    if value is None:
        return ""
    if field.type is bool:
        return "1" if value else "0"
    if field.type is float:
        return f"{value:.3f}"
    if field.type is tuple:
        return cell("; ".join(map(str, value)))
    if field.name == "sha256":  # enough to tell files apart; the report and the store have all of it
        return value[:SHORT_SHA]
    return cell(str(value))


def write_csv(results: list[SubmissionResult], stream: TextIO, rule: LateRule | None = None) -> list[str]:
    """One row per student (sorted by student), header first; `rule`: the assignment's late rule.

    Each row is built on its own: a student whose stored data cannot make a row is left out and
    returned as "<student>: <why>", and every other row is written.
    """
    table = columns(function_order(results), type(results[0]) if results else SubmissionResult)
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow([column.header for column in table])
    refused = []
    for result in sorted(results, key=lambda r: roster_order(r.student)):
        try:
            late = assess_result(rule, result)
            row = [column.cell(result, late) for column in table]
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
