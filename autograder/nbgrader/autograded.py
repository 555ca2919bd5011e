"""The autograded notebook `nbgrader autograde` would leave, made from our stored results without a kernel.

`export nbgrader` writes, for each graded notebook,
`<root>/autograded/<student>/<assignment>/<notebook>.ipynb`, which is what
the formgrader opens for manual grading and what `nbgrader generate_feedback`
reads. It is made as nbgrader's Autograde converter makes it, minus running
the student's code:

1. the submitted notebook goes through nbgrader's own sanitizing
   preprocessors (`Autograde.sanitize_preprocessors`): outputs cleared,
   duplicate cell ids dropped, the kernelspec and every locked cell (the test
   cells with their hidden region, the instructions) restored from the
   gradebook's copy of the source, metadata validated;
2. each test cell `test_<function>` gets our result as its output: the
   per-check table on stdout, then the function's points as the cell's value,
   which nbgrader reads as the cell's partial credit
   (`nbgrader.utils.determine_grade`), exactly as after `grade_function` ran;
3. the folder's other files are copied as autograde copies them: the
   submitted folder's (timestamp.txt among them), then the source folder's
   files other than notebooks; files are left read-only, as nbgrader leaves them.

nbgrader's OverwriteCells logs "Attribute 'checksum' for cell test_<f> has
changed!" for every test cell: the released cell lacks its hidden region, so
its checksum never matches the source's; restoring that region is the point.
Those messages are kept out of the export's output (README, Instructors).
"""
from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.grading.handin import read_bytes
from autograder.grading.results import SubmissionResult
from autograder.nbgrader.inkernel import FunctionResults, format_function
from autograder.text import safe

# nbgrader's CourseDirectory defaults, which this course keeps (nbgrader_config.py): <step>/<student>/<assignment>/.
SUBMITTED, AUTOGRADED = "submitted", "autograded"
# CourseDirectory.ignore's default: never copied into autograded/.
IGNORED = (".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback")
READ_ONLY = 0o444  # Autograde's default permissions for what it writes (without groupshared)


@dataclass(frozen=True)
class Places:
    """Where one student's submission and autograded folder are, in an nbgrader course at `root`."""

    root: Path
    assignment: str
    student: str
    notebook: str  # the notebook's name in the gradebook, without .ipynb

    @property
    def submitted(self) -> Path:
        return self.root / SUBMITTED / self.student / self.assignment

    @property
    def autograded(self) -> Path:
        return self.root / AUTOGRADED / self.student / self.assignment

    @property
    def autograded_notebook(self) -> Path:
        return self.autograded / f"{self.notebook}.ipynb"


@dataclass(frozen=True)
class ReleasedCell:
    """What the gradebook's copy of the release says of one nbgrader cell: the truth a hand-in is held to."""

    grade_id: str
    cell_type: str  # "code" or "markdown"
    source: str  # the released source (restored into locked cells)
    checksum: str
    locked: bool
    grade: bool
    solution: bool
    task: bool
    points: float | None  # for grade and task cells


def released_cells(gradebook, notebook: str, assignment: str) -> dict[str, ReleasedCell]:
    """grade_id -> the released cell, from nbgrader's gradebook (its source, grade, solution and task cells)."""
    found = gradebook.find_notebook(notebook, assignment)
    points = {c.name: c.max_score for c in list(found.grade_cells) + list(found.task_cells)}
    grades = {c.name for c in found.grade_cells}
    solutions = {c.name for c in found.solution_cells}
    tasks = {c.name for c in found.task_cells}
    return {c.name: ReleasedCell(c.name, c.cell_type, c.source or "", c.checksum or "", bool(c.locked),
                                 c.name in grades, c.name in solutions, c.name in tasks, points.get(c.name))
            for c in found.source_cells}


def restore_from_source(notebook, released: dict[str, ReleasedCell]) -> list[str]:
    """Make every nbgrader cell of a hand-in say what the release says; return what disagreed, for the instructor.

    A hand-in's cell metadata is the student's to edit: a grade id the release
    does not have, or one used twice, loses its nbgrader metadata (it is then
    an ordinary cell); a known one gets the release's cell type, flags, points
    and checksum, and, when locked, its source. nbgrader's own sanitizing then
    finds nothing to refuse, so one student's notebook cannot stop the export.
    """
    changed, seen = [], set()
    for index, cell in enumerate(notebook.get("cells", [])):
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        ours = metadata.get("nbgrader")
        if ours is None:
            continue
        grade_id = ours.get("grade_id") if isinstance(ours, dict) else None
        truth = released.get(grade_id) if isinstance(grade_id, str) else None
        if truth is None or grade_id in seen:
            metadata.pop("nbgrader", None)
            changed.append(f"cell {index + 1}: nbgrader metadata for {_name(grade_id)} the release "
                           f"{'already had in another cell' if truth else 'does not have'}, removed")
            continue
        seen.add(grade_id)
        if _restore(cell, metadata, truth):
            changed.append(f"{grade_id}: cell type, flags or points differed from the release, restored")
    return changed


def _restore(cell, metadata: dict, truth: ReleasedCell) -> bool:
    wanted = {"grade": truth.grade, "solution": truth.solution, "locked": truth.locked, "grade_id": truth.grade_id,
              "schema_version": 3, "checksum": truth.checksum, "task": truth.task}
    if truth.grade or truth.task:
        wanted["points"] = truth.points
    before = dict(metadata.get("nbgrader") or {})
    metadata["nbgrader"] = wanted  # the release's checksum too: "unchanged answer" is judged by the release
    differs = any(before.get(key, False if isinstance(value, bool) else None) != value
                  for key, value in wanted.items() if key not in ("checksum", "schema_version"))
    if cell.get("cell_type") != truth.cell_type:
        differs = True
        cell["cell_type"] = truth.cell_type
        if truth.cell_type == "code":
            cell["outputs"], cell["execution_count"] = [], None
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    if truth.locked and cell.get("source") != truth.source:
        cell["source"] = truth.source
    cell["metadata"] = metadata
    return differs


