"""Exports: stored grades in the places courses keep them.

- CSV: one row per student, with points per function and status flags.
- Gradescope: one results.json per submission, in Gradescope's documented
  format (https://gradescope-autograders.readthedocs.io/en/latest/specs/);
  an autograder bundle (setup.sh + run_autograder) that grades on
  Gradescope's own machines; and the one-submission path run_autograder calls.
- nbgrader: scores written into an nbgrader gradebook through nbgrader's own
  Gradebook API, so formgrader and `nbgrader export` show them.

Exports read the results store and never regrade, except the Gradescope
one-submission path, which grades exactly the file Gradescope hands it.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import os
import shlex
import shutil
import sys
import tomllib
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from autograder.course import Course
from autograder.results import SubmissionResult
from autograder.submission import SUFFIXES, Submission, read_submission
from autograder.suite import PUBLIC_FILE
from autograder.text import safe


class ExportError(Exception):
    """An export could not be written; the message says what to do next."""


def function_order(results: list[SubmissionResult]) -> list[str]:
    """Every graded function, in check order (first appearance across the results)."""
    return list(dict.fromkeys(f for r in results for f in r.by_function()))


# ---------------------------------------------------------------- CSV

FLAG_COLUMNS = ("passed", "failed", "errors", "timeouts", "could_not_grade", "problem", "internal_error",
                "reduced_sandbox", "sandbox", "killed_processes")
PROVENANCE_COLUMNS = ("sha256", "suite_version", "seed", "graded_at", "file")
SHORT_SHA = 12
# A spreadsheet runs a cell starting with one of these as a formula; student-chosen text
# (file names, ids) must stay text (OWASP "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_header(functions: list[str]) -> list[str]:
    """Column names: function columns are written `name()` so `score()` is not mistaken for the total."""
    return ["student", "total", "max", *(f"{f}()" for f in functions), *FLAG_COLUMNS, *PROVENANCE_COLUMNS]


def csv_row(result: SubmissionResult, functions: list[str]) -> list[str]:
    """One student's row; a function the student's suite did not grade is left empty."""
    counts = result.counts()
    points = result.by_function()
    return [
        _text(result.student), _number(result.score), _number(result.max_score),
        *(_number(points[f][0]) if f in points else "" for f in functions),
        str(counts["passed"]), str(counts["failed"]), str(counts["error"]), str(counts["timeout"]),
        "1" if result.problem else "0", _text(result.problem), "1" if result.internal_error else "0",
        "0" if result.sandbox == "bwrap" else "1", result.sandbox, str(result.killed_processes),
        result.sha256[:SHORT_SHA], result.suite_version, str(result.seed), result.graded_at, _text(result.file),
    ]


def write_csv(results: list[SubmissionResult], stream: TextIO) -> None:
    """One row per student (sorted by student), header first."""
    functions = function_order(results)
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(csv_header(functions))
    for result in sorted(results, key=lambda r: r.student):
        writer.writerow(csv_row(result, functions))


def _number(value: float) -> str:
    """Points without float noise: 14.0 -> "14", 2.5 -> "2.5"."""
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _text(value: str) -> str:
    value = safe(value)
    return "'" + value if value.startswith(_FORMULA_STARTS) else value


# ---------------------------------------------------------------- Gradescope results.json

# Gradescope's visibility for our checks. Public checks are released with the stub, so
# they are "visible". Hidden checks are "visible" too, deliberately: what a student sees
# of a hidden check is its name, our message and hint, which by design never carry the
# check's inputs (issue 5), so showing them early leaks nothing the grade needs kept.
# "after_published" would hide the hidden checks AND, per Gradescope's docs, the student's
# total until grades are published, so a student whose public checks all pass would see
# "all passed" while hidden checks failed (the Otter complaint, ucbds-infra/otter-grader#138).
VISIBILITY = {"public": "visible", "hidden": "visible"}
# Student-facing text is rendered as plain text: our messages contain "<", "*" and "_",
# which "simple_format"/"html"/"md" would interpret.
TEXT = "text"


def gradescope_results(result: SubmissionResult) -> dict:
    """The results.json Gradescope shows for one submission (plus instructor-only extra_data)."""
    numbers = _test_numbers(result)
    return {
        "score": result.score,
        "execution_time": round(result.seconds, 3),
        "output": _summary(result),
        "output_format": TEXT,
        "test_output_format": TEXT,
        "test_name_format": TEXT,
        "visibility": "visible",
        # run_autograder's own stdout holds grader warnings and paths: for instructors only.
        "stdout_visibility": "hidden",
        # Provenance, and what the student's code printed: printed output may echo a hidden
        # check's inputs, so it goes here (stored, shown to instructors), not into "output".
        "extra_data": {
            "student": result.student, "assignment": result.assignment, "file": result.file,
            "sha256": result.sha256, "suite_version": result.suite_version, "seed": result.seed,
            "sandbox": result.sandbox, "killed_processes": result.killed_processes, "problem": result.problem,
            "notes": list(result.notes), "graded_at": result.graded_at, "student_output": result.output,
            "internal_error": result.internal_error,
            "max_score": result.max_score,
        },
        "tests": [_gradescope_test(test, numbers[test.name]) for test in result.tests],
    }


def _gradescope_test(test, number: str) -> dict:
    # Gradescope knows only passed/failed; our error/timeout are failures whose message
    # already says what happened ("softmax did not return within 5 s and was stopped").
    # getattr: `explanation` (the misconception's sentence) comes with the feedback work of issue 5.
    explanation = getattr(test, "explanation", "")
    output = "\n".join(text for text in (test.output, explanation, f"Hint: {test.hint}" if test.hint else "") if text)
    return {
        "score": test.score,
        "max_score": test.max_score,
        "status": "passed" if test.status == "passed" else "failed",
        "name": test.name,
        "name_format": TEXT,
        "number": number,
        "output": output,
        "output_format": TEXT,
        "tags": [test.function, test.visibility, test.status],
        "visibility": VISIBILITY[test.visibility],
        "extra_data": {"function": test.function, "status": test.status, "visibility": test.visibility,
                       "misconception": test.misconception, "seconds": test.seconds},
    }


def _test_numbers(result: SubmissionResult) -> dict[str, str]:
    """"<function number>.<check number>", so Gradescope groups a function's checks together."""
    functions = list(result.by_function())
    seen: dict[str, int] = {}
    numbers = {}
    for test in result.tests:
        seen[test.function] = seen.get(test.function, 0) + 1
        numbers[test.name] = f"{functions.index(test.function) + 1}.{seen[test.function]}"
    return numbers


