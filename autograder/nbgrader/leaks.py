"""What must never be released, and the scan of a release for it.

Every non-trivial line of the reference and of the source notebook's
solution and hidden-test regions, the hidden checks' names, docstrings and
messages, and the numbers only the hidden checks use.
"""
from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.grading.suite import HIDDEN_FILE, REFERENCE_FILE, Suite, public_check_files
from autograder.nbgrader.source import BEGIN_HIDDEN, BEGIN_SOLUTION, functions_of, has_docstring, lines_of, read_code

MIN_LINE = 8  # shorter code lines (`else:`, `return S`) say nothing about a solution


MIN_TEXT = 24  # shorter strings of the hidden checks are too common to be a leak


SMALL_INTEGER = 100  # integers below this are everywhere; larger ones and fractions are distinctive


@dataclass(frozen=True)
class Leak:
    path: Path
    what: str  # what was found, e.g. "a line of the reference's double: ..."


def forbidden(suite: Suite, source_notebook) -> tuple[dict[str, str], dict[float, str]]:
    """What must never be released: text -> why, and distinctive numbers -> why.

    Texts: every non-trivial line of every reference function body; every
    line inside a solution region or hidden-test region of the source
    notebook; hidden check names, their Python names and docstrings, and the
    hidden checks' longer strings (messages) not shared with the public checks (or their helper);
    the two region markers. Numbers: those in the hidden checks but not the
    public ones, except small integers.
    """
    assignment = suite.assignment
    texts: dict[str, str] = {BEGIN_SOLUTION: "a solution-region marker", BEGIN_HIDDEN: "a hidden-tests marker"}
    reference_code = read_code(assignment.solution_dir / REFERENCE_FILE)
    for name, node in functions_of(reference_code, "the reference").items():
        start = node.body[1].lineno if has_docstring(node) and len(node.body) > 1 else node.body[0].lineno
        for line in lines_of(reference_code, start, node.end_lineno).splitlines():
            if _meaningful(line):
                texts.setdefault(line.strip(), f"a line of the reference's {name}")
    for cell in source_notebook.cells:
        for line in _solutionlines_of(cell) + _regions(cell.source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            if _meaningful(line):
                texts.setdefault(line.strip(), "a line of a solution or hidden-test region of the source notebook")
    for entry in suite.checks:
        if entry.visibility == "hidden":
            texts[entry.name] = f"the name of hidden check {entry.name}"
            texts[entry.check.run.__name__] = f"the function of hidden check {entry.name}"
            if len(entry.check.description) >= MIN_TEXT:
                texts[entry.check.description] = f"the description of hidden check {entry.name}"
    hidden_code = read_code(assignment.solution_dir / HIDDEN_FILE)
    # Public: the public checks and the helper they share with the hidden ones (released beside them).
    public_code = "\n".join(read_code(path) for path in public_check_files(assignment.source_dir))
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


def _solutionlines_of(cell) -> list[str]:
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
