"""A call of NumPy or PyTorch written one way, whichever of its equivalent spellings a student chose.

`np.max(S, axis=-1)` and `S.max(axis=-1)`, `np.matmul(a, b)` and `a @ b`, `np.add(a, b)` and `a + b`,
`np.less(a, b)`, `torch.lt(a, b)`, `a.lt(b)` and `a < b`, `np.logical_not(M)` and `~M`,
`np.asarray(S, float)` and `np.asarray(S, dtype=np.float64)` compute the same: a copier swaps one for the other
to hide a copy, so each gives the same tree here. normalise.py calls `canonical_call` on every call, its
arguments already rewritten.
"""
from __future__ import annotations

import ast

from autograder.similarity.comparisons import positive_where
from autograder.similarity.imports import dotted

MATMUL_FUNCTIONS = {"numpy.matmul", "numpy.dot", "torch.matmul", "torch.mm", "torch.bmm"}
EINSUM_FUNCTIONS = {"numpy.einsum", "torch.einsum"}
# NumPy's and PyTorch's functions for an operator: `np.add(a, b)` is `a + b`, `np.less(a, b)` is `a < b`.
OPERATOR_FUNCTIONS = {"numpy.add": ast.Add, "numpy.subtract": ast.Sub, "numpy.multiply": ast.Mult,
                      "numpy.divide": ast.Div, "numpy.true_divide": ast.Div, "torch.add": ast.Add,
                      "torch.sub": ast.Sub, "torch.mul": ast.Mult, "torch.div": ast.Div,
                      "numpy.less": ast.Lt, "numpy.less_equal": ast.LtE, "numpy.greater": ast.Gt,
                      "numpy.greater_equal": ast.GtE, "numpy.equal": ast.Eq, "numpy.not_equal": ast.NotEq,
                      "torch.lt": ast.Lt, "torch.le": ast.LtE, "torch.gt": ast.Gt, "torch.ge": ast.GtE,
                      "torch.eq": ast.Eq, "torch.ne": ast.NotEq}
# A tensor's comparison methods: `a.lt(b)` is `a < b`. (`torch.equal`, one bool for two tensors, is not one.)
COMPARISON_METHODS = {"lt": ast.Lt, "le": ast.LtE, "gt": ast.Gt, "ge": ast.GtE, "eq": ast.Eq, "ne": ast.NotEq}
NOT_FUNCTIONS = {"numpy.logical_not", "torch.logical_not"}  # `np.logical_not(M)` is `~M`, as is `M.logical_not()`
# Modules whose functions are also methods of their arrays (`np.max(S, axis=-1)` is `S.max(axis=-1)`), and those
# functions. Not every one: PyTorch's normalising exponential written alike as function and method made the
# benchmark's copied PyTorch function what many honest students write (README, Code similarity: 0.68 to 0.56).
METHOD_MODULES = {"numpy", "torch", "torch.nn.functional"}
METHOD_FUNCTIONS = {"max", "min", "sum", "mean", "any", "all", "prod", "argmax", "argmin", "std", "var", "cumsum",
                    "swapaxes", "transpose", "reshape", "squeeze", "clip", "round", "exp", "log", "tanh", "logsumexp",
                    "masked_fill"}

# Reductions whose axis PyTorch calls `dim` (and `keepdims` `keepdim`): `S.sum(dim=-1)` is `S.sum(axis=-1)`.
AXIS_METHODS = {"max", "min", "sum", "mean", "any", "all", "prod", "argmax", "argmin", "std", "var", "cumsum",
                "logsumexp"}
ARRAY_FUNCTIONS = {"numpy.asarray", "numpy.array", "torch.as_tensor", "torch.tensor"}  # (data, dtype)
# Spellings of float64 as a dtype (`dtype=float`, `.astype(np.double)`), written one way.
FLOAT64_NAMES = {"float", "numpy.float64", "numpy.double", "numpy.float_", "torch.float64", "torch.double"}


