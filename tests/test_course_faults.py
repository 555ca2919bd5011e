"""What an instructor is told when a course file is missing or one of the assignment's checks is broken.

Each test breaks a real copy of the course the way an instructor might (a check with a bug, a file moved
away, a line deleted from course.yaml) and runs the real command on it: the message must name the fault and
its place, and what to do next.
"""
from __future__ import annotations

import re
import shutil
import sqlite3

import pytest

from conftest import FIXTURES, PLAIN, ROOT, private_course, run_cli

ASSIGNMENT = "w07_attention"

BUGGY_CHECK = '''

def context_buggy_check(t):
    """a check with a bug of its own."""
    t.returned("context", np.eye(2), np.eye(2))
    return {}["missing"]


CHECKS += [Check("context.buggy_check", context_buggy_check)]
'''


def _stored(db) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as connection:
        return connection.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_check_that_raises_is_named_with_its_line_and_blamed_not_the_environment(tmp_path):
    course = private_course(tmp_path)
    hidden = tmp_path / "solutions" / ASSIGNMENT / "hidden_checks.py"
    hidden.write_text(hidden.read_text() + BUGGY_CHECK)
    line = hidden.read_text().splitlines().index('    return {}["missing"]') + 1
    course.write_text(course.read_text().replace("      context.matches_reference: 3\n",
                                                 "      context.matches_reference: 3\n      context.buggy_check: 1\n"))
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", db)
    assert done.returncode == 2, done.stderr
    refusal = done.stderr.strip().splitlines()[-1]
    assert re.search(rf"the check context\.buggy_check raised KeyError: 'missing' at {re.escape(str(hidden))} "
                     rf"line {line}, in context_buggy_check: a fault in that check, not in this environment",
                     refusal), refusal
    assert "this environment cannot grade" not in refusal and "autograder doctor" not in refusal
    assert f"`autograder checks {ASSIGNMENT}`" in refusal and _stored(db) == 0
    doctor = run_cli("doctor", "--course", course)
    assert doctor.returncode == 1
    assert re.search(rf"\[ \] {ASSIGNMENT}: cannot grade: its checks have a fault: .*context\.buggy_check raised "
                     rf"KeyError: 'missing' at .*hidden_checks\.py line {line}", doctor.stdout), doctor.stdout


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_missing_reference_refuses_grading_and_doctor_names_it(tmp_path):
    course = private_course(tmp_path)
    reference = tmp_path / "solutions" / ASSIGNMENT / "reference.py"
    reference.unlink()
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", db)
    assert done.returncode == 2, done.stderr
    assert f"{reference} is missing: the hidden checks" in done.stderr and "Put the reference back" in done.stderr
    assert "internal error" not in done.stderr and _stored(db) == 0
    doctor = run_cli("doctor", "--course", course)
    assert doctor.returncode == 1
    assert f"  [ ] {ASSIGNMENT}: cannot grade: {reference} is missing" in doctor.stdout, doctor.stdout


def test_a_deleted_points_line_is_told_to_be_added_not_called_a_typo_of_a_real_check(tmp_path):
    """`score.lecture_example: 2` deleted: `context.lecture_example`, a real check, was offered as its typo."""
    course = private_course(tmp_path)
    course.write_text(course.read_text().replace("      score.lecture_example: 2\n", ""))
    done = run_cli("checks", ASSIGNMENT, "--course", course)
    assert done.returncode == 2
    assert "check 'score.lecture_example' (public) has no points; add `score.lecture_example: <points>` under " \
           f"assignments.{ASSIGNMENT}.checks" in done.stderr, done.stderr
    assert "typo" not in done.stderr


def test_a_missing_hidden_checks_file_is_named_rather_than_every_line_of_course_yaml(tmp_path):
    course = private_course(tmp_path)
    hidden = tmp_path / "solutions" / ASSIGNMENT / "hidden_checks.py"
    hidden.unlink()
    done = run_cli("checks", ASSIGNMENT, "--course", course)
    assert done.returncode == 2
    assert re.search(rf"{re.escape(str(hidden))} does not exist, and {re.escape(str(course))} lists \d+ checks "
                     rf"of {ASSIGNMENT} that public_checks.py does not define \(.*\): put hidden_checks.py back",
                     done.stderr), done.stderr
    assert "remove the line or fix its name" not in done.stderr


