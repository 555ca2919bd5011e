"""Issue 5: `autograder report` — student feedback and the class report, checked against the database.

A small class is graded for real (sandbox fixtures from conftest), stored,
and reported through the real command line; the tests then read the HTML,
Markdown and CSV it wrote and compare them with the database.
"""
from __future__ import annotations

import base64
import csv
import io
import json
import math
import re
import sqlite3
import urllib.parse

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import escape

from autograder.authoring.checks import Sizes, Trial
from autograder.authoring.seeds import check_rng
from autograder.grading.attempt import attempt
from autograder.grading.results import CheckResult, SubmissionResult
from autograder.grading.store import Store
from autograder.grading.submission import read_submission
from autograder.outputs.feedback_files import feedback_files
from autograder.sandbox.session import Session

from conftest import PLAIN, REFERENCE, ROOT, SUBMISSIONS, compose, run_cli

EVIL = 'x<b>y"&'  # a student id with markup in it (it comes from a file name)
CLASS = {  # student -> (folder under fixtures/submissions, fixture); None: the file is built by the test
    "ref": None, "plain": ("correct", "plain"), "einsum": ("correct", "einsum"),
    "queries": ("buggy", "softmax_over_queries"), "overflow": ("buggy", "softmax_no_max_subtraction"),
    "inplace": ("buggy", "softmax_modifies_input"), "zeros": ("buggy", "mask_fills_zero"),
    "unscaled1": ("buggy", "score_missing_scale"), "unscaled2": ("buggy", "score_missing_scale"),
    "crasher": ("attacks", "exit_in_function"), "broken": None, EVIL: None,
}
PRINTED = "<script>alert('owned')</script>"


@pytest.fixture(scope="module")
def reported(tmp_path_factory, grader):
    """(class folder, report folder, database path, {student: submission path}) after grading and reporting."""
    root = tmp_path_factory.mktemp("class")
    files = {}
    for student, source in CLASS.items():
        if student == "ref":
            files[student] = REFERENCE
        elif student == "broken":
            files[student] = root / "broken.ipynb"
            files[student].write_text('{"cells": [ {"cell_type": "code", "source": "def score(')
        elif student == EVIL:
            files[student] = root / f"{EVIL}.py"
            files[student].write_text(PLAIN.read_text() + f"\nprint({PRINTED!r})\n")
        else:
            folder, fixture = source
            files[student] = compose(root, student, SUBMISSIONS / folder / f"{fixture}.py")
    db = root / "grades.db"
    with Store(db) as store:
        for student, path in files.items():
            store.save(grader.grade(read_submission(path, student)))
    out = root / "report"
    done = run_cli("report", "--db", db, "--out", out)
    assert done.returncode == 0, done.stderr
    return root, out, db, files, done


def _results(db) -> dict[str, SubmissionResult]:
    with Store(db) as store:
        return {r.student: r for r in store.results("w07_attention")}


def _rows(html: str, table: str) -> list[dict[str, str]]:
    """The data-* attributes of every row of the table with this id."""
    body = re.search(rf'<table id="{table}">(.*?)</table>', html, re.S).group(1)
    return [dict(re.findall(r'data-([a-z]+)="([^"]*)"', row)) for row in re.findall(r"<tr data-[^>]*>", body)]


def test_report_prints_where_index_is_and_writes_every_file(reported):
    _, out, db, files, done = reported
    assert done.stdout.strip() == f"class report: {out / 'index.html'}"
    assert (out / "grades.csv").is_file()
    assert len(list((out / "feedback").glob("*.html"))) == len(files) == len(list((out / "feedback").glob("*.md")))


def test_histogram_counts_match_the_database(reported):
    _, out, db, _, _ = reported
    scores = [row[0] for row in sqlite3.connect(db).execute("SELECT score FROM submissions")]
    bins = _rows((out / "index.html").read_text(), "histogram")
    assert len(bins) == 10 and float(bins[0]["low"]) == 0 and float(bins[-1]["high"]) == 100
    for i, row in enumerate(bins):
        low, high = float(row["low"]), float(row["high"])
        inside = [s for s in scores if low <= s < high or (i == len(bins) - 1 and s == high)]
        assert int(row["count"]) == len(inside), (low, high)
    assert sum(int(row["count"]) for row in bins) == len(scores) == len(CLASS)