def _summary(result: SubmissionResult) -> str:
    counts = result.counts()
    lines = [f"{Path(result.file).name}: {result.score:g} / {result.max_score:g} points "
             f"({counts['passed']} of {len(result.tests)} checks passed)."]
    if result.problem:
        lines.append(f"Could not grade: {result.problem}")
    if counts["timeout"]:
        lines.append(f"{counts['timeout']} checks were stopped at their time limit.")
    if counts["error"]:
        lines.append(f"{counts['error']} checks ended with an error in your code.")
    lines += [f"Note: {note}" for note in result.notes]
    lines.append("Points per function:")
    lines += [f"  {name:<18}{got:g} / {possible:g}" for name, (got, possible) in result.by_function().items()]
    lines.append("Hidden checks show their name, message and hint, never their inputs.")
    return "\n".join(lines)


def write_gradescope_dir(results: list[SubmissionResult], out: Path) -> list[Path]:
    """OUT/<student>/results.json for every result; returns the files written."""
    written = []
    for result in results:
        if result.student in ("", ".", "..") or "/" in result.student or "\\" in result.student:
            raise ExportError(f"student id {result.student!r} cannot be a folder name; rename the "
                              "submission and regrade it, then export again.")
        path = Path(out) / result.student / "results.json"
        write_json(path, gradescope_results(result))
        written.append(path)
    return written


