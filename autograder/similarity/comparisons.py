"""A comparison, its negation and what it chooses between, written one way whichever way a student wrote them.

A copier rewrites `a if s is None else b` as `b if s is not None else a`, `a != b` as `not (a == b)`, and
`np.where(M, a, b)` as `np.where(~M, b, a)`: each computes the same, so each gives the same tree here. A whole-file
copy with these and comparisons written as functions (calls.py) had scored 0.58 against its source, under two
honest pairs, found by trying the grader from outside.

Only exact negations are taken: `not (a == b)` is `a != b` and `not a is None` is `a is not None`, but
`not (a < b)` is not `a >= b` when either is NaN, so an ordering comparison keeps its negation as written.
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from autograder.similarity.imports import dotted

# Each comparison operator as it reads with its operands swapped (`a > b` is `b < a`); `in`, `not in` have none.
MIRRORED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq,
            ast.Is: ast.Is, ast.IsNot: ast.IsNot}
# Each operator whose negation is exactly its opposite, whatever the operands (NaN too), and that opposite.
OPPOSITE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn,
            ast.NotIn: ast.In}
# The negative of each pair above: a test written with it is written with its opposite, the branches swapped.
NEGATIVE = (ast.NotEq, ast.IsNot, ast.NotIn)
# Elementwise, `~(a == b)` is `a != b` (NaN too); `~` of `is` or `in`, a Python bool, is an int, so not taken.
ELEMENTWISE_OPPOSITE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
WHERE_FUNCTIONS = {"numpy.where", "torch.where"}  # (condition, if true, if false)


def ordered_comparison(node: ast.Compare, before: Callable[[list[ast.expr], list[ast.expr]], bool]) -> ast.Compare:
    """A comparison read the way that has fewer `>` and `>=` (`a > b` as `b < a`, `c > b > a` as `a < b < c`),
    and where that leaves a choice (`==`, `!=`, `is`, `is not`), its operands in the fixed order `before` tells
    (`0 == x` as `x == 0`). A chain is only read backwards whole (`c > b == a` as `a == b < c`), never with one
    link swapped alone; one with `in` or `not in` is kept as written."""
    if not all(type(op) in MIRRORED for op in node.ops):
        return node
    operands = [node.left, *node.comparators]
    greater = sum(isinstance(op, ast.Gt | ast.GtE) for op in node.ops)
    lesser = sum(isinstance(op, ast.Lt | ast.LtE) for op in node.ops)
    if lesser > greater or (lesser == greater and not before(operands[::-1], operands)):
        return node
    ops = [MIRRORED[type(op)]() for op in reversed(node.ops)]
    return ast.copy_location(ast.Compare(operands[-1], ops, operands[-2::-1]), node)


def negated(test: ast.expr) -> ast.expr:
    """`test`, read as a condition, negated as its writer would: `x is not None` as `x is None`, `a != b` as
    `a == b`, `not c` as `c`, else `not test`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand
    return _opposite(test, OPPOSITE) or ast.copy_location(ast.UnaryOp(ast.Not(), test), test)


def without_negation(node: ast.UnaryOp) -> ast.expr:
    """`not (a == b)` and `~(a == b)` as `a != b`, `not a is None` as `a is not None`; `node` itself where the
    negation is not exact (`not (a < b)`, with NaN) or negates no single comparison."""
    if isinstance(node.op, ast.Not):
        return _opposite(node.operand, OPPOSITE) or node
    if isinstance(node.op, ast.Invert):
        return _opposite(node.operand, ELEMENTWISE_OPPOSITE) or node
    return node


def positive_choice(node: ast.IfExp) -> ast.IfExp:
    """`b if x is not None else a` as `a if x is None else b`, as for `!=`, `not in` and `not c`: a choice whose
    test is a negation, with the test negated and the branches swapped."""
    test = node.test
    if (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
            isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], NEGATIVE)):
        return ast.copy_location(ast.IfExp(negated(test), node.orelse, node.body), node)
    return node


def positive_where(node: ast.Call, imports: dict[str, str]) -> ast.Call:
    """`np.where(~M, a, b)` as `np.where(M, b, a)`, and `np.where(M != 0, a, b)` as `np.where(M == 0, b, a)`
    (`torch.where` too). Its condition already rewritten: `np.logical_not(M)` reads `~M` (calls.py)."""
    if dotted(node.func, imports) not in WHERE_FUNCTIONS or len(node.args) != 3 or node.keywords:
        return node
    condition, chosen, otherwise = node.args
    if isinstance(condition, ast.UnaryOp) and isinstance(condition.op, ast.Invert):
        condition = condition.operand
    elif isinstance(condition, ast.Compare) and len(condition.ops) == 1 and isinstance(condition.ops[0], ast.NotEq):
        condition = _opposite(condition, ELEMENTWISE_OPPOSITE)
    else:
        return node
    node.args = [condition, otherwise, chosen]
    return node


def _opposite(test: ast.expr, opposites: dict[type, type]) -> ast.Compare | None:
    """A comparison of one operator in `opposites` with that operator's opposite, else None."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in opposites:
        return ast.copy_location(ast.Compare(test.left, [opposites[type(test.ops[0])]()], test.comparators), test)
    return None
