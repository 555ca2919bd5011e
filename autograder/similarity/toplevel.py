"""What a hand-in's top-level names stand for: its functions, its classes' methods, its constants.

Students define the contract's functions in more ways than `def name(...)`
at the top of the file, and a copier may choose any of them to hide a copy:
under other names given the stub's at the end (`score = _score`, or all at
once, `(score, norm) = (_score, _norm)`), as methods of a class
(`score = Attn.score`), as a lambda (`score = lambda Q, K: ...`), through `globals()`, a starred or walrus
assignment or `functools.partial(f)`, or inside `try:` or `if` blocks
(`try: import torch; def score_torch(...)`), perhaps behind decoys (`if
TYPE_CHECKING: def score(*args): ...`), in `with` blocks, through `setattr`
or a function that binds `global` names. Each is read here as the plain
function it is, where the file itself says which (similarity.branches).
"""
from __future__ import annotations

import ast
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from autograder.similarity import branches as runs

MAX_HELPERS = 200  # helpers followed from one function: far more than any hand-written answer has


@dataclass
class Reading:
    """What `top_level` chose, for the notes: versions of a name it did not read, and code that does not run.

    alternatives: (name, the statement read, another branch's statement binding the name, why the one read was
    chosen); skipped: statements of branches that do not run (`if TYPE_CHECKING:`) and alternatives not read.
    """

    alternatives: list[tuple[str, ast.stmt, ast.stmt, str]] = field(default_factory=list)
    skipped: list[ast.stmt] = field(default_factory=list)


def top_level(body: list[ast.stmt], flags: dict[str, ast.Constant] | None = None,
              reading: Reading | None = None) -> list[ast.stmt]:
    """The module's statements, those of its top-level blocks that run when it is imported in their place, and a
    walrus's binding as the assignment it is: `if` and `try` blocks, `with` blocks and loops over one item (each
    runs once), a call of a module function that binds module names (`global score`) as those bindings.

    An `if` whose test is known at run time (`if TYPE_CHECKING:`, `if sys.version_info < (3, 8):`, a module flag
    `DEBUG = False`, `if __name__ == "__main__":`) gives only the branch that runs (see branches.known_test).
    Where branches bind a name alike, the earlier is read (`try: def f` before `except ImportError: f = None`:
    the branch the file was written to run), except that a def with a body of its own is read before a
    placeholder (`...`, `pass`, a lone raise) or an import of that name, and one that is no decoy (see
    branches.decoy_reason) before one that is: a copy put in the `else:` behind decoys, or in the `except
    ImportError:` of a module that does not exist, is the code. `reading` collects what was not read.
    """
    flags = module_constants(ast.Module(body=body, type_ignores=[])) if flags is None else flags
    reading = Reading() if reading is None else reading
    exporters = {n.name: n for n in body if isinstance(n, ast.FunctionDef) and runs.declared_global(n)}
    out = []
    for node in body:
        out.extend(_walrus_assignments(node.test if isinstance(node, ast.If) else node))
        if isinstance(node, ast.If):
            known = runs.known_test(node.test, flags)
            branches, after = [[node.body, node.orelse][known is False]] if known is not None else [
                node.body, node.orelse], []
            if known is not None:
                reading.skipped.extend([node.orelse, node.body][known is False])
        elif isinstance(node, ast.Try | ast.TryStar):
            branches, after = [[*node.body, *node.orelse], *(h.body for h in node.handlers)], node.finalbody
        elif isinstance(node, ast.With) or runs.runs_once(node):  # one branch, run once: read in order
            out.extend(top_level([*node.body, *getattr(node, "orelse", [])], flags, reading))
            continue
        elif runs.called(node) in exporters:  # `_export()`: its `global score; score = _score` bind module names
            function = exporters[runs.called(node)]
            globals_ = runs.declared_global(function)
            out.extend(s for s in top_level(function.body, flags, reading) if bound_names(s)
                       and bound_names(s) <= globals_)
            continue
        else:
            out.append(node)
            continue
        out.extend(_read_of([top_level(branch, flags, reading) for branch in branches], reading))
        out.extend(top_level(after, flags, reading))
    return out


