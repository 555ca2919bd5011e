"""Releasing an assignment through nbgrader, without leaking what stays with the instructor.

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
`build_source` regenerates these cells and public_manifest.json; `release`
then runs nbgrader's own generate_assignment and scans every released file
for anything from solutions/, a hidden check, or a solution region.
"""
from __future__ import annotations

import ast
import copy
import io
import os
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.course import Assignment, Course
from autograder.public import MANIFEST_FILE, manifest_data, manifest_text
from autograder.suite import HIDDEN_FILE, PUBLIC_FILE, REFERENCE_FILE, Suite

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
NBGRADER_SCHEMA = 3
MIN_LINE = 8  # shorter code lines (`else:`, `return S`) say nothing about a solution
MIN_TEXT = 24  # shorter strings of the hidden checks are too common to be a leak
SMALL_INTEGER = 100  # integers below this are everywhere; larger ones and fractions are distinctive


class ReleaseError(Exception):
    """The assignment cannot be released as it is; the message says what to fix."""


# ---------------------------------------------------------------- the source notebook

def source_notebook_path(assignment: Assignment) -> Path:
    return assignment.source_dir / f"{assignment.module}.ipynb"


def build_source(course: Course, suite: Suite, write: bool) -> list[Path]:
    """The source files (notebook, public manifest) that differ from what the reference, stub and course.yaml give.

    write: regenerate them as well. Returns the files that were (or would be) changed.
    """
    assignment = suite.assignment
    path = source_notebook_path(assignment)
    if not path.is_file():
        raise ReleaseError(f"{path} is missing: the assignment needs its nbgrader source notebook there")
    notebook = nbformat.read(path, as_version=4)
    synced = sync_notebook(notebook, suite, read_code(assignment.source_dir / f"{assignment.module}.py"),
                           read_code(assignment.solution_dir / REFERENCE_FILE))
    public = [entry.name for entry in suite.checks if entry.visibility == "public"]
    manifest_path, manifest = assignment.source_dir / MANIFEST_FILE, manifest_text(manifest_data(assignment, public))
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


def sync_notebook(notebook, suite: Suite, stub_code: str, reference_code: str):
    """A copy of `notebook` whose generated cells follow the stub, the reference and course.yaml.

    Raises ReleaseError when a function or written answer has no cell, or a cell names an unknown one.
    """
    assignment = suite.assignment
    synced = copy.deepcopy(notebook)
    stub, reference = _functions(stub_code, "the stub"), _functions(reference_code, "the reference")
    cells = _graded_cells(synced)
    expected = {"imports"} | {f"{kind}_{f}" for f in suite.functions for kind in ("answer", "test")} \
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
    cells["imports"].source = _imports(reference_code)
    for function in suite.functions:
        cells[f"answer_{function}"].source = answer_source(stub_code, stub, reference_code, reference, function)
        test = cells[f"test_{function}"]
        test.source = grading_cell_source(assignment.name, function, points[function])
        test.metadata["nbgrader"]["points"] = points[function]
    for key, value in assignment.written.items():
        cells[f"written_{key}"].metadata["nbgrader"]["points"] = value
    return synced


def _graded_cells(notebook) -> dict:
    cells = {}
    for cell in notebook.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if grade_id == "imports" or grade_id.split("_", 1)[0] in ("answer", "test", "written"):
            if grade_id in cells:
                raise ReleaseError(f"two cells have the nbgrader grade_id {grade_id!r}; grade ids must be unique")
            cells[grade_id] = cell
    return cells


def _functions(code: str, what: str) -> dict[str, ast.FunctionDef]:
    try:
        tree = ast.parse(code)
    except SyntaxError as error:
        raise ReleaseError(f"{what} does not parse (line {error.lineno}: {error.msg}); fix it first") from None
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def _lines(code: str, first: int, last: int) -> str:
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
    if not _has_docstring(mine):
        raise ReleaseError(f"{function} in the stub has no docstring; students read the contract there")
    first = mine.decorator_list[0].lineno if mine.decorator_list else mine.lineno
    head = _lines(stub_code, first, mine.body[0].end_lineno)
    body_start = theirs.body[0].end_lineno + 1 if _has_docstring(theirs) else theirs.body[0].lineno
    body = _lines(reference_code, body_start, theirs.end_lineno).strip("\n")
    if not body.strip():
        raise ReleaseError(f"the reference's {function} has no body after its docstring")
    return f"{head}\n    {BEGIN_SOLUTION}\n{body}\n    {END_SOLUTION}"


def _has_docstring(node: ast.FunctionDef) -> bool:
    first = node.body[0]
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


