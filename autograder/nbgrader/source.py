"""The nbgrader source notebook: its generated cells, kept in step with the reference, the stub and course.yaml.

`assignments/<name>/<module>.ipynb` is an nbgrader source notebook. Its
narrative is written by hand; its graded cells are generated, found by their
nbgrader grade_id, so that nothing is maintained twice:
- `imports`: the reference's module-level imports;
- `answer_<function>`: the stub's signature and docstring (assignments/<name>/
  <module>.py), then the body of solutions/<name>/reference.py between
  `### BEGIN SOLUTION` and `### END SOLUTION`;
- `test_<function>`: the public checks (`inkernel.check_function`), and in a
  hidden region every check for the graded student (`inkernel.grade_function`);
  its points are the function's total in course.yaml;
- `written_<key>`: a hand-graded answer, its points from course.yaml's `written`.
`build_source` regenerates these cells and public_manifest.json. A function
that is new in the stub (neither its answer_ nor its test_ cell exists) gets
both, with a heading, placed in the stub's order of functions.
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import nbformat

from autograder.grading.course import Assignment, Course
from autograder.grading.manifest import MANIFEST_FILE, manifest_data, manifest_text, stub_parameters
from autograder.grading.restored_cells import IMPORTS_CELL, reference_imports
from autograder.grading.suite import REFERENCE_FILE, Suite
from autograder.nbgrader import ReleaseError

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"

NBGRADER_SCHEMA = 3


def source_notebook_path(assignment: Assignment) -> Path:
    return assignment.source_dir / f"{assignment.module}.ipynb"


def build_source(course: Course, suite: Suite, write: bool, added: list[str] | None = None) -> list[Path]:
    """The source files (notebook, public manifest) that differ from what the reference, stub and course.yaml give.

    write: regenerate them as well. Returns the files that were (or would be) changed.
    added: if given, gets one line per cell created for a function new in the stub.
    """
    assignment = suite.assignment
    path = source_notebook_path(assignment)
    if not path.is_file():
        raise ReleaseError(f"{path} is missing: the assignment needs its nbgrader source notebook there")
    notebook = nbformat.read(path, as_version=4)
    stub_code = read_code(assignment.source_dir / f"{assignment.module}.py")
    synced = sync_notebook(notebook, suite, stub_code, read_code(assignment.solution_dir / REFERENCE_FILE), added)
    public = [entry.name for entry in suite.checks if entry.visibility == "public"]
    parameters = stub_parameters(stub_code, suite.functions)  # sync_notebook has refused a stub that does not parse
    manifest_path = assignment.source_dir / MANIFEST_FILE
    manifest = manifest_text(manifest_data(assignment, public, parameters))
    changed = []
    if synced != notebook:  # by content: how Jupyter happened to format the JSON does not matter
        changed.append(path)
        if write:
            nbformat.write(synced, path)
    if not manifest_path.is_file() or manifest_path.read_text() != manifest:
        changed.append(manifest_path)
        if write:
            manifest_path.write_text(manifest)
    return changed


def read_code(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as error:
        raise ReleaseError(f"cannot read {path} ({error.strerror}); the release is generated from it") from None


def sync_notebook(notebook, suite: Suite, stub_code: str, reference_code: str, added: list[str] | None = None):
    """A copy of `notebook` whose generated cells follow the stub, the reference and course.yaml.

    A graded function with neither an answer_ nor a test_ cell is new: its
    cells are created (and described in `added`, if given). Raises
    ReleaseError when a function has one of its two cells only, a written
    answer has no cell, or a cell names an unknown function.
    """
    assignment = suite.assignment
    synced = copy.deepcopy(notebook)
    stub, reference = functions_of(stub_code, "the stub"), functions_of(reference_code, "the reference")
    cells = _graded_cells(synced)
    order = [f for f in stub if f in suite.functions] + [f for f in suite.functions if f not in stub]
    for function in order:
        if f"answer_{function}" not in cells and f"test_{function}" not in cells:
            where = _add_function_cells(synced, function, order)
            cells = _graded_cells(synced)
            if added is not None:
                added.append(f"added a heading, the answer cell answer_{function} and the test cell test_{function} "
                             f"{where}")
    expected = {IMPORTS_CELL} | {f"{kind}_{f}" for f in suite.functions for kind in ("answer", "test")} \
        | {f"written_{key}" for key in assignment.written}
    unknown, missing = sorted(set(cells) - expected), sorted(expected - set(cells))
    if missing:
        raise ReleaseError(f"{source_notebook_path(assignment)} has no cell with nbgrader grade_id {missing[0]!r}; "
                           "add it where it belongs (answer_/test_<function>, written_<key> from course.yaml, "
                           "imports)")
    if unknown:
        raise ReleaseError(f"{source_notebook_path(assignment)}: cell {unknown[0]!r} names no function of the "
                           "suite and no written answer in course.yaml; rename or delete it")
    points = {f: sum(e.points for e in suite.checks if e.function == f) for f in suite.functions}
    cells[IMPORTS_CELL].source = reference_imports(reference_code)
    for function in suite.functions:
        cells[f"answer_{function}"].source = answer_source(stub_code, stub, reference_code, reference, function)
        test = cells[f"test_{function}"]
        test.source = grading_cell_source(assignment.name, function, points[function])
        test.metadata["nbgrader"]["points"] = points[function]
    for key, value in assignment.written.items():
        cells[f"written_{key}"].metadata["nbgrader"]["points"] = value
    return synced


def _add_function_cells(notebook, function: str, order: list[str]) -> str:
    """Insert a heading, answer_<function> and test_<function> where `order` (the stub's) puts them; say where.

    After the test cell of the nearest earlier function that has one, else
    before the nearest later function's answer cell (and the heading above
    it), else at the end. Their sources are filled in by `sync_notebook`.
    """
    cells = notebook.cells
    ids = [cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "") for cell in cells]
    at, where = len(cells), "at the end of the notebook"
    earlier = [f for f in reversed(order[:order.index(function)]) if f"test_{f}" in ids]
    later = [f for f in order[order.index(function) + 1:] if f"answer_{f}" in ids]
    if earlier:
        at, where = ids.index(f"test_{earlier[0]}") + 1, f"after test_{earlier[0]}"
    elif later:
        at, where = ids.index(f"answer_{later[0]}"), f"before answer_{later[0]}"
        if at > 0 and cells[at - 1].cell_type == "markdown":
            at -= 1  # before the later function's heading, not between it and its answer
    new = [nbgrader_cell(notebook, "markdown", f"task_{function}", f"## {function}\n\nImplement `{function}` as its "
                                                           "docstring says, then run the test cell below it."),
           nbgrader_cell(notebook, "code", f"answer_{function}", "", solution=True),
           nbgrader_cell(notebook, "code", f"test_{function}", "", grade=True)]
    cells[at:at] = new
    return where


def nbgrader_cell(notebook, kind: str, grade_id: str, source: str, solution: bool = False, grade: bool = False):
    """A cell with nbgrader's metadata, as `autograder new` writes them."""
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    meta = {"grade": grade, "grade_id": grade_id, "locked": not solution, "schema_version": NBGRADER_SCHEMA,
            "solution": solution, "task": False}
    cell = make(source, metadata={"nbgrader": meta})
    if (notebook.get("nbformat"), notebook.get("nbformat_minor", 0)) < (4, 5):
        cell.pop("id", None)  # cell ids exist from nbformat 4.5 on
    return cell


