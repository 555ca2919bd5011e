"""Module-level lambdas read as defs, and calls of a file's small helpers read as the helpers' code inlined.

`score = lambda Q, K, scale=None: ...` at module level is the function
`score` as much as a def is (the last binding wins, as for defs): it is read
as a def with the lambda's parameters and a body of `return <expr>`.

Moving code into a helper, or a helper's code back into its caller, changes
the syntax tree, not what is computed: `left = _project(Q, W_q)` with `def
_project(X, W): return X @ W` is `left = Q @ W_q`. So a call of a helper of
the same file (a top-level def that is not a function of the contract) is
replaced by the helper's code, however many times it is called: its
statements before the caller's statement, its parameters given the
arguments (a plain name or literal written in their place, any other
argument assigned first, a temporary that statements.py then inlines), its
own names made its own, and the call replaced by what it returns. Only
helpers that are small (MAX_STATEMENTS statements, MAX_NODES nodes), return
once and last, and take part in no recursion; only calls with plain
arguments, evaluated once where their statement runs (not in a lambda, a
comprehension or a `while` test); and at most MAX_INLINED calls per
function. A helper with any call left is still compared after its caller,
as before. The code is never run: this only has to give both spellings the
same tokens.
"""
from __future__ import annotations

import ast
import copy
import itertools

from autograder.similarity.statements import EVALUATED_APART, blocks

MAX_STATEMENTS = 12  # of a helper inlined: a small helper, as students write them
MAX_NODES = 400  # of its syntax tree
MAX_INLINED = 64  # calls inlined into one function: bounds a chain or tree of helpers


def lambdas_as_defs(tree: ast.Module) -> None:
    """Each top-level `name = lambda ...: expr` (annotated or not) of `tree` replaced by `def name(...): return
    expr`, in place, at its own line."""
    for index, node in enumerate(tree.body):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(
            node, "target", None) if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Lambda):
            body = [ast.copy_location(ast.Return(node.value.body), node.value.body)]
            function = ast.FunctionDef(name=target.id, args=node.value.args, body=body, decorator_list=[],
                                       returns=None, type_params=[])
            tree.body[index] = ast.copy_location(function, node)


def inlinable(helpers: dict[str, ast.AST]) -> dict[str, ast.FunctionDef]:
    """Of `helpers` (name -> top-level def), those whose calls are inlined: small, returning once and last, and
    calling no helper that leads back to them."""
    shaped = {name: f for name, f in helpers.items() if isinstance(f, ast.FunctionDef) and _shaped(f)}
    calls = {name: {n.func.id for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and n.func.id in helpers} for name, f in shaped.items()}
    return {name: f for name, f in shaped.items() if not _reaches(name, calls)}


def _shaped(function: ast.FunctionDef) -> bool:
    body = _body(function)
    nodes = list(itertools.islice((n for s in body for n in ast.walk(s)), MAX_NODES + 1))
    if not body or len(body) > MAX_STATEMENTS or len(nodes) > MAX_NODES or not isinstance(body[-1], ast.Return):
        return False
    returns = sum(isinstance(n, ast.Return) for n in nodes)
    arguments = function.args
    return returns == 1 and body[-1].value is not None and not (arguments.vararg or arguments.kwarg) and not any(
        isinstance(n, ast.Yield | ast.YieldFrom | ast.Await | ast.Global | ast.Nonlocal | ast.FunctionDef
                   | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda) for n in nodes) and not function.decorator_list