def _name(grade_id) -> str:
    return repr(grade_id)[:80] if isinstance(grade_id, str) else "a cell without a usable grade id"


def sanitized(path: Path, places: Places, db_url: str, released: dict[str, ReleasedCell] | None = None):
    """The submitted notebook after nbgrader's own sanitizing preprocessors, in the order Autograde runs them.

    released: the release's cells (`released_cells`); given, the hand-in's cells are first held to them
    (`restore_from_source`), and what disagreed is in the notebook's metadata (`restored_notes`).
    """
    from nbgrader.converters import Autograde

    content = read_bytes(path, places.root / SUBMITTED)  # the hand-in rule: no link, no FIFO, bounded
    if content.error:
        raise ValueError(content.error)
    notebook = nbformat.reads(content.data.decode("utf-8", "replace"), as_version=nbformat.NO_CONVERT)
    if released is not None:
        notebook.metadata["autograder_restored"] = restore_from_source(notebook, released)
    resources = {"nbgrader": {"notebook": places.notebook, "assignment": places.assignment,
                              "student": places.student, "db_url": db_url}}
    quiet = _quiet_log()
    for preprocessor in Autograde.class_traits()["sanitize_preprocessors"].default():
        notebook, resources = preprocessor(log=quiet).preprocess(notebook, resources)
    return notebook


def restored_notes(notebook, student: str, name: str) -> list[str]:
    """The export's notes of what `sanitized` restored from the release (taken out of the notebook it writes).

    Said neutrally: a notebook fetched before `release --rebuild` differs from the new release as an edited test
    cell does, and the gradebook keeps only the current release, so which one it was cannot be told here."""
    return [f"{student}: {name} differs from the current release ({safe(change, 200)}); graded as released. A "
            "re-release after the student fetched it, or an edit of a test cell, does this: if there was no re-release "
            "since, have a look at this hand-in" for change in notebook.metadata.pop("autograder_restored", []) or []]


def _quiet_log() -> logging.Logger:
    """nbgrader's preprocessors warn about every test cell's checksum (see this module's docstring); errors show."""
    log = logging.getLogger("autograder.nbgrader.autograde")
    log.setLevel(logging.ERROR)
    return log


def with_points(notebook, result: SubmissionResult, cell_names: dict[str, str]):
    """`notebook` with each test cell's output: our per-check table and the function's points as its value.

    cell_names: grade cell name -> the function it grades. A test cell of a
    function the result does not hold is refused by the caller beforehand:
    nbgrader would give a cell without output full marks.
    """
    count = 0
    for cell in notebook.cells:
        function = cell_names.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", ""))
        if function is None or cell.cell_type != "code":
            continue
        count += 1
        checks = [t for t in result.tests if t.function == function]
        ran = FunctionResults(function, checks)
        table = format_function(ran, f"graded for {result.student} by autograder grade, sandboxed")
        cell.execution_count = count
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=table + "\n"),
                        nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(ran.score))},
                                               execution_count=count)]
    return notebook


def previous_sources(places: Places) -> dict[str, str] | None:
    """grade_id -> source of the autograded notebook already there (None if there is none), to tell what changed."""
    try:
        notebook = nbformat.read(places.autograded_notebook, as_version=nbformat.NO_CONVERT)
    except (OSError, ValueError, KeyError):
        return None
    return {cell.metadata.nbgrader["grade_id"]: cell.source for cell in notebook.cells
            if "grade_id" in cell.get("metadata", {}).get("nbgrader", {})}


def write_autograded(places: Places, notebook, source_dir: Path | None) -> Path:
    """Replace the student's autograded folder, as `nbgrader autograde --force` does; return the notebook's path.

    Other files first (the submitted folder's, then the source folder's
    non-notebooks, which win), then the notebook; all read-only.
    """
    target = places.autograded
    if target.exists():
        _make_writable(target)
        shutil.rmtree(target)
    target.mkdir(parents=True)
    _copy_other_files(places.submitted, target)
    if source_dir is not None:
        _copy_other_files(source_dir, target)
    nbformat.write(notebook, places.autograded_notebook)
    for directory, _, files in os.walk(target):
        for name in files:
            os.chmod(Path(directory) / name, READ_ONLY)
    return places.autograded_notebook


def _copy_other_files(source: Path, target: Path) -> None:
    """Every file under `source` but notebooks and IGNORED ones; symlinks are skipped, never followed.

    (A link in a student's folder could point at any file the grading account can read.)
    """
    if not source.is_dir():
        return
    skip = shutil.ignore_patterns(*IGNORED, "*.ipynb")
    for directory, subdirs, files in os.walk(source):
        ignored = skip(directory, subdirs + files)
        subdirs[:] = [d for d in subdirs if d not in ignored and not (Path(directory) / d).is_symlink()]
        for name in files:
            path = Path(directory) / name
            if name in ignored or path.is_symlink():
                continue
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            if destination.exists():
                destination.unlink()
            shutil.copyfile(path, destination)


def _make_writable(folder: Path) -> None:
    """The read-only files of an earlier export (or of nbgrader's autograde) must go before the new ones."""
    for directory, _, files in os.walk(folder):
        for name in files:
            path = Path(directory) / name
            if not path.is_symlink():
                os.chmod(path, 0o644)