def _graded_cells(notebook) -> dict:
    cells = {}
    for cell in notebook.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if grade_id == IMPORTS_CELL or grade_id.split("_", 1)[0] in ("answer", "test", "written"):
            if grade_id in cells:
                raise ReleaseError(f"two cells have the nbgrader grade_id {grade_id!r}; grade ids must be unique")
            cells[grade_id] = cell
    return cells


def functions_of(code: str, what: str) -> dict[str, ast.FunctionDef]:
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        raise ReleaseError(f"{what} does not parse (line {error.lineno}: {error.msg}); fix it first") from None
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def lines_of(code: str, first: int, last: int) -> str:
    """Lines first..last (1-based, inclusive) of `code`."""
    return "\n".join(code.splitlines()[first - 1:last])


def answer_source(stub_code: str, stub: dict, reference_code: str, reference: dict, function: str) -> str:
    """The answer cell: the stub's def line(s) and docstring, then the reference's body as the solution region."""
    if function not in stub or function not in reference:
        where = "the stub" if function not in stub else "the reference"
        raise ReleaseError(f"{where} does not define {function}(); the stub and the reference must define every "
                           "graded function")
    mine, theirs = stub[function], reference[function]
    if ast.dump(mine.args) != ast.dump(theirs.args):
        raise ReleaseError(f"{function}: the stub's signature ({ast.unparse(mine.args)}) differs from the "
                           f"reference's ({ast.unparse(theirs.args)}); make them the same")
    if not has_docstring(mine):
        raise ReleaseError(f"{function} in the stub has no docstring; students read the contract there")
    first = mine.decorator_list[0].lineno if mine.decorator_list else mine.lineno
    head = lines_of(stub_code, first, mine.body[0].end_lineno)
    body_start = theirs.body[0].end_lineno + 1 if has_docstring(theirs) else theirs.body[0].lineno
    body = lines_of(reference_code, body_start, theirs.end_lineno).strip("\n")
    if not body.strip():
        raise ReleaseError(f"the reference's {function} has no body after its docstring")
    return f"{head}\n    {BEGIN_SOLUTION}\n{body}\n    {END_SOLUTION}"


def has_docstring(node: ast.FunctionDef) -> bool:
    first = node.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def grading_cell_source(assignment: str, function: str, points: float) -> str:
    """A test cell: public checks students run, and the hidden region nbgrader's autograde runs."""
    return (f"# {function}: {points:g} points. This cell runs the public checks (the lecture's numbers and\n"
            "# properties); when your notebook is graded, hidden checks on inputs drawn for you run here too.\n"
            "from autograder.nbgrader.inkernel import check_function\n\n"
            f'check_function("{function}", globals())\n'
            f"{BEGIN_HIDDEN}\n"
            "from autograder.nbgrader.inkernel import grade_function\n\n"
            f'grade_function("{assignment}", "{function}", globals())\n'
            f"{END_HIDDEN}")


def fill_answers(notebook, code: str, functions: tuple[str, ...]):
    """A copy of a released notebook whose answer cells hold the functions of `code` (a .py submission).

    Each answer cell gets the last definition of its function in `code`;
    everything else at the top level (imports, helpers, constants) goes at the
    top of the first answer cell, where the functions can see it. Functions
    that `code` does not define keep the notebook's stub.
    """
    filled = copy.deepcopy(notebook)
    tree = ast.parse(code)
    definitions, extras = {}, []
    for node in tree.body:
        segment = _segment(code, node)
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            definitions[node.name] = segment
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):  # not the docstring
            extras.append(segment)
    cells = _graded_cells(filled)
    for function in functions:
        if function in definitions:
            cells[f"answer_{function}"].source = definitions[function]
    first = cells[f"answer_{functions[0]}"]
    if extras:
        first.source = "\n".join(extras) + "\n\n\n" + first.source
    return filled


def _segment(code: str, node: ast.stmt) -> str:
    first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
    return lines_of(code, first, node.end_lineno)
