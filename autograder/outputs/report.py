"""Feedback for each student and a report for the class, written from the results store.

`write_reports` turns the stored results of one assignment into
`feedback/<student>.html` and `.md`, one self-contained `index.html` (plots
embedded as PNG data, nothing fetched from the network) and `grades.csv`.
It reads only what the grader stored: hidden checks' results hold their
name, message and hint but never their inputs or expected values (see
`autograder.grading.examples`), and what a student's page shows of each part of a
result is decided by `autograder.outputs.audience`, as for every output.

Everything a student controls (ids, printed output, exception messages
inside check messages) is escaped: the HTML templates autoescape, and the
Markdown environment escapes every value it prints (`autograder.outputs.markdown`), inline marks
and the starts of blocks alike, unless it is a fenced code block built there.
"""
from __future__ import annotations

import bisect
import re
import statistics
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import jinja2
from markupsafe import Markup

from autograder.grading.examples import render_value
from autograder.grading.late import LATE_MEANINGS, TOTAL_DIGITS, Late, LateRule, assess_result
from autograder.grading.results import FLAG_MEANINGS, NOT_LOADED, CheckResult, SubmissionResult, flag_kind, flags
from autograder.outputs import audience, replaced_whole, write_whole
from autograder.outputs import markdown as markdown_text
from autograder.outputs.feedback_files import feedback_files, remove_stale
from autograder.outputs.grades_csv import write_csv
from autograder.outputs.maximums import OutOf, out_of
from autograder.outputs.plots import plots
from autograder.text import counted, safe

TEMPLATES = Path(__file__).parent / "templates"
HISTOGRAM_BINS = 10


# ---------------------------------------------------------------- one student


@dataclass(frozen=True)
class ShownCall:
    """One call of a public example: `function(args)` and what came back."""

    function: str
    args: list[tuple[str, str]]  # (parameter, rendered value)
    outcome: str  # "returned" or "raised"
    value: str


@dataclass(frozen=True)
class ShownFailure:
    """A check the student did not pass, as their feedback shows it."""

    check: CheckResult
    lost: float
    sizes: str = ""  # the smallest failing sizes, when the failure was shrunk
    smallest_message: str = ""  # the check's message at those sizes
    calls: list[ShownCall] = field(default_factory=list)  # public checks only
    expected: str = ""  # public checks only
    omitted: str = ""  # why the example is not kept (larger than its budget, grading.results)


@dataclass(frozen=True)
class StudentPage:
    """Everything one student's feedback shows."""

    result: SubmissionResult
    file: str  # file name (without suffix) of the feedback page
    summary: str
    functions: list[tuple[str, float, float, int, int]]  # (function, points, possible, passed, checks)
    failures: list[ShownFailure]
    stopped: list[str]  # what the sandbox stopped, in plain words
    flags: list[str]
    late: Late  # the late rule's verdict: its total is the page's total
    output: str = ""  # what the code printed, as the student may see it (outputs.audience)
    output_note: str = ""  # why printed output is not shown, when it is not


NOT_GRADED = ("Not graded yet: the grader itself failed on this file, which is no fault of your code; your "
              "instructor has its report and will grade the file again")


def summary_sentence(result: SubmissionResult) -> str:
    """One line on how the submission did; never "all passed" while any check, hidden ones included, failed."""
    if result.internal_error:
        return NOT_GRADED + "."
    if result.did_not_load:
        return f"Your file did not load, so no check could run: {result.problem.removeprefix(NOT_LOADED + ': ')}"
    if result.problem:
        return f"Your file could not be graded: {result.problem}"
    failed = {v: sum(t.visibility == v and t.status != "passed" for t in result.tests) for v in ("public", "hidden")}
    total = {v: sum(t.visibility == v for t in result.tests) for v in ("public", "hidden")}
    if not failed["public"] and not failed["hidden"]:
        return f"All {len(result.tests)} checks passed, public and hidden."
    if not failed["public"]:
        return (f"All public checks passed; {_count(failed['hidden'], 'hidden check')} of {total['hidden']} "
                "did not pass.")
    if not failed["hidden"]:
        return (f"{_count(failed['public'], 'public check')} of {total['public']} did not pass; all hidden checks "
                "passed.")
    return (f"{_count(failed['public'], 'public check')} of {total['public']} and "
            f"{_count(failed['hidden'], 'hidden check')} of {total['hidden']} did not pass.")


# "f raised NameError at line 5, in helper: name 'x' is not defined (given a: ...)": the error, where, what.
_RAISED = re.compile(r" raised (\w+) at (.+?): (.+?)(?: \(given |; |\. \w+ calls |$)")
ONE_CAUSE_FROM = 3  # failed checks ending in the same error, and at least half of them, to say it once first


