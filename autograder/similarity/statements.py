"""A function's statements: its blocks, what each reads and writes, and its single-use temporaries inlined.

Splitting an expression into temporaries (`kt = np.swapaxes(K, -1, -2)`,
`raw = np.matmul(Q, kt)`, `out = raw * scale`, `return out`) or merging them
(`return (Q @ np.swapaxes(K, -1, -2)) * scale`) changes the syntax tree, not
what is computed. So a temporary is replaced by its expression where it is
read, and its assignment dropped: both spellings give the same tree.

A temporary is a name bound once in the function (parameters, loop
variables, imports, `global` and `nonlocal` count as bindings), by a plain
`name = expr` outside any loop, and read once, by a later statement of the
same block where that statement evaluates it once (not in its nested blocks,
nor in a loop, comprehension or lambda). It is inlined when its assignment
could be moved down to that statement, as the canonical statement order
moves statements: no statement between writes what it reads. Anything else
(a name reassigned or updated with `+=`, bound by a tuple, assigned in a
loop, read twice) is left as it is; so is a temporary read more than
MAX_STATEMENTS statements later, or one that would nest its reader deeper
than MAX_DEPTH levels.

A name a top-level statement assigns again (`Q = np.asarray(Q)`) is first
given a name of its own from there on (`rename_rebindings`), as a copier's
`q = np.asarray(Q)` binds a new one: then both are temporaries alike.

The code is never run, so this only has to give both spellings the same
tokens; it does not claim the two always compute the same (a call in the
expression now runs later, after the statements between).
"""
from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from functools import cached_property

TERMINAL = (ast.Return, ast.Raise, ast.Continue, ast.Break)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
EVALUATED_APART = (ast.stmt, ast.excepthandler, ast.match_case, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                   ast.GeneratorExp)  # a nested block, or code run any number of times
NOT_MOVED = (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)  # an expression that does more than compute
MAX_STATEMENTS = 200  # in a block reordered (its cost is their square), or from a temporary to its read: no answer
#                       has more
MAX_DEPTH = 100  # levels of a statement that temporaries are inlined into: far more than hand-written code has,
#                  and few enough for the rewriting's recursion (a long chain of temporaries would exhaust it)


def blocks(tree: ast.AST) -> list[tuple[ast.AST, str, list[ast.stmt]]]:
    """(node, field, statements) of every block of statements in `tree`, innermost first.

    Only statements hold blocks, so expressions are not walked; innermost first, so that an outer block is
    ordered by keys of inner blocks already in their canonical order.
    """
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.AST):
                if isinstance(block[0], ast.stmt):
                    found.append((node, field, block))
                stack.extend(block)  # statements, except handlers or match cases
    return found[::-1]


def effects(statement: ast.stmt) -> tuple[set[str], set[str], bool]:
    """(names read, names written, is a barrier) of one statement, with everything nested in it."""
    reads, writes = set(), set()
    barrier = False
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            (writes if isinstance(node.ctx, ast.Store | ast.Del) else reads).add(node.id)
        elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            writes.update(n.id for n in ast.walk(node.value) if isinstance(n, ast.Name))
        elif isinstance(node, (*TERMINAL, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal, ast.Try)):
            barrier = True
    if isinstance(statement, ast.Expr):  # a bare call may change what it is given
        writes |= reads
    return reads, writes, barrier


def only_names(target: ast.expr) -> bool:
    """Whether a `del` target unbinds names only (`x`, `(a, b)`), not an item or attribute of a value."""
    return all(isinstance(n, ast.Name | ast.Tuple | ast.List | ast.expr_context) for n in ast.walk(target))


def depends(first, second) -> bool:
    """Whether two statements' `effects` keep them in order."""
    reads_a, writes_a, barrier_a = first
    reads_b, writes_b, barrier_b = second
    return barrier_a or barrier_b or bool(writes_a & (reads_b | writes_b)) or bool(reads_a & writes_b)


