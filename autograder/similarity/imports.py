"""What each name of a hand-in was imported as: `np.exp`, `numpy.exp` and `from numpy import exp` are one name.

`from numpy import *` binds every public NumPy name too: a copy that swaps `import numpy as np` for it and drops
each `np.` had matched nothing of its source (0.22 against honest pairs' 0.54). So a bare name the star import
provides, and that the file binds nowhere itself, stands for the module's. Only modules the grader has loaded
anyway are looked into (NumPy, math): a student's file names the module, and importing what it names would run
that module's code in the grader.
"""
from __future__ import annotations

import ast
import math

import numpy

# Modules whose `import *` is read: their public names, by module name.
STAR_MODULES = {"numpy": frozenset(numpy.__all__), "math": frozenset(n for n in dir(math) if not n.startswith("_"))}


def imported_names(tree: ast.Module) -> dict[str, str]:
    """The imports at the top of `tree` and of its functions and methods: the local name -> the dotted name it
    stands for, names that a star import of STAR_MODULES provides included."""
    names: dict[str, str] = {}
    starred: list[str] = []  # modules imported with *, in order: a later one's name wins, as in Python
    methods = [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body]
    statements = [*tree.body, *(s for f in [*tree.body, *methods] if isinstance(f, ast.FunctionDef) for s in f.body)]
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(
                    ".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name == "*":
                    starred.append(node.module)
                else:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return {**_star_names(tree, starred, set(names)), **names}


def _star_names(tree: ast.Module, modules: list[str], imported: set[str]) -> dict[str, str]:
    """The names read in `tree` that a star import of `modules` provides and that the file does not bind itself."""
    provided = [(module, STAR_MODULES[module]) for module in modules if module in STAR_MODULES]
    if not provided:
        return {}
    bound = imported | _bound_names(tree)
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            for module, public in provided:
                if node.id in public:
                    found[node.id] = f"{module}.{node.id}"
    return found


def _bound_names(tree: ast.Module) -> set[str]:
    """Every name `tree` binds itself: assigned, a parameter, a function or class, a loop or `with` target."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
    return bound


def dotted(node: ast.AST, imports: dict[str, str]) -> str | None:
    """`np.linalg.norm` -> "numpy.linalg.norm" when the chain starts at an imported name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in imports:
        return ".".join([imports[node.id], *reversed(parts)])
    return None
