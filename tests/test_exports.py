"""Issue 4, exports: CSV, Gradescope results.json and bundle, nbgrader gradebook — checked against the store.

One class is graded once for the module with the real CLI and sandbox; every
export is then compared, student by student and check by check, with what
the results store holds.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.cli.gradescope import grade_for_gradescope
from autograder.grading import gradescope_export, gradescope_handin
from autograder.grading.store import Store
from autograder.outputs import ExportError, grades_csv, gradescope

from conftest import PLAIN, REFERENCE, ROOT, STUB, SUBMISSIONS, compose, run_cli

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
ASSIGNMENT = "w07_attention"
FUNCTIONS = ("score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
             "attention", "attention_torch")

# Gradescope's results.json, written from "Autograder Specifications"
# (https://gradescope-autograders.readthedocs.io/en/latest/specs/): only the documented
# keys, the documented visibility, status and format values.
_VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
_FORMAT = {"enum": ["text", "simple_format", "html", "md", "ansi"]}
_TEST = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "max_score": {"type": "number"},
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"},
        "name_format": _FORMAT,
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": _FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": _VISIBILITY,
        "extra_data": {"type": "object"},
    },
}
RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": _FORMAT,
        "test_output_format": _FORMAT,
        "test_name_format": _FORMAT,
        "visibility": _VISIBILITY,
        "stdout_visibility": _VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": _TEST},
        "leaderboard": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["name", "value"],
            "properties": {"name": {"type": "string"}, "value": {"type": ["number", "string"]},
                           "order": {"enum": ["asc", "desc"]}}}},
    },
    # "score: optional, but required if not on each test case"
    "anyOf": [{"required": ["score"]},
              {"required": ["tests"], "properties": {"tests": {"items": {"required": ["score"]}}}}],
}
VALIDATOR = jsonschema.Draft202012Validator(RESULTS_SCHEMA)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A small class graded once by the real CLI: (database, {student: SubmissionResult})."""
    folder = tmp_path_factory.mktemp("class")
    shutil.copy(REFERENCE, folder / "reference.py")
    shutil.copy(STUB, folder / "stub.py")
    compose(folder, "buggy", SUBMISSIONS / "buggy" / "softmax_over_queries.py")
    compose(folder, "crasher", SUBMISSIONS / "attacks" / "exit_in_function.py")  # softmax kills its worker
    compose(folder, "printer", SUBMISSIONS / "attacks" / "fake_results_print.py")  # prints "All tests passed"
    (folder / "empty.ipynb").write_text("")  # cannot be graded at all
    db = folder.parent / "grades.db"
    done = run_cli("grade", ASSIGNMENT, folder, "--db", db, "--json", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        results = {r.student: r for r in store.results(ASSIGNMENT)}
    assert sorted(results) == ["buggy", "crasher", "empty", "printer", "reference", "stub"]
    return db, results


def test_reports_and_exports_take_the_assignment_named_first_as_grade_does(graded, tmp_path, capsys):
    # `report w07_attention` had stopped at the top-level usage: "unrecognized arguments: w07_attention".
    from autograder.cli import main

    db, results = graded
    assert main(["report", ASSIGNMENT, "--db", str(db), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "index.html").read_text()
    assert ASSIGNMENT in page and all(student in page for student in results), page[:500]
    assert main(["export", "csv", ASSIGNMENT, "--db", str(db), "--out", str(tmp_path / "g.csv")]) == 0
    assert len((tmp_path / "g.csv").read_text().splitlines()) == len(results) + 1
    with pytest.raises(SystemExit):
        main(["export", "csv", ASSIGNMENT, "--assignment", "w08", "--db", str(db)])
    assert "two assignments were given, w07_attention and --assignment w08; give one" in capsys.readouterr().err


def _validate(document: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


# ---------------------------------------------------------------- CSV


def test_csv_has_one_row_per_student_matching_the_store(graded, tmp_path):
    db, results = graded
    out = tmp_path / "grades.csv"
    done = run_cli("export", "csv", "--db", db, "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"wrote 6 students of {ASSIGNMENT} to {out}" in done.stderr
    rows = list(csv.DictReader(out.open()))
    header = out.read_text().splitlines()[0].split(",")
    assert header[:3 + len(FUNCTIONS)] == ["student", "total", "max", *(f"{f}()" for f in FUNCTIONS)]
    assert [r["student"] for r in rows] == sorted(results)
    for row in rows:
        result = results[row["student"]]
        counts = result.counts()
        assert float(row["total"]) == result.score and float(row["max"]) == result.max_score == 100
        for function, (got, _) in result.by_function().items():
            assert float(row[f"{function}()"]) == got, (row["student"], function)
        assert sum(float(row[f"{f}()"]) for f in FUNCTIONS) == pytest.approx(result.score)
        assert (int(row["passed"]), int(row["failed"]), int(row["errors"]), int(row["timeouts"])) == \
            (counts["passed"], counts["failed"], counts["error"], counts["timeout"])
        assert row["could_not_grade"] == ("1" if result.problem else "0") and row["problem"] == result.problem
        assert row["reduced_sandbox"] == ("0" if result.isolated else "1")
        assert int(row["killed_processes"]) == result.killed_processes
        assert row["sha256"] == result.sha256[:12] and len(row["sha256"]) == 12
        assert (row["suite_version"], row["graded_at"], int(row["seed"])) == \
            (result.suite_version, result.graded_at, result.seed)
    by_student = {r["student"]: r for r in rows}
    # The class covers each flag, so a column that were always 0 would fail here.
    assert by_student["reference"]["total"] == "100" and by_student["stub"]["total"] == "0"
    assert int(by_student["crasher"]["errors"]) > 0 and by_student["crasher"]["softmax()"] == "0"
    assert by_student["empty"]["could_not_grade"] == "1" and "empty" in by_student["empty"]["problem"]


def test_csv_goes_to_standard_output_by_default(graded):
    db, results = graded
    done = run_cli("export", "csv", "--db", db, "--assignment", ASSIGNMENT)
    assert done.returncode == 0, done.stderr
    assert len(list(csv.DictReader(io.StringIO(done.stdout)))) == len(results)
    assert "standard output" in done.stderr


def test_csv_text_cells_cannot_become_spreadsheet_formulas(graded):
    _, results = graded
    hostile = dataclasses.replace(results["stub"], student="=HYPERLINK(\"http://x\")", file="@cmd.py",
                                  problem="-1+1 is not a notebook")
    stream = io.StringIO()
    grades_csv.write_csv([hostile], stream)
    row = next(csv.DictReader(io.StringIO(stream.getvalue())))
    assert row["student"] == "'=HYPERLINK(\"http://x\")"
    assert row["file"] == "'@cmd.py" and row["problem"] == "'-1+1 is not a notebook"


# ---------------------------------------------------------------- Gradescope results.json


def test_the_schema_rejects_what_gradescope_would_not_accept(graded):
    document = gradescope.gradescope_results(graded[1]["crasher"])
    _validate(document)
    broken = [
        {**document, "tests": [{**document["tests"][0], "status": "error"}]},
        {**document, "tests": [{**document["tests"][0], "visibility": "public"}]},
        {**document, "student": "crasher"},  # not a documented top-level key
        {**document, "stdout_visibility": "instructors"},
        {key: value for key, value in document.items() if key not in ("score", "tests")},
    ]
    for document in broken:
        assert list(VALIDATOR.iter_errors(document)), document.keys()


def test_gradescope_export_writes_valid_results_matching_the_store(graded, tmp_path):
    db, results = graded
    out = tmp_path / "gradescope"
    done = run_cli("export", "gradescope", "--db", db, "--out", out)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted([*results, ".students.json"])  # the list of those written
    assert json.loads((out / ".students.json").read_text()) == sorted(results)
    for student, result in results.items():
        document = json.loads((out / student / "results.json").read_text())
        _validate(document)
        assert document["score"] == result.score == pytest.approx(sum(t["score"] for t in document["tests"]))
        assert document["extra_data"]["suite_version"] == result.suite_version
        assert document["extra_data"]["sha256"] == result.sha256
        assert len(document["tests"]) == len(result.tests) == 39
        assert len({t["number"] for t in document["tests"]}) == 39
        for ours, theirs in zip(result.tests, document["tests"]):
            assert theirs["name"] == ours.name
            assert (theirs["score"], theirs["max_score"]) == (ours.score, ours.max_score)
            assert theirs["status"] == ("passed" if ours.status == "passed" else "failed")
            assert theirs["visibility"] == "visible"
            assert ours.message in theirs["output"] and (not ours.hint or ours.hint in theirs["output"])
            assert theirs["extra_data"]["status"] == ours.status
            assert theirs["number"].split(".")[0] == str(FUNCTIONS.index(ours.function) + 1)


def test_gradescope_maps_errors_and_could_not_grade_to_failed_with_the_reason(graded):
    _, results = graded
    crasher = gradescope.gradescope_results(results["crasher"])
    errors = [t for t in crasher["tests"] if t["extra_data"]["status"] == "error"]
    assert errors and all(t["status"] == "failed" and t["score"] == 0 and t["output"] for t in errors)
    empty = gradescope.gradescope_results(results["empty"])
    assert empty["score"] == 0 and "not loaded: empty.ipynb is empty" in empty["output"]


def test_what_the_student_code_printed_stays_out_of_student_visible_text(graded):
    printer = gradescope.gradescope_results(graded[1]["printer"])
    assert "All tests passed" in printer["extra_data"]["student_output"]
    visible = [printer["output"]] + [t["output"] for t in printer["tests"]] + [t["name"] for t in printer["tests"]]
    assert not any("All tests passed" in text or "RESULT: 100/100" in text for text in visible)


def test_gradescope_export_refuses_only_the_student_whose_id_is_not_a_folder_name(graded, tmp_path):
    bad = dataclasses.replace(graded[1]["stub"], student="../escape")  # stored before ids were settled
    written = gradescope.write_gradescope_dir([bad, graded[1]["reference"]], tmp_path / "out")
    assert written.files == [tmp_path / "out" / "reference" / "results.json"]
    assert len(written.refused) == 1 and "cannot be a folder name" in written.refused[0]
    assert not (tmp_path / "escape").exists()
    (tmp_path / "a_file").write_text("x")  # --out names a file: said once, with what to do, not per student
    with pytest.raises(ExportError, match=r"cannot write .*a_file.* \(Not a directory\); export to a folder"):
        gradescope.write_gradescope_dir([graded[1]["reference"]], tmp_path / "a_file")


# ---------------------------------------------------------------- Gradescope bundle


def _course_with_clutter(tmp_path: Path) -> Path:
    """A copy of the course with everything a bundle must leave out lying around."""
    for name in ("course.yaml", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tmp_path / name)
    for folder in ("assignments", "solutions"):
        shutil.copytree(ROOT / folder / ASSIGNMENT, tmp_path / folder / ASSIGNMENT)
    shutil.copytree(SUBMISSIONS / "buggy", tmp_path / "tests" / "fixtures" / "submissions" / "buggy")
    clutter = [".git/config", ".venv/bin/python", "out/demo.db", "grades.db", "grades.db-wal",
               f"assignments/{ASSIGNMENT}/.ipynb_checkpoints/attention-checkpoint.ipynb",
               f"assignments/{ASSIGNMENT}/__pycache__/public_checks.cpython-311.pyc",
               f"solutions/{ASSIGNMENT}/grades.db", f"solutions/{ASSIGNMENT}/.DS_Store"]
    for name in clutter:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    return tmp_path / "course.yaml"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    course = _course_with_clutter(tmp_path_factory.mktemp("course"))
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    done = run_cli("gradescope-bundle", ASSIGNMENT, "--course", course, "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stderr and "keep it private" in done.stderr
    return out


def test_a_course_folder_apart_from_the_package_makes_a_bundle_with_the_packages_own_project(tmp_path):
    """A course of course.yaml, assignments/ and solutions/ alone, graded with the package installed: the bundle
    had looked for pyproject.toml in the course's folder, and refused. pip builds the package from the package's
    own; one installed from a wheel keeps none, and gets one written from its metadata, which pip reads the same."""
    from autograder.outputs.bundle import _pyproject_from_metadata

    shutil.copy(ROOT / "course.yaml", tmp_path / "course.yaml")
    for folder in ("assignments", "solutions"):
        shutil.copytree(ROOT / folder / ASSIGNMENT, tmp_path / folder / ASSIGNMENT)
    out = tmp_path / "autograder.zip"
    done = run_cli("gradescope-bundle", ASSIGNMENT, "--course", tmp_path / "course.yaml", "--out", out)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(out) as archive:
        assert archive.read("pyproject.toml") == (ROOT / "pyproject.toml").read_bytes()
        assert "pip install torch==2.13.0 --index-url" in archive.read("setup.sh").decode()
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    written = tomllib.loads(_pyproject_from_metadata())
    assert written["project"]["dependencies"] == [d.split("#")[0].strip() for d in ours["dependencies"]]
    assert written["project"]["optional-dependencies"]["torch"] == ours["optional-dependencies"]["torch"]
    assert written["project"]["scripts"] == ours["scripts"] and written["build-system"]["build-backend"]


def test_bundle_holds_the_scripts_package_course_and_assignment_and_nothing_else(bundle):
    with zipfile.ZipFile(bundle) as archive:
        infos = {i.filename: i for i in archive.infolist()}
    names = set(infos)
    for script in ("setup.sh", "run_autograder"):
        assert (infos[script].external_attr >> 16) & stat.S_IXUSR, script
    package = {f"autograder/{p.name}" for p in (ROOT / "autograder").glob("*.py")}
    assert package <= names
    required = {"course.yaml", "pyproject.toml", "README.md", f"assignments/{ASSIGNMENT}/public_checks.py",
                f"solutions/{ASSIGNMENT}/reference.py", f"solutions/{ASSIGNMENT}/hidden_checks.py"}
    assert required <= names
    leaked = [n for n in names if n.startswith((".git", ".venv", "out/", "tests/")) or "grades.db" in n
              or "__pycache__" in n or n.endswith((".pyc", ".DS_Store")) or ".ipynb_checkpoints" in n
              or "fixtures" in n]
    assert leaked == []
    # Only what grading needs: the public checks, not the source notebook (every solution region) or the stub.
    shipped = {f"solutions/{ASSIGNMENT}/{p.relative_to(ROOT / 'solutions' / ASSIGNMENT).as_posix()}"
               for p in (ROOT / "solutions" / ASSIGNMENT).rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and not p.name.startswith(".")}
    shipped.add(f"assignments/{ASSIGNMENT}/public_checks.py")
    assert {n for n in names if n.startswith(("assignments/", "solutions/"))} == shipped
    top = {n for n in names if "/" not in n}
    assert top == {"setup.sh", "run_autograder", "course.yaml", "pyproject.toml", "README.md"}
    assert {n.split("/")[0] for n in names if "/" in n} == {"autograder", "assignments", "solutions"}


def test_setup_installs_the_pinned_cpu_torch_and_the_package(bundle):
    with zipfile.ZipFile(bundle) as archive:
        setup = archive.read("setup.sh").decode()
        run = archive.read("run_autograder").decode()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.startswith("torch")]  # the engine needs no torch
    assert project["optional-dependencies"]["torch"] == ["torch==2.13.0"]  # the assignment's checks do
    assert "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup
    assert "pip install /autograder/source" in setup and "bubblewrap" in setup
    assert f"gradescope-run {ASSIGNMENT}" in run
    for text in (setup, run):
        assert subprocess.run(["bash", "-n"], input=text, text=True).returncode == 0
        assert text.startswith("#!/usr/bin/env bash\n")


def _fake_gradescope(tmp_path: Path, bundle: Path, files: dict[str, str], email: str | None) -> Path:
    """/autograder as Gradescope lays it out: source/ (the zip), submission/, metadata, run_autograder."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    for name, text in files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_text(text)
    if email:
        metadata = {"id": 1, "created_at": "2026-11-20T10:00:00.123456-05:00",
                    "users": [{"email": email, "id": 7, "name": "A Student"}]}
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    return root


def _run_autograder(root: Path, sandbox: str = "auto", worker_python: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRADESCOPE_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable,
           "AUTOGRADER_SANDBOX": sandbox}
    if worker_python:
        env["AUTOGRADER_WORKER_PYTHON"] = worker_python
    return subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_run_autograder_grades_like_the_batch_grader(graded, bundle, tmp_path):
    db, results = graded
    buggy = results["buggy"]
    # The seed comes from the student id, so the email "buggy" must reproduce the batch result exactly.
    root = _fake_gradescope(tmp_path, bundle, {"attention.py": Path(buggy.file).read_text()}, email="buggy")
    done = _run_autograder(root)
    assert done.returncode == 0, done.stderr
    document = json.loads((root / "results" / "results.json").read_text())
    _validate(document)
    expected = _without_timing(gradescope.gradescope_results(buggy), like=document)
    assert document["extra_data"] == expected["extra_data"]
    assert document == expected
    assert 0 < document["score"] < 100
    assert document["extra_data"]["submitted_at"] == "2026-11-20T15:00:00.123456+00:00"
    assert stat.S_IMODE((root / "source" / "solutions").stat().st_mode) == 0o700
    # The code that ran is the bundle's copy, not this checkout's.
    where = subprocess.run([sys.executable, "-c", "import autograder; print(autograder.__file__)"],
                           cwd=root / "source", capture_output=True, text=True)
    assert where.stdout.strip() == str(root / "source" / "autograder" / "__init__.py")


def _without_timing(expected: dict, like: dict) -> dict:
    """`expected` with the fields that differ between two gradings of one file taken from `like`."""
    # killed_processes counts leftovers the sandbox reaped, which depends on timing, not on the file.
    # The submission time is the metadata's created_at here, the file's time in the batch.
    extra = {**expected["extra_data"], **{key: like["extra_data"][key] for key in
                                          ("file", "graded_at", "killed_processes", "submitted_at",
                                           "submitted_at_source")}}
    # Tracebacks and warnings name the file as it was handed in: here buggy.py, on Gradescope attention.py.
    extra["student_output"] = extra["student_output"].replace(Path(expected["extra_data"]["file"]).name,
                                                              "attention.py")
    tests = [{**t, "extra_data": {**t["extra_data"], "seconds": u["extra_data"]["seconds"]}}
             for t, u in zip(expected["tests"], like["tests"])]
    output = expected["output"].replace(Path(expected["extra_data"]["file"]).name, "attention.py", 1)
    return {**expected, "execution_time": like["execution_time"], "output": output, "extra_data": extra,
            "tests": tests}


def test_the_fallback_on_gradescope_lets_student_code_read_nothing_of_the_bundle(bundle, public_python):
    """Gradescope's container may not run bubblewrap; a submission then searches the disk for solutions."""
    place = Path(tempfile.mkdtemp(prefix="gradescope-", dir="/tmp"))
    place.chmod(0o755)  # as /autograder is: every uid may pass through
    try:
        code = PLAIN.read_text() + "\n\n" + (SUBMISSIONS / "attacks" / "hunt_solutions.py").read_text()
        root = _fake_gradescope(place, bundle, {"attention.py": code}, email="hunter@example.com")
        done = _run_autograder(root, sandbox="fallback", worker_python=public_python)
        assert done.returncode == 0, done.stderr
        document = json.loads((root / "results" / "results.json").read_text())
        assert document["extra_data"]["sandbox"] == "fallback"
        shown = json.dumps(document)
        assert "hunt_solutions searched" in document["extra_data"]["student_output"]  # the attack ran
        assert str(root / "source") not in shown  # no file of the bundle was readable to the submission
        readable = [line.split(": ", 1)[1] for line in document["extra_data"]["student_output"].splitlines()
                    if line.startswith("readable: ")]
        # The student's own submission is theirs to read; nothing else of the bundle is.
        assert [p for p in readable if p.startswith(str(root)) and not p.startswith(str(root / "submission"))] == []
        assert stat.S_IMODE((root / "source").stat().st_mode) & 0o077 == 0
    finally:
        shutil.rmtree(place)


def test_run_autograder_refuses_where_the_bundle_stays_readable(bundle, public_python):
    place = Path(tempfile.mkdtemp(prefix="gradescope-", dir="/tmp"))
    place.chmod(0o755)
    try:
        root = _fake_gradescope(place, bundle, {"attention.py": PLAIN.read_text()}, email=None)
        script = (root / "run_autograder").read_text().replace('chmod -R go-rwx "$ROOT/source"', "true")
        (root / "run_autograder").write_text(script)  # as if the lock had been forgotten
        done = _run_autograder(root, sandbox="fallback", worker_python=public_python)
        assert done.returncode == 2
        assert "grading was refused" in done.stderr and "course.yaml" in done.stderr
        document = json.loads((root / "results" / "results.json").read_text())
        _validate(document)
        assert "did not run" in document["output"] and document["score"] == 0
    finally:
        shutil.rmtree(place)


def test_run_autograder_takes_a_notebook_and_records_the_fallback_sandbox(bundle, tmp_path, public_python):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Week 7"),
                                               nbformat.v4.new_code_cell(REFERENCE.read_text())])
    files = {"work/attention.ipynb": nbformat.writes(notebook), "notes.txt": "not code"}
    root = _fake_gradescope(tmp_path, bundle, files, email=None)
    done = _run_autograder(root, sandbox="fallback", worker_python=public_python)
    assert done.returncode == 0, done.stderr
    assert "sandbox fallback" in done.stderr
    document = json.loads((root / "results" / "results.json").read_text())
    _validate(document)
    assert document["score"] == 100
    assert document["extra_data"]["sandbox"] == "fallback"
    assert document["extra_data"]["student"] == "gradescope"
    assert document["extra_data"]["file"].endswith("work/attention.ipynb")


def test_a_submission_without_the_file_gets_a_zero_that_says_what_to_upload(course, tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "answers.txt").write_text("def softmax(S): ...")
    result = grade_for_gradescope(course, ASSIGNMENT, root, "auto", log=io.StringIO())
    document = json.loads((root / "results" / "results.json").read_text())
    _validate(document)
    assert result.score == document["score"] == 0
    assert "no attention.py or attention.ipynb was found in your submission" in document["output"]


def test_picking_prefers_the_named_file_and_ignores_links_out_of_the_submission(tmp_path):
    folder = tmp_path / "submission"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "helper.py").write_text("x = 1")
    assert gradescope_export.pick_submission_file(folder, "attention").path == folder / "sub" / "helper.py"
    (folder / "attention.py").symlink_to(REFERENCE)
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "attention.py").write_text("x = 2")
    picked = gradescope_export.pick_submission_file(folder, "attention")
    assert picked.path == folder / "sub" / "helper.py"  # not the link to the reference, not the hidden copy
    (folder / "attention.py").unlink()
    (folder / "attention.py").write_text(PLAIN.read_text())
    (folder / "attention.ipynb").write_text("{}")
    picked = gradescope_export.pick_submission_file(folder, "attention")
    assert picked.path == folder / "attention.py" and "not attention.ipynb" in picked.note  # the one with the work
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLAIN.read_text())]),
                   folder / "attention.ipynb")
    picked = gradescope_export.pick_submission_file(folder, "attention")
    assert picked.path == folder / "attention.ipynb" and "not attention.py" in picked.note  # the same work
    assert gradescope_export.pick_submission_file(tmp_path / "nothing", "attention").problem


