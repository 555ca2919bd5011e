"""What nbgrader's autograde puts back in a hand-in before it grades (its OverwriteCells preprocessor), done here
too where the grader can, and said where it cannot.

A released notebook's nbgrader cells carry in their metadata the release's cell type and checksum (nbgrader's
ComputeChecksums writes them). nbgrader holds every cell with a grade_id to its gradebook's copy of the release:

- a cell whose type the student changed is run as the type the release had (`runs_as_code`): an answer cell
  made Markdown or Raw is still run as code there, so it is here, with a note (in the student's Jupyter it
  never runs);
- a locked cell (read-only in Jupyter, but editable in VS Code or Colab) gets its released source back. The
  grader has the release's source of the `imports` cell, which `autograder release` writes from the reference's
  imports, and puts it back when the cell's recorded checksum confirms it; of any other locked cell it has no
  copy (the source notebook never reaches a worker), so the note says nbgrader will undo the edits;
- a test cell that is missing is not added back (nbgrader's default): that function scores 0 there. The grader
  still grades the function, as it does a test cell emptied or overwritten, and the note says what nbgrader gives.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
from dataclasses import dataclass, field

from autograder.grading.ipython_cells import read_cell
from autograder.grading.suite import REFERENCE_FILE, Suite
from autograder.grading.test_cells import tested_function

IMPORTS_CELL = "imports"  # the grade_id of the locked cell `autograder release` fills with the reference's imports


@dataclass(frozen=True)
class LockedEdit:
    """A locked cell of the release whose source the student changed: its label, grade_id and released checksum."""

    label: str
    grade_id: str
    checksum: str


@dataclass
class ReleaseMarks:
    """What a hand-in's nbgrader metadata says of the release, gathered while its code cells are read."""

    edited: list[LockedEdit] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)  # the functions whose test cell keeps its grade_id
    notes: list[str] = field(default_factory=list)

    def read(self, cell: dict, label: str, source: str) -> None:
        """Take note of one cell the grader runs as code (`runs_as_code`) under `label`, holding `source`."""
        meta, tested = _nbgrader(cell), tested_function(cell)
        if tested:
            self.tests.append(tested)
        if cell.get("cell_type") != "code":
            self.notes.append(f"{label} (nbgrader's {meta['grade_id']}) is a {cell.get('cell_type')} cell in your "
                              "notebook, but nbgrader's autograde runs it as the code cell it was released as, so the "
                              "grader ran it as code too; in your own Jupyter it never runs. Change it back to Code "
                              "(in Jupyter: select it, press Esc, then Y) and run it, so that what you test is what "
                              "is graded")
        if meta.get("locked") is True and not meta.get("solution") and not meta.get("grade") \
                and isinstance(meta.get("checksum"), str) and checksum(meta["grade_id"], source) != meta["checksum"]:
            self.edited.append(LockedEdit(label, meta["grade_id"], meta["checksum"]))


def runs_as_code(cell: dict) -> bool:
    """Whether nbgrader's autograde runs `cell` as code: a cell with a grade_id has the type its release recorded
    (OverwriteCells.update_cell_type, to code or markdown), any other cell its own."""
    recorded = _nbgrader(cell).get("cell_type")
    return recorded == "code" if recorded in ("code", "markdown") else cell.get("cell_type") == "code"


def checksum(grade_id: str, source: str) -> str:
    """nbgrader's checksum (nbgrader.utils.compute_checksum) of a locked code cell that is neither a test nor an
    answer: what the release recorded for it, and what its source gives now."""
    digest = hashlib.md5(usedforsecurity=False)
    for part in (source, "code", "False", "False", "True", grade_id):  # type, grade, solution, locked, id
        digest.update(part.encode("utf-8"))
    return digest.hexdigest()


def reference_imports(reference_code: str) -> str:
    """The `imports` cell `autograder release` writes: the reference's top-level imports, one after another."""
    tree = ast.parse(reference_code)
    return "\n".join(ast.get_source_segment(reference_code, node) for node in tree.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def as_nbgrader_grades(submission, suite: Suite):
    """`submission` (a grading.submission.Submission) with its edited `imports` cell put back as released, where its
    recorded checksum confirms the reference's imports are that release; with a note for each locked cell whose
    edits nbgrader undoes, and for each graded function whose test cell nbgrader will not find."""
    notes, cells = [], list(submission.cells)
    released = _released_imports(suite) if submission.edited_locked else None
    for edit in submission.edited_locked:
        where = next((at for at, cell in enumerate(cells) if cell.label == edit.label), None)
        if edit.grade_id == IMPORTS_CELL and released is not None and where is not None \
                and checksum(edit.grade_id, released) == edit.checksum:
            cells[where] = read_cell(edit.label, released)
            notes.append(f"{edit.label} is the locked cell {edit.grade_id}, and you changed it; nbgrader's autograde "
                         "puts a locked cell back as released before it grades, so the grader ran the released cell "
                         "too and your changes there did not count. Put what you added (an import, a helper) in "
                         "your answer cells instead")
        else:
            notes.append(f"{edit.label} is the locked cell {edit.grade_id}, and you changed it; nbgrader's autograde "
                         "puts a locked cell back as released before it grades, so your changes there will not count "
                         "in nbgrader (the grader, which has no copy of that cell, ran it as you wrote it). Put what "
                         "you added in your answer cells instead")
    if submission.kind == "ipynb" and submission.test_ids:  # a notebook from the release, with its test cells
        notes += [f"your notebook has no test cell test_{name} (it was deleted, or copied without its nbgrader "
                  f"metadata), so nbgrader's autograde, which grades {name} in that cell, gives {name} 0 points; "
                  f"the grader graded {name} all the same. Copy the test cell of {name} back from the released "
                  "notebook, right below your answer cell, so that both give the same points"
                  for name in suite.functions if name not in submission.test_ids]
    if not notes:
        return submission
    note = "; ".join(n for n in (submission.note, *notes) if n)
    return dataclasses.replace(submission, cells=tuple(cells), note=note)


def _released_imports(suite: Suite) -> str | None:
    """The `imports` cell as released, from the reference (read only for a hand-in that changed that cell)."""
    path = suite.assignment.solution_dir / REFERENCE_FILE
    try:
        return reference_imports(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):  # no reference here (public checks only): the note says so
        return None


def _nbgrader(cell: dict) -> dict:
    """A cell's nbgrader metadata where it has a grade_id; {} otherwise (a cell nbgrader leaves as it is)."""
    meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
    return meta if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) else {}