def one_cause(result: SubmissionResult) -> str:
    """A sentence naming the error most failed checks end in (a missing import, a helper that raises), which each
    of their messages says again further down; "" where no one error is most of them."""
    failed = [t for t in result.tests if t.status != "passed"]
    raised = [match.groups() for match in (_RAISED.search(t.message) for t in failed) if match]
    found = Counter((kind, words) for kind, _, words in raised)
    if not found:
        return ""
    (kind, words), count = found.most_common(1)[0]
    if count < ONE_CAUSE_FROM or 2 * count < len(failed):
        return ""
    places = list(dict.fromkeys(where for k, where, w in raised if (k, w) == (kind, words)))  # in order, once each
    shown = "; ".join(places[:3]) + (f"; and {len(places) - 3} more places" if len(places) > 3 else "")
    return (f"{count} of the {len(failed)} checks that did not pass end in the same error, {kind}: {words} "
            f"({shown}). Fix that first: they may all pass with it.")


def student_page(result: SubmissionResult, file: str, late: Late | None = None) -> StudentPage:
    late = late or Late(result.score)
    functions = []
    for function, (got, possible) in result.by_function().items():
        tests = [t for t in result.tests if t.function == function]
        functions.append((function, got, possible, sum(t.status == "passed" for t in tests), len(tests)))
    failures = [] if result.problem else [_shown_failure(t) for t in result.tests if t.status != "passed"]
    summary = " ".join(part for part in (summary_sentence(result), "" if result.problem else one_cause(result)) if part)
    return StudentPage(result, file, summary, functions, failures, sandbox_events(result),
                       flags(result) + late.flags(), late, audience.submission_output(result, audience.STUDENT),
                       audience.submission_output_note(result, audience.STUDENT))


def _shown_failure(check: CheckResult) -> ShownFailure:
    lost = round(check.max_score - check.score, 6)
    example = audience.example(check, audience.STUDENT)  # a hidden check's: its sizes only
    sizes = _sizes(example["sizes"]) if isinstance(example.get("sizes"), dict) else ""
    omitted = safe(example.get("omitted", ""), 500)
    if check.visibility != "public":
        return ShownFailure(check, lost, sizes, omitted=omitted)
    smallest = example.get("message", "") if sizes else ""
    calls = [ShownCall(c.get("function", "?"), [(name, render_value(v)) for name, v in c.get("args", {}).items()],
                       "raised" if "raised" in c else "returned",
                       c["raised"] if "raised" in c else render_value(c.get("returned")))
             for c in example.get("calls", [])]
    expected = render_value(example["expected"]) if "expected" in example else ""
    return ShownFailure(check, lost, sizes, smallest, calls, expected, omitted)


def _sizes(sizes: dict) -> str:
    """The assignment's own size names: "n = 1, batch = (2,)"; an empty tuple of axes is "no batch axes"."""
    shown = [(f"{name} = {tuple(value)}" if value else f"no {name} axes") if isinstance(value, list) else
             f"{name} = {value}" for name, value in sizes.items()]
    return ", ".join(shown)


def sandbox_events(result: SubmissionResult) -> list[str]:
    """What the sandbox stopped or changed while grading this submission, in plain words.

    Checks stopped with the same message are one line ("4 checks (f.a, f.b, ...): message").
    """
    stopped: dict[str, list[str]] = {}
    for test in result.tests:
        if test.stopped or test.status == "timeout":
            stopped.setdefault(test.message, []).append(test.name)
    events = [f"{names[0]}: {message}" if len(names) == 1 else f"{len(names)} checks ({_names(names)}): {message}"
              for message, names in stopped.items()]
    if result.killed_processes:
        events.append(f"{_count(result.killed_processes, 'process')} your code left running "
                      f"{'was' if result.killed_processes == 1 else 'were'} stopped.")
    if not result.isolated:
        events.append(f"Your code ran in the reduced sandbox ({result.sandbox}) because bubblewrap was not available "
                      "on the grading machine; this does not change your score.")
    events += list(result.notes)
    return events


def _names(names: list[str], shown: int = 3) -> str:
    return ", ".join(names[:shown]) + (", …" if len(names) > shown else "")


def _count(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("s") else "s")
    return f"{n} {noun if n == 1 else plural}"


# ---------------------------------------------------------------- the class