def test_the_seed_student_is_the_sorted_group_emails(tmp_path):
    metadata = tmp_path / "submission_metadata.json"
    assert gradescope_handin.gradescope_student(metadata) == "gradescope"  # no file: a local run of the bundle
    metadata.write_text(json.dumps({"users": [{"email": "b@x.edu"}, {"email": "", "id": 7}]}))
    assert gradescope_handin.gradescope_student(metadata) == "7,b@x.edu"


@pytest.mark.parametrize("text, what", [
    ("not json", "is not JSON"),
    ("[]", "holds a list, not a JSON object"),
    (json.dumps({"created_at": "2026-11-21T06:59:00-05:00"}), "has no list of submitters"),
    (json.dumps({"users": [{"email": "a@x.edu"}, {"name": "B Student"}]}), "no email or sid or id for submitter 2"),
    (json.dumps({"users": [{"email": True}]}), "no email or sid or id for submitter 1"),
])
def test_metadata_that_names_no_submitter_is_an_error_never_a_shared_id(tmp_path, text, what):
    metadata = tmp_path / "submission_metadata.json"
    metadata.write_text(text)
    with pytest.raises(gradescope_handin.MetadataError, match=what):
        gradescope_handin.gradescope_student(metadata)


def test_run_autograder_grades_no_one_from_malformed_metadata_and_tells_the_student(bundle, tmp_path):
    root = _fake_gradescope(tmp_path, bundle, {"attention.py": PLAIN.read_text()}, email=None)
    # Gradescope's shape, but its submitter without an email or id: the old reading made this "gradescope".
    (root / "submission_metadata.json").write_text(json.dumps({
        "created_at": "2026-11-21T06:59:00.5-05:00", "users": [{"name": "A Student"}]}))
    done = _run_autograder(root)
    assert done.returncode == 2, done.stderr
    assert "submission_metadata.json names no email or sid or id for submitter 1" in done.stderr
    assert "so this submission was not graded" in done.stderr and "Regrade Submission" in done.stderr
    document = json.loads((root / "results" / "results.json").read_text())
    _validate(document)
    assert document["score"] == 0 and "tests" not in document and "extra_data" not in document
    assert "did not run: it could not tell who handed this submission in" in document["output"]