def test_misconception_table_matches_the_database(reported):
    _, out, db, _, _ = reported
    stored = {idea: (students, checks) for idea, students, checks in sqlite3.connect(db).execute(
        "SELECT misconception, COUNT(DISTINCT submission_id), COUNT(*) FROM checks "
        "WHERE misconception IS NOT NULL GROUP BY misconception")}
    shown = {row["id"]: (int(row["students"]), int(row["checks"]))
             for row in _rows((out / "index.html").read_text(), "misconceptions")}
    assert shown == stored
    assert shown["score_missing_scale"][0] == 2  # two students hold the same idea
    assert {"softmax_over_queries", "softmax_no_max_subtraction", "softmax_modifies_input",
            "mask_fills_zero"} <= shown.keys()


def test_pass_rates_and_function_means_match_the_database(reported):
    _, out, db, _, _ = reported
    connection = sqlite3.connect(db)
    graded = "SELECT id FROM submissions WHERE problem = ''"
    stored = {name: (passed, total) for name, passed, total in connection.execute(
        f"SELECT name, SUM(status = 'passed'), COUNT(*) FROM checks WHERE submission_id IN ({graded}) GROUP BY name")}
    html = (out / "index.html").read_text()
    shown = {row["check"]: (int(row["passed"]), int(row["graded"])) for row in _rows(html, "checks")}
    assert shown == stored
    means = {function: total / len(CLASS) for function, total in connection.execute(
        "SELECT function, SUM(score) FROM checks GROUP BY function")}
    for row in _rows(html, "function-means"):
        assert math.isclose(float(row["mean"]), means[row["function"]], abs_tol=1e-3)


def test_index_is_one_self_contained_file(reported):
    _, out, _, _, _ = reported
    html = (out / "index.html").read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html) and "<link" not in html and "<script" not in html
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)"', html)
    assert {alt for alt, _ in images} >= {"score histogram", "pass rate per check", "mean points per function",
                                         "misconception frequencies", "grading time per submission"}
    assert all(base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n") for _, data in images)


def test_flags_name_crashes_and_ungraded_files(reported):
    _, out, db, _, _ = reported
    flagged = {student for row in _rows((out / "index.html").read_text(), "flagged")
               for student in row["students"].split(" ")}
    assert {"crasher", "broken"} <= flagged
    assert not flagged & {"ref", "plain", "einsum", "queries"}
    crasher = (out / "feedback" / "crasher.html").read_text()
    assert "softmax stopped the worker process" in crasher and "What the sandbox stopped" in crasher


def test_grades_csv_matches_the_database_and_the_export(reported):
    _, out, db, _, _ = reported
    results = _results(db)
    text = (out / "grades.csv").read_text()
    assert text == run_cli("export", "csv", "--db", db).stdout  # one format, wherever it is written
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["student"] for row in rows} == set(results)
    for row in rows:
        result = results[row["student"]]
        assert float(row["total"]) == result.score and float(row["max"]) == result.max_score
        for function, (got, _) in result.by_function().items():
            assert float(row[f"{function}()"]) == got
        assert row["misconceptions"] == "; ".join(sorted({t.misconception for t in result.tests if t.misconception}))


def test_feedback_never_says_all_passed_while_a_hidden_check_failed(reported):
    _, out, db, _, _ = reported
    results = _results(db)
    inplace = results["inplace"]
    assert [t.visibility for t in inplace.tests if t.status != "passed"] == ["hidden"]  # the case in point
    for suffix in (".html", ".md"):
        text = (out / "feedback" / f"inplace{suffix}").read_text()
        assert "All public checks passed; 1 hidden check of 20 did not pass." in text
        assert "all tests passed" not in text.lower() and "checks passed, public and hidden" not in text
        assert "softmax.input" in text and "Subtracting the row maximum must make a new array" in text
    assert "All 39 checks passed, public and hidden." in (out / "feedback" / "ref.html").read_text()


def test_public_failures_show_their_example_and_the_idea(reported):
    _, out, _, _, _ = reported
    text = (out / "feedback" / "overflow.html").read_text()
    section = re.search(r'<section class="check" id="softmax.large_scores_stable">(.*?)</section>', text, re.S).group(1)
    assert "[-1000.,  -999.,  -998.]" in section  # the input S
    assert "nan" in section and "Expected:" in section
    assert "Subtract each row&#39;s maximum before exponentiating" in section