@dataclass(frozen=True)
class ClassReport:
    """Everything index.html shows."""

    assignment: str
    students: list[StudentPage]
    max_score: float
    histogram: list[tuple[float, float, int]]  # (low, high, submissions); the last bin includes its high end
    checks: list[tuple[str, str, str, int, int]]  # (check, function, visibility, passed, graded), see grouped_checks
    functions: list[tuple[str, float, float]]  # (function, mean points, possible)
    misconceptions: list[tuple[str, str, int, int]]  # (id, sentence, students, checks)
    flagged: list[StudentPage]
    seconds: dict[str, float]
    scores: dict[str, float]  # mean, median, q1, q3, lowest, highest of the totals (after late penalties)
    flag_meanings: list[tuple[str, str]]  # (flag, what it means) for each kind of flag the class has
    flagged_groups: list[FlaggedGroup]  # the flagged submissions, those with the same flags and messages together
    plots: dict[str, str] = field(default_factory=dict)  # name -> data: URI
    out_of: OutOf | None = None  # the class's maximum, and why a result is out of another (outputs.maximums)
    # (student, check, its message in full): text the code chose that hidden checks' feedback left out
    withheld: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class FlaggedGroup:
    """Flagged submissions that show the same flags and the same messages: one row of the flagged list."""

    flags: list[str]
    problem: str
    events: list[str]
    internal_error: str
    students: list[StudentPage]


def flagged_groups(flagged: list[StudentPage]) -> list[FlaggedGroup]:
    """`flagged` with repeats collapsed, in order of first appearance."""
    groups: dict[tuple, FlaggedGroup] = {}
    for page in flagged:
        key = (tuple(page.flags), page.result.problem, tuple(page.stopped), page.result.internal_error)
        if key not in groups:
            groups[key] = FlaggedGroup(page.flags, page.result.problem, page.stopped, page.result.internal_error, [])
        groups[key].students.append(page)
    return list(groups.values())


def score_summary(totals: list[float]) -> dict[str, float]:
    """The class at a glance: mean, median, quartiles (inclusive method), lowest and highest total."""
    quartiles = statistics.quantiles(totals, n=4, method="inclusive") if len(totals) > 1 else totals * 3
    return {"mean": statistics.fmean(totals), "median": statistics.median(totals), "q1": quartiles[0],
            "q3": quartiles[2], "lowest": min(totals), "highest": max(totals)}


def grouped_checks(rows: list[tuple[str, str, str, int, int]]) -> list[tuple[str, str, str, int, int]]:
    """(check, function, visibility, passed, graded) grouped by function in check order, lowest pass rate first."""
    order = list(dict.fromkeys(function for _, function, *_ in rows))
    return sorted(rows, key=lambda row: (order.index(row[1]), row[3] / row[4] if row[4] else 0.0, row[0]))


def histogram(scores: list[float], max_score: float, bins: int = HISTOGRAM_BINS) -> list[tuple[float, float, int]]:
    """Equal-width bins over [0, max_score]; a score on an inner edge counts in the upper bin."""
    width = max_score / bins if max_score > 0 else 1.0
    edges = [round(i * width, TOTAL_DIGITS) for i in range(bins + 1)]  # as the table shows them, as precise as totals
    counts = [0] * bins
    for score in scores:
        # Against the edges the table shows: a late total on an edge (92.7 of 103) is on it, where
        # `score // width` put it in the lower bin (92.7 // 10.3 is 8.0).
        counts[min(bins - 1, max(0, bisect.bisect_right(edges, round(score, TOTAL_DIGITS)) - 1))] += 1
    return [(edges[i], edges[i + 1], counts[i]) for i in range(bins)]


def class_report(assignment: str, results: list[SubmissionResult], files: dict[str, str],
                 rule: LateRule | None = None) -> ClassReport:
    students = [student_page(r, files[r.student], assess_result(rule, r)) for r in results]
    max_score = max(r.max_score for r in results)
    checks = {}
    for result in results:  # a file that did not load ran no check: its rows count in no rate
        for test in result.tests:
            row = checks.setdefault(test.name, [test.function, test.visibility, 0, 0])
            row[2] += test.status == "passed" and not result.problem
            row[3] += not result.problem
    # A file the grader failed on has no grade yet: its 0 is no student's result, in the class's figures.
    graded = [s for s in students if not s.result.internal_error] or students
    functions = {}
    for result in (s.result for s in graded):
        for function, (got, possible) in result.by_function().items():
            functions.setdefault(function, ([], possible))[0].append(got)
    seconds = [r.seconds for r in results]
    flagged = [s for s in students if s.flags]
    kinds = {flag_kind(flag) for page in flagged for flag in page.flags}
    return ClassReport(
        assignment=assignment, students=students, max_score=max_score,
        histogram=histogram([s.late.total for s in graded], max_score),
        checks=grouped_checks([(name, f, v, passed, n) for name, (f, v, passed, n) in checks.items()]),
        functions=[(f, round(statistics.fmean(got), 3), possible) for f, (got, possible) in functions.items()],
        misconceptions=misconception_counts(results),
        flagged=flagged,
        seconds={"total": sum(seconds), "mean": statistics.fmean(seconds), "median": statistics.median(seconds),
                 "max": max(seconds)},
        scores=score_summary([s.late.total for s in graded]),
        flag_meanings=[(flag, meaning) for flag, meaning in {**FLAG_MEANINGS, **LATE_MEANINGS}.items()
                       if flag in kinds],
        flagged_groups=flagged_groups(flagged), out_of=out_of(results),
        withheld=[(r.student, t.name, audience.withheld(t, audience.INSTRUCTOR)) for r in results for t in r.tests
                  if audience.withheld(t, audience.INSTRUCTOR)])