def _imports(reference_code: str) -> str:
    tree = ast.parse(reference_code)
    return "\n".join(ast.get_source_segment(reference_code, node) for node in tree.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def grading_cell_source(assignment: str, function: str, points: float) -> str:
    """A test cell: public checks students run, and the hidden region nbgrader's autograde runs."""
    return (f"# {function}: {points:g} points. This cell runs the public checks (the lecture's numbers and\n"
            "# properties); when your notebook is graded, hidden checks on inputs drawn for you run here too.\n"
            "from autograder.inkernel import check_function\n\n"
            f'check_function("{function}", globals())\n'
            f"{BEGIN_HIDDEN}\n"
            "from autograder.inkernel import grade_function\n\n"
            f'grade_function("{assignment}", "{function}", globals())\n'
            f"{END_HIDDEN}")


# ---------------------------------------------------------------- answers from a .py file

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
    return _lines(code, first, node.end_lineno)


# ---------------------------------------------------------------- nbgrader

def generate_assignment(course: Course, assignment: Assignment, out: Path, gradebook: Path | None) -> Path:
    """Run `nbgrader generate_assignment` into `out`/<assignment>; return that folder.

    nbgrader reads nbgrader_config.py in the course root (source folder,
    gradebook); the source and release folders are passed explicitly so any
    `out` works. gradebook: the nbgrader database to record the assignment in
    (default: nbgrader's, gradebook.db in the course root).
    """
    if assignment.source_dir.name != assignment.name:
        raise ReleaseError(f"nbgrader needs the source folder to be named after the assignment: "
                           f"{assignment.source_dir} should be .../{assignment.name}")
    out = Path(out).resolve()
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", assignment.name, "--force",
               f"--CourseDirectory.root={course.root}",
               f"--CourseDirectory.source_directory={assignment.source_dir.parent.resolve()}",
               f"--CourseDirectory.release_directory={out}"]
    if gradebook is not None:
        command.append(f"--CourseDirectory.db_url=sqlite:///{Path(gradebook).resolve()}")
    done = subprocess.run(command, cwd=course.root, capture_output=True, text=True, env=nbgrader_env())
    released = out / assignment.name
    if done.returncode != 0 or not released.is_dir():
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise ReleaseError(f"nbgrader generate_assignment failed (exit {done.returncode}):\n{tail}\n"
                           "Fix what nbgrader reports (usually a cell's nbgrader metadata) and release again")
    return released


def nbgrader_env(extra: dict | None = None) -> dict:
    """The environment to run nbgrader in: ours, with this Python's scripts first on PATH.

    nbgrader starts `alembic` (its database migrations) by name, and kernels
    run `python`; both must be the ones installed beside this interpreter
    even when it was started by path without activating its environment.
    """
    env = dict(os.environ, **(extra or {}))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


# ---------------------------------------------------------------- the leak scan

@dataclass(frozen=True)
class Leak:
    path: Path
    what: str  # what was found, e.g. "line 3 of the reference's softmax: ..."


