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
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.submission import Submission
from autograder.similarity.depth import drop_deep_statements
from autograder.similarity.imports import imported_names
from autograder.similarity.normalise import Token, function_tokens

MAX_CODE_CHARS = 2_000_000  # of code, comments and docstrings left out: more than any hand-written answer
MAX_HELPERS = 200  # helpers followed from one function: far more than any hand-written answer has
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
    defined = Counter(node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
    twice = [name for name in contract if defined[name] > 1]
    if twice:  # an earlier definition, perhaps a copy, is code the file holds but does not run
        notes.append(f"defines {', '.join(twice)} more than once; the last definition of each, which runs, was "
                     "compared, not the earlier ones")
    missing = [name for name in contract if name not in functions]
    if missing and len(missing) < len(contract):
        notes.append(f"defines no {', '.join(missing)}")
    elif missing and not (failed and submission.kind == "py"):
        notes.append("not compared: none of the assignment's functions is defined")
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
    module = _Module(tree)
    imports = imported_names(tree)
    constants = _Constants(module_constants(tree))
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
            found[name] = FunctionCode(name, tuple(tokens), spans)
    return found


def module_constants(tree: ast.Module) -> dict[str, ast.Constant]:
    """Names bound once in the whole file, at module level, to a constant (`VERBOSE = False`, `DK = 64`) -> it."""
    nodes = list(ast.walk(tree))
    bound = Counter(node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
    bound.update(name for node in nodes if isinstance(node, ast.Global | ast.Nonlocal) for name in node.names)
    return {name: value for names, value in map(_assigned, tree.body) if isinstance(value, ast.Constant)
            for name in names if bound[name] == 1}


def _assigned(node: ast.AST) -> tuple[list[str], ast.expr | None]:
    """The plain names a statement binds and the value it binds them to: `a = b = v` and `a: T = v` alike (an
    annotation changes nothing the code does); ([], None) for any other statement."""
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)], node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [node.target.id], node.value
    return [], None


class _Constants(ast.NodeTransformer):
    """A module constant read in a function written as its value, where the function has no name of its own so
    called: `if VERBOSE:` behind `VERBOSE = False` is then `if False:`, dead code the normalisation drops."""

    def __init__(self, constants: dict[str, ast.Constant]):
        self.constants = constants

    def visit_FunctionDef(self, node):
        arguments = node.args
        own = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                               *filter(None, (arguments.vararg, arguments.kwarg))]}
        if self.constants.keys() & own:  # a parameter shadows the constant: left as it is (rare)
            return node
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.constants:
            return ast.copy_location(ast.Constant(self.constants[node.id].value), node)
        return node


class _Module:
    """A module's top-level functions and classes: the code that a name, or a method's name, stands for.

    defined: each top-level name bound to code -> the function that runs. A name bound to a method (`f =
    obj.f`, `Cls.f`, `Cls().f`) or defined by a def that only returns a method's call is that method; one
    bound to another function (`f = _f`) is that function. In each method, `self.g`, `cls.g` and `Cls.g`
    naming a method of its class are rewritten `g` (in place), and everywhere a call of `_f` is rewritten
    `f`, so that the code reads as the same code written at module level under the stub's names.
    """

    def __init__(self, tree: ast.Module):
        self.methods: dict[str, dict[str, ast.AST]] = {}  # class -> its methods (its module-level bases' first)
        self.scopes: dict[ast.AST, dict[str, ast.AST]] = {}  # method -> its class's methods
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                inherited = [self.methods.get(base.id, {}) for base in node.bases if isinstance(base, ast.Name)]
                own = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
                methods = {name: m for scope in [*inherited[::-1], own] for name, m in scope.items()}
                self.methods[node.name] = methods
                for method in own.values():
                    _OwnCalls({node.name, *_receiver(method)}, methods).visit(method)
                    self.scopes[method] = methods
        self.instances = {name: value.func.id for names, value in map(_assigned, tree.body)
                          if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                          and value.func.id in self.methods for name in names}
        self.defined: dict[str, ast.AST] = {}
        aliases: dict[str, str] = {}  # `f = _f`: _f -> f
        for node in tree.body:
            names, value = _assigned(node)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defined[node.name] = self.method(_delegated_call(node)) or node
            elif method := self.method(value):
                self.defined.update((name, method) for name in names)
            elif isinstance(value, ast.Name) and value.id in self.defined:
                for name in names:
                    self.defined[name] = self.defined[value.id]
                    aliases[value.id] = name
        if aliases:  # a call of _f reads as the call of f it is, as if the functions kept their names
            renamed = _Renamed(aliases)
            for function in {*self.defined.values(), *self.scopes}:
                renamed.visit(function)

    def method(self, expression: ast.AST | None) -> ast.AST | None:
        """The method `expression` names: `obj.f` (obj bound to `Cls(…)` at top level), `Cls.f` or `Cls(…).f`."""
        if not isinstance(expression, ast.Attribute):
            return None
        owner = expression.value.func if isinstance(expression.value, ast.Call) else expression.value
        if not isinstance(owner, ast.Name):
            return None
        return self.methods.get(self.instances.get(owner.id, owner.id), {}).get(expression.attr)

    def helpers(self, function: ast.AST, contract: set[str]) -> list[ast.AST]:
        """The top-level functions and methods not of the contract that `function` calls (for a method, also
        those of its class), directly or through each other, in call order."""
        order, seen, queue = [], {id(function)}, deque([function])
        while queue and len(order) < MAX_HELPERS:
            part = queue.popleft()
            scope = self.scopes.get(part, {})  # a method's class; looked up first, then the module's names
            for node in ast.walk(part):
                if isinstance(node, ast.Name):
                    name, helper = node.id, scope.get(node.id, self.defined.get(node.id))
                elif isinstance(node, ast.Attribute):
                    name, helper = node.attr, self.method(node)
                else:
                    continue
                if helper is not None and name not in contract and id(helper) not in seen:
                    seen.add(id(helper))
                    order.append(helper)
                    queue.append(helper)
        return order[:MAX_HELPERS]


def _delegated_call(function: ast.AST) -> ast.AST | None:
    """What `function` calls, when all it does (its docstring aside) is return that call's result."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call):
        return body[0].value.func
    return None


def _receiver(method: ast.AST) -> list[str]:
    """The name a method is given its instance or class by (`self`, `cls`): none for a static method."""
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list)
    first = [*method.args.posonlyargs, *method.args.args][:1]
    return [] if static else [a.arg for a in first]


class _Renamed(ast.NodeTransformer):
    """Each name read that is a key of `names` (a function's name) written as its value (the alias it is given)."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node


class _OwnCalls(ast.NodeTransformer):
    """`self.g`, `cls.g` or `Cls.g` in a method, `g` a method of its class, written `g`."""

    def __init__(self, receivers: set[str], methods: dict[str, ast.AST]):
        self.receivers, self.methods = receivers, methods

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id in self.receivers and node.attr in self.methods:
            return ast.copy_location(ast.Name(node.attr, node.ctx), node)
        return node


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