def test_an_example_of_several_calls_says_the_message_names_the_one_that_failed(tmp_path):
    """A check that made two calls before the one that failed showed three examples, each "was called with ...
    and returned", as if all three had failed, beside a message quoting the third's input."""
    from autograder.authoring.checks import CheckFailed
    from autograder.authoring.protocol import Call, Reply
    from autograder.grading.attempt import Attempt
    from autograder.grading.examples import example_json
    from autograder.outputs.report import write_reports

    calls = [(Call("double", (np.array([float(n)]),)), Reply(value=np.array([2.0 * n]))) for n in (1, 2)]
    calls.append((Call("double", (np.array([3.0]),)), Reply(value=np.array([5.0]))))
    tried = Attempt("failed", "double([3.]) returned [5.], expected [6.]", calls=calls,
                    failure=CheckFailed("wrong", np.array([6.0]), np.array([5.0])))
    check = CheckResult("double.small", "double", "public", "failed", 0.0, 1.0, tried.message,
                        example=example_json("public", tried, None))
    result = SubmissionResult("ann", "tiny", "ann.py", "ab" * 32, "v", 1, "bwrap", (check,))
    write_reports("tiny", [result], tmp_path)
    for page in ("ann.html", "ann.md"):
        text = (tmp_path / "feedback" / page).read_text()
        assert "last 3 calls, the message above says which input failed" in text, text
        assert "Call 1: " in text and "Call 3: " in text


def test_hidden_check_inputs_are_absent_from_every_student_file(reported, sandbox, suite):
    """Re-run every hidden check with each student's stored seed, as the grader did, and look for its inputs."""
    _, out, db, files, _ = reported
    results = _results(db)
    detected_public = 0
    for student, result in results.items():
        if result.problem:
            continue
        texts = [p.read_text() for p in (out / "feedback").glob(f"{_file_name(student)}.*")]
        numbers = np.unique(np.concatenate([_numbers_in(text) for text in texts]))
        hidden, public = _inputs_by_visibility(sandbox, suite, files[student], result)
        for check, arrays in hidden.items():
            for array in arrays:
                assert _shown_values(array, numbers) < 3, f"{student}: inputs of {check} appear in the feedback"
        # The detector does find inputs where they are shown: public failing checks show theirs.
        failing_public = {t.name for t in result.tests if t.visibility == "public" and t.status == "failed"}
        for check, arrays in public.items():
            if check in failing_public:
                detected_public += sum(_shown_values(a, numbers) == a.size for a in arrays if a.size >= 3)
    assert detected_public >= 3


def test_database_holds_sizes_only_for_hidden_examples(reported):
    _, _, db, _, _ = reported
    rows = [json.loads(text) for (text,) in sqlite3.connect(db).execute(
        "SELECT example FROM checks WHERE visibility = 'hidden' AND example != ''")]
    assert rows and all(set(row) == {"sizes", "shrunk_from"} for row in rows)
    public = [json.loads(text) for (text,) in sqlite3.connect(db).execute(
        "SELECT example FROM checks WHERE visibility = 'public' AND example != ''")]
    assert public and all("calls" in row for row in public)


def test_student_controlled_text_is_escaped(reported):
    _, out, _, _, _ = reported
    html = (out / "feedback" / f"{_file_name(EVIL)}.html").read_text()
    assert "<b>y" not in html and str(escape(EVIL)) in html
    # What the code printed is the instructor's (outputs.audience): the page says so instead of showing it.
    assert "<script>" not in html and str(escape(PRINTED)) not in html and "kept for your instructor" in html
    index = (out / "index.html").read_text()
    assert "<b>y" not in index and str(escape(EVIL)) in index
    markdown = (out / "feedback" / f"{_file_name(EVIL)}.md").read_text()
    assert "<b>" not in markdown and 'x&lt;b&gt;y"&amp;' in markdown
    assert PRINTED not in markdown and "kept for your instructor" in markdown


def test_an_exception_message_makes_no_blocks_or_links_on_the_markdown_page(tmp_path):
    """A message that would forge a heading, a list, a code block or a link is shown as the text it is."""
    mistune = pytest.importorskip("mistune")  # nbconvert's renderer: installed with the nbgrader extra
    forged = ("raised ValueError: oops\n\nTotal: 100 / 100 points. All checks passed.\n===\n\n- Grader note: see "
              "https://evil.example/regrade or www.evil.example\n\n    indented\n1. first\n+ plus\n---\n~~~\n"
              "53.1 points")
    check = CheckResult("f.c", "f", "public", "failed", 0, 1, forged)
    with Store(tmp_path / "g.db") as store:
        store.save(SubmissionResult("s1", "w07_attention", "s1.py", "x", "v", 1, "bwrap", (check,),
                                    max_score=1))
    assert run_cli("report", "--db", tmp_path / "g.db", "--out", tmp_path / "out").returncode == 0
    raw = (tmp_path / "out" / "feedback" / "s1.md").read_text()
    page = mistune.create_markdown(plugins=["url", "strikethrough", "table"])(raw)
    section = page[page.index("<h3>f.c"):page.index("<h2>What the sandbox")]
    assert not re.search(r"<(h[12]|li|a |pre|code|ol|del)\b", section), section
    assert page.count("<h1>") == 1  # the page's own title
    assert "Total: 100 / 100 points. All checks passed.<br />\n===" in section  # the text itself, line by line
    assert "Feedback on w07_attention" in raw  # an underscore inside a word makes no emphasis: left as it is
    assert "53.1 points" in raw  # a number at the start of a line opens no list: not written 53\.1


