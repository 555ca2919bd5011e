"""One function as a sequence of tokens that names, comments, formatting and statement order barely change.

The token stream is the function's syntax tree written out in pre-order,
after rewriting the tree so that what a copier changes to hide a copy
matters little:

- local names and literals become placeholders (`N`, `NUM`, `STR`), while
  what a name was imported as stays (`np.exp`, `numpy.exp` and `from numpy
  import exp` all give `numpy.exp`): that is the code's meaning;
- docstrings, bare strings, `pass`, code after `return`/`raise`, `if False:`
  branches and assignments to names never read are dropped (dead code);
- equivalent constructs are written one way: `x += y` as `x = x + y`, `x: int = y` as `x = y`,
  `np.matmul(a, b)`/`np.dot(a, b)`/`a.dot(b)` as `a @ b`, `a > b` as `b < a`, a transpose
  (`np.transpose(x)`, `x.swapaxes(-1, -2)`, `np.moveaxis(x, -1, -2)`, PyTorch's `x.mT`) as `x.T`,
  keyword arguments sorted, operands of `+ * & |` in a fixed order, every
  spelling of infinity as `INF`, `np.newaxis` as `None`;
- an einsum's subscripts are kept, their index letters renamed in order of
  first use: unlike other strings, they are what the call computes;
- a name assigned again at the top level (`Q = np.asarray(Q)`) gets a new name
  from there on, as a copier's `q = np.asarray(Q)` does;
- a temporary, a name assigned once and read once (`kt = K.T`, `raw = Q @ kt`,
  `return raw * s`), is replaced by its expression where it is read (`return
  Q @ K.T * s`), so splitting an expression into named steps, or merging
  them, changes nothing (statements.py says which names qualify);
- statements that do not depend on each other are put in a canonical order.

Why by hand: no library normalises Python this way. Pygments (which
copydetect uses) only lexes, so a renamed variable or a moved line changes
its tokens; Python's own `ast` already parses exactly what the grader runs.
Each token keeps the line of the student's source it came from, so the
report can highlight the matching lines of the original code.
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from autograder.similarity.imports import dotted
from autograder.similarity.statements import (
    MAX_STATEMENTS,
    TERMINAL,
    blocks,
    depends,
    drop_dead_assignments,
    effects,
    inline_temporaries,
    rename_rebindings,
)

COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr)
MATMUL_FUNCTIONS = {"numpy.matmul", "numpy.dot", "torch.matmul", "torch.mm", "torch.bmm"}
EINSUM_FUNCTIONS = {"numpy.einsum", "torch.einsum"}
INFINITY_NAMES = {"numpy.inf", "numpy.Inf", "numpy.infty", "math.inf", "torch.inf"}
# Functions of NumPy and PyTorch that are also methods of their arrays: `np.max(S, axis=-1)` is `S.max(axis=-1)`.
METHOD_FUNCTIONS = {"max", "min", "sum", "mean", "any", "all", "prod", "argmax", "argmin", "std", "var", "cumsum",
                    "swapaxes", "transpose", "reshape", "squeeze", "clip", "round"}
# Spellings of float64 as a dtype (`dtype=float`, `.astype(np.double)`), written one way.
FLOAT64_NAMES = {"float", "numpy.float64", "numpy.double", "numpy.float_", "torch.float64", "torch.double"}
CANONICAL_NAMES = {"INF", "FLOAT64"}  # names the rewriting itself puts in, emitted as they are
EXPRESSION_TOKENS = 2_000  # per expression of a statement, after repeats are collapsed: none hand-written is longer
REPEATS_KEPT = 6  # a run of the same few tokens repeated more often than this keeps only this many
LONGEST_REPEAT = 8  # tokens in the longest pattern whose runs are collapsed
KEY_TOKENS = 64


@dataclass(frozen=True)
class Token:
    text: str
    line: int  # 1-based line in the student's code the token came from


def function_tokens(function: ast.FunctionDef, imports: dict[str, str]) -> list[Token]:
    """The normalised tokens of `function`'s body (its signature is the stub's, shared by all).

    Rewrites `function` in place (copying the tree would cost more than parsing it again).
    imports: local name -> dotted name it was imported as ({"np": "numpy", "exp": "numpy.exp"}).
    """
    tree = _Rewrite(imports).visit(function)
    rename_rebindings(tree)
    for _ in range(3):  # removing one dead assignment can make another dead
        if not drop_dead_assignments(tree):
            break
    if inline_temporaries(tree):  # rewritten again, so that an inlined expression's operands are ordered in place
        tree = _Rewrite(imports).visit(tree)
    _canonical_order(tree, imports)
    out: list[Token] = []
    for statement in tree.body:
        _emit(statement, function.lineno, imports, out)
    # Never cut the function as a whole: a long statement put first would hide all that follows it. Each
    # expression is bounded instead (in _emit), and the code's size before parsing bounds the rest.
    return collapse_repeats(out)


def collapse_repeats(tokens: list[Token]) -> list[Token]:
    """`tokens` with every run of a pattern of up to LONGEST_REPEAT tokens repeated more than REPEATS_KEPT
    times cut to REPEATS_KEPT repeats: `[0, 0, ..., 0]` or fifty identical statements say no more than a few."""
    for period in range(1, LONGEST_REPEAT + 1):
        kept: list[Token] = []
        matched = 0  # how many of the last tokens kept equal the token `period` before them
        for token in tokens:
            matched = matched + 1 if len(kept) >= period and kept[-period].text == token.text else 0
            kept.append(token)
            if matched >= period * REPEATS_KEPT:  # the pattern now follows itself REPEATS_KEPT times
                del kept[-period:]
                matched -= period
        tokens = kept
    return tokens


# ---------------------------------------------------------------- rewriting


class _Rewrite(ast.NodeTransformer):
    """Dead code out, equivalent constructs written one way."""

    def __init__(self, imports: dict[str, str]):
        self.imports = imports

    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, _live(block) or ([ast.Pass()] if field == "body" else []))
        return node

    def visit_Expr(self, node):
        self.generic_visit(node)
        return None if isinstance(node.value, ast.Constant) else node  # docstrings, bare strings, `...`

    def visit_Pass(self, node):
        return None

    def visit_If(self, node):
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return (node.body if node.test.value else node.orelse) or None
        return node

    def visit_AnnAssign(self, node):
        """`d_k: int = Q.shape[-1]` as `d_k = Q.shape[-1]`: an annotation computes nothing; one without a value is
        dropped."""
        self.generic_visit(node)
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign([node.target], node.value), node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        target = copy.deepcopy(node.target)
        for part in ast.walk(target):
            if hasattr(part, "ctx"):
                part.ctx = ast.Load()
        value = ast.copy_location(ast.BinOp(target, node.op, node.value), node)
        return ast.copy_location(ast.Assign([node.target], value), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        flipped = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}
        if len(node.ops) == 1 and type(node.ops[0]) in flipped:
            return ast.copy_location(ast.Compare(node.comparators[0], [flipped[type(node.ops[0])]()], [node.left]),
                                     node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, COMMUTATIVE) and _key(node.right, self.imports) < _key(node.left, self.imports):
            node.left, node.right = node.right, node.left
        return node

    def visit_Assign(self, node):
        """`x = a if c else x` as `if c: x = a` (and `x = x if c else a` as `if not c: x = a`): the same default."""
        self.generic_visit(node)
        value, target = node.value, node.targets[0]
        if len(node.targets) != 1 or not isinstance(target, ast.Name) or not isinstance(value, ast.IfExp):
            return node
        if _is_name(value.orelse, target.id):
            test, new = value.test, value.body
        elif _is_name(value.body, target.id):
            test, new = _negated(value.test), value.orelse
        else:
            return node
        return ast.copy_location(ast.If(test, [ast.copy_location(ast.Assign([target], new), node)], []), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        node.keywords.sort(key=lambda k: k.arg or "")
        for keyword in node.keywords:
            if keyword.arg == "dtype":
                keyword.value = self._dtype(keyword.value)
        name = dotted(node.func, self.imports)
        if name and name.split(".")[0] in ("numpy", "torch") and name.count(".") == 1 \
                and name.split(".")[1] in METHOD_FUNCTIONS and node.args:
            method = ast.Attribute(node.args[0], name.split(".")[1], ast.Load())
            node, name = ast.copy_location(ast.Call(method, node.args[1:], node.keywords), node), None
        if _swaps_last_axes(node, name):
            return ast.copy_location(ast.Attribute(node.args[0] if name else node.func.value, "T", ast.Load()), node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "astype" and len(node.args) == 1:
            node.args[0] = self._dtype(node.args[0])
        if name in MATMUL_FUNCTIONS and len(node.args) == 2 and not node.keywords:
            return ast.copy_location(ast.BinOp(node.args[0], ast.MatMult(), node.args[1]), node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "dot" and name is None and len(node.args) == 1:
            return ast.copy_location(ast.BinOp(node.func.value, ast.MatMult(), node.args[0]), node)
        if name in EINSUM_FUNCTIONS and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            node.args[0].value = _Subscripts(_canonical_subscripts(node.args[0].value))
        if isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            text = node.args[0].value.strip().lower()
            if text in ("inf", "+inf", "infinity"):
                return ast.copy_location(ast.Name("INF", ast.Load()), node)
            if text in ("-inf", "-infinity"):
                return ast.copy_location(ast.UnaryOp(ast.USub(), ast.Name("INF", ast.Load())), node)
        return node

    def _dtype(self, node: ast.expr) -> ast.expr:
        """A dtype as written: float64 by any of its spellings as one name."""
        name = node.id if isinstance(node, ast.Name) and node.id not in self.imports else dotted(node, self.imports)
        if name in FLOAT64_NAMES or (isinstance(node, ast.Constant) and node.value in ("float64", "float", "double")):
            return ast.copy_location(ast.Name("FLOAT64", ast.Load()), node)
        return node

    def visit_Name(self, node):
        return self._named_constant(node, self.imports.get(node.id) if isinstance(node.ctx, ast.Load) else None)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        name = dotted(node, self.imports)
        if node.attr in ("mT", "mH", "H") and name is None:  # PyTorch's transposes of the last two axes
            node.attr = "T"
        return self._named_constant(node, name)

    @staticmethod
    def _named_constant(node: ast.expr, name: str | None) -> ast.expr:
        """Infinity and NumPy's newaxis by whatever name they were imported as (`np.inf`, `from numpy import
        inf`), written one way."""
        if name in INFINITY_NAMES:
            return ast.copy_location(ast.Name("INF", ast.Load()), node)
        if name == "numpy.NINF":
            return ast.copy_location(ast.UnaryOp(ast.USub(), ast.Name("INF", ast.Load())), node)
        if name == "numpy.newaxis":  # NumPy's alias of None, which indexing reads alike
            return ast.copy_location(ast.Constant(None), node)
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


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _negated(test: ast.expr) -> ast.expr:
    """`test` negated, as its writer would: `x is not None` as `x is None`, `a != b` as `a == b`, else `not test`."""
    opposite = {ast.IsNot: ast.Is, ast.Is: ast.IsNot, ast.NotEq: ast.Eq, ast.Eq: ast.NotEq}
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in opposite:
        return ast.copy_location(ast.Compare(test.left, [opposite[type(test.ops[0])]()], test.comparators), test)
    return ast.copy_location(ast.UnaryOp(ast.Not(), test), test)


class _Subscripts(str):
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


def _live(block: list[ast.stmt]) -> list[ast.stmt]:
    """`block` without what follows its first return, raise, break or continue."""
    for index, statement in enumerate(block):
        if isinstance(statement, TERMINAL):
            return block[:index + 1]
    return block


def _key(node: ast.AST, imports: dict[str, str]) -> str:
    """A name-blind text for ordering: the first KEY_TOKENS tokens `node` would give (enough to tell most
    apart, and bounded: a key per operand must not make a long chain of sums cost its square)."""
    out: list[Token] = []
    _emit(node, 0, imports, out, KEY_TOKENS)
    return " ".join(t.text for t in out)


# ---------------------------------------------------------------- statement order


def _canonical_order(function: ast.FunctionDef, imports: dict[str, str]) -> None:
    """Reorder every block's independent statements canonically (a topological order, smallest key first)."""
    for node, field, block in blocks(function):
        if 1 < len(block) <= MAX_STATEMENTS:
            setattr(node, field, _ordered(block, imports))


def _ordered(block: list[ast.stmt], imports: dict[str, str]) -> list[ast.stmt]:
    moves = [effects(s) for s in block]
    keys = [_key(s, imports) for s in block]
    before = {j: {i for i in range(j) if depends(moves[i], moves[j])} for j in range(len(block))}
    done: list[int] = []
    while len(done) < len(block):
        ready = [j for j in range(len(block)) if j not in done and before[j] <= set(done)]
        done.append(min(ready, key=lambda j: (keys[j], j)))
    return [block[j] for j in done]


# ---------------------------------------------------------------- tokens


def _emit(node: ast.AST, line: int, imports: dict[str, str], out: list[Token], limit: int | None = None) -> None:
    """Append the pre-order tokens of `node` to `out`, each with its source line, until `out` holds `limit`.

    Each expression of a statement adds at most EXPRESSION_TOKENS tokens, its repeats collapsed first.
    """
    if isinstance(node, ast.expr_context) or (limit is not None and len(out) >= limit):
        return
    line = getattr(node, "lineno", line)
    if isinstance(node, ast.Name):
        out.append(Token(node.id if node.id in CANONICAL_NAMES else imports.get(node.id, "N"), line))
        return
    if isinstance(node, ast.Constant):
        out.append(Token(_constant(node.value), line))
        return
    if isinstance(node, ast.Attribute):
        name = dotted(node, imports)
        if name:
            out.append(Token(name, line))
            return
        _emit(node.value, line, imports, out, limit)
        out.append(Token("." + node.attr, line))
        return
    if isinstance(node, ast.keyword):
        out.append(Token(f"{node.arg}=", line))
        _emit(node.value, line, imports, out, limit)
        return
    if isinstance(node, ast.arg):
        out.append(Token("arg", line))
        return
    out.append(Token(type(node).__name__, line))
    for child in ast.iter_child_nodes(node):
        if isinstance(node, ast.stmt) and not isinstance(child, ast.stmt):
            part: list[Token] = []
            _emit(child, line, imports, part, limit)
            out.extend(collapse_repeats(part)[:EXPRESSION_TOKENS])
            if limit is not None:
                del out[limit:]
        else:
            _emit(child, line, imports, out, limit)


def _constant(value) -> str:
    if isinstance(value, _Subscripts):
        return f"einsum:{value}"
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, str | bytes):
        return "STR"
    if value is Ellipsis:
        return "..."
    return "NUM"
