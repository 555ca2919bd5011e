"""course.yaml validation, the lecture's numbers, comparison messages, and a second assignment."""
from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from autograder.authoring.checks import CheckFailed, Tolerance
from autograder.authoring.compare import expect_close
from autograder.authoring.protocol import Call, unmarked
from autograder.grading.course import CourseError, load_course
from autograder.grading.suite import load_suite, suite_version
from autograder.sandbox import values
from autograder.sandbox.replies import read_reply, request_frame

from conftest import FIXTURES, ROOT, run_cli

COURSE_TEXT = (ROOT / "course.yaml").read_text()


def _course_copy(tmp_path, text: str):
    """A course directory holding the real assignments and solutions and the given course.yaml."""
    for folder in ("assignments", "solutions"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    (tmp_path / "course.yaml").write_text(text)
    return tmp_path / "course.yaml"


def test_the_lecture_example_holds_for_the_reference(suite):
    ref = suite.reference
    q, K = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    V = np.array([[10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])
    np.testing.assert_allclose(ref.score(q, K), [[0.7071, 0.0, 0.7071]], atol=1e-4)
    C, A = ref.attention(q, K, V)
    np.testing.assert_allclose(A, [[0.4011, 0.1978, 0.4011]], atol=1e-4)
    np.testing.assert_allclose(C, [[8.0222, 5.9889]], atol=1e-4)
    np.testing.assert_allclose(ref.attention(np.array([[0.0, 1.0]]), K, V)[0], [[5.9889, 8.0222]], atol=1e-4)


def test_a_transposed_shape_is_named_as_such_or_in_the_assignments_words():
    with pytest.raises(CheckFailed) as failure:
        expect_close(np.zeros((2, 6, 5)), np.zeros((2, 5, 6)), Tolerance(1e-6, 1e-9), "score(Q, K)")
    assert unmarked(failure.value.message) == ("score(Q, K): expected shape (2, 5, 6), got (2, 6, 5): "
                                               "its last two axes are the other way round")
    with pytest.raises(CheckFailed) as failure:
        expect_close(np.zeros((2, 6, 5)), np.zeros((2, 5, 6)), Tolerance(1e-6, 1e-9), "score(Q, K)",
                     shape_hint="rows should be queries and columns keys (slide 13)")
    assert failure.value.message.endswith(": rows should be queries and columns keys (slide 13)")


@pytest.mark.parametrize("got, expected_words", [
    (None, "is None: the function returned nothing"),
    ([[0.5, 0.5]], "is a list of 1 item, not a NumPy array"),
    (np.array([[1, 0]]), "has integer dtype int64"),
    (np.array([[np.nan, 0.5]]), "has NaN at one position"),
    (np.array([[0.5, 0.6]]), "differs from the expected values at 1 of 2 positions"),
])
def test_comparison_goes_in_order_with_helpful_messages(got, expected_words):
    with pytest.raises(CheckFailed) as failure:
        expect_close(got, np.array([[0.5, 0.5]]), Tolerance(1e-6, 1e-9), "softmax(S)")
    assert expected_words in unmarked(failure.value.message)  # the returned value's part is marked as the code's


def test_unknown_key_is_named(tmp_path):
    path = _course_copy(tmp_path, COURSE_TEXT.replace("    call_seconds: 5", "    call_secs: 5"))
    with pytest.raises(CourseError, match=r"defaults\.limits\.call_secs: unknown key"):
        load_course(path)


def test_a_key_written_twice_is_refused_naming_both_lines(tmp_path):
    # YAML keeps the last: a check's points given twice made the maximum 101, and a `due:` added above the old
    # one was silently overridden by it.
    text = COURSE_TEXT.replace("      score.lecture_example: 2\n", "      score.lecture_example: 2\n"
                               "      score.lecture_example: 3\n")
    assert text != COURSE_TEXT
    with pytest.raises(CourseError, match=r"the key 'score.lecture_example' is written twice, at lines \d+ and \d+"):
        load_course(_course_copy(tmp_path, text))


@pytest.mark.parametrize("value", ["0", "2.5", "true", "many"])
def test_input_sets_must_be_a_whole_number_of_sets(tmp_path, value):
    path = _course_copy(tmp_path, COURSE_TEXT.replace("    input_sets: 16", f"    input_sets: {value}"))
    with pytest.raises(CourseError, match=r"w07_attention\.input_sets: expected a whole number of input sets"):
        load_course(path)


def test_input_sets_are_read_and_change_the_suite_version(tmp_path, course):
    path = _course_copy(tmp_path, COURSE_TEXT.replace("    input_sets: 16", "    input_sets: 200"))
    changed = load_course(path)
    assert changed.assignment("w07_attention").input_sets == 200
    assert course.assignment("w07_attention").input_sets == 16
    assert suite_version(changed, "w07_attention") != suite_version(course, "w07_attention")
    (tmp_path / "same").mkdir()
    same = load_course(_course_copy(tmp_path / "same", COURSE_TEXT))  # a copy alone changes no version
    assert suite_version(same, "w07_attention") == suite_version(course, "w07_attention")


def test_check_without_points_is_named(tmp_path):
    text = COURSE_TEXT.replace("      softmax.input_unchanged: 1\n", "      softmax.input_unchanged:\n")
    path = _course_copy(tmp_path, text)
    with pytest.raises(CourseError, match=r"checks\.softmax\.input_unchanged: no points given"):
        load_course(path)


def test_check_missing_from_course_yaml_is_named(tmp_path):
    path = _course_copy(tmp_path, COURSE_TEXT.replace("      softmax.input_unchanged: 1\n", ""))
    with pytest.raises(CourseError, match=r"'softmax.input_unchanged' \(hidden\) has no points"):
        load_suite(load_course(path), "w07_attention")


def test_listed_check_that_does_not_exist_is_named(tmp_path):
    path = _course_copy(tmp_path, COURSE_TEXT.replace("      softmax.input_unchanged: 1\n",
                                                      "      softmax.input_unchanged: 1\n      softmax.made_up: 1\n"))
    with pytest.raises(CourseError, match=r"checks\.softmax\.made_up: no check by that name exists"):
        load_suite(load_course(path), "w07_attention")


def test_bad_yaml_and_missing_file_say_what_to_do(tmp_path):
    (tmp_path / "course.yaml").write_text("course: [unclosed")
    with pytest.raises(CourseError, match="not valid YAML"):
        load_course(tmp_path / "course.yaml")
    done = run_cli("grade", "w07_attention", "x.py", cwd=tmp_path.parent)
    assert done.returncode == 2 and "pass --course" in done.stderr



def test_a_tab_in_course_yaml_is_named_with_its_file_line_and_column_and_yamls_rule(tmp_path):
    """A tab indenting `preload:` gave PyYAML's own text, `found character '\\t' that cannot start any token
    in "<unicode string>"`: neither the file nor that tabs may not indent."""
    lines = COURSE_TEXT.splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if line.startswith("    preload:"))
    lines[number] = "\t" + lines[number].lstrip(" ")
    path = _course_copy(tmp_path, "".join(lines))
    done = run_cli("checks", "w07_attention", "--course", path)
    assert done.returncode != 0
    assert f"{path}, line {number + 1}, column 1: YAML does not allow tabs for indentation; use spaces" \
        in done.stderr, done.stderr
    assert "<unicode string>" not in done.stderr
    # Any other YAML error keeps PyYAML's text, with the file's path where it said "<unicode string>".
    path.write_text("course: [unclosed")
    done = run_cli("checks", "w07_attention", "--course", path)
    assert f'{path} is not valid YAML: ' in done.stderr and f'in "{path}", line 1' in done.stderr, done.stderr
    assert "<unicode string>" not in done.stderr and "Fix the file and run again" in done.stderr


@pytest.mark.parametrize("tab_at", ["comment", "value"])
def test_a_tab_inside_a_line_of_course_yaml_is_not_called_indentation(tmp_path, tab_at):
    """A tab before an aligned comment, or after a key's colon, was reported as "YAML does not allow tabs for
    indentation", sending the reader to the start of a line that had none."""
    lines = COURSE_TEXT.splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if re.fullmatch(r" +[\w.]+: \d+\n", line))  # no comment yet
    key, value = lines[number].rstrip("\n").split(":", 1)
    lines[number] = f"{key}:{value}\t# the module's name\n" if tab_at == "comment" else f"{key}:\t{value.strip()}\n"
    column = len(f"{key}:{value}") + 1 if tab_at == "comment" else len(key) + 2
    path = _course_copy(tmp_path, "".join(lines))
    done = run_cli("checks", "w07_attention", "--course", path)
    assert done.returncode != 0
    assert (f"{path}: a tab at line {number + 1}, column {column}: YAML does not allow tabs there (only spaces "
            "separate keys, values and comments); replace it with spaces and run again.") in done.stderr, done.stderr
    assert "indentation" not in done.stderr