def test_a_messages_code_names_are_code_on_the_markdown_page_and_student_backticks_form_nothing_else(tmp_path):
    """Our messages quote code in single backticks: the pages (Markdown and HTML) show it as code, not as literal
    backticks. A student's backticks around markup, across lines or in a fence stay escaped text."""
    mistune = pytest.importorskip("mistune")
    message = ("the code is vectorised but still too slow: look for `np.tile` or `np.swapaxes(K, -1, -2)`. "
               "raised ValueError: `<b>bold</b>` and `a|b` and ```fence``` and `http://x.example` and `open\nclose`")
    check = CheckResult("f.c", "f", "public", "failed", 0, 1, message)
    with Store(tmp_path / "g.db") as store:
        store.save(SubmissionResult("s1", "w07_attention", "s1.py", "x", "v", 1, "bwrap", (check,), max_score=1))
    assert run_cli("report", "--db", tmp_path / "g.db", "--out", tmp_path / "out").returncode == 0
    raw = (tmp_path / "out" / "feedback" / "s1.md").read_text()
    page = mistune.create_markdown(plugins=["url", "strikethrough", "table"])(raw)
    section = page[page.index("<h3>f.c"):page.index("<h2>What the sandbox")]
    assert "<code>np.tile</code>" in section and "<code>np.swapaxes(K, -1, -2)</code>" in section
    assert "<code>http://x.example</code>" in section and "<a " not in section  # shown as code, never a link
    assert sorted(re.findall(r"<code>(.*?)</code>", section)) == ["http://x.example", "np.swapaxes(K, -1, -2)",
                                                                  "np.tile"]
    assert not re.search(r"<(b|pre|h[12]|li)\b", section)
    assert "\\`&lt;b&gt;bold&lt;/b&gt;\\`" in raw and "```fence```" in section  # as typed, escaped
    html = (tmp_path / "out" / "feedback" / "s1.html").read_text()
    shown = html[html.index('<p class="message">'):]
    shown = shown[:shown.index("</p>")]
    assert sorted(re.findall(r"<code>(.*?)</code>", shown)) == ["http://x.example", "np.swapaxes(K, -1, -2)", "np.tile"]
    assert "<b>" not in shown and "`&lt;b&gt;bold&lt;/b&gt;`" in shown


def test_a_report_written_again_removes_only_the_pages_of_the_last_that_it_did_not_write_again(tmp_path):
    """A student graded under another id since (or a folder reused) leaves no stale page among the new ones; a
    file the report never wrote stays. Without --out, each assignment has a folder of its own."""
    check = CheckResult("f.c", "f", "public", "passed", 1, 1, "")
    for db, students in (("first.db", ("ann", "bo")), ("second.db", ("ann",))):
        with Store(tmp_path / db) as store:
            for student in students:
                store.save(SubmissionResult(student, "w07_attention", f"{student}.py", "x", "v", 1, "bwrap", (check,),
                                            max_score=1))
    feedback, course = tmp_path / "report" / "w07_attention" / "feedback", ("--course", ROOT / "course.yaml")
    assert run_cli("report", "--db", tmp_path / "first.db", *course, cwd=tmp_path).returncode == 0
    assert {p.name for p in feedback.glob("*.html")} == {"ann.html", "bo.html"}
    (feedback / "notes.txt").write_text("the TA's own file")
    listed = json.loads((feedback / ".pages.json").read_text())  # a listing edited by hand, a NUL in a name too
    (feedback / ".pages.json").write_text(json.dumps(listed + ["a\u0000b", "../x", 3]))
    assert run_cli("report", "--db", tmp_path / "second.db", *course, cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in feedback.iterdir() if not p.name.startswith(".")) == ["ann.html", "ann.md",
                                                                                          "notes.txt"]


def test_results_graded_under_an_earlier_suite_are_written_out_with_a_note(reported, tmp_path):
    """Points changed in course.yaml (or new checks) reach stored results only by a regrade: an export says so."""
    check = CheckResult("f.c", "f", "public", "passed", 1, 1, "")
    with Store(tmp_path / "old.db") as store:
        store.save(SubmissionResult("ann", "w07_attention", "ann.py", "x", "an earlier suite", 1, "bwrap", (check,),
                                    max_score=1))
    done = run_cli("export", "csv", "--db", tmp_path / "old.db")
    assert done.returncode == 0 and "1 result of 1 (ann) was graded under an earlier suite" in done.stderr
    assert "regrade w07_attention --preview" in done.stderr
    _, _, db, _, _ = reported  # graded under the current suite: nothing to say
    assert "earlier suite" not in run_cli("export", "csv", "--db", db).stderr