def write_json(path: Path, data: dict) -> None:
    """Write atomically, so Gradescope or a TA never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(partial, path)


# ---------------------------------------------------------------- Gradescope: grading one submission

GRADESCOPE_ROOT = Path("/autograder")


@dataclass(frozen=True)
class Picked:
    """The file run_autograder grades, or why there is none."""

    path: Path | None
    note: str = ""
    problem: str = ""


def pick_submission_file(folder: Path, module: str) -> Picked:
    """The student's `<module>.py`/`.ipynb` in Gradescope's submission folder.

    Prefers the exact name, else the only .py/.ipynb. Symlinks and anything
    resolving outside `folder` are ignored: a repository submitted from GitHub
    could otherwise link attention.py to the reference under /autograder/source.
    """
    folder = Path(folder)
    candidates = _regular_files(folder)
    named = [p for p in candidates if p.stem == module]
    chosen = named or candidates
    if not chosen:
        return Picked(None, problem=f"no {module}.py or {module}.ipynb was found in your submission; "
                                    f"upload that file (with that name) and submit again")
    if len(chosen) == 1:
        return Picked(chosen[0])
    ranked = sorted(chosen, key=lambda p: (p.suffix == ".ipynb", p.stem == module, -len(p.parts)), reverse=True)
    others = ", ".join(str(p.relative_to(folder)) for p in ranked[1:])
    return Picked(ranked[0], note=f"several files were handed in; graded {ranked[0].relative_to(folder)}, "
                                  f"not {others}")


def _regular_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    root = folder.resolve()
    found = []
    for directory, subdirs, files in os.walk(folder, followlinks=False):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in ("__pycache__", "__MACOSX"))
        for name in sorted(files):
            path = Path(directory) / name
            if (path.suffix in SUFFIXES and not name.startswith(".") and not path.is_symlink()
                    and path.resolve().is_relative_to(root)):
                found.append(path)
    return found


def gradescope_student(metadata_file: Path) -> str:
    """The student id that seeds the randomized inputs: the submitters' emails.

    Sorted and joined for a group, so every resubmission of the group gets the
    same inputs; "gradescope" when the metadata is missing (a local test run).
    """
    try:
        users = json.loads(Path(metadata_file).read_text()).get("users") or []
    except (OSError, ValueError, AttributeError):
        return "gradescope"
    ids = sorted(str(u.get("email") or u.get("id") or "") for u in users if isinstance(u, dict))
    return ",".join(i for i in ids if i) or "gradescope"


def grade_for_gradescope(course: Course, assignment: str, root: Path = GRADESCOPE_ROOT,
                         sandbox: str = "auto", log: TextIO = sys.stderr) -> SubmissionResult:
    """Grade the one submission under ROOT/submission and write ROOT/results/results.json.

    This is what the bundle's run_autograder runs inside Gradescope's
    container; ROOT is a parameter so it can run anywhere.
    """
    # Imported here: grading loads the suite, the sandbox and torch, which the other exports never need.
    from autograder.grading import Grader
    from autograder.sandbox import Sandbox, SandboxError, probe, refuse_readable
    from autograder.suite import load_suite

    root = Path(root)
    suite = load_suite(course, assignment)
    module = suite.assignment.module
    student = gradescope_student(root / "submission_metadata.json")
    picked = pick_submission_file(root / "submission", module)
    if picked.path is None:
        submission = Submission(student, root / "submission" / f"{module}.py", "py", "", problem=picked.problem)
    else:
        submission = read_submission(picked.path, student)
        if picked.note:
            submission = dataclasses.replace(submission, note="; ".join(n for n in (picked.note, submission.note) if n))
    protections = probe(sandbox)
    print(f"autograder: sandbox {protections.mode}" + (f" ({protections.reason})" if protections.reason else ""),
          file=log)
    if protections.warning:
        print(protections.warning, file=log)
    try:
        refuse_readable(protections, suite.secret_paths(course))
    except SandboxError:
        write_json(root / "results" / "results.json", {
            "score": 0, "output_format": TEXT, "visibility": "visible", "stdout_visibility": "hidden",
            "output": "The autograder did not run: on this machine your code could have read the solutions. "
                      "Your instructor has to fix the autograder; your submission will be graded then."})
        raise
    with Sandbox(protections, suite.assignment.preload) as box:
        result = Grader(course, suite, box).grade(submission)
    write_json(root / "results" / "results.json", gradescope_results(result))
    print(f"autograder: {student}: {result.score:g} / {result.max_score:g}; wrote "
          f"{root / 'results' / 'results.json'}", file=log)
    return result


# ---------------------------------------------------------------- Gradescope: the autograder bundle

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root with network access, when it builds the autograder image.
set -euxo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
# bubblewrap is the strong sandbox; if it cannot start inside Gradescope's container the
# grader falls back to rlimits and a separate uid, and records "fallback" in every result.
apt-get install -y --no-install-recommends python3 python3-venv python3-pip bubblewrap
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
# No local wheel here: without PyTorch's CPU index pip would fetch a multi-GB CUDA build.
/autograder/venv/bin/pip install @TORCH@ --index-url @TORCH_INDEX@
/autograder/venv/bin/pip install /autograder/source
/autograder/venv/bin/autograder doctor
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this once per submission, as root, from /autograder.
# GRADESCOPE_ROOT, AUTOGRADER_PYTHON and AUTOGRADER_SANDBOX exist so the same script can be tried
# outside Gradescope.
set -euo pipefail
ROOT="${GRADESCOPE_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
# Workers run under their own uid when the grader is root: keep the course (the reference, the
# hidden checks, course.yaml's seed salt) unreadable to them even where bubblewrap cannot start.
# The grader checks this before it grades, and refuses to grade where it does not hold.
chmod -R go-rwx "$ROOT/source"
mkdir -p "$ROOT/results"
cd "$ROOT/source"
exec "$PYTHON" -m autograder gradescope-run @ASSIGNMENT@ --root "$ROOT" --course "$ROOT/source/course.yaml" \\
    --sandbox "${AUTOGRADER_SANDBOX:-auto}"
"""