def test_a_course_folder_without_this_assignment_says_where_it_looked_and_what_it_found(tmp_path):
    """`grade tiny .` where every student of submitted/ has only w07_attention/: it said "no submissions found in ."."""
    course = private_course(tmp_path)
    course.write_text(course.read_text() + "  tiny:\n    title: Doubling\n    module: tiny\n    preload: [numpy]\n"
                      "    checks:\n      double.small: 1\n      double.matches_reference: 2\n")
    for folder in ("assignments", "solutions"):
        shutil.copytree(FIXTURES / "tiny" / folder / "tiny", tmp_path / folder / "tiny")
    shutil.copytree(ROOT / "examples" / "w07_class" / "submitted", tmp_path / "submitted")
    students = len(list((tmp_path / "submitted").iterdir()))
    done = run_cli("grade", "tiny", ".", "--db", tmp_path / "g.db", cwd=tmp_path)
    assert done.returncode == 2
    assert (f"no submissions of tiny found in .; looked in submitted/<student>/tiny/ and found {students} students "
            f"with only {ASSIGNMENT}/. Collect this assignment's hand-ins first") in done.stderr, done.stderr
    assert f"(`autograder grade {ASSIGNMENT} .`)" in done.stderr


def _with_check(tmp_path, body: str, name: str) -> tuple:
    """A private course whose hidden checks end with `body` (defining `context_<name>`), graded 1 point."""
    course = private_course(tmp_path)
    hidden = tmp_path / "solutions" / ASSIGNMENT / "hidden_checks.py"
    hidden.write_text(hidden.read_text() + body + f'\n\nCHECKS += [Check("context.{name}", context_{name})]\n')
    course.write_text(course.read_text().replace("      context.matches_reference: 3\n",
                                                 f"      context.matches_reference: 3\n      context.{name}: 1\n"))
    return course, hidden


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_check_that_returns_a_value_is_named_as_its_fault_never_a_pass(tmp_path):
    """`return np.allclose(...)` in a pytest-style check: the value was ignored and every student passed."""
    course, hidden = _with_check(tmp_path, '''

def context_returns(t):
    """a check written pytest-style."""
    A, V = np.full((2, 2), 0.5), np.eye(2)
    return bool(np.allclose(t.returned("context", A, V), t.ref.context(A, V)))
''', "returns")
    line = hidden.read_text().splitlines().index('    return bool(np.allclose(t.returned("context", A, V), '
                                                  't.ref.context(A, V)))') + 1
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", db)
    assert done.returncode == 2, done.stderr
    refusal = done.stderr.strip().splitlines()[-1]
    assert re.search(rf"the check context\.returns returned True instead of None at {re.escape(str(hidden))} "
                     rf"line {line}, in context_returns; a check passes by returning nothing", refusal), refusal
    assert "a fault in that check, not in this environment" in refusal and _stored(db) == 0


@pytest.mark.slow  # waits out the check's whole time limit (30 s) in a real grading run
def test_a_check_in_an_endless_loop_is_stopped_and_named_with_its_line(tmp_path):
    """`while True: pass` in a check hung `grade` on "loading the suite" until Ctrl-C."""
    course, hidden = _with_check(tmp_path, '''

def context_loops(t):
    """a check that never ends."""
    t.returned("context", np.eye(2), np.eye(2))
    while True:
        pass
''', "loops")
    lines = hidden.read_text().splitlines()
    loop = lines.index("    while True:") + 1
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", db, timeout=300)
    assert done.returncode == 2, done.stderr
    refusal = done.stderr.strip().splitlines()[-1]
    assert re.search(rf"the check context\.loops ran longer than 30 s \(an endless loop\?\) at "
                     rf"{re.escape(str(hidden))} line ({loop}|{loop + 1}), in context_loops", refusal), refusal
    assert _stored(db) == 0


@pytest.mark.parametrize("points", [".nan", ".inf", "-3"])
def test_points_that_are_not_a_finite_number_are_refused_like_negative_ones(tmp_path, points):
    """`.nan` points crashed grading with a raw sqlite3.IntegrityError; `.inf` ones were stored and exported."""
    course = private_course(tmp_path)
    course.write_text(course.read_text().replace("      context.matches_reference: 3\n",
                                                 f"      context.matches_reference: {points}\n"))
    done = run_cli("checks", ASSIGNMENT, "--course", course)
    assert done.returncode == 2
    shown = {".nan": "nan", ".inf": "inf", "-3": "-3"}[points]
    assert (f"assignments.{ASSIGNMENT}.checks.context.matches_reference: expected a number >= 0, got {shown}"
            in done.stderr), done.stderr


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_reference_with_wrong_answers_is_blamed_with_every_failing_check_not_the_environment(tmp_path):
    """It said "this environment cannot grade", named one check, and advised grading the reference, which only
    repeated the refusal."""
    course = private_course(tmp_path)
    reference = tmp_path / "solutions" / ASSIGNMENT / "reference.py"
    reference.write_text(reference.read_text().replace("    return np.asarray(A) @ np.asarray(V)\n",
                                                       "    return (np.asarray(A) @ np.asarray(V)) * 1.01\n"))
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", tmp_path / "g.db")
    assert done.returncode == 2, done.stderr
    refusal = done.stderr.strip().splitlines()[-1]
    assert f"the reference solution of {ASSIGNMENT} fails its checks: {reference} failed " in refusal, refusal
    failing = re.search(r"failed (\d+) of 39 checks on its own answers \((.*)\), which no environment", refusal)
    assert failing and int(failing[1]) > 1, refusal
    named = re.findall(r"(?:^|; )(\w+\.\w+): ", failing[2])
    assert len(named) == int(failing[1]) and "context.lecture_example" in named, named
    assert f"To fix it: fix {reference} so that it gives the right answers" in refusal
    assert "this environment cannot grade" not in refusal and "to see every check's message" not in refusal
    doctor = run_cli("doctor", "--course", course)
    assert f"[ ] {ASSIGNMENT}: cannot grade: its reference fails its checks: {reference} failed" in doctor.stdout