# ---------------------------------------------------------------- nbgrader gradebook


def _nbgrader_export(gradebook: Path, tmp_path: Path) -> dict[str, dict]:
    """nbgrader's own `nbgrader export` CSV, by student."""
    course = tmp_path / "nbgrader-course"
    course.mkdir(exist_ok=True)
    done = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "export", f"--db=sqlite:///{gradebook}",
                           "--to=grades.csv"], cwd=course, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return {row["student_id"]: row for row in csv.DictReader((course / "grades.csv").open())}


def test_nbgrader_gradebook_shows_our_scores(graded, tmp_path):
    db, results = graded
    gradebook = tmp_path / "gradebook.db"
    for _ in range(2):  # a second export updates in place
        done = run_cli("export", "nbgrader", "--db", db, "--gradebook", f"sqlite:///{gradebook}")
        assert done.returncode == 0, done.stderr
    assert "wrote 6 students" in done.stderr and "notebook 'attention'" in done.stderr
    assert "Warning" not in done.stderr
    with Gradebook(f"sqlite:///{gradebook}") as book:
        notebook = book.find_notebook("attention", ASSIGNMENT)
        assert sorted(c.name for c in notebook.grade_cells) == sorted(f"test_{f}" for f in FUNCTIONS)
        assert book.find_assignment(ASSIGNMENT).max_score == 100
        for student, result in results.items():
            submission = book.find_submission(ASSIGNMENT, student)
            assert submission.score == pytest.approx(result.score) and submission.max_score == 100
            assert not submission.needs_manual_grade
            for function, (got, possible) in result.by_function().items():
                grade = book.find_grade(f"test_{function}", "attention", ASSIGNMENT, student)
                assert (grade.auto_score, grade.max_score) == (got, possible)
    exported = _nbgrader_export(gradebook, tmp_path)
    assert sorted(exported) == sorted(results)
    for student, result in results.items():
        row = exported[student]
        assert float(row["raw_score"]) == float(row["score"]) == pytest.approx(result.score), student
        assert float(row["max_score"]) == result.max_score
    assert float(exported["reference"]["score"]) == 100 and float(exported["stub"]["score"]) == 0


