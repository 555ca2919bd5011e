"""Which names a piece of Python sets, and which a function reads from outside itself, read from its syntax tree
(never run)."""
from __future__ import annotations

import ast

# The most text the grader parses itself (ast.parse takes hundreds of bytes a character, and the grading process
# has no memory limit of its own): a 2 MB line had it use 1.2 GB.
MAX_PARSED = 1 << 18


def globals_read(definition: ast.AST) -> set[str]:
    """The names `definition` (a def or a class) reads but never sets or takes as a parameter: the globals it may
    need. A function's own `S`, or a local that happens to be called `score`, is not the module's."""
    names = [node for node in ast.walk(definition) if isinstance(node, ast.Name)]
    declared = {name for node in ast.walk(definition) if isinstance(node, (ast.Global, ast.Nonlocal))
                for name in node.names}  # `global calls; calls += 1` reads and sets the module's `calls`
    local = {node.id for node in names if not isinstance(node.ctx, ast.Load)} - declared
    local |= {arg.arg for arg in ast.walk(definition) if isinstance(arg, ast.arg)}
    return ({node.id for node in names if isinstance(node.ctx, ast.Load)} | declared) - local


def names_set(source: str, first: int = 1) -> list[str]:
    """The names a cell's top-level statements define (imports, defs, classes, assignments), from the statement
    on line `first` on, in order, each once."""
    if len(source) > MAX_PARSED:
        return []  # too large to parse here: the message names the cell, not the names it left undefined
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # a cell that does not parse ran nothing, and the message for that says so already
    names: list[str] = []
    for statement in tree.body:
        if (statement.end_lineno or statement.lineno) >= first:
            names += [name for name in set_by(statement) if name not in names]
    return names


def set_by(statement: ast.stmt) -> list[str]:
    """The names one top-level statement binds: an import's (`np`), a def's or a class's, an assignment's targets."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in statement.names if alias.name != "*"]
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
    return [node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)]


def kept_lines(source: str, statements: list[ast.stmt], keep) -> str:
    """`source` with only the lines of its top-level `statements` that `keep(statement)` holds, a def's decorators
    included, each in its own lines and every other line blank: a line number in a traceback stays the student's.
    A line shared with a statement left out (`import time; time.sleep(3)`) is left out too."""
    lines = source.split("\n")
    spans = [(keep(node), range(min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1,
                                node.end_lineno)) for node in statements]
    others = {number for kept, span in spans if not kept for number in span}
    kept = {number for kept, span in spans if kept for number in span} - others
    return "\n".join(line if number in kept else "" for number, line in enumerate(lines))