def canonical_call(node: ast.Call, imports: dict[str, str]) -> ast.expr:
    """`node` (its arguments already rewritten) in its one spelling: the same call, or an operator."""
    name = dotted(node.func, imports)
    if name in ARRAY_FUNCTIONS and len(node.args) == 2:  # np.asarray(S, float): dtype=float
        node.keywords.append(ast.keyword("dtype", node.args.pop()))
    node = positive_where(node, imports)
    module, _, function = (name or "").rpartition(".")
    if module in METHOD_MODULES and function in METHOD_FUNCTIONS and node.args:
        method = ast.Attribute(node.args[0], function, ast.Load())
        node, name = ast.copy_location(ast.Call(method, node.args[1:], node.keywords), node), None
    if name is None and isinstance(node.func, ast.Attribute) and node.func.attr in AXIS_METHODS:
        _axis_as_keyword(node)
    node.keywords.sort(key=lambda k: k.arg or "")
    for keyword in node.keywords:
        if keyword.arg == "dtype":
            keyword.value = dtype(keyword.value, imports)
    if _swaps_last_axes(node, name):
        return ast.copy_location(ast.Attribute(node.args[0] if name else node.func.value, "T", ast.Load()), node)
    if isinstance(node.func, ast.Attribute) and node.func.attr == "astype" and len(node.args) == 1:
        node.args[0] = dtype(node.args[0], imports)
    if name in MATMUL_FUNCTIONS and len(node.args) == 2 and not node.keywords:
        return ast.copy_location(ast.BinOp(node.args[0], ast.MatMult(), node.args[1]), node)
    if name in OPERATOR_FUNCTIONS and len(node.args) == 2 and not node.keywords:  # not with out= or where=
        return _operator(node.args[0], OPERATOR_FUNCTIONS[name](), node.args[1], node)
    if name is None and isinstance(node.func, ast.Attribute) and not node.keywords:
        if node.func.attr in COMPARISON_METHODS and len(node.args) == 1:
            return _operator(node.func.value, COMPARISON_METHODS[node.func.attr](), node.args[0], node)
        if node.func.attr == "logical_not" and not node.args:
            return ast.copy_location(ast.UnaryOp(ast.Invert(), node.func.value), node)
    if name in NOT_FUNCTIONS and len(node.args) == 1 and not node.keywords:
        return ast.copy_location(ast.UnaryOp(ast.Invert(), node.args[0]), node)
    if isinstance(node.func, ast.Attribute) and node.func.attr == "dot" and name is None and len(node.args) == 1:
        return ast.copy_location(ast.BinOp(node.func.value, ast.MatMult(), node.args[0]), node)
    if name in EINSUM_FUNCTIONS and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        node.args[0].value = Subscripts(_canonical_subscripts(node.args[0].value))
    if isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1 \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        text = node.args[0].value.strip().lower()
        if text in ("inf", "+inf", "infinity"):
            return ast.copy_location(ast.Name("INF", ast.Load()), node)
        if text in ("-inf", "-infinity"):
            return ast.copy_location(ast.UnaryOp(ast.USub(), ast.Name("INF", ast.Load())), node)
    return node


def _operator(left: ast.expr, op: ast.operator | ast.cmpop, right: ast.expr, call: ast.Call) -> ast.expr:
    """`left op right` written as its operator: `a + b` for `np.add(a, b)`, `a < b` for `np.less(a, b)`."""
    if isinstance(op, ast.cmpop):
        return ast.copy_location(ast.Compare(left, [op], [right]), call)
    return ast.copy_location(ast.BinOp(left, op, right), call)


def _axis_as_keyword(node: ast.Call) -> None:
    """A reduction's axis keywords by NumPy's names, `S.sum(dim=-1, keepdim=True)` as `S.sum(axis=-1,
    keepdims=True)`. A positional axis (`S.sum(-1)`) is left as it is: written as a keyword, it made honest pairs
    of the benchmark more alike (0.39 to 0.41) and found no copy more."""
    for keyword in node.keywords:
        if keyword.arg == "dim":
            keyword.arg = "axis"
        elif keyword.arg == "keepdim":
            keyword.arg = "keepdims"


def dtype(node: ast.expr, imports: dict[str, str]) -> ast.expr:
    """A dtype as written: float64 by any of its spellings as one name."""
    name = node.id if isinstance(node, ast.Name) and node.id not in imports else dotted(node, imports)
    if name in FLOAT64_NAMES or (isinstance(node, ast.Constant) and node.value in ("float64", "float", "double")):
        return ast.copy_location(ast.Name("FLOAT64", ast.Load()), node)
    return node


def _swaps_last_axes(node: ast.Call, name: str | None) -> bool:
    """Whether a call transposes as students write it: `x.transpose()`, or the last two axes swapped by
    `x.swapaxes(-1, -2)`, `x.transpose(-2, -1)` (PyTorch's) or `np.moveaxis(x, -1, -2)`: each is written `x.T`."""
    if node.keywords:
        return False
    if name in ("numpy.moveaxis", "torch.movedim"):
        axes = node.args[1:]
    elif isinstance(node.func, ast.Attribute) and node.func.attr in ("transpose", "swapaxes") and name is None:
        axes = node.args
        if not axes and node.func.attr == "transpose":
            return True
    else:
        return False
    last = [-arg.operand.value for arg in axes if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub)
            and isinstance(arg.operand, ast.Constant) and isinstance(arg.operand.value, int)]
    return len(axes) == 2 and sorted(last) == [-2, -1]


class Subscripts(str):
    """An einsum subscript string, kept as a token: it is the computation, not a label."""


def _canonical_subscripts(text: str) -> str:
    """Index letters renamed in order of first use ("bqd,bkd->bqk" and "ijk,ilk->ijl" both "abc,adc->abd")."""
    letters: dict[str, str] = {}
    out = []
    for char in text.replace(" ", ""):
        if char.isalpha():
            char = letters.setdefault(char, chr(ord("a") + len(letters)) if len(letters) < 26 else "z")
        out.append(char)
    return "".join(out)
