"""The class's hand-ins as functions: the contract's function names, and each student's version of each.

A hand-in is read as `grade` reads it (grading.discover, grading.submission)
and parsed, never run. A notebook's code cells are parsed one by one, so a
cell with a syntax error costs only that cell. A function of the contract
comes with the module-level helpers it calls (not other functions of the
contract): moving code into a helper does not hide it. Nor does moving it
into a class: a function that only hands over to a method (`f = obj.f`,
`f = Cls.f`, `f = Cls().f`, or a def that just returns `obj.f(...)`, obj an
instance bound at module level) is compared as that method, and methods
called (through `self`, `cls`, the class or such an instance) are helpers.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.submission import Submission
from autograder.similarity.depth import drop_deep_statements
from autograder.similarity.imports import imported_names
from autograder.similarity.normalise import Token, function_tokens
from autograder.similarity.toplevel import Constants, Module, Reading, module_constants, top_level
from autograder.similarity.unread import missing_notes, unread_notes

MAX_CODE_CHARS = 2_000_000  # of code, comments and docstrings left out: more than any hand-written answer

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"  # nbgrader's marks in a source notebook


@dataclass(frozen=True)
class FunctionCode:
    """One student's version of one contract function, normalised.

    spans: the (first, last) lines of the code shown for it: the function (for a delegate, the method it hands
    over to), then each helper it calls.
    """

    name: str
    tokens: tuple[Token, ...]
    spans: tuple[tuple[int, int], ...]
    coded: frozenset[int] = frozenset()  # the lines holding its code, kept once the tokens are dropped
    as_released: bool = False  # its body only raises NotImplementedError, as the stub's does (see `is_stub_body`)


@dataclass(frozen=True)
class StudentCode:
    """What was compared of one student: their code's text and the functions found in it."""

    student: str
    path: str
    text: str  # the parsed code (a notebook's cells joined); its lines are the ones `FunctionCode` points at
    functions: dict[str, FunctionCode]
    note: str = ""  # what could not be compared, for the instructor
    cells: tuple[tuple[int, str], ...] = ()  # a notebook's: (the line of `text` each cell starts at, its label)

    def place(self, line: int) -> str:
        """Where line `line` of `text` is in the student's own file: "12", or a notebook's "code cell 4:1"."""
        return place_in(self.cells, line)


def place_in(cells: tuple[tuple[int, str], ...], line: int) -> str:
    """`StudentCode.place` for a hand-in whose cells (none for a .py) start at these lines of its joined text."""
    starts = [start for start, _ in cells if start <= line]
    if not starts:
        return str(line)
    start, label = cells[len(starts) - 1]
    return f"{label}:{line - start + 1}"  # "code cell 4": counted among the code cells, as `grade` counts them