def test_a_second_assignment_is_a_folder_and_a_course_yaml_entry(tmp_path):
    entry = ("  tiny:\n    title: Doubling\n    module: tiny\n    preload: [numpy]\n"
             "    checks:\n      double.small: 1\n      double.matches_reference: 2\n")
    path = _course_copy(tmp_path, COURSE_TEXT + entry)
    for folder in ("assignments", "solutions"):
        shutil.copytree(FIXTURES / "tiny" / folder / "tiny", tmp_path / folder / "tiny")
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("def double(x):\n    return x + x\n")
    bad.write_text("def double(x):\n    return x * 3\n")
    done = run_cli("grade", "tiny", good, bad, "--json", "--course", path)
    assert done.returncode == 0, done.stderr
    results = {r["student"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert results["good"]["score"] == results["good"]["max_score"] == 3
    assert results["bad"]["score"] == 0
    assert {t["visibility"] for t in results["bad"]["tests"]} == {"public", "hidden"}


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_checks_command_lists_every_check_with_its_points_from_course_yaml(course, suite):
    done = run_cli("checks", "w07_attention")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:3] for line in done.stdout.splitlines()[:-1]}
    points = course.assignments["w07_attention"].checks
    assert set(rows) == set(points)
    for name, (visibility, shown) in rows.items():
        assert float(shown) == points[name].points
        assert visibility == suite.check(name).visibility
    assert f"{len(points)} checks, {suite.max_score:g} points" in done.stdout.splitlines()[-1]