@pytest.mark.skipif(not (ROOT / "assignments" / ASSIGNMENT / "attention.ipynb").is_file(),
                    reason="the nbgrader source notebook is not in this checkout")
def test_nbgrader_export_fills_the_cells_of_the_released_notebook(graded, tmp_path):
    db, results = graded
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.source_directory = {str(ROOT / 'assignments')!r}\n")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT], cwd=course,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    url = f"sqlite:///{course / 'gradebook.db'}"
    done = run_cli("export", "nbgrader", "--db", db, "--gradebook", url, "--root", course)
    assert done.returncode == 0, done.stderr
    with Gradebook(url) as book:
        cells = {c.name: c for c in book.find_notebook("attention", ASSIGNMENT).grade_cells}
        written = {name: cell for name, cell in cells.items() if cell.cell_type == "markdown"}
        assert written and set(cells) - set(written) == {f"test_{f}" for f in FUNCTIONS}
        manual = sum(cell.max_score for cell in written.values())
        for student, result in results.items():
            for name in written:
                grade = book.find_grade(name, "attention", ASSIGNMENT, student)
                assert grade.needs_manual_grade and grade.score == 0  # left for the TA
            for function, (got, possible) in result.by_function().items():
                grade = book.find_grade(f"test_{function}", "attention", ASSIGNMENT, student)
                assert (grade.auto_score, grade.max_score) == (got, possible)
    exported = _nbgrader_export(course / "gradebook.db", tmp_path)
    for student, result in results.items():
        assert float(exported[student]["raw_score"]) == pytest.approx(result.score)
        assert float(exported[student]["max_score"]) == result.max_score + manual