def _read_of(branches: list[list[ast.stmt]], reading: Reading) -> list[ast.stmt]:
    """The statements of alternative branches that are read: for each name, its best binding (`branches.better`), the
    earliest of those; a statement binding no name is kept."""
    chosen: dict[str, ast.stmt] = {}
    for statement in (s for branch in branches for s in branch):
        for name in bound_names(statement):
            if name not in chosen or runs.better(statement, chosen[name]):
                chosen[name] = statement
    read = {id(s) for s in chosen.values()}
    for statement in (s for branch in branches for s in branch):
        if bound_names(statement) and id(statement) not in read:
            reading.skipped.append(statement)
            kept = next(chosen[name] for name in bound_names(statement) if name in chosen)
            if runs.rank(statement) == runs.rank(kept) == 2:
                reading.alternatives.append((getattr(statement, "name", ""), kept, statement,
                                             runs.why(kept, statement)))
    return [s for branch in branches for s in branch if not bound_names(s) or id(s) in read]


def _walrus_assignments(node: ast.AST) -> list[ast.Assign]:
    """`x = value` for each `(x := value)` in a top-level statement's expression or an `if`'s test (`if (score :=
    _score): pass` binds score), not in a def, class or lambda, whose walrus binds no module name."""
    if isinstance(node, ast.stmt) and not isinstance(node, ast.Expr):
        return []
    found, stack = [], [node]
    while stack:
        part = stack.pop()
        if isinstance(part, ast.NamedExpr):
            target = ast.copy_location(ast.Name(part.target.id, ast.Store()), part.target)
            found.append(ast.copy_location(ast.Assign([target], part.value), part))
        elif not isinstance(part, ast.Lambda):
            stack.extend(reversed(list(ast.iter_child_nodes(part))))
    return found


