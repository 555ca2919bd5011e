"""Module-level constants read in a function as their values.

A name bound once in the whole file, at module level, to a constant
(`VERBOSE = False`, `DK = 64`, `NEG_INF = -np.inf`) reads in a function as
the value it stands for: `if VERBOSE:` is then `if False:`, dead code the
normalisation drops, and a student who named `-np.inf` writes what one who
wrote it inline writes.
"""
from __future__ import annotations

import ast
import copy
from collections import Counter

from autograder.similarity.normalise import dotted


def module_constants(tree: ast.Module, imports: dict[str, str]) -> dict[str, ast.expr]:
    """Names bound once in the whole file, at module level, to a constant (`VERBOSE = False`, `DK = 64`, `NEG_INF =
    -np.inf`: literals, imported names' attributes and operators on them) -> it."""
    nodes = list(ast.walk(tree))
    bound = Counter(node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
    bound.update(name for node in nodes if isinstance(node, ast.Global | ast.Nonlocal) for name in node.names)
    bound.update(node.name for node in nodes if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))
    return {name: value for names, value in map(assigned, tree.body) if _constant(value, imports)
            for name in names if bound[name] == 1}


def _constant(node: ast.AST | None, imports: dict[str, str]) -> bool:
    """Whether `node` computes a constant: literals, `np.inf`-like names of an import, operators on them."""
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand, imports)
    if isinstance(node, ast.BinOp):
        return _constant(node.left, imports) and _constant(node.right, imports)
    if isinstance(node, ast.Tuple):
        return all(_constant(e, imports) for e in node.elts)
    if isinstance(node, ast.Attribute):
        return dotted(node, imports) is not None
    return isinstance(node, ast.Constant)


def assigned(node: ast.AST) -> tuple[list[str], ast.expr | None]:
    """The plain names a statement binds and the value it binds them to: `a = b = v` and `a: T = v` alike (an
    annotation changes nothing the code does); ([], None) for any other statement."""
    if isinstance(node, ast.Assign):
        return [target.id for target in node.targets if isinstance(target, ast.Name)], node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [node.target.id], node.value
    return [], None


class Constants(ast.NodeTransformer):
    """A module constant read in a function written as its value, where the function has no name of its own so
    called: `if VERBOSE:` behind `VERBOSE = False` is then `if False:`, dead code the normalisation drops, and
    `NEG_INF` behind `NEG_INF = -np.inf` is `-np.inf`, as a student who wrote it inline wrote it."""

    def __init__(self, constants: dict[str, ast.expr]):
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
            value = copy.deepcopy(self.constants[node.id])
            for part in ast.walk(value):  # its tokens are the reading line's
                ast.copy_location(part, node)
            return value
        return node
