"""What a hand-in's top-level names stand for: its functions, its classes' methods, its constants.

Students define the contract's functions in more ways than `def name(...)`
at the top of the file, and a copier may choose any of them to hide a copy:
under other names given the stub's at the end (`score = _score`, or all at
once, `(score, norm) = (_score, _norm)`), as methods of a class
(`score = Attn.score`), as a lambda (`score = lambda Q, K: ...`), or inside
`try:` or `if` blocks (`try: import torch; def score_torch(...)`). Each
is read here as the plain function it is.
"""
from __future__ import annotations

import ast
from collections import Counter, deque
from collections.abc import Iterator

MAX_HELPERS = 200  # helpers followed from one function: far more than any hand-written answer has


def top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, those of its top-level `if` and `try` blocks in their place (not an `if __name__
    == "__main__":` block's, which importing the file does not run).

    A name a branch binds that an earlier branch of the same `if` or `try` bound too is left to the earlier one
    (`try: def f` before `except ImportError: f = None`): the branch the file was written to run.
    """
    out = []
    for node in body:
        if isinstance(node, ast.If) and not _is_main_guard(node.test):
            branches, after = [node.body, node.orelse], []
        elif isinstance(node, ast.Try | ast.TryStar):
            branches, after = [[*node.body, *node.orelse], *(h.body for h in node.handlers)], node.finalbody
        else:
            out.append(node)
            continue
        earlier: set[str] = set()
        for branch in branches:
            kept = [statement for statement in top_level(branch) if not bound_names(statement) & earlier]
            earlier |= {name for statement in branch for name in bound_names(statement)}
            out.extend(kept)
        out.extend(top_level(after))
    return out


def _is_main_guard(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and any(isinstance(n, ast.Name) and n.id == "__name__"
                                                 for n in [test.left, *test.comparators])


def bound_names(statement: ast.stmt) -> set[str]:
    """The names a top-level statement binds: a def's or class's, an import's, an assignment's targets."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    targets = {ast.Assign: lambda s: s.targets, ast.AnnAssign: lambda s: [s.target],
               ast.AugAssign: lambda s: [s.target]}.get(type(statement), lambda s: [])(statement)
    return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def module_constants(tree: ast.Module) -> dict[str, ast.Constant]:
    """Names bound once in the whole file, at module level, to a constant (`VERBOSE = False`, `DK = 64`) -> it."""
    nodes = list(ast.walk(tree))
    bound = Counter(node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
    bound.update(name for node in nodes if isinstance(node, ast.Global | ast.Nonlocal) for name in node.names)
    return {name: value for node in tree.body for name, value in bindings(node) if isinstance(value, ast.Constant)
            and bound[name] == 1}


def bindings(node: ast.AST) -> list[tuple[str, ast.expr]]:
    """(name, value) of each plain name a statement binds: `a = b = v` and `a: T = v` alike (an annotation
    changes nothing the code does), and `(a, b) = (v, w)` as `a = v` and `b = w`; none for other statements."""
    if isinstance(node, ast.Assign):
        return [pair for target in node.targets for pair in _paired(target, node.value)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [(node.target.id, node.value)]
    return []


def _paired(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    """The names of `target` with the parts of `value` they are bound to, where each name's part is written out."""
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, ast.Tuple | ast.List) and isinstance(value, ast.Tuple | ast.List) \
            and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in value.elts):
        for name, part in zip(target.elts, value.elts, strict=True):
            yield from _paired(name, part)


def as_function(name: str, expression: ast.Lambda, statement: ast.stmt) -> ast.FunctionDef:
    """`name = lambda args: expr` as the `def name(args): return expr` it is."""
    returned = ast.copy_location(ast.Return(expression.body), expression.body)
    function = ast.FunctionDef(name=name, args=expression.args, body=[returned], decorator_list=[], returns=None,
                               type_params=[])
    return ast.copy_location(function, statement)


class Constants(ast.NodeTransformer):
    """A module constant read in a function written as its value, where the function has no name of its own so
    called: `if VERBOSE:` behind `VERBOSE = False` is then `if False:`, dead code the normalisation drops."""

    def __init__(self, constants: dict[str, ast.Constant]):
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
            return ast.copy_location(ast.Constant(self.constants[node.id].value), node)
        return node


class Module:
    """A module's top-level functions and classes: the code that a name, or a method's name, stands for.

    defined: each top-level name bound to code -> the function that runs. A name bound to a method (`f =
    obj.f`, `Cls.f`, `Cls().f`) or defined by a def that only returns a method's call is that method; one
    bound to another function (`f = _f`) is that function. In each method, `self.g`, `cls.g` and `Cls.g`
    naming a method of its class are rewritten `g` (in place), and everywhere a call of `_f` is rewritten
    `f`, so that the code reads as the same code written at module level under the stub's names.
    """

    def __init__(self, tree: ast.Module):
        self.methods: dict[str, dict[str, ast.AST]] = {}  # class -> its methods (its module-level bases' first)
        self.scopes: dict[ast.AST, dict[str, ast.AST]] = {}  # method -> its class's methods
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                inherited = [self.methods.get(base.id, {}) for base in node.bases if isinstance(base, ast.Name)]
                own = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
                methods = {name: m for scope in [*inherited[::-1], own] for name, m in scope.items()}
                self.methods[node.name] = methods
                for method in own.values():
                    _OwnCalls({node.name, *_receiver(method)}, methods).visit(method)
                    self.scopes[method] = methods
        self.instances = {name: value.func.id for node in tree.body for name, value in bindings(node)
                          if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                          and value.func.id in self.methods}
        self.defined: dict[str, ast.AST] = {}
        aliases: dict[str, str] = {}  # `f = _f`: _f -> f
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defined[node.name] = self.method(_delegated_call(node)) or node
            for name, value in bindings(node):
                if isinstance(value, ast.Lambda):
                    self.defined[name] = as_function(name, value, node)
                elif method := self.method(value):
                    self.defined[name] = method
                elif isinstance(value, ast.Name) and value.id in self.defined:
                    self.defined[name] = self.defined[value.id]
                    aliases[value.id] = name
        if aliases:  # a call of _f reads as the call of f it is, as if the functions kept their names
            renamed = _Renamed(aliases)
            for function in {*self.defined.values(), *self.scopes}:
                renamed.visit(function)

    def method(self, expression: ast.AST | None) -> ast.AST | None:
        """The method `expression` names: `obj.f` (obj bound to `Cls(…)` at top level), `Cls.f` or `Cls(…).f`."""
        if not isinstance(expression, ast.Attribute):
            return None
        owner = expression.value.func if isinstance(expression.value, ast.Call) else expression.value
        if not isinstance(owner, ast.Name):
            return None
        return self.methods.get(self.instances.get(owner.id, owner.id), {}).get(expression.attr)

    def helpers(self, function: ast.AST, contract: set[str]) -> list[ast.AST]:
        """The top-level functions and methods not of the contract that `function` calls (for a method, also
        those of its class), directly or through each other, in call order."""
        order, seen, queue = [], {id(function)}, deque([function])
        while queue and len(order) < MAX_HELPERS:
            part = queue.popleft()
            scope = self.scopes.get(part, {})  # a method's class; looked up first, then the module's names
            for node in ast.walk(part):
                if isinstance(node, ast.Name):
                    name, helper = node.id, scope.get(node.id, self.defined.get(node.id))
                elif isinstance(node, ast.Attribute):
                    name, helper = node.attr, self.method(node)
                else:
                    continue
                if helper is not None and name not in contract and id(helper) not in seen:
                    seen.add(id(helper))
                    order.append(helper)
                    queue.append(helper)
        return order[:MAX_HELPERS]


def _delegated_call(function: ast.AST) -> ast.AST | None:
    """What `function` calls, when all it does (its docstring aside) is return that call's result."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Return) and isinstance(body[0].value, ast.Call):
        return body[0].value.func
    return None


def _receiver(method: ast.AST) -> list[str]:
    """The name a method is given its instance or class by (`self`, `cls`): none for a static method."""
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list)
    first = [*method.args.posonlyargs, *method.args.args][:1]
    return [] if static else [a.arg for a in first]


class _Renamed(ast.NodeTransformer):
    """Each name read that is a key of `names` (a function's name) written as its value (the alias it is given)."""

    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node


class _OwnCalls(ast.NodeTransformer):
    """`self.g`, `cls.g` or `Cls.g` in a method, `g` a method of its class, written `g`."""

    def __init__(self, receivers: set[str], methods: dict[str, ast.AST]):
        self.receivers, self.methods = receivers, methods

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id in self.receivers and node.attr in self.methods:
            return ast.copy_location(ast.Name(node.attr, node.ctx), node)
        return node