def contract_functions(stub: Path) -> list[str]:
    """The names of the top-level functions of the assignment's stub, in order: what students implement."""
    tree = ast.parse(Path(stub).read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def student_code(submission: Submission, contract: list[str]) -> StudentCode:
    """The contract's functions in one student's submission (a problem becomes a note, never an error)."""
    path = str(submission.path)
    if submission.problem:
        return StudentCode(submission.student, path, "", {}, f"not compared: {for_instructor(submission.problem)}")
    pieces = [submission.source] if submission.kind == "py" else [cell.source for cell in submission.cells]
    if sum(len(piece) for piece in pieces) > MAX_CODE_CHARS and sum(map(code_chars, pieces)) > MAX_CODE_CHARS:
        return StudentCode(submission.student, path, "", {}, f"not compared: over {MAX_CODE_CHARS:,} characters "
                                                             "of code (comments and docstrings aside), too large "
                                                             "to be a hand-written answer")
    text, tree, failed, starts = parse_pieces(pieces)
    notes = []
    if failed and submission.kind == "py":
        notes.append(f"not compared: a syntax error at line {failed[0][1]} ({failed[0][2]}); nothing of the file "
                     "could be parsed")
    elif failed:
        broken = [f"{submission.cells[number - 1].label} (line {line}: {message})" for number, line, message in failed]
        notes.append(f"left out, as they could not be parsed: {'; '.join(broken)}")
    cells = () if submission.kind == "py" else tuple((line, submission.cells[number - 1].label)
                                                     for number, line in starts)
    deep = drop_deep_statements(tree)
    if deep:
        where = ", ".join(place_in(cells, line) for line in deep[:5]) + (" and more" if len(deep) > 5 else "")
        notes.append(f"left out, as nested too deeply to analyse: the statement{'s' * (len(deep) > 1)} at {where}")
    try:
        functions = functions_of(tree, contract)
    except (RecursionError, MemoryError):  # nested statements (drop_deep_statements measures expressions)
        return StudentCode(submission.student, path, text, {}, "; ".join(
            [*notes, "not compared: the code is nested too deeply to analyse"]), cells)
    reading = Reading()
    read = top_level(tree.body, reading=reading)
    defined = Counter(node.name for node in read if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
    twice = [name for name in contract if defined[name] > 1]
    if twice:  # an earlier definition, perhaps a copy, is code the file holds but does not run
        notes.append(f"defines {', '.join(twice)} more than once; the last definition of each, which runs, was "
                     "compared, not the earlier ones")
    notes.extend(unread_notes(tree, read, reading, [n for n in contract if n in functions],
                              lambda line: place_in(cells, line)))
    missing = [name for name in contract if name not in functions]
    if missing and not (failed and submission.kind == "py"):
        notes.extend(missing_notes(tree, missing, everything=len(missing) == len(contract)))
    return StudentCode(submission.student, path, text, functions, "; ".join(notes), cells)


def for_instructor(problem: str) -> str:
    """A hand-in's problem as `grade` tells the student, without what it asks the student to do (resubmit, …):
    the report's reader is the instructor."""
    parts = re.split(r"(?<=[;.]) ", problem)
    told = r"(re)?submit|clear the|write your|open (it|your)|hand (it |your |the )?|keep data"
    kept = [p for p in parts if not re.match(told, p, re.IGNORECASE)]
    return " ".join(kept or parts).rstrip(";. ")


def parse_pieces(pieces: list[str]) -> tuple[str, ast.Module, list[tuple[int, int, str]], list[tuple[int, int]]]:
    """(the pieces joined, one module of those that parse, (piece number, line, error) of each that did not,
    (piece number, the joined text's line it starts at) of each that did).

    Line numbers in the module match the joined text; an error's line is the piece's own (from 1).
    """
    kept, body, failed, starts, offset = [], [], [], [], 0
    for number, piece in enumerate(pieces, start=1):
        try:  # blank lines first give the piece's lines their numbers in the joined text, at no cost
            tree = ast.parse("\n" * offset + piece)
        except SyntaxError as error:
            failed.append((number, max((error.lineno or offset + 1) - offset, 1), error.msg))
            continue
        except (ValueError, RecursionError, MemoryError) as error:  # a null byte; nesting too deep for the parser
            failed.append((number, 1, "too deeply nested" if not isinstance(error, ValueError) else str(error)))
            continue
        body.extend(tree.body)
        kept.append(piece)
        starts.append((number, offset + 1))
        offset += piece.count("\n") + 1
    return "\n".join(kept), ast.Module(body=body, type_ignores=[]), failed, starts


def code_chars(piece: str) -> int:
    """The characters of `piece` that are not comments or docstrings: a file padded with comments is not large."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(piece).readline))
    except (tokenize.TokenError, SyntaxError):  # it will not parse either; its size is then what it costs
        return len(piece)
    skipped = 0
    previous = tokenize.NEWLINE
    for token in tokens:
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and previous in (
                tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)):
            skipped += len(token.string)
        if token.type not in (tokenize.COMMENT, tokenize.NL):
            previous = token.type
    return len(piece) - skipped


def functions_of(tree: ast.Module, contract: list[str]) -> dict[str, FunctionCode]:
    """Each contract function `tree` defines at top level (the last definition wins, as when it runs)."""
    tree = ast.Module(body=top_level(tree.body), type_ignores=[])  # defs in `try:` and `if` blocks too
    module = Module(tree)
    imports = imported_names(tree)
    constants = Constants(module_constants(tree))
    calls = {name: module.helpers(node, set(contract)) for name, node in module.defined.items() if name in contract}
    tokens_of: dict[ast.AST, list[Token]] = {}  # each function normalised once (in place), though helpers are shared
    found = {}
    for name in contract:
        if name in module.defined:
            parts = [module.defined[name], *calls[name]]
            for part in parts:
                if part not in tokens_of:
                    tokens_of[part] = function_tokens(constants.visit(part), imports)
            tokens = [token for part in parts for token in tokens_of[part]]
            spans = tuple((_first_line(part), part.end_lineno or part.lineno) for part in parts)
            found[name] = FunctionCode(name, tuple(tokens), spans, as_released=is_stub_body(module.defined[name]))
    return found


def is_stub_body(function: ast.AST) -> bool:
    """Whether `function`'s body, its docstring aside, is the released stub's: `raise NotImplementedError` (or
    `raise NotImplementedError(...)`). Another raise, `pass` or `...` is a student's, though as short."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    raised = body[0].exc if len(body) == 1 and isinstance(body[0], ast.Raise) else None
    raised = raised.func if isinstance(raised, ast.Call) else raised
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


def _first_line(function: ast.AST) -> int:
    return min([function.lineno, *(d.lineno for d in getattr(function, "decorator_list", []))])


def released_tokens(source_dir: Path, stub: Path) -> list[list[Token]]:
    """Token streams of what every student was given: the stub's functions and the released notebooks' code.

    A notebook's answer cells (nbgrader `solution`) are left out: in the
    instructor's source they hold the solution, which students must write.
    """
    streams = []
    stub_tree = ast.parse(Path(stub).read_text(encoding="utf-8"))
    imports = imported_names(stub_tree)
    streams += [function_tokens(node, imports) for node in stub_tree.body if isinstance(node, ast.FunctionDef)]
    for notebook in sorted(Path(source_dir).glob("*.ipynb")):
        import nbformat  # the grader's own reader; imported here as only this needs it

        cells = nbformat.read(notebook, as_version=4).cells
        sources = [c.source for c in cells if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get(
            "solution", False)]
        _, tree, _, _ = parse_pieces(sources)
        imports = imported_names(tree)
        streams += [function_tokens(node, imports) for node in tree.body if isinstance(node, ast.FunctionDef)]
        streams.append(function_tokens(_as_function(tree), imports))
    return streams


def released_texts(source_dir: Path, stub: Path) -> list[str]:
    """The text of everything students were given: the stub, and each notebook's cells (markdown too) without the
    solution regions and cells nbgrader replaces (in the instructor's source they hold the solution)."""
    import nbformat  # the grader's own reader; imported here as only this needs it

    texts = [Path(stub).read_text(encoding="utf-8")]
    for notebook in sorted(Path(source_dir).glob("*.ipynb")):
        for cell in nbformat.read(notebook, as_version=4).cells:
            if BEGIN_SOLUTION in cell.source:
                texts.append(re.sub(f"{BEGIN_SOLUTION}.*?({END_SOLUTION}|$)", "", cell.source, flags=re.S))
            elif not cell.metadata.get("nbgrader", {}).get("solution", False):
                texts.append(cell.source)
    return texts


def _as_function(tree: ast.Module) -> ast.FunctionDef:
    """A module's top-level code as the body of a function, to tokenise it as a function is."""
    arguments = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                              defaults=[])
    body = [s for s in tree.body if not isinstance(s, ast.FunctionDef)] or [ast.Pass()]
    return ast.FunctionDef(name="released", args=arguments, body=body, decorator_list=[], returns=None,
                           type_params=[], lineno=1, col_offset=0)