def _reply(value):
    """A worker's reply frame for `value`, encoded as the worker encodes it."""
    buffers = []
    return {"event": "reply", "id": 1, "value": values.encode(value, buffers)}, buffers


def test_a_large_reply_crosses_whole_and_every_entry_is_compared():
    expected = np.linspace(-1, 1, 2 * 512 * 512).reshape(2, 512, 512)
    tol = Tolerance(1e-6, 1e-9)
    header, _ = request_frame(Call("f", (expected,)), 1)
    assert "sample" not in header  # nothing in a request says which part of the answer is looked at
    honest = read_reply(*_reply(expected.copy()), Call("f")).value
    assert isinstance(honest, np.ndarray) and honest.shape == expected.shape
    expect_close(honest, expected, tol, "x")
    for index in ((0, 0, 0), (1, 511, 511), (1, 7, 300)):  # one wrong entry anywhere is found
        wrong = expected.copy()
        wrong[index] += 1.0
        with pytest.raises(CheckFailed, match=r"at 1 of 524288 positions"):
            expect_close(read_reply(*_reply(wrong), Call("f")).value, expected, tol, "x")


def test_a_mistyped_check_name_is_named_beside_the_check_it_misses(tmp_path):
    """`softmax.input_unchanged` written `softmax.input_unchange`: the message named only the check without points."""
    path = _course_copy(tmp_path, COURSE_TEXT.replace("      softmax.input_unchanged: 1\n",
                                                      "      softmax.input_unchange: 1\n"))
    with pytest.raises(CourseError, match=r"has no points \(it lists `softmax.input_unchange`, which is no check: a "
                                          r"typo of this name\?\)"):
        load_suite(load_course(path), "w07_attention")
