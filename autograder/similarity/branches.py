"""Which branch of a top-level `if` runs, where the file itself says, and which of two versions of a function is read.

A copier may put the copy in one branch and decoys in the other, and choose
a test that looks settled but is not (`TYPE_CHECKING = 1 == 1`, a flag
assigned twice), or one that is settled but written unusually
(`(3, 0) > sys.version_info`, `sys.version_info.major < 3`). A test is
evaluated only where its value is certain; otherwise both branches are
read, and where both define a function, the version that is not a decoy
(much shorter than the other, or not using its parameters) is compared.
"""
from __future__ import annotations

import ast
import operator
import sys

COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}
UNKNOWN = object()  # a value the file does not settle
SHORTER = 3  # a body with a third of the syntax of another version's, or less, is a decoy beside it


def known_test(test: ast.expr, flags: dict[str, ast.Constant]) -> bool | None:
    """What an `if` test is at run time where the file says, else None.

    flags: names (dotted for a module's attribute, `typing.TYPE_CHECKING`) whose value is known: constants bound
    once (`DEBUG = False`), and `TYPE_CHECKING` imported from typing (False when the code runs). Settled are
    those names, a constant, a comparison of them or of `sys.version_info` (a tuple, `[0]`, `.major`; with this
    Python's version, either side), `__name__` compared with "__main__" (not the name of an imported module),
    and `not`, `and` and `or` of settled tests.
    """
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = known_test(test.operand, flags)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [known_test(v, flags) for v in test.values]
        decisive = isinstance(test.op, ast.Or)  # True settles an `or`, False an `and`
        return decisive if decisive in values else None if None in values else not decisive
    if isinstance(test, ast.Compare):
        return _comparison(test, flags)
    value = _value(test, flags)
    return None if value is UNKNOWN else bool(value)


def _comparison(test: ast.Compare, flags: dict[str, ast.Constant]) -> bool | None:
    if len(test.ops) != 1:
        return None
    left, right = test.left, test.comparators[0]
    if _dotted(left) == "__name__" or _dotted(right) == "__name__":
        other = right if _dotted(left) == "__name__" else left
        main = isinstance(other, ast.Constant) and other.value == "__main__"
        return {ast.Eq: False, ast.NotEq: True}.get(type(test.ops[0])) if main else None
    a, b = _value(left, flags), _value(right, flags)
    compare = COMPARE.get(type(test.ops[0]))
    if UNKNOWN in (a, b) or compare is None:
        return None
    try:
        return bool(compare(a, b))
    except TypeError:  # `MODE < 3` with MODE a string: an error when it runs, not a branch
        return None


def _value(node: ast.expr, flags: dict[str, ast.Constant]):
    """The value of a constant, a tuple of them, a flag or this Python's version; UNKNOWN for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        parts = [_value(e, flags) for e in node.elts]
        return UNKNOWN if UNKNOWN in parts else tuple(parts)
    name = _dotted(node)
    if name in flags:
        return flags[name].value
    version = node.value if isinstance(node, ast.Subscript | ast.Attribute) else node
    if not (isinstance(version, ast.Attribute) and version.attr == "version_info"):
        return UNKNOWN
    if version is node:
        return tuple(sys.version_info)
    if isinstance(node, ast.Attribute) and node.attr in ("major", "minor", "micro"):
        return getattr(sys.version_info, node.attr)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int \
            and -5 <= node.slice.value < 5:
        return sys.version_info[node.slice.value]
    return UNKNOWN


def _dotted(node: ast.expr) -> str | None:
    """`a` or `a.b.c` for a name or a chain of attributes of one; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def typing_flags(tree: ast.Module) -> dict[str, ast.Constant]:
    """`TYPE_CHECKING` as the file imports it from typing (`from typing import TYPE_CHECKING as TC` gives TC,
    `import typing as t` gives t.TYPE_CHECKING), False: its value when the code runs. A file's own binding of
    the name is not typing's, and is read as any other name."""
    flags = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module in ("typing", "typing_extensions"):
            flags.update({a.asname or a.name: ast.Constant(False) for a in node.names if a.name == "TYPE_CHECKING"})
        elif isinstance(node, ast.Import):
            flags.update({f"{a.asname or a.name}.TYPE_CHECKING": ast.Constant(False) for a in node.names
                          if a.name in ("typing", "typing_extensions")})
    return flags


def declared_global(function: ast.FunctionDef) -> set[str]:
    """The names a function declares `global` in its own body (not in nested functions)."""
    return {name for node in function.body for part in ast.walk(node) if isinstance(part, ast.Global)
            for name in part.names}


def called(node: ast.stmt) -> str | None:
    """f, for a statement that only calls `f()` with no arguments."""
    call = node.value if isinstance(node, ast.Expr) else None
    return call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and not call.args \
        and not call.keywords else None


def runs_once(node: ast.stmt) -> bool:
    """Whether `node` is a for loop over one item: `range(1)`, `[x]`, `(x,)`."""
    if not isinstance(node, ast.For):
        return False
    items = node.iter
    if isinstance(items, ast.List | ast.Tuple):
        return len(items.elts) == 1 and not isinstance(items.elts[0], ast.Starred)
    bounds = [a.value if isinstance(a, ast.Constant) else None for a in getattr(items, "args", [])]
    return isinstance(items, ast.Call) and isinstance(items.func, ast.Name) and items.func.id == "range" \
        and not items.keywords and bounds in ([1], [0, 1])


def better(statement: ast.stmt, chosen: ast.stmt) -> bool:
    """Whether `statement` is read rather than `chosen`, an earlier binding of the same name in another branch."""
    if rank(statement) != rank(chosen) or rank(statement) < 2:
        return rank(statement) > rank(chosen)
    return bool(decoy_reason(chosen, statement)) and not decoy_reason(statement, chosen)


def why(kept: ast.stmt, other: ast.stmt) -> str:
    """Why `kept` was read rather than `other`, for the note: "the other is much shorter", or "the first"."""
    reason = decoy_reason(other, kept) if isinstance(other, ast.FunctionDef | ast.AsyncFunctionDef) else ""
    return f"as the other {reason}" if reason else "the first"


def rank(statement: ast.stmt) -> int:
    """2 for a def or class with code of its own, 0 for one whose body is a placeholder, 1 for other bindings."""
    if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return 1
    return 0 if is_placeholder(statement) else 2


def is_placeholder(function: ast.AST) -> bool:
    """Whether a def's body, its docstring aside, is `...`, `pass` or a lone `raise` (of any exception)."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                             and isinstance(s.value.value, str))]
    return all(isinstance(s, ast.Pass | ast.Raise) or (isinstance(s, ast.Expr) and isinstance(
        s.value, ast.Constant) and s.value.value is Ellipsis) for s in body) and len(body) <= 1


def decoy_reason(version: ast.AST, other: ast.AST) -> str:
    """Why `version` of a function looks like a decoy beside `other`: it leaves a parameter without a default
    unused, or its body is far shorter; "" when it does not."""
    arguments = version.args
    required = [a.arg for a in [*arguments.posonlyargs, *arguments.args][:len(arguments.posonlyargs)
                + len(arguments.args) - len(arguments.defaults)]]
    read = {n.id for part in version.body for n in ast.walk(part) if isinstance(n, ast.Name)}
    unused = [name for name in required if name not in read]
    if unused:
        return f"does not use {', '.join(unused)}"
    if SHORTER * _size(version) <= _size(other):
        return "is much shorter"
    return ""


def _size(function: ast.AST) -> int:
    return sum(1 for part in function.body for _ in ast.walk(part))