def _body(function: ast.FunctionDef) -> list[ast.stmt]:
    """Its statements, its docstring aside."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def _reaches(start: str, calls: dict[str, set[str]]) -> bool:
    """Whether `start` calls itself through the helpers (a helper that is not inlinable ends the search)."""
    seen, stack = set(), list(calls.get(start, ()))
    while stack:
        name = stack.pop()
        if name == start:
            return True
        if name not in seen:
            seen.add(name)
            stack.extend(calls.get(name, ()))
    return False


def inline_helpers(function: ast.AST, helpers: dict[str, ast.FunctionDef]) -> ast.AST:
    """`function`, copied, with its calls of `helpers` (see `inlinable`) inlined as above; `function` itself if it
    calls none."""
    if not any(_calls(n, helpers) for n in ast.walk(function)):
        return function
    function = copy.deepcopy(function)
    done, changed = 0, True
    while changed and done < MAX_INLINED:  # a helper's own calls are inlined in the next round
        changed = False
        for node, field, block in blocks(function):
            new: list[ast.stmt] = []
            for statement in block:
                replaced: dict[int, ast.expr] = {}
                for call in _calls_once(statement, helpers)[:MAX_INLINED - done]:
                    inlined = _inline(call, helpers[call.func.id], done)
                    if inlined is not None:
                        new += inlined[0]
                        replaced[id(call)] = inlined[1]
                        done += 1
                new.append(_Replaced(replaced).visit(statement) if replaced else statement)
                changed |= bool(replaced)
            setattr(node, field, new)
    return function


def _calls(node: ast.AST, helpers: dict[str, ast.FunctionDef]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers


def _calls_once(statement: ast.stmt, helpers: dict[str, ast.FunctionDef]) -> list[ast.Call]:
    """The calls of `helpers` that `statement` evaluates once each time it runs, whose arguments call none (those
    are inlined first)."""
    if isinstance(statement, ast.While | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return []
    found, stack = [], [child for child in ast.iter_child_nodes(statement) if not isinstance(child, ast.stmt)]
    while stack:
        node = stack.pop()
        if isinstance(node, EVALUATED_APART):
            continue
        if _calls(node, helpers) and not any(_calls(n, helpers) for a in [*node.args, *node.keywords]
                                             for n in ast.walk(a)):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _inline(call: ast.Call, helper: ast.FunctionDef, number: int) -> tuple[list[ast.stmt], ast.expr] | None:
    """(the statements to put before the call's statement, the expression that replaces the call); None (the
    call left alone) where its arguments cannot be matched to the parameters."""
    values = _arguments(call, helper.args)
    if values is None:
        return None
    body = copy.deepcopy(_body(helper))
    stored = {n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    names = {name: f"{name}#in{number}" for name in stored | values.keys()}
    before: list[ast.stmt] = []
    written: dict[str, ast.expr] = {}  # parameter -> the argument written in its place
    for name, value in values.items():
        if isinstance(value, ast.Name | ast.Constant) and name not in stored:
            written[name] = value
        elif isinstance(value, ast.Name):
            names[name] = value.id  # the caller's own name, rebound as an inlined copy would rebind it
        else:
            before.append(ast.copy_location(ast.Assign([ast.Name(names[name], ast.Store())], value), call))
    module = _Substituted(written, names).visit(ast.Module(body=body, type_ignores=[]))
    return before + module.body[:-1], module.body[-1].value


def _arguments(call: ast.Call, arguments: ast.arguments) -> dict[str, ast.expr] | None:
    """Each parameter -> the expression it is given (its default where none is), or None if that is unclear."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    positional = [*arguments.posonlyargs, *arguments.args]
    if len(call.args) > len(positional):
        return None
    values: dict[str, ast.expr] = {a.arg: v for a, v in zip(positional, call.args, strict=False)}
    defaults = dict(zip([a.arg for a in positional][::-1], arguments.defaults[::-1], strict=False))
    defaults.update((a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d)
    for keyword in call.keywords:
        if keyword.arg in values or keyword.arg not in {a.arg for a in [*positional, *arguments.kwonlyargs]}:
            return None
        values[keyword.arg] = keyword.value
    for parameter in [*positional, *arguments.kwonlyargs]:
        if parameter.arg not in values:
            if parameter.arg not in defaults:
                return None
            values[parameter.arg] = copy.deepcopy(defaults[parameter.arg])
    return values


class _Substituted(ast.NodeTransformer):
    """A helper's parameters read written as the plain names or literals they were given (a copy at each read),
    its other names as `names` says."""

    def __init__(self, written: dict[str, ast.expr], names: dict[str, str]):
        self.written, self.names = written, names

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.written:
            return ast.copy_location(copy.deepcopy(self.written[node.id]), node)
        if node.id in self.names:
            node.id = self.names[node.id]
        return node


class _Replaced(ast.NodeTransformer):
    """Each call whose id is a key of `replaced` written as its value."""

    def __init__(self, replaced: dict[int, ast.expr]):
        self.replaced = replaced

    def visit_Call(self, node):
        if id(node) in self.replaced:
            return self.replaced[id(node)]
        return self.generic_visit(node)