def bound_names(statement: ast.stmt) -> set[str]:
    """The names a top-level statement binds: a def's or class's, an import's, an assignment's targets."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    if isinstance(statement, ast.Expr):  # `globals().update(score=_score)`, `setattr(sys.modules[__name__], ...)`
        return {name for name, _ in bindings(statement)}
    targets = {ast.Assign: lambda s: s.targets, ast.AnnAssign: lambda s: [s.target],
               ast.AugAssign: lambda s: [s.target]}.get(type(statement), lambda s: [])(statement)
    return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def module_constants(tree: ast.Module) -> dict[str, ast.Constant]:
    """Names bound once in the whole file, at module level, to a constant (`VERBOSE = False`, `DK = 64`) -> it,
    and `TYPE_CHECKING` as imported from typing (see branches.typing_flags), where the file binds it nowhere else.
    A name bound again in any other way (an import, `globals()["DEBUG"] = True`, a `global`) is not settled."""
    nodes = list(ast.walk(tree))
    bound = Counter(node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load))
    bound.update(name for node in nodes if isinstance(node, ast.Global | ast.Nonlocal) for name in node.names)
    bound.update((alias.asname or alias.name).split(".")[0] for node in nodes
                 if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names)
    bound.update(name for node in nodes if isinstance(node, ast.Expr | ast.Assign) for name, _ in bindings(node)
                 if not (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) for t in node.targets)))
    constants = {name: value for node in tree.body for name, value in bindings(node)
                 if isinstance(value, ast.Constant) and bound[name] == 1}
    typing = {name: value for name, value in runs.typing_flags(tree).items() if bound[name.split(".")[0]] == 1}
    return {**constants, **typing}


def bindings(node: ast.AST, sequences: dict[str, ast.expr] | None = None) -> list[tuple[str, ast.expr]]:
    """(name, value) of each plain name a statement binds: `a = b = v` and `a: T = v` alike (an annotation
    changes nothing the code does), `(a, b) = (v, w)` as `a = v` and `b = w` (a starred name given the list of
    the rest), `globals()["a"] = v` and `globals().update(a=v)` as `a = v`; none for other statements.

    sequences: names already bound to a written-out list or tuple (`rest = [f, g]`), read as it where unpacked.
    `functools.partial(f)`, binding no argument, is f.
    """
    sequences = sequences or {}
    if isinstance(node, ast.Assign):
        pairs = [pair for target in node.targets for pair in _paired(_global_key(target) or target,
                                                                     sequences.get(_name(node.value), node.value))]
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        pairs = [(node.target.id, node.value)]
    elif isinstance(node, ast.Expr) and _module_setattr(node.value):
        pairs = [(node.value.args[1].value, node.value.args[2])]
    elif isinstance(node, ast.Expr) and _is_globals(getattr(node.value, "func", None), "update"):
        pairs = [(k.arg, k.value) for k in node.value.keywords if k.arg] + [
            (key.value, value) for d in node.value.args if isinstance(d, ast.Dict)
            for key, value in zip(d.keys, d.values, strict=True) if isinstance(key, ast.Constant)
            and isinstance(key.value, str)]
    else:
        pairs = []
    return [(name, _unwrapped(value)) for name, value in pairs]


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _module_setattr(call: ast.expr) -> bool:
    """Whether `call` is `setattr(sys.modules[__name__], "name", value)`, a literal name: `name = value`."""
    if not (isinstance(call, ast.Call) and _name(call.func) == "setattr" and len(call.args) == 3
            and not call.keywords):
        return False
    module, key = call.args[:2]
    return isinstance(module, ast.Subscript) and isinstance(module.value, ast.Attribute) \
        and module.value.attr == "modules" and _name(module.slice) == "__name__" and isinstance(key, ast.Constant) \
        and isinstance(key.value, str) and key.value.isidentifier()


def _is_globals(node: ast.AST | None, attribute: str) -> bool:
    """Whether `node` is `globals().<attribute>`."""
    return isinstance(node, ast.Attribute) and node.attr == attribute and isinstance(node.value, ast.Call) \
        and _name(node.value.func) == "globals"


def _global_key(target: ast.expr) -> ast.Name | None:
    """`globals()["a"]`, a literal key, as the name `a` it binds."""
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Call) and _name(
            target.value.func) == "globals" and isinstance(target.slice, ast.Constant) and isinstance(
            target.slice.value, str) and target.slice.value.isidentifier():
        return ast.copy_location(ast.Name(target.slice.value, ast.Store()), target)
    return None


def _unwrapped(value: ast.expr) -> ast.expr:
    """`functools.partial(f)` (or `partial(f)`), which binds no argument, as the f it calls."""
    if isinstance(value, ast.Call) and (_name(value.func) == "partial" or isinstance(
            value.func, ast.Attribute) and value.func.attr == "partial") and len(value.args) == 1 \
            and not value.keywords and not isinstance(value.args[0], ast.Starred):
        return value.args[0]
    return value


def _paired(target: ast.expr, value: ast.expr) -> Iterator[tuple[str, ast.expr]]:
    """The names of `target` with the parts of `value` they are bound to, where each name's part is written out
    (`*rest` the list of the parts between those before and after it; `[f, *[g, h]]` as `[f, g, h]`)."""
    if isinstance(target, ast.Name):
        yield target.id, value
        return
    if not isinstance(target, ast.Tuple | ast.List) or not isinstance(value, ast.Tuple | ast.List):
        return
    parts = _flat(value.elts)
    stars = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
    if parts is None or len(stars) > 1 or (not stars and len(parts) != len(target.elts)) \
            or len(parts) < len(target.elts) - len(stars):
        return
    star = stars[0] if stars else len(target.elts)
    after = len(target.elts) - star - 1
    for name, part in zip(target.elts[:star], parts, strict=False):
        yield from _paired(name, part)
    if stars:
        rest = ast.copy_location(ast.List(parts[star:len(parts) - after], ast.Load()), value)
        yield from _paired(target.elts[star].value, rest)
        for name, part in zip(target.elts[star + 1:], parts[len(parts) - after:], strict=True):
            yield from _paired(name, part)


def _flat(elements: list[ast.expr]) -> list[ast.expr] | None:
    """A list's or tuple's elements, a starred written-out list's spliced in; None where one is not written out."""
    out = []
    for element in elements:
        if isinstance(element, ast.Starred):
            if not isinstance(element.value, ast.Tuple | ast.List):
                return None
            inner = _flat(element.value.elts)
            if inner is None:
                return None
            out.extend(inner)
        else:
            out.append(element)
    return out


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
        sequences: dict[str, ast.expr] = {}  # `rest = [_f, _g]`, unpacked later: `f, g = rest`
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defined[node.name] = self.method(_delegated_call(node)) or node
            for name, value in bindings(node, sequences):
                if isinstance(value, ast.List | ast.Tuple):
                    sequences[name] = value
                elif isinstance(value, ast.Lambda):
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