def misconception_counts(results: list[SubmissionResult]) -> list[tuple[str, str, int, int]]:
    """(id, sentence, students showing it, checks reporting it), most common first."""
    found: dict[str, list] = {}
    for result in results:
        for test in result.tests:
            if test.misconception:
                row = found.setdefault(test.misconception, [test.explanation, set(), 0])
                row[1].add(result.student)
                row[2] += 1
    rows = [(idea, sentence, len(students), checks) for idea, (sentence, students, checks) in found.items()]
    return sorted(rows, key=lambda row: (-row[2], row[0]))


# ---------------------------------------------------------------- writing


def _html_text(value):
    """Text shown in a page: control characters made visible (autoescape then handles the markup)."""
    return safe(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def _environments() -> tuple[jinja2.Environment, jinja2.Environment]:
    loader = jinja2.FileSystemLoader(TEMPLATES)
    html = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                              finalize=_html_text, trim_blocks=True, lstrip_blocks=True)
    markdown = jinja2.Environment(loader=loader, autoescape=False, finalize=markdown_text.escape,
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    markdown.filters["code"] = markdown_text.code_block
    html.filters["message"] = markdown_text.html_with_code
    for env in (html, markdown):
        env.filters["points"] = lambda x: f"{x:g}"
        env.filters["counted_points"] = lambda x: counted(x, "point")  # "−1 point", "−2 points"
        # A page's name holds %XX (feedback_files): a link quotes it again, or a browser reads `a%20b` as `a b`.
        env.filters["link"] = lambda name: urllib.parse.quote(name, safe="")
    return html, markdown


@dataclass(frozen=True)
class Written:
    """What `write_reports` wrote: the class report, and each student whose feedback could not be written."""

    index: Path
    refused: list[str]  # "<student>: <why and what to do>"; everyone else's feedback is written


def write_reports(assignment: str, results: list[SubmissionResult], out: Path,
                  rule: LateRule | None = None) -> Written:
    """Write feedback/<student>.html and .md, index.html and grades.csv under `out`.

    rule: the assignment's late rule (course.yaml); totals are after its penalty, with its reason shown.
    Each student's feedback is written on its own: one that cannot be is listed in `refused`.
    """
    out = Path(out)
    (out / "feedback").mkdir(parents=True, exist_ok=True)
    files = feedback_files([r.student for r in results])
    refused: list[str] = []
    usable = [r for r in results if _page_or_refusal(r, files[r.student], rule, refused)]
    report = class_report(assignment, usable, files, rule) if usable else None
    html, markdown = _environments()
    pages = []
    for page in report.students if report else []:
        context = {"page": page, "assignment": assignment}
        try:
            write_whole(out / "feedback" / f"{page.file}.html", html.get_template("student.html").render(context))
            write_whole(out / "feedback" / f"{page.file}.md", markdown.get_template("student.md").render(context))
            pages += [f"{page.file}.html", f"{page.file}.md"]
        except (OSError, ValueError, TypeError, KeyError, jinja2.TemplateError) as error:
            refused.append(_refusal(page.result, error))
    remove_stale(out / "feedback", pages)
    index = out / "index.html"
    if report:
        write_whole(index, html.get_template("index.html").render(report=replace(report, plots=plots(report))))
    with replaced_whole(out / "grades.csv") as stream:
        refused += write_csv(results, stream, rule)
    return Written(index, refused)


def _page_or_refusal(result: SubmissionResult, file: str, rule: LateRule | None, refused: list[str]) -> bool:
    """Whether a page can be made of `result`; if not, why goes into `refused`."""
    try:
        student_page(result, file, assess_result(rule, result))
        return True
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as error:
        refused.append(_refusal(result, error))
        return False


def _refusal(result: SubmissionResult, error: Exception) -> str:
    return (f"{safe(result.student, 200)}: no feedback page ({safe(error, 200)}); regrade it with "
            "`autograder grade --force` and run the report again")


