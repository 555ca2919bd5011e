"""The course's test cells in a hand-in (nbgrader's autograder-test cells, released with the notebook): which cells
they are, and which graded function each checks (Submission.checks), read from the file, never run.
"""
from __future__ import annotations

import ast
import re

from autograder.code_names import MAX_PARSED

PACKAGE = __name__.split(".")[0]  # the grader's own package, which released test cells import
TEST_CELL = "test_"  # the start of a released test cell's nbgrader grade_id, the function's name after it


def words(source: str) -> tuple[str, ...]:
    """The words in a test cell's source, among them the names of the functions it checks."""
    return tuple(sorted(set(re.findall(r"\w+", source[:MAX_PARSED]))))


def checked_names(cell: dict, source: str) -> tuple[str, ...]:
    """The names a test cell checks: the function its nbgrader grade_id (`test_score`) names, as nbgrader puts the
    released cell back by that id and runs it where it stands, whatever the student left in it (emptied, or
    overwritten); the words in its source for a cell without one (a copy that lost its metadata)."""
    tested = tested_function(cell)
    return (tested,) if tested else words(source)


def tested_function(cell: dict) -> str:
    """The function a test cell's nbgrader grade_id names (`test_score`: "score"); "" for a cell without one."""
    meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
    grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
    if isinstance(grade_id, str) and re.fullmatch(rf"{TEST_CELL}[A-Za-z_]\w*", grade_id):
        return grade_id.removeprefix(TEST_CELL)
    return ""


def is_grader_test(cell: dict) -> bool:
    """Whether a notebook's cell is an nbgrader autograder-test cell (graded, not a solution), by its metadata."""
    meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell.get("metadata"), dict) else {}
    return isinstance(meta, dict) and meta.get("grade") is True and meta.get("solution") is not True


def only_course_checks(source: str) -> bool:
    """Whether the cell only imports this package's checks and calls them, as the released test cells do
    (`from autograder.nbgrader.inkernel import check_function`, then `check_function("score", globals())`).

    The package runs in the student's Jupyter, never in the sandbox: run there, the cell would only raise
    ModuleNotFoundError, and its note would tell the student to remove an import they never wrote."""
    if PACKAGE not in source or len(source) > MAX_PARSED:
        return False
    try:
        statements = ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    imported: set[str] = set()
    for statement in statements:
        if isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] == PACKAGE:
            imported.update(alias.asname or alias.name for alias in statement.names)
        elif not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                  and isinstance(statement.value.func, ast.Name) and statement.value.func.id in imported):
            return False
    return bool(imported)