def test_a_reference_without_a_graded_function_is_named_when_the_suite_loads(tmp_path):
    """It was refused as "this environment cannot grade", in the student's words: "your file does not define
    context(); keep the function names of the stub"."""
    course = private_course(tmp_path)
    reference = tmp_path / "solutions" / ASSIGNMENT / "reference.py"
    text = reference.read_text()
    reference.write_text(text.replace("def context(A, V):", "def context_vectors(A, V):")
                         .replace("return context(A, V), A", "return context_vectors(A, V), A"))
    done = run_cli("checks", ASSIGNMENT, "--course", course)
    assert done.returncode == 2
    assert re.search(rf"{re.escape(str(reference))} does not define context\(\), which the checks "
                     r"context\.\w+, .* grade: add it to the reference", done.stderr), done.stderr
    assert "your file" not in done.stderr


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
@pytest.mark.parametrize("preload, entry, meant", [
    ("[numpy, Torch]", "Torch", "torch"),  # wrong case: torch IS installed, so no pip command can fix it
    ("[numpy, torch, torch.nn.functionl]", "torch.nn.functionl", "torch.nn.functional"),  # a misspelt submodule
    ("[numpy, scikit-learn, torch]", "scikit-learn", "sklearn"),  # pip's name, with a hyphen, before torch
    ("[numpy, torch-cpu]", "torch-cpu", "torch"),  # a hyphen: had been told to `pip install --force-reinstall` it
])
def test_a_preload_entry_that_is_no_import_name_is_named_with_the_real_module_never_a_pip_command(
        tmp_path, preload, entry, meant):
    """`Torch` and `torch.nn.functionl` were told "torch is not installed" with a pip command, though torch is
    installed; a name with a hyphen was offered `pip install --force-reinstall` of itself, or of the LAST preload
    entry (torch, for `[numpy, scikit-learn, torch]`). Each is named with its course.yaml key and the module meant."""
    course = private_course(tmp_path)
    course.write_text(course.read_text().replace("preload: [numpy, torch]", f"preload: {preload}", 1))
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", tmp_path / "g.db")
    assert done.returncode == 2, done.stderr
    assert (f"course.yaml: assignments.{ASSIGNMENT}.preload: {entry!r} cannot be imported in the workers' Python"
            in done.stderr), done.stderr
    assert (f"correct the name under assignments.{ASSIGNMENT}.preload in course.yaml (most likely {meant!r} is meant), "
            "as `import` names the module (case-sensitive, and not always the name pip knows it by") in done.stderr
    assert "pip install" not in done.stderr and "is not installed" not in done.stderr


@pytest.mark.slow  # whole commands in subprocesses, each starting its own sandbox: make test runs it
def test_a_misspelled_preload_names_its_course_yaml_key_and_the_likely_name_not_a_pip_install(tmp_path):
    """`preload: [numpy, torhc]` was answered by `grade` and `doctor` with `python -m pip install 'torhc'`: advice
    to install a typo from PyPI into the Python that reads solutions/. A library the project knows under another
    name than the one imported (`sklearn`) is offered under the name pip installs it by."""
    course = private_course(tmp_path)
    course.write_text(course.read_text().replace("preload: [numpy, torch]", "preload: [numpy, torhc]", 1))
    db = tmp_path / "g.db"
    done = run_cli("grade", ASSIGNMENT, PLAIN, "--course", course, "--db", db)
    assert done.returncode == 2, done.stderr
    said = (f"course.yaml: assignments.{ASSIGNMENT}.preload: 'torhc' cannot be imported in the workers' Python",
            f". To fix it: correct the name under assignments.{ASSIGNMENT}.preload in course.yaml (most likely "
            "'torch' is meant), as `import` names the module")
    assert all(part in done.stderr for part in said), done.stderr
    assert "pip install" not in done.stderr and _stored(db) == 0
    doctor = run_cli("doctor", "--course", course)
    assert doctor.returncode == 1 and all(part in doctor.stdout for part in said), doctor.stdout
    assert "pip install" not in doctor.stdout
    course.write_text(course.read_text().replace("preload: [numpy, torhc]", "preload: [numpy, sklearn]", 1))
    doctor = run_cli("doctor", "--course", course)
    assert "-m pip install 'scikit-learn'`" in doctor.stdout and "'sklearn' cannot" not in doctor.stdout, doctor.stdout