@pytest.fixture
def venv_on_path(monkeypatch):
    """nbgrader creates a gradebook by running its `alembic` command by name."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.mark.usefixtures("venv_on_path")
@pytest.mark.filterwarnings("ignore:Object of type:sqlalchemy.exc.SAWarning")  # nbgrader's own add_submission
def test_nbgrader_export_fills_a_submission_nbgrader_created_before_our_cells(graded, tmp_path):
    db, results = graded
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as book:  # as after `nbgrader collect`: a submission, but no grade cells yet
        book.add_assignment(ASSIGNMENT)
        book.add_notebook("attention", ASSIGNMENT)
        book.add_student("buggy", first_name="B", last_name="Uggy")
        book.add_submission(ASSIGNMENT, "buggy")
    done = run_cli("export", "nbgrader", "--db", db, "--gradebook", url)
    assert done.returncode == 0, done.stderr
    with Gradebook(url) as book:
        assert book.find_submission(ASSIGNMENT, "buggy").score == pytest.approx(results["buggy"].score)
        assert book.find_student("buggy").last_name == "Uggy"


@pytest.mark.usefixtures("venv_on_path")
def test_nbgrader_export_refuses_a_notebook_with_other_autograded_cells(graded, tmp_path):
    db, _ = graded
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as book:
        book.add_assignment(ASSIGNMENT)
        book.add_notebook("attention", ASSIGNMENT)
        book.add_grade_cell("test_softmax_hidden", "attention", ASSIGNMENT, max_score=5, cell_type="code")
    done = run_cli("export", "nbgrader", "--db", db, "--gradebook", url)
    assert done.returncode == 2
    assert "test_softmax_hidden" in done.stderr and "would be added to ours" in done.stderr
    with Gradebook(url) as book:
        assert book.students == []


# ---------------------------------------------------------------- errors a TA may hit


def test_export_errors_say_what_to_do(graded, tmp_path):
    db, results = graded
    done = run_cli("export", "csv", "--db", tmp_path / "missing.db")
    assert done.returncode == 2 and "Grade first" in done.stderr and not (tmp_path / "missing.db").exists()
    two = tmp_path / "two.db"
    with Store(two) as store:
        store.save(results["stub"])
        store.save(dataclasses.replace(results["stub"], assignment="w08_other"))
    done = run_cli("export", "gradescope", "--db", two, "--out", tmp_path / "gs")
    assert done.returncode == 2 and "pass --assignment NAME" in done.stderr and "w08_other" in done.stderr
    done = run_cli("export", "csv", "--db", two, "--assignment", "w09")
    assert done.returncode == 2 and "no results for 'w09'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_an_export_replaces_stays_whole_when_writing_fails_midway(tmp_path):
    """On a full disk `export csv --out grades.csv` had cut an earlier, good grades.csv short mid-row, and said
    "check that path and its permissions" with no file named."""
    import errno

    from autograder.cli import _os_error
    from autograder.outputs import replaced_whole

    out = tmp_path / "grades.csv"
    out.write_text("student,total\nann,100\n")
    full = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(OSError), replaced_whole(out) as stream:
        stream.write("student,total\nben,")
        raise full
    assert out.read_text() == "student,total\nann,100\n" and list(tmp_path.iterdir()) == [out]
    with replaced_whole(out) as stream:
        stream.write("student,total\nben,90\n")
    assert out.read_text() == "student,total\nben,90\n" and list(tmp_path.iterdir()) == [out]
    assert _os_error(full).startswith("the disk is full (No space left on device); free some space")
