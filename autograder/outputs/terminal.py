"""Results as text for a terminal: a table per submission, a summary for a class, one line per check.

Every text a student controls (an id, a message, a note, the reason a file
did not load) is written on its one line by `autograder.text.one_line`: its
newlines are escapes, so no exception message can add lines of its own (a
"You got 100/100" line) to a TA's summary. The callers print the whole
through `autograder.text.safe` too.
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.grading.ids import roster_order
from autograder.grading.late import LATE_MEANINGS, LateRule, assess_result
from autograder.grading.results import FLAG_MEANINGS, CheckResult, SubmissionResult, flag_kind, flags
from autograder.outputs import audience
from autograder.text import one_line

FULL_TABLES = 3  # up to this many submissions are shown whole; more get one summary line each


@dataclass(frozen=True)
class SummaryRow:
    """What a class summary shows of one result: kept instead of the result while a class of thousands grades.

    score: the total after the late rule, as every export and report shows it.
    """

    student: str
    score: float
    max_score: float
    flags: tuple[str, ...]


def summary_row(result: SubmissionResult, rule: LateRule | None = None) -> SummaryRow:
    """The line a class summary shows for `result`, its total after `rule` (the assignment's late rule)."""
    late = assess_result(rule, result)
    return SummaryRow(result.student, late.total, result.max_score, tuple(table_flags(result) + late.flags()))


def format_results(results: list[SubmissionResult], rule: LateRule | None = None) -> str:
    """Per-function tables for a few submissions (FULL_TABLES); a class summary for many. rule: the late rule."""
    if len(results) <= FULL_TABLES:
        return "\n".join(format_result(r, rule) for r in results)
    return format_summary([summary_row(result, rule) for result in results])


def format_summary(rows: list[SummaryRow]) -> str:
    """A class summary: one line per student, in order, the mean, and what each flag shown means."""
    rows = sorted(rows, key=lambda row: roster_order(row.student))
    width = max(20, *(len(one_line(row.student)) + 2 for row in rows))  # a long id keeps the columns aligned
    lines = [f"{'student':<{width}}{'points':>12}  flags"]
    shown: set[str] = set()
    for row in rows:
        shown.update(flag_kind(flag) for flag in row.flags)
        lines.append(f"{one_line(row.student):<{width}}{f'{row.score:g} / {row.max_score:g}':>12}  "
                     f"{one_line(', '.join(row.flags))}")
    mean = sum(row.score for row in rows) / len(rows)
    lines.append(f"{len(rows)} submissions, mean {mean:.1f} / {rows[0].max_score:g}")
    return "\n".join(lines + flag_legend(shown))


def table_flags(result: SubmissionResult) -> list[str]:
    """A row's flags: `results.flags`, and "error" when a check's call raised (the loaded file's own fault)."""
    found = flags(result)
    if not result.problem and any(t.status == "error" for t in result.tests):
        found.insert(0, "error")
    return found


def flag_legend(shown: set[str]) -> list[str]:
    """One line per flag shown, saying what it means (in FLAG_MEANINGS' order, then the late rule's)."""
    if not shown:
        return []
    meanings = {**FLAG_MEANINGS, **LATE_MEANINGS}
    return ["flags:"] + [f"  {flag}: {meaning}" for flag, meaning in meanings.items() if flag in shown]


def format_result(result: SubmissionResult, rule: LateRule | None = None) -> str:
    """A readable per-function table and the failing checks' messages; the total after `rule`, the late rule."""
    late = assess_result(rule, result)
    lines = [f"{one_line(result.student)}: {late.total:g} / {result.max_score:g} points "
             f"({result.assignment}, sandbox {result.sandbox}, seed {result.seed}, {result.seconds:.1f} s)"]
    if late.reason:
        lines.append(f"  late rule: {one_line(late.reason)}" + (f" ({result.score:g} before it)" if late.penalty
                                                                  else ""))
    if result.problem:
        lines.append(f"  {'' if result.did_not_load else 'could not grade: '}{one_line(result.problem)}")
    lines += [f"  note: {one_line(note)}" for note in result.notes]
    lines.append(f"  {'function':<18}{'points':>12}  checks passed")
    for function, (got, possible) in result.by_function().items():
        tests = [t for t in result.tests if t.function == function]
        passed = sum(t.status == "passed" for t in tests)
        lines.append(f"  {function:<18}{f'{got:g} / {possible:g}':>12}  {passed} / {len(tests)}")
    failing = [t for t in result.tests if t.status != "passed"]
    if failing and not result.problem:
        lines.append("  not passed:")
        for test in failing:
            lines.append(f"    {test.name} [{test.status}, {test.visibility}]: "
                         f"{one_line(audience.message(test, audience.INSTRUCTOR))}")
            if test.explanation:
                lines.append(f"      idea to revisit: {one_line(test.explanation)}")
    return "\n".join(lines)


def format_check(result: CheckResult) -> str:
    """One line of the table: mark, name, visibility, points, and the message of a check that did not pass."""
    mark = "ok" if result.status == "passed" else result.status.upper()
    line = f"  {mark:<7} {result.name:<38} {result.visibility:<6} {result.score:g} / {result.max_score:g}"
    if result.status != "passed":
        line += f"\n          {one_line(result.message)}" + (f" (hint: {one_line(result.hint)})" if result.hint else "")
    return line
