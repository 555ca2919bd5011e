"""Where a hand-in binds a function of the stub in a way the reading does not follow, for the notes.

The reading (similarity.toplevel) follows the ways students write a
function; a file may bind a name in others too (`score = make_score()`, a
`while` loop, a decorator of its own that returns another function, a
module `__getattr__`). Such a line is named, to be compared by hand: never
"defines none of them", and never silent where the file also defines the
name in a way that is read (decoys at the top, the copy bound later).
"""
from __future__ import annotations

import ast
from collections.abc import Callable

from autograder.similarity.toplevel import Reading, bindings, bound_names


def sites(tree: ast.Module, names: set[str]) -> tuple[list[tuple[str, int]], int | None]:
    """(name, line) of each binding of `names` at module level (a function's `global` names too, and a def's
    decorator of the file's own, which may replace it), and the first line that may bind any name (`globals()[k]
    = v`, a module `__getattr__`), or None."""
    own = {name for node in tree.body for name in bound_names(node)}
    found, anything = [], []
    for node in _module_level(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in names:
            found.append((node.id, node.lineno))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.extend((name, line) for name, line in _inside(node, names, own))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.extend(((a.asname or a.name).split(".")[0], node.lineno) for a in node.names
                         if (a.asname or a.name).split(".")[0] in names)
        elif isinstance(node, ast.Expr):
            found.extend((name, node.lineno) for name, _ in bindings(node) if name in names)
        if _writes_globals(node) or getattr(node, "name", None) == "__getattr__":
            anything.append(node.lineno)
    return found, min(anything, default=None)


def _inside(definition: ast.AST, names: set[str], own: set[str]) -> list[tuple[str, int]]:
    """A top-level def's or class's own binding, its decorators of the file's own, and a def's `global` names."""
    found = [(definition.name, definition.lineno)] if definition.name in names else []
    decorators = [d.func if isinstance(d, ast.Call) else d for d in definition.decorator_list]
    found += [(definition.name, d.lineno) for d in decorators if definition.name in names
              and isinstance(d, ast.Name) and d.id in own]
    declared = {n for part in ast.walk(definition) if isinstance(part, ast.Global) for n in part.names} & names
    found += [(part.id, part.lineno) for part in ast.walk(definition) if isinstance(part, ast.Name)
              and part.id in declared and not isinstance(part.ctx, ast.Load)]
    return found


def unread_notes(tree: ast.Module, read: list[ast.stmt], reading: Reading, found: list[str],
                 place: Callable[[int], str]) -> list[str]:
    """Notes on the contract functions `found`: another branch's version not compared, and a binding of the
    name elsewhere that the reading does not follow (the function compared may not be the one that runs)."""
    notes = [f"defines {name} in two branches (lines {', '.join(place(n) for n in sorted({kept.lineno, other.lineno}))}"
             f"): the one compared is line {place(kept.lineno)}'s, {why}" for name, kept, other, why in sorted(
                 reading.alternatives, key=lambda a: a[1].lineno) if name in found]
    if notes:
        notes[-1] += f"; compare the other{' of each' * (len(notes) > 1)} by hand"
    followed = {(name, line) for s in read for name in bound_names(s) | {n for n, _ in bindings(s)}
                for line in ([s.lineno] if hasattr(s, "name") else range(s.lineno, (s.end_lineno or s.lineno) + 1))}
    skipped = [(s.lineno, s.end_lineno or s.lineno) for s in reading.skipped]
    where, _ = sites(tree, set(found))
    again = {}
    for name, line in sorted(where, key=lambda site: site[1]):
        if (name, line) not in followed and not any(a <= line <= b for a, b in skipped):
            again.setdefault(name, line)
    if again:
        last = {name: max((line for n, line in followed if n == name), default=0) for name in again}
        bound = ", ".join(f"{name} at line {place(last[name])} and binds it again at line {place(line)}"
                          for name, line in again.items())
        notes.append(f"defines {bound}, in a way this command does not read; compare "
                     f"{'it' if len(again) == 1 else 'those'} by hand")
    return notes


def missing_notes(tree: ast.Module, missing: list[str], everything: bool) -> list[str]:
    """What to tell of the contract functions not found: those the file binds somewhere, in a way this reading
    does not follow (`score = make_score()`), are not said to be absent, and are left to be compared by hand."""
    where = {}
    found, anything = sites(tree, set(missing))
    for name, line in found:
        where.setdefault(name, line)
    if anything:  # `for name, f in ...: globals()[name] = f` may bind any of them: said with its line
        where = {name: where.get(name, anything) for name in missing}
    unread = ", ".join(f"{name} (line {where[name]})" for name in missing if name in where)
    absent = [name for name in missing if name not in where]
    if everything and not where:
        return ["not compared: none of the assignment's functions is defined"]
    notes = []
    if absent:
        notes.append(f"defines no {', '.join(absent)}")
    if where:
        notes.append(f"{'not compared: ' * everything}could not find {unread} in a form this command reads (a def, "
                     "a lambda, or a name given a function or a class's method); compare "
                     f"{'the file' if everything else 'those'} by hand")
    return notes


def _writes_globals(node: ast.AST) -> bool:
    """Whether `node` binds module names by a key computed as it runs: `globals()[k] = v`, `globals().update(...)`."""
    def is_globals(part):
        return isinstance(part, ast.Call) and isinstance(part.func, ast.Name) and part.func.id in ("globals", "vars")
    return (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and is_globals(node.value)) or (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_globals(node.func.value)
        and node.func.attr in ("update", "setdefault", "__setitem__"))


def _module_level(tree: ast.Module):
    """Every node of `tree` outside the bodies of its functions and classes (a local `context = A @ V` binds no
    module name); a top-level def or class itself is given, its body not."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(node))