def rename_rebindings(function: ast.FunctionDef) -> None:
    """Give each name that a plain top-level `name = expr` binds again (after a parameter or an earlier such
    assignment) a new name from that statement on, in place. Only names whose every binding is of those kinds,
    and that no nested function or lambda reads, are renamed: one bound in a branch, a loop or a comprehension
    may or may not have been rebound by the time it is read, and a closure reads the last binding."""
    arguments = function.args
    bound = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg,
                             arguments.kwarg) if a is not None}
    plain = {id(s.targets[0]) for s in function.body
             if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}
    left_alone = {node.id for node in ast.walk(function)
                  if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in plain}
    left_alone |= {name for node in ast.walk(function) if isinstance(node, (ast.Global, ast.Nonlocal))
                   for name in node.names}
    for nested in ast.walk(function):
        if nested is not function and isinstance(nested, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            left_alone |= {node.id for node in ast.walk(nested) if isinstance(node, ast.Name)}
    current: dict[str, str] = {}  # name -> the name its latest binding got
    versions: Counter = Counter()
    for statement in function.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in current:
                node.id = current[node.id]
        target = statement.targets[0] if isinstance(statement, ast.Assign) else None
        if target is not None and id(target) in plain:
            name = target.id
            if name in bound and name not in left_alone:
                versions[name] += 1
                current[name] = target.id = f"{name}#{versions[name]}"  # no identifier holds a '#'
            bound.add(name)


def inline_temporaries(function: ast.AST) -> bool:
    """Replace each temporary of `function` (see above) by its expression where it is read, in place; True if
    any was."""
    bound, loads = _bindings(function)
    in_loops = _in_loops(function)
    inlined = False
    for node, field, block in blocks(function):
        if id(block[0]) not in in_loops:
            kept = _inlined(block, bound, loads)
            inlined |= len(kept) < len(block)
            setattr(node, field, kept)
    return inlined


@dataclass(eq=False)
class _Statement:
    """What inlining needs to know of one statement of a block (its effects and depth only when asked)."""

    node: ast.stmt
    position: int  # in the block
    reads: list[str]  # the names it reads where it evaluates them once
    inlined: bool = False

    @cached_property
    def effects(self) -> tuple[set[str], set[str], bool]:
        return effects(self.node)

    @cached_property
    def depth(self) -> int:
        """Levels of its syntax tree (at most: each expression inlined into it adds its own)."""
        return _depth(self.node)


def _inlined(block: list[ast.stmt], bound: Counter, loads: Counter) -> list[ast.stmt]:
    """`block` with its temporaries inlined (its statements changed in place)."""
    statements = [_Statement(node, position, []) for position, node in enumerate(block)]
    read_at = {}  # name -> (statement, node, field, index in the field or None): where the statement reads it once
    for statement in statements:
        for holder, field, index, name in _reads_once(statement.node):
            read_at[name] = (statement, holder, field, index)
            statement.reads.append(name)
    for statement in statements[::-1]:  # the last first: a chain of temporaries folds into its last reader
        name = _temporary(statement.node, bound, loads)
        if name not in read_at:  # not a temporary, or read only where it may be evaluated any number of times
            continue
        reader, holder, field, index = read_at[name]
        if not 0 < reader.position - statement.position <= MAX_STATEMENTS or (
                reader.depth + statement.depth > MAX_DEPTH) or any(
                depends(statement.effects, s.effects)
                for s in statements[statement.position + 1:reader.position] if not s.inlined):
            continue
        value = statement.node.value
        if index is None:
            setattr(holder, field, value)
        else:
            getattr(holder, field)[index] = value
        statement.inlined = True
        # What the expression reads, its new statement now reads (only a temporary's entry is ever looked up: an
        # entry of a name read several times may go stale).
        read_at.update({moved: (reader, *read_at[moved][1:]) for moved in statement.reads})
        if isinstance(value, ast.Name):
            read_at[value.id] = (reader, holder, field, index)
        reads, writes, barrier = reader.effects
        gained = statement.effects[0]  # a bare call may change what it is given (see `effects`)
        reader.effects = (reads | gained, writes | gained if isinstance(reader.node, ast.Expr) else writes, barrier)
        reader.depth += statement.depth
    return [s.node for s in statements if not s.inlined]


def _bindings(function: ast.AST) -> tuple[Counter, Counter]:
    """How many times each name is bound in `function` (a `global` or `nonlocal` name counts as bound twice), and
    how many times it is read."""
    bound, loads = Counter(), Counter()
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else bound)[node.id] += 1
        elif isinstance(node, ast.arg):
            bound[node.arg] += 1
        elif isinstance(node, ast.alias):
            bound[(node.asname or node.name).split(".")[0]] += 1
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update({name: 2 for name in node.names})
        elif isinstance(getattr(node, "name", None), str):  # def, class, `except … as`, `case … as`
            bound[node.name] += 1
    return bound, loads


def _in_loops(function: ast.AST) -> set[int]:
    """The ids of the statements in a loop's body, however deeply nested."""
    inside, stack = set(), [(function, False)]
    while stack:
        node, looped = stack.pop()
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                looped_here = looped or (field == "body" and isinstance(node, LOOPS))
                inside.update(id(child) for child in block if looped_here)
                stack.extend((child, looped_here) for child in block)
    return inside


def _temporary(statement: ast.stmt, bound: Counter, loads: Counter) -> str | None:
    """The name `statement` assigns, if it is a temporary's assignment (its one read not yet located)."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return None
    name, own = statement.targets[0].id, 0
    for node in ast.walk(statement.value):
        if isinstance(node, NOT_MOVED):
            return None
        own += isinstance(node, ast.Name) and node.id == name
    return name if bound[name] == 1 and loads[name] - own == 1 else None


def _reads_once(statement: ast.stmt):
    """(node, field, index in the field or None, name) of each name `statement` reads where it evaluates it once
    each time it runs: not in its nested blocks, nor in a loop, comprehension, lambda or definition."""
    if isinstance(statement, ast.While | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return
    stack = [statement]
    while stack:
        node = stack.pop()
        for field, value in ast.iter_fields(node):
            for index, child in enumerate(value) if isinstance(value, list) else [(None, value)]:
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                    yield node, field, index, child.id
                elif isinstance(child, ast.AST) and not isinstance(child, EVALUATED_APART):
                    stack.append(child)


def _depth(node: ast.AST) -> int:
    """Levels of `node`'s syntax tree (without recursion: a tree can be deeper than Python's stack)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def drop_dead_assignments(function: ast.FunctionDef) -> bool:
    """Remove `name = …` statements whose names are never read in `function`; True if any was removed."""
    read = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
    removed = False
    for node, field, block in blocks(function):
        kept = [s for s in block if not _is_dead(s, read)]
        if len(kept) != len(block):
            removed = True
            setattr(node, field, kept or ([ast.Pass()] if field == "body" else []))
    return removed


def _is_dead(statement: ast.stmt, read: set[str]) -> bool:
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        names = [n for t in targets for n in ast.walk(t) if not isinstance(n, ast.expr_context)]
        return all(isinstance(n, ast.Name | ast.Tuple | ast.List) for n in names) and not any(
            isinstance(n, ast.Name) and n.id in read for n in names)
    if isinstance(statement, ast.FunctionDef | ast.ClassDef):
        return statement.name not in read
    return False