_TOP_FILES = ("pyproject.toml", "README.md")  # pip builds the package from these
_SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX"}
_SKIPPED_SUFFIXES = (".pyc", ".db", ".db-wal", ".db-shm", ".partial")


@dataclass(frozen=True)
class BundleMember:
    name: str  # path inside the zip
    data: bytes
    executable: bool = False


def torch_requirement(root: Path) -> str:
    """The torch pin from pyproject.toml (e.g. "torch==2.13.0"), so setup.sh never drifts from it."""
    try:
        dependencies = tomllib.loads((Path(root) / "pyproject.toml").read_text())["project"]["dependencies"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise ExportError(f"cannot read the dependencies in {Path(root) / 'pyproject.toml'} ({error}); the "
                          "bundle installs what it lists, so fix that file first.") from None
    pins = [d.split(";")[0].strip() for d in dependencies if d.replace(" ", "").startswith("torch==")]
    if not pins:
        raise ExportError("pyproject.toml does not pin torch (torch==X.Y.Z); setup.sh needs an exact version "
                          "to fetch the CPU build. Pin it and run again.")
    return pins[0].replace(" ", "")


def bundle_members(course: Course, assignment: str) -> list[BundleMember]:
    """What autograder.zip holds: the two scripts, the package, the course settings, and what grading one
    assignment needs: its public checks and its solution folder. Nothing else of the assignment (the
    nbgrader source notebook holds every solution region) goes in, and run_autograder makes everything
    unreadable to the workers."""
    settings = course.assignment(assignment)
    root = course.root
    package = Path(__file__).resolve().parent
    setup = (SETUP_SH.replace("@TORCH@", shlex.quote(torch_requirement(root)))
             .replace("@TORCH_INDEX@", TORCH_CPU_INDEX))
    run = RUN_AUTOGRADER.replace("@ASSIGNMENT@", shlex.quote(assignment))
    members = [BundleMember("setup.sh", setup.encode(), True), BundleMember("run_autograder", run.encode(), True)]
    members += [BundleMember(name, (root / name).read_bytes()) for name in _TOP_FILES if (root / name).is_file()]
    members.append(BundleMember("course.yaml", course.path.read_bytes()))
    members += _folder_members(package, "autograder")
    public = settings.source_dir / PUBLIC_FILE
    members.append(BundleMember(f"{_inside(settings.source_dir, root)}/{PUBLIC_FILE}", public.read_bytes()))
    members += _folder_members(settings.solution_dir, _inside(settings.solution_dir, root))
    return members


def write_bundle(course: Course, assignment: str, out: Path) -> list[str]:
    """Write the Gradescope autograder zip; returns the names it holds."""
    members = bundle_members(course, assignment)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as bundle:
        for member in members:
            # A fixed date makes the same sources give the same zip, so a changed bundle means changed code.
            info = zipfile.ZipInfo(member.name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if member.executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, member.data)
    os.replace(partial, out)
    return [m.name for m in members]


def _inside(folder: Path, root: Path) -> str:
    try:
        return Path(folder).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        raise ExportError(f"{folder} is outside the course folder {root}; the bundle keeps the course's "
                          "layout, so move the assignment's folders under it (see course.yaml).") from None


def _folder_members(folder: Path, target: str) -> list[BundleMember]:
    if not Path(folder).is_dir():
        raise ExportError(f"{folder} does not exist; the bundle needs it. Check the assignment's folders "
                          "in course.yaml.")
    members = []
    for directory, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = Path(directory) / name
            if name.startswith(".") or name.endswith(_SKIPPED_SUFFIXES) or path.is_symlink():
                continue
            relative = path.relative_to(folder).as_posix()
            members.append(BundleMember(f"{target}/{relative}", path.read_bytes()))
    return members


# ---------------------------------------------------------------- nbgrader gradebook


@dataclass(frozen=True)
class NbgraderSummary:
    assignment: str
    notebook: str
    students: int
    cells: dict[str, float]  # grade cell -> max score


def function_points(results: list[SubmissionResult]) -> dict[str, float]:
    """function -> points possible, which must agree across results to be one grade cell."""
    points: dict[str, float] = {}
    for result in results:
        for function, (_, possible) in result.by_function().items():
            if points.setdefault(function, possible) != possible:
                raise ExportError(f"{function} is worth {points[function]:g} points in one stored result and "
                                  f"{possible:g} in another (different suites); regrade with --force so every "
                                  "student is graded by the same suite, then export again.")
    return points


def write_nbgrader(results: list[SubmissionResult], db_url: str, assignment: str,
                   notebook: str) -> NbgraderSummary:
    """Write every result into the nbgrader gradebook at `db_url` (e.g. sqlite:///gradebook.db).

    Model: one notebook named after the assignment's module, and one
    autograded code grade cell per graded function, worth that function's
    points. A cell per function rather than per check: both make nbgrader's
    totals equal ours (a function's points are the sum of its checks'), but
    the released notebook has exactly one autograder-test cell per function,
    `test_<function>`, worth the same points. Using its names, an export
    into the course's own gradebook (after `nbgrader generate_assignment`)
    fills the cells nbgrader already knows, and the hand-graded written
    answers stay for the TA and add to the total as nbgrader intends; a
    per-check model would add 43 cells no notebook holds. A function with
    some failing checks gets partial points, which nbgrader shows as
    failed tests.
    """
    # Imported here: nbgrader and SQLAlchemy take a second to load and only this export needs them.
    from nbgrader.api import Gradebook, InvalidEntry
    from sqlalchemy.exc import SAWarning, SQLAlchemyError

    cells = function_points(results)
    try:
        with _alembic_on_path(), warnings.catch_warnings(), Gradebook(db_url) as gradebook:
            # nbgrader 0.9.6's add_submission builds its rows in an order SQLAlchemy 2 warns about
            # on autoflush; the rows are written correctly (the tests read them back), so a TA
            # need not see three screens of SAWarning.
            warnings.filterwarnings("ignore", category=SAWarning)
            gradebook.update_or_create_assignment(assignment)
            gradebook.update_or_create_notebook(notebook, assignment)
            _refuse_foreign_cells(gradebook, assignment, notebook, cells)
            for function, points in cells.items():
                gradebook.update_or_create_grade_cell(grade_cell_name(function), notebook, assignment,
                                                      max_score=points, cell_type="code")
            for result in results:
                _write_student(gradebook, result, assignment, notebook)
    except InvalidEntry as error:
        raise ExportError(f"nbgrader refused an entry ({error}); nothing after it was written. Fix the "
                          "gradebook (or use a fresh one) and export again.") from None
    except SQLAlchemyError as error:
        reason = str(error).splitlines()[0]
        raise ExportError(f"cannot use {db_url} as an nbgrader gradebook ({reason}). Check that its folder "
                          "exists and is writable, and that it is nbgrader's gradebook.db.") from None
    return NbgraderSummary(assignment, notebook, len(results), cells)


@contextlib.contextmanager
def _alembic_on_path():
    """nbgrader runs the `alembic` command (by name) to stamp a new gradebook.

    It is installed beside this interpreter, which is not on PATH when the
    command runs as .venv/bin/autograder without an activated venv.
    """
    scripts = str(Path(sys.executable).parent)
    saved = os.environ.get("PATH", "")
    if shutil.which("alembic") is None:
        if shutil.which("alembic", path=scripts) is None:
            raise ExportError("nbgrader needs its `alembic` command to create a gradebook and it is not installed "
                              "here; reinstall nbgrader (pip install nbgrader==0.9.6) in this environment.")
        os.environ["PATH"] = scripts + os.pathsep + saved
    try:
        yield
    finally:
        os.environ["PATH"] = saved


def grade_cell_name(function: str) -> str:
    """The released notebook's name for a function's autograder-test cell."""
    return f"test_{function}"


def _refuse_foreign_cells(gradebook, assignment: str, notebook: str, cells: dict[str, float]) -> None:
    """Other autograded cells in the notebook would add their points to ours and inflate the total."""
    found = gradebook.find_notebook(notebook, assignment)
    ours = {grade_cell_name(function) for function in cells}
    foreign = sorted(c.name for c in found.grade_cells if c.cell_type == "code" and c.name not in ours)
    if foreign:
        raise ExportError(
            f"notebook {notebook!r} of {assignment} in the gradebook already has autograded cells that are not "
            f"ours ({', '.join(foreign)}); their points would be added to ours. Export into a gradebook without "
            "them, or release the notebook again (its test cells are test_<function>), and export again.")


def _write_student(gradebook, result: SubmissionResult, assignment: str, notebook: str) -> None:
    from nbgrader.api import Grade, MissingEntry, SubmittedNotebook

    gradebook.update_or_create_student(result.student)
    submission = gradebook.update_or_create_submission(assignment, result.student)
    submitted = next((n for n in submission.notebooks if n.name == notebook), None)
    if submitted is None:  # the submission was created (e.g. by nbgrader) before our notebook existed
        submitted = SubmittedNotebook(notebook=gradebook.find_notebook(notebook, assignment), assignment=submission)
        gradebook.db.add(submitted)
    for function, (got, _) in result.by_function().items():
        cell_name = grade_cell_name(function)
        try:
            grade = gradebook.find_grade(cell_name, notebook, assignment, result.student)
        except MissingEntry:
            # nbgrader mirrors an assignment's cells only when a submission is created, so a
            # submission from an earlier export lacks grades for cells added since.
            cell = gradebook.find_grade_cell(cell_name, notebook, assignment)
            grade = Grade(cell_id=cell.id, notebook=submitted)
            gradebook.db.add(grade)
        grade.auto_score = got
        grade.needs_manual_grade = False
    gradebook.db.commit()