def forbidden(suite: Suite, source_notebook) -> tuple[dict[str, str], dict[float, str]]:
    """What must never be released: text -> why, and distinctive numbers -> why.

    Texts: every non-trivial line of every reference function body; every
    line inside a solution region or hidden-test region of the source
    notebook; hidden check names, their Python names and docstrings, and the
    hidden checks' longer strings (messages) not shared with the public checks;
    the two region markers. Numbers: those in the hidden checks but not the
    public ones, except small integers.
    """
    assignment = suite.assignment
    texts: dict[str, str] = {BEGIN_SOLUTION: "a solution-region marker", BEGIN_HIDDEN: "a hidden-tests marker"}
    reference_code = read_code(assignment.solution_dir / REFERENCE_FILE)
    for name, node in _functions(reference_code, "the reference").items():
        start = node.body[1].lineno if _has_docstring(node) and len(node.body) > 1 else node.body[0].lineno
        for line in _lines(reference_code, start, node.end_lineno).splitlines():
            if _meaningful(line):
                texts.setdefault(line.strip(), f"a line of the reference's {name}")
    for cell in source_notebook.cells:
        for line in _solution_lines(cell) + _regions(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            if _meaningful(line):
                texts.setdefault(line.strip(), "a line of a solution or hidden-test region of the source notebook")
    for entry in suite.checks:
        if entry.visibility == "hidden":
            texts[entry.name] = f"the name of hidden check {entry.name}"
            texts[entry.check.run.__name__] = f"the function of hidden check {entry.name}"
            if len(entry.check.description) >= MIN_TEXT:
                texts[entry.check.description] = f"the description of hidden check {entry.name}"
    hidden_code = read_code(assignment.solution_dir / HIDDEN_FILE)
    public_code = read_code(assignment.source_dir / PUBLIC_FILE)
    public_strings = _constants(public_code, str)
    for text in _constants(hidden_code, str) - public_strings:
        if len(text.strip()) >= MIN_TEXT:
            for line in text.strip().splitlines():
                if len(line.strip()) >= MIN_TEXT:
                    texts.setdefault(line.strip(), "a text of the hidden checks")
    numbers = {value: "a number used only by the hidden checks"
               for value in _constants(hidden_code, (int, float)) - _constants(public_code, (int, float))
               if not (float(value).is_integer() and abs(value) < SMALL_INTEGER)}
    return texts, numbers


def _meaningful(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= MIN_LINE and not stripped.startswith("#")


def _solution_lines(cell) -> list[str]:
    """The lines nbgrader replaces: a solution region, or all of a solution cell that has none."""
    if BEGIN_SOLUTION in cell.source:
        return _regions(cell.source, "BEGIN SOLUTION", "END SOLUTION")
    if cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
        return cell.source.splitlines()
    return []


def _regions(source: str, begin: str, end: str) -> list[str]:
    lines, inside = [], False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line)
    return lines


def _constants(code: str, kinds) -> set:
    return {node.value for node in ast.walk(ast.parse(code))
            if isinstance(node, ast.Constant) and type(node.value) in (kinds if isinstance(kinds, tuple) else (kinds,))}


def scan_release(folder: Path, suite: Suite, source_notebook) -> list[Leak]:
    """Every file under `folder` checked against `forbidden`; an empty list means nothing leaked."""
    texts, numbers = forbidden(suite, source_notebook)
    leaks = []
    hidden_files = {REFERENCE_FILE, HIDDEN_FILE}
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        if path.name in hidden_files:
            leaks.append(Leak(path, f"a file named like solutions/{path.name}"))
        text = path.read_text(errors="replace")
        leaks += [Leak(path, f"{why}: {needle!r}") for needle, why in texts.items() if needle in text]
        for value in sorted(_code_numbers(path, text) & set(numbers)):
            leaks.append(Leak(path, f"{numbers[value]}: {value!r}"))
    return leaks


def _code_numbers(path: Path, text: str) -> set:
    """Numbers written in the file's Python code (a .py file, or a notebook's code cells)."""
    if path.suffix == ".ipynb":
        sources = [cell.source for cell in nbformat.reads(text, as_version=4).cells if cell.cell_type == "code"]
    elif path.suffix == ".py":
        sources = [text]
    else:
        return set()
    found = set()
    for source in sources:
        try:
            for token in tokenize.generate_tokens(io.StringIO(source).readline):
                if token.type == tokenize.NUMBER:
                    found.add(ast.literal_eval(token.string))
        except (tokenize.TokenError, SyntaxError, ValueError):
            continue  # IPython syntax (!, %) the tokenizer rejects; text matches still apply
    return found


# ---------------------------------------------------------------- the whole release

@dataclass(frozen=True)
class Release:
    folder: Path  # <out>/<assignment>
    files: tuple[str, ...]  # released files, relative to folder
    rebuilt: tuple[Path, ...]  # source files regenerated before the release (with rebuild=True)
    points: float  # autograded points in the notebook
    written: float  # hand-graded points in the notebook


def release(course: Course, suite: Suite, out: Path, gradebook: Path | None = None, rebuild: bool = False) -> Release:
    """Run nbgrader's generate_assignment on an up-to-date source, and refuse a release that leaks.

    rebuild: first regenerate the source's generated cells and manifest (files
    under version control: review and commit them); without it, a stale
    source is an error rather than a silent change. A leaking release is
    deleted and ReleaseError lists what leaked.
    """
    assignment = suite.assignment
    rebuilt = build_source(course, suite, write=rebuild)
    if rebuilt and not rebuild:
        names = ", ".join(str(path.relative_to(course.root)) for path in rebuilt)
        raise ReleaseError(f"{names} no longer match the reference, the stub or course.yaml; run `autograder "
                           f"release {assignment.name} --rebuild` to regenerate them, then review and commit them")
    folder = generate_assignment(course, assignment, out, gradebook)
    source = nbformat.read(source_notebook_path(assignment), as_version=4)
    leaks = scan_release(folder, suite, source)
    if leaks:
        shutil.rmtree(folder)
        listed = "\n".join(f"  {leak.path.relative_to(folder)}: {leak.what}" for leak in leaks[:20])
        raise ReleaseError(f"the release would leak {len(leaks)} things, so it was deleted:\n{listed}\n"
                           f"Remove them from {assignment.source_dir} (only public material belongs there) "
                           "and release again")
    required = [f"{assignment.module}.ipynb", f"{assignment.module}.py", PUBLIC_FILE, MANIFEST_FILE]
    absent = [name for name in required if not (folder / name).is_file()]
    if absent:
        raise ReleaseError(f"the release in {folder} lacks {absent[0]}; students need it. Put it in "
                           f"{assignment.source_dir} (nbgrader copies that folder) and release again")
    files = tuple(str(p.relative_to(folder)) for p in sorted(folder.rglob("*")) if p.is_file())
    return Release(folder, files, tuple(rebuilt), suite.max_score, sum(assignment.written.values()))
