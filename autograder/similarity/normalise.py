"""One function as a sequence of tokens that names, comments, formatting and statement order barely change.

The token stream is the function's syntax tree written out in pre-order,
after rewriting the tree so that what a copier changes to hide a copy
matters little:

- local names and literals become placeholders (`N`, `NUM`, `STR`), while
  what a name was imported as stays (`np.exp`, `numpy.exp` and `from numpy
  import exp` all give `numpy.exp`): that is the code's meaning;
- docstrings, bare strings, `pass`, `...`, code after `return`/`raise`, `if False:`
  and `while False:` blocks and assignments to names never read are dropped (dead
  code), and so are statements that only print, log or assert, `del` of names,
  `x = x`, and expression statements that call nothing or only what changes
  nothing (`(a, b)`, `x.shape`, `len(x)`, `x.copy()`: noops.py), with `if`
  blocks left empty without them (what a copier adds to hide a copy);
- equivalent constructs are written one way: `x += y` as `x = x + y`, `x: int = y` as `x = y`, `x * 1` as `x`,
  `np.matmul(a, b)`/`np.dot(a, b)`/`a.dot(b)` as `a @ b`, `a > b` as `b < a`, `0 == x` as `x == 0`, a transpose
  (`np.transpose(x)`, `x.swapaxes(-1, -2)`, `np.moveaxis(x, -1, -2)`, PyTorch's `x.mT`) as `x.T`,
  keyword arguments sorted, operands of `+ * & |` in a fixed order, every
  spelling of infinity as `INF`, `np.newaxis` as `None`, `a, b = x, y` as two
  assignments; a call of NumPy or PyTorch as calls.py writes it; a comparison,
  its negation and a choice (`b if x is not None else a`, `np.where(~M, a, b)`) as comparisons.py writes them;
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

from autograder.similarity.calls import Subscripts, canonical_call
from autograder.similarity.comparisons import negated, ordered_comparison, positive_choice, without_negation
from autograder.similarity.imports import dotted
from autograder.similarity.noops import changes_nothing, false_loop, identity_operand, only_output
from autograder.similarity.statements import (
    MAX_STATEMENTS,
    TERMINAL,
    blocks,
    depends,
    drop_dead_assignments,
    effects,
    inline_temporaries,
    only_names,
    rename_rebindings,
)

COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr)
INFINITY_NAMES = {"numpy.inf", "numpy.Inf", "numpy.infty", "math.inf", "torch.inf"}
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
        unused = changes_nothing(node.value, self.imports)  # before rewriting: a call may become an operator
        self.generic_visit(node)
        if unused or isinstance(node.value, ast.Constant) or only_output(node.value, self.imports):
            return _walrus_assignments(node.value) or None  # docstrings, `...`, `(a, b)`; a debugging print or log
        if isinstance(node.value, ast.NamedExpr):  # `(x := v)` alone is `x = v`
            return _walrus_assignments(node.value)
        return node

    def visit_Assert(self, node):
        """A student's own check, like a debugging print, changes nothing the function returns: dropped, but for
        the assignments it makes (`assert (x := v) is not None`)."""
        self.generic_visit(node)
        return _walrus_assignments(node) or None

    def visit_Pass(self, node):
        return None

    def visit_Delete(self, node):
        """`del x` only unbinds a name (see noops.py): dropped; `del d[k]` changes `d` and is kept."""
        node.targets = [t for t in node.targets if not only_names(t)]
        self.generic_visit(node)
        return node if node.targets else None

    def visit_If(self, node):
        self.generic_visit(node)
        if _only_pass(node.body) and not node.orelse:  # `if DEBUG: print(...)`, its print dropped
            return _walrus_assignments(node.test) or None
        if isinstance(node.test, ast.Constant):
            return [s for s in (node.body if node.test.value else node.orelse) if not _only_pass([s])] or None
        return node

    def visit_While(self, node):
        """`while False:` runs only its `else:` block, as `if False:` does."""
        self.generic_visit(node)
        runs = false_loop(node)
        return node if runs is None else [s for s in runs if not _only_pass([s])] or None

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
        value = identity_operand(value) or value  # `x *= 1`
        return None if _is_name(value, getattr(node.target, "id", None)) else ast.copy_location(
            ast.Assign([node.target], value), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        return ordered_comparison(node, self._before)

    def visit_UnaryOp(self, node):
        """`not (a == b)` and `~(a == b)` as `a != b` (comparisons.py)."""
        self.generic_visit(node)
        return without_negation(node)

    def visit_IfExp(self, node):
        """`b if x is not None else a` as `a if x is None else b` (comparisons.py)."""
        self.generic_visit(node)
        return positive_choice(node)

    def visit_BinOp(self, node):
        """`x * 1`, `x + 0` as `x`; a commutative operator's operands in a fixed order."""
        self.generic_visit(node)
        return identity_operand(node) or self._ordered_operands(node)

    def _ordered_operands(self, node: ast.BinOp) -> ast.BinOp:
        """A commutative operator's operands in a fixed order: `b * a` as `a * b`."""
        if isinstance(node.op, COMMUTATIVE) and self._before([node.right], [node.left]):
            node.left, node.right = node.right, node.left
        return node

    def _before(self, these: list[ast.expr], those: list[ast.expr]) -> bool:
        """Whether operands `these` come before `those` in the fixed order operands are put in."""
        return [_key(n, self.imports) for n in these] < [_key(n, self.imports) for n in those]

    def visit_Assign(self, node):
        """`x = a if c else x` as `if c: x = a` (and `x = x if c else a` as `if not c: x = a`): the same default."""
        self.generic_visit(node)
        value, target = node.value, node.targets[0]
        if len(node.targets) == 1 and _is_name(value, getattr(target, "id", None)):  # `x = x`, as `x = x * 1` reads
            return None
        if split := _split_assignment(node):
            return split
        if len(node.targets) != 1 or not isinstance(target, ast.Name) or not isinstance(value, ast.IfExp):
            return node
        if _is_name(value.orelse, target.id):
            test, new = value.test, value.body
        elif _is_name(value.body, target.id):
            test, new = negated(value.test), value.orelse
        else:
            return node
        return ast.copy_location(ast.If(test, [ast.copy_location(ast.Assign([target], new), node)], []), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        call = canonical_call(node, self.imports)  # an operator, a comparison or `~x` for some
        if isinstance(call, ast.Compare):
            return ordered_comparison(call, self._before)
        if isinstance(call, ast.UnaryOp):
            return without_negation(call)
        return self._ordered_operands(call) if isinstance(call, ast.BinOp) else call

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


def _split_assignment(node: ast.Assign) -> list[ast.Assign] | None:
    """`a, b = x, y` as `a = x` then `b = y`, where no name it binds is read on its right (not a swap)."""
    target, value = node.targets[0], node.value
    if len(node.targets) != 1 or not isinstance(target, ast.Tuple | ast.List) or not isinstance(
            value, ast.Tuple | ast.List) or len(target.elts) != len(value.elts):
        return None
    if not all(isinstance(t, ast.Name) for t in target.elts) or any(isinstance(v, ast.Starred) for v in value.elts):
        return None
    names = {t.id for t in target.elts}
    if len(names) < len(target.elts) or any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)):
        return None
    return [ast.copy_location(ast.Assign([t], v), node) for t, v in zip(target.elts, value.elts, strict=True)]


def _walrus_assignments(node: ast.AST) -> list[ast.Assign]:
    """`x = v` for each `(x := v)` in `node`, in the order they run: what a dropped statement still does."""
    found = []
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.Lambda):  # a lambda's walrus binds in the lambda
            found.extend(_walrus_assignments(child))
    if isinstance(node, ast.NamedExpr):
        target = ast.copy_location(ast.Name(node.target.id, ast.Store()), node.target)
        found.append(ast.copy_location(ast.Assign([target], node.value), node))
    return found


def _only_pass(block: list[ast.stmt]) -> bool:
    return all(isinstance(statement, ast.Pass) for statement in block)


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


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
    if isinstance(value, Subscripts):
        return f"einsum:{value}"
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, str | bytes):
        return "STR"
    if value is Ellipsis:
        return "..."
    return "NUM"
