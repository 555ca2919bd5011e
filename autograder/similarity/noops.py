"""Code that changes nothing a function returns, which a copier adds to hide a copy: found so normalise.py drops it.

Each kind below, one line per function of a copy, had kept the copy of a whole file under an honest pair of the
benchmark's 20 independent solutions (0.68), found by trying the grader from outside:

- an expression statement that only reads, or calls only functions that compute a value from what they are given
  (`len(x)`, `id(x)`, `np.asarray(x)`, `x.copy()`: 0.56 against its source). Kept, it counted as a read of `x`,
  and as a change to it (a call may change what it is given), so the temporary `x` was no longer inlined;
- `while False:` (0.55), which runs only its `else:`, as `if False:` does;
- arithmetic that gives back its operand: `x = x * 1`, `x + 0`, `1 * x`, `x ** 1` (0.51).

A statement that only prints or logs (`print(...)`, `logger.debug(...)`) changes nothing either.

The lists are explicit and small: a call of anything else may change what it is given (`S.sort()`,
`np.add(S, 1, out=S)`), so it is kept.
"""
from __future__ import annotations

import ast

from autograder.similarity.imports import dotted

RUNS_CODE = (ast.Call, ast.Yield, ast.YieldFrom, ast.Await, ast.ListComp, ast.SetComp, ast.DictComp,
             ast.GeneratorExp)  # calls, or runs an iterator or a coroutine
# Builtins that return a value computed from their arguments and change none of them.
PURE_BUILTINS = {"len", "id", "type", "isinstance", "repr", "str", "int", "float", "bool", "tuple", "list", "abs",
                 "hash", "callable"}
# NumPy's and PyTorch's functions that only convert or describe an array.
PURE_FUNCTIONS = {"numpy.asarray", "numpy.array", "numpy.asanyarray", "numpy.ascontiguousarray", "numpy.shape",
                  "numpy.ndim", "numpy.size", "numpy.copy", "torch.as_tensor", "torch.tensor", "torch.is_tensor",
                  "torch.numel", "torch.clone"}
# An array's methods that, called with no argument, only copy or describe it.
PURE_METHODS = {"copy", "clone", "detach", "contiguous", "tolist", "numel", "dim", "size", "nelement", "item"}
LOG_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}  # a logger's


def changes_nothing(value: ast.expr, imports: dict[str, str]) -> bool:
    """Whether an expression statement computes nothing the function returns: it only reads (`(a, b)`, `x.shape`,
    `a[0]`, `a + b`) or calls only the functions above, with no comprehension, yield or await. Kept, such a
    statement, or a `del` of names (statements.py's `only_names`), would count as a read of each name (so a
    temporary it names is no longer inlined) and add tokens. Read before rewriting: a call may become an operator
    (`np.add(a, b)`)."""
    return all(not isinstance(node, RUNS_CODE) or (isinstance(node, ast.Call) and _pure_call(node, imports))
               for node in ast.walk(value))


def only_output(value: ast.expr, imports: dict[str, str]) -> bool:
    """Whether a statement's expression only prints or logs: `print(...)`, `logging.info(...)`, `log.debug(...)`."""
    if not isinstance(value, ast.Call):
        return False
    name = dotted(value.func, imports) or (value.func.id if isinstance(value.func, ast.Name) else "")
    if name in ("print", "pprint.pprint") or name.startswith("logging."):
        return True
    function = value.func
    return isinstance(function, ast.Attribute) and function.attr in LOG_METHODS and isinstance(
        function.value, ast.Name) and "log" in function.value.id.lower()  # logger.debug, log.info, LOG.warning


def _pure_call(node: ast.Call, imports: dict[str, str]) -> bool:
    """Whether `node` calls one of the functions above (its arguments are checked as nodes of their own)."""
    function = node.func
    if isinstance(function, ast.Name) and function.id not in imports:
        return function.id in PURE_BUILTINS
    if dotted(function, imports) in PURE_FUNCTIONS:
        return True
    return isinstance(function, ast.Attribute) and function.attr in PURE_METHODS and not node.args \
        and not node.keywords and dotted(function, imports) is None


def false_loop(node: ast.While) -> list[ast.stmt] | None:
    """What a `while` whose test is a false constant (`while False:`, `while 0:`) runs: its `else:` block; None
    for any other loop."""
    if isinstance(node.test, ast.Constant) and not node.test.value:
        return node.orelse
    return None


def identity_operand(node: ast.BinOp) -> ast.expr | None:
    """The operand `node` gives back unchanged (`x * 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0`, `x / 1`, `x ** 1`),
    else None."""
    left, right = _number(node.left), _number(node.right)
    if right == 1 and isinstance(node.op, ast.Mult | ast.Div | ast.Pow) or right == 0 and isinstance(
            node.op, ast.Add | ast.Sub):
        return node.left
    if left == 1 and isinstance(node.op, ast.Mult) or left == 0 and isinstance(node.op, ast.Add):
        return node.right
    return None


def _number(node: ast.expr) -> int | float | None:
    """An int or float literal's value (not a bool's: `x * True` is no spelling anyone uses), else None."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None