def test_report_errors_say_what_to_do(tmp_path):
    done = run_cli("report", "--db", tmp_path / "missing.db", "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "there is no results database" in done.stderr and "Grade first" in done.stderr
    assert not (tmp_path / "missing.db").exists()
    # A database with no result in it (a grade stopped before its first): grade into it, not pick an assignment.
    with Store(tmp_path / "empty.db"):
        pass
    for command in (("report", "--out", tmp_path / "out"), ("export", "csv", "--out", tmp_path / "grades.csv")):
        done = run_cli(*command, "--db", tmp_path / "empty.db")
        assert done.returncode == 2 and "holds no results yet" in done.stderr and "autograder grade" in done.stderr
        assert "--assignment" not in done.stderr


def test_store_adds_the_new_columns_to_an_old_database(tmp_path):
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE submissions (id INTEGER PRIMARY KEY, assignment TEXT NOT NULL, student TEXT NOT NULL,
            file TEXT NOT NULL, sha256 TEXT NOT NULL, suite_version TEXT NOT NULL, seed INTEGER NOT NULL,
            sandbox TEXT NOT NULL, score REAL NOT NULL, max_score REAL NOT NULL, problem TEXT NOT NULL,
            notes TEXT NOT NULL, output TEXT NOT NULL, killed_processes INTEGER NOT NULL, seconds REAL NOT NULL,
            graded_at TEXT NOT NULL, UNIQUE (assignment, student));
        CREATE TABLE checks (submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
            position INTEGER NOT NULL, name TEXT NOT NULL, function TEXT NOT NULL, visibility TEXT NOT NULL,
            status TEXT NOT NULL, score REAL NOT NULL, max_score REAL NOT NULL, output TEXT NOT NULL,
            hint TEXT NOT NULL, misconception TEXT, seconds REAL NOT NULL, PRIMARY KEY (submission_id, name));
        INSERT INTO submissions VALUES (1, 'a', 'old', 'f.py', 'x', 'v', 1, 'bwrap', 0, 1, '', '[]', '', 0, 0, '');
        INSERT INTO checks VALUES (1, 0, 'f.c', 'f', 'public', 'failed', 0, 1, 'no', '', NULL, 0);
    """)
    old.close()
    check = CheckResult("f.c", "f", "public", "failed", 0, 1, "no", misconception="idea", explanation="why",
                        example=json.dumps({"calls": []}), stopped="timeout")
    new = SubmissionResult("new", "a", "g.py", "y", "v", 2, "bwrap", (check,))
    with Store(path) as store:
        assert store.result("a", "old").tests[0].example == ""
        store.save(new)
        assert store.result("a", "new") == new


# ------------------------------------------------------------------ helpers


def _file_name(student: str) -> str:
    return feedback_files([student])[student]


def _numbers_in(text: str) -> np.ndarray:
    """Every decimal number written with at least four digits after the point (plain or scientific)."""
    found = re.findall(r"-?\d+\.\d{4,}(?:e[-+]\d+)?", text)
    return np.array([float(n) for n in found], dtype=np.float64)


def _shown_values(array: np.ndarray, numbers: np.ndarray) -> int:
    """How many of the array's values appear among `numbers`, to the six significant digits the pages print.

    Below 1 the match is relative (half a unit in the sixth significant digit, at most 5e-6 of the value): an
    absolute 6e-7 matched printed numbers by chance among an input's 1,510 weights near 1/151, packed 1e-5 apart.
    """
    if numbers.size == 0:
        return 0
    values = np.asarray(array, dtype=np.float64).ravel()
    values = values[np.isfinite(values)]  # −inf marks masked scores; it is no value of the student's input
    index = np.clip(np.searchsorted(numbers, values), 1, numbers.size - 1)
    nearest = np.minimum(np.abs(numbers[index] - values), np.abs(numbers[index - 1] - values))
    magnitude = np.abs(values)
    return int(np.sum(nearest <= np.where(magnitude < 1.0, 5e-6, 6e-7) * magnitude))


def _inputs_by_visibility(sandbox, suite, path, result) -> tuple[dict, dict]:
    """{check: [float input arrays]} for hidden and public checks, re-run with the student's seed.

    Hidden failures are also re-run at their stored smallest sizes. The
    scale checks (T = 512) use one class-wide case of 65,536 values per
    array, which no page can print (at most 64 values of an array are ever
    shown) and among which a few match some printed number by chance, so
    they are left out.
    """
    hidden, public = {}, {}
    stored = {t.name: t for t in result.tests}
    submission = read_submission(path, result.student)
    with Session(sandbox, submission.worker_spec(suite.assignment.module), suite.assignment.limits) as session:
        session.open()
        for entry in suite.checks:
            if entry.check.slow_hint:  # the scale checks
                continue
            sizes = [entry.check.sizes]
            example = json.loads(stored[entry.name].example or "{}")
            if example.get("sizes"):
                sizes.append(Sizes.of(**example["sizes"]))
            for size in sizes:
                trial = Trial(entry.name, check_rng(result.seed, entry.name), suite.reference, session.call,
                              suite.assignment.tolerance, sizes=size)
                attempt(entry, trial)
                arrays = [a for call, _ in trial.calls for a in (*call.args, *call.kwargs.values())
                          if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
                (hidden if entry.visibility == "hidden" else public).setdefault(entry.name, []).extend(arrays)
    return hidden, public


def test_the_class_at_a_glance_states_mean_median_quartiles_and_flagged(reported):
    _, out, db, _, _ = reported
    scores = sorted(row[0] for row in sqlite3.connect(db).execute("SELECT score FROM submissions"))
    html = (out / "index.html").read_text()
    glance = dict(re.findall(r'data-([a-z0-9]+)="([^"]*)"', re.search(r'<table id="glance"[^>]*>', html).group(0)))
    assert math.isclose(float(glance["mean"]), sum(scores) / len(scores))
    assert math.isclose(float(glance["median"]), float(np.median(scores)))
    assert math.isclose(float(glance["q1"]), float(np.percentile(scores, 25)))
    assert math.isclose(float(glance["q3"]), float(np.percentile(scores, 75)))
    assert (float(glance["lowest"]), float(glance["highest"])) == (scores[0], scores[-1])
    flagged = {s for row in _rows(html, "flagged") for s in row["students"].split(" ")}
    assert int(glance["flagged"]) == len(flagged)
    assert html.index('id="glance"') < html.index("<h2>Scores</h2>")  # at the top


def test_pass_rates_are_grouped_by_function_and_sorted_within_each(reported, suite):
    _, out, _, _, _ = reported
    rows = _rows((out / "index.html").read_text(), "checks")
    functions = [row["function"] for row in rows]
    order = list(dict.fromkeys(entry.function for entry in suite.checks))
    assert list(dict.fromkeys(functions)) == order  # each function's checks together, in the suite's order
    for function in order:
        rates = [int(r["passed"]) / int(r["graded"]) for r in rows if r["function"] == function]
        assert rates == sorted(rates)


def test_every_flag_shown_is_explained_and_repeats_share_a_row(tmp_path, reported):
    from autograder.grading.results import FLAG_MEANINGS
    from autograder.outputs.report import write_reports
    _, out, db, _, _ = reported
    html = (out / "index.html").read_text()
    meanings = re.search(r'<dl id="flag-meanings">(.*?)</dl>', html, re.S).group(1)
    shown = {f.strip() for row in re.findall(r'<td class="flags">([^<]*)</td>', html) for f in row.split(",") if f}
    explained = set(re.findall(r'<dt class="flags">([^<]*)</dt>', meanings))
    assert shown and {"left N processes" if f.startswith("left ") else f for f in shown} <= explained
    assert set(explained) <= set(FLAG_MEANINGS) | {"late (−N)", "late, within the grace", "time from the file"}
    # Two submissions that timed out the same way are one row with a count, not two.
    results = list(_results(db).values())
    crasher = next(r for r in results if r.student == "crasher")
    twins = [crasher, _replace(crasher, student="crasher2")]
    index = write_reports("w07_attention", results + twins[1:], tmp_path).index
    rows = _rows(index.read_text(), "flagged")
    row = next(r for r in rows if "crasher" in r["students"].split(" "))
    assert row["count"] == "2" and set(row["students"].split(" ")) == {"crasher", "crasher2"}


def test_count_axes_show_whole_numbers():
    from autograder.outputs.plots import _bar_figure
    figure = _bar_figure(["a", "b"], [1, 1], "students", counts=True)
    figure.canvas.draw()
    ticks = figure.axes[0].get_xticks()
    assert len(ticks) > 1 and all(float(t).is_integer() for t in ticks)


def test_late_totals_on_a_bins_lower_edge_count_in_that_bin():
    # A 103-point course and 10 %-a-day penalties: 92.7, 82.4, ..., 10.3, each on an edge (92.7 // 10.3 is 8.0).
    from autograder.outputs.report import histogram
    scores = [round(103 * (1 - 0.1 * days), 6) for days in range(1, 10)]
    assert [count for *_, count in histogram(scores, 103)] == [0] + [1] * 9


@given(hundredths=st.integers(1, 10**6), bins=st.integers(1, 20), data=st.data())
def test_a_score_on_an_edge_counts_in_the_upper_bin_however_it_was_computed(hundredths, bins, data):
    from autograder.outputs.report import histogram
    max_score = hundredths / 100  # points per check are decimals, so are a course's maximum and its totals
    edge = data.draw(st.integers(0, bins))
    ways = [edge * max_score / bins, max_score * (edge / bins), edge * (max_score / bins),
            max_score - round(max_score * (1 - edge / bins), 6)]  # the last as the late rule takes a fraction off
    for score in ways:
        counts = [count for *_, count in histogram([round(score, 6)], max_score, bins)]
        assert counts.index(1) == min(edge, bins - 1), (score, max_score, bins)
    middle = (edge + 0.5) * max_score / bins  # well inside a bin: in it
    if edge < bins:
        assert [count for *_, count in histogram([middle], max_score, bins)].index(1) == edge


def test_one_process_left_running_and_one_point_lost_are_said_in_the_singular(tmp_path, reported):
    from autograder.outputs.report import write_reports
    _, _, db, _, _ = reported
    result = next(r for r in _results(db).values() if not r.problem)
    one_point = _replace(result.tests[0], status="failed", score=0.0, max_score=1.0)
    one = _replace(result, student="left_one", killed_processes=1, tests=[one_point, *result.tests[1:]])
    html = write_reports("w07_attention", [one], tmp_path).index.read_text()
    shown = {f.strip() for row in re.findall(r'<td class="flags">([^<]*)</td>', html) for f in row.split(",") if f}
    assert "left 1 process" in shown and '<dt class="flags">left N processes</dt>' in html
    page = (tmp_path / "feedback" / "left_one.md").read_text()
    assert f"### {one_point.name} ({one_point.visibility}, failed, −1 point)" in page  # `_` inside a name: not escaped


def test_every_link_of_the_class_page_opens_its_students_page(tmp_path, reported):
    # A page is named a%20b.html for `a b`; linked as written, a browser decoded the link to `a b.html`, which
    # does not exist: every id with a space, a non-ASCII letter or punctuation had a dead link.
    from autograder.outputs.report import write_reports
    _, _, db, _, _ = reported
    result = next(r for r in _results(db).values() if not r.problem)
    odd = [_replace(result, student=student) for student in ("john smith", "Zoë 名前", "#hash?", "=1+2", "s0001")]
    html = write_reports("w07_attention", odd, tmp_path).index.read_text()
    links = set(re.findall(r'href="(feedback/[^"]*)"', html))
    assert len(links) == len(odd)
    for link in links:
        assert (tmp_path / urllib.parse.unquote(link)).is_file(), link  # as a browser resolves it


def test_a_class_where_no_file_loaded_shows_no_rate_of_zero(tmp_path, reported):
    # Every check read "0 / 2  0 %" under "Of the submissions that loaded" when none had.
    from autograder.outputs.report import write_reports
    _, _, db, _, _ = reported
    result = next(r for r in _results(db).values() if not r.problem)
    broken = [_replace(result, student=f"bad{n}", problem="not loaded: a syntax error", did_not_load=True)
              for n in (1, 2)]
    html = write_reports("w07_attention", broken, tmp_path).index.read_text()
    rows = _rows(html, "checks")
    assert rows and all(row["graded"] == "0" for row in rows)
    assert "none did, so no check has a rate" in html and "0 / 0</td><td class=\"num\">—" in html


def _replace(result, **changes):
    import dataclasses
    return dataclasses.replace(result, **changes)


def test_each_feedback_file_is_named_by_its_students_id_and_no_two_ids_share_one():
    """`a b` once became a_b.html, and the real a_b's page a_b-4.html: a TA sending a_b.html sent another's."""
    ids = ["a b", "a+b", "a=b", "a_b", ".hidden", "Zoë", "s0001"]
    names = feedback_files(ids)
    assert names["a_b"] == "a_b" and names["s0001"] == "s0001" and names["a b"] == "a%20b"
    assert len(set(names.values())) == len(ids) and not any(name.startswith(".") for name in names.values())
    assert all(urllib.parse.unquote(name) == student for student, name in names.items())
    # Ids apart only by case take -2, -3, passing a taken one: `b-3` before `B` had made the count repeat for ever.
    names = feedback_files(["b", "b-3", "B", "b-2"])
    assert len({name.lower() for name in names.values()}) == 4 and names["b"] == "b" and names["b-3"] == "b-3"

def test_a_long_id_that_quotes_past_a_file_names_length_gets_a_page_of_its_own(tmp_path):
    """60 Greek letters are a fine id (120 bytes) and quote to 360 characters, over the 255 bytes of a file name:
    the page's name is cut and ends in a digest of the whole id, so two such ids still get two pages."""
    ids = ["α" * 60, "α" * 59 + "β", "x" * 128]
    names = feedback_files(ids)
    assert len(set(names.values())) == 3 and all(len(name.encode()) + len(".html") < 255 for name in names.values())
    assert names["x" * 128] == "x" * 128  # short enough as it is: unchanged
    for name in names.values():
        (tmp_path / f"{name}.html").write_text("page")  # every one a file this file system takes
    assert urllib.parse.unquote(names["α" * 60]).startswith("α" * 20)


def test_one_error_most_checks_end_in_is_said_once_first(grade_once, tmp_path):
    """A file without `import numpy as np`: 30-odd checks each said NameError, and nothing said it once."""
    from autograder.outputs.report import student_page

    path = tmp_path / "no_numpy.py"
    path.write_text(PLAIN.read_text().replace("import numpy as np\n", ""))
    result = grade_once(path)
    failed = [t for t in result.tests if t.status != "passed"]
    summary = student_page(result, "no_numpy").summary
    said = (rf"\d+ of the {len(failed)} checks that did not pass end in the same error, NameError: name 'np' is not "
            r"defined \(line \d+; line \d+; line \d+; and \d+ more places\)\. Fix that first")
    assert re.search(said, summary), summary
    plain = student_page(grade_once(PLAIN), "plain").summary
    assert "same error" not in plain


def test_the_smallest_sizes_read_as_words():
    from autograder.outputs.report import _sizes

    assert _sizes({"batch": [], "nq": 1, "nk": 2}) == "no batch axes, nq = 1, nk = 2"  # was "batch = none"
    assert _sizes({"batch": [2], "h": 5}) == "batch = (2,), h = 5"


def test_a_file_the_grader_failed_on_is_no_zero_in_the_class_figures_or_the_grades(tmp_path):
    """A hidden check that raised in the grader: the student was a 0 in the class's mean, median and histogram, in
    grades.csv's total and on their feedback page ("Total: 0 / 100"), where the LMS exports left them blank."""
    checks = (CheckResult("double.small", "double", "public", "passed", 1.0, 1.0),)
    good = SubmissionResult(student="ann", assignment="tiny", file="ann.py", sha256="a" * 64, suite_version="v",
                            seed=1, sandbox="bwrap", tests=checks, graded_at="2026-11-20T00:00:00+00:00",
                            submitted_at="2026-11-20T00:00:00+00:00", submitted_at_source="file time")
    broken = SubmissionResult(student="bob", assignment="tiny", file="bob.py", sha256="b" * 64, suite_version="v",
                              seed=1, sandbox="bwrap", tests=(), problem="the grader failed on this file",
                              internal_error="Traceback (most recent call last): KeyError: 'x'",
                              graded_at="2026-11-20T00:00:00+00:00", submitted_at="2026-11-20T00:00:00+00:00",
                              submitted_at_source="file time", max_score=1.0, score=0.0)
    from autograder.outputs.grades_csv import write_csv
    from autograder.outputs.report import class_report, student_page

    report = class_report("tiny", [good, broken], {"ann": "ann.py", "bob": "bob.py"})
    assert report.scores["mean"] == 1.0 and report.scores["lowest"] == 1.0, report.scores
    written = io.StringIO()
    write_csv([good, broken], written)
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(written.getvalue()))}
    assert rows["ann"]["total"] == "1" and rows["bob"]["total"] == "" and rows["bob"]["internal_error"] == "1"
    assert student_page(broken, "bob.py").summary.startswith("Not graded yet: the grader itself failed")


def test_another_programs_database_is_never_written_into(tmp_path):
    """`report --db gradebook.db` (nbgrader's) added five tables to it; `grade` added columns to a `submissions`
    table of another program's."""
    from autograder.grading.store import StoreError

    gradebook = tmp_path / "gradebook.db"
    with sqlite3.connect(gradebook) as connection:
        connection.execute("CREATE TABLE assignment (id VARCHAR(32) PRIMARY KEY, name VARCHAR(128))")
    before = gradebook.read_bytes()
    for read_only in (False, True):
        with pytest.raises(StoreError, match="is another program's database .* assignment"):
            Store(gradebook, read_only=read_only)
    assert gradebook.read_bytes() == before
    done = run_cli("report", "--db", gradebook, "--out", tmp_path / "out")
    assert done.returncode != 0 and "another program's database" in done.stderr, done.stderr
    assert gradebook.read_bytes() == before
