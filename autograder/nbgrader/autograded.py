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

from autograder.grading.results import SubmissionResult
from autograder.nbgrader.inkernel import FunctionResults, format_function

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


def sanitized(path: Path, places: Places, db_url: str):
    """The submitted notebook after nbgrader's own sanitizing preprocessors, in the order Autograde runs them."""
    from nbgrader.converters import Autograde

    notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    resources = {"nbgrader": {"notebook": places.notebook, "assignment": places.assignment,
                              "student": places.student, "db_url": db_url}}
    quiet = _quiet_log()
    for preprocessor in Autograde.class_traits()["sanitize_preprocessors"].default():
        notebook, resources = preprocessor(log=quiet).preprocess(notebook, resources)
    return notebook


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
