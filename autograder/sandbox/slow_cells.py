"""Which of a notebook's cells (or a .py's top level) a load that ran past the limit runs only the definitions of.

The load limit counts every cell before the one running, so demo cells that each finish (a toy training run of
3 s after each function) can together outlast it: the load is stopped at whichever cell is running then. Skipping
only that cell, each later load ran the same demos again, was stopped a cell further on, and the functions after
them were never loaded. So each cell that ran for a tenth of the limit or more, the stopped one too, is trimmed
to its definitions for the next load: its imports, defs and classes, what it sets that one of the notebook's
functions reads (a table `LOOKUP = build()` a function uses stays, however slow), and its calls that set a library
up (`torch.set_default_dtype(...)`, `np.seterr(...)`); its demo goes, and the feedback names the cell. Loads
stopped again and again (each at a later demo) trim every cell after the first stopped one so (`trimmed_after`),
before the last resort of loading only the cells before it.

A cell (or a .py's top level) stopped for printing more than the output cap is trimmed the same way, once
(`cell_definitions`, `module_definitions`): a verbose training log goes, the functions defined with it stay.
"""
from __future__ import annotations

import ast
from collections.abc import Iterable

from autograder.code_names import MAX_PARSED, globals_read, kept_lines, set_by

SLOW_SHARE = 0.1  # of the load limit a cell ran for, in a load that was stopped, to be trimmed in the next (1 s of 10)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# A call `library.<...>.<name>(...)` standing alone whose name starts so sets the library up for what follows
# (np.seterr, torch.set_default_dtype, torch.manual_seed, warnings.filterwarnings): the functions run under it.
SETUP_CALLS = ("set", "seed", "manual_seed", "filterwarnings", "simplefilter", "use_deterministic_algorithms")


def slow_demo_cells(starts: list[tuple[int, str, float]], stopped_at: float, sources: list[str],
                    limit: float, graded: Iterable[str] = ()) -> list[tuple[int, str, float, str]]:
    """(index, label, seconds it ran, its definitions' code) of the cells to trim in the next load, the stopped one
    (the last to begin) among them.

    starts: (index, label, time it began) of each cell the stopped load ran, in order; stopped_at: when it was
    stopped (the last cell's end); sources: every cell's code, by index; limit: the load limit in seconds;
    graded: the functions the checks call, whose every binding is kept (`mask = mask_fast`).
    """
    ends = [began for _, _, began in starts[1:]] + [stopped_at]
    slow = [(index, label, end - began) for (index, label, began), end in zip(starts, ends)
            if end - began >= SLOW_SHARE * limit]
    read, modules, setters = (read_by_functions(sources, graded), imported(sources), global_setters(sources)) \
        if slow else (set(), set(), {})
    demos = [(index, label, took, definitions_of(sources[index], read, modules, setters))
             for index, label, took in slow]
    return [demo for demo in demos if demo[3] is not None]


def cell_definitions(sources: list[str], index: int, graded: Iterable[str] = ()) -> str | None:
    """Cell `index`'s code with only its definitions kept (`definitions_of`, with what the notebook's functions read),
    for a load after one that cell printed past the output cap in: a training log goes, the defs above it stay. None
    where that is the whole cell, or where the notebook has no such cell (the index is the worker's word)."""
    if not 0 <= index < len(sources):
        return None
    return definitions_of(sources[index], read_by_functions(sources, graded), imported(sources),
                          global_setters(sources))


def module_definitions(source: str, graded: Iterable[str] = ()) -> str | None:
    """A .py file's code with only its definitions kept (`definitions_of`, with what its functions read and the
    names of the functions graded: its own top level goes whole, so what that reads does not count), for a load
    after one its top-level code ran past the limit; None where that is the whole file, or where it defines no
    function or class (nothing to grade: the file did not load, and its message says why)."""
    tree = _parsed(source)
    if tree is None or not any(isinstance(node, DEFINITIONS) for node in ast.walk(tree)):
        return None
    # Only the file's outermost defs: a nested def's free names are its enclosing function's (`allowed`, a
    # parameter of the function read by a helper inside it), not globals; counted, they kept a demo that set them.
    outer = [node for node in _outermost(tree) if isinstance(node, DEFINITIONS)]
    return definitions_of(source, reached(outer, graded), imported([source]), global_setters([source]))


def reached(definitions: list[ast.AST], graded: Iterable[str]) -> set[str]:
    """The graded functions' names and the globals they read, and those of each function or class of the file they
    read in turn: a demo's own helper (`def summary(): print(np.mean(timings))`) reads `timings`, which the demo's
    loop appends to, and counting it kept the demo, which ran again past the limit. Every definition's reads where
    the graded functions are not known."""
    names = {getattr(node, "name", None): node for node in definitions}
    graded = set(graded)
    if not graded:
        return set().union(*map(globals_read, definitions))
    read, todo = set(graded), list(graded)
    while todo:
        node = names.pop(todo.pop(), None)
        if node is not None:
            new = globals_read(node) - read
            read |= new
            todo += new
    return read


def trimmed_after(first: int, labels: list[str], sources: list[str],
                  graded: Iterable[str] = ()) -> list[tuple[int, str, str]]:
    """(index, label, its definitions' code) of each cell after `first` that does more than define."""
    read, modules, setters = read_by_functions(sources, graded), imported(sources), global_setters(sources)
    demos = [(index, labels[index], definitions_of(sources[index], read, modules, setters))
             for index in range(first + 1, len(sources))]
    return [(index, label, code) for index, label, code in demos if code is not None]


def definitions_of(source: str, read: set[str], modules: set[str] = frozenset(),
                   setters: dict[str, set[str]] | None = None) -> str | None:
    """A slow cell's code with only its definitions kept, in their lines (code_names.kept_lines): its imports, defs
    and classes, each statement that sets or changes a global one of the notebook's functions reads (`read`), each
    call of a function that sets one through `global` (`setters`: function -> the names it declares so), and each
    call that sets up a library imported under one of the names `modules`. None where that is the whole cell
    (nothing to leave out) or the cell cannot be read here."""
    tree = _parsed(source)
    if tree is None:
        return None
    while True:  # what a kept statement reads is kept too (`if HAVE_NUMPY:` around a def, `N` of `T = np.ones(N)`)
        kept = [node for node in tree.body if _defines(node, read, modules, setters or {})]
        # A def no function reads is kept (defining is cheap) but pulls nothing in: a demo helper's `timings`.
        needed = [node for node in kept if not isinstance(node, DEFINITIONS) or node.name in read]
        more = set(read).union(*map(_reads_from_outside, needed))
        if more == read:
            break
        read = more
    if len(kept) == len(tree.body):
        return None
    return kept_lines(source, tree.body, lambda node: any(node is k for k in kept))


def _reads_from_outside(statement: ast.stmt) -> set[str]:
    """The globals a top-level statement needs set before it: a def's or a class's free names (`globals_read`: its
    parameters and locals, a function's `S` or `A`, are its own: counted, they kept a demo loop that sets a global
    `A`, which ran again at each load), the same for a def or lambda inside it, and `_reads` of the rest."""
    if isinstance(statement, DEFINITIONS):
        return globals_read(statement)
    inner = list(_outermost(statement))
    if not inner:
        return _reads(statement)
    inside = {id(name) for node in inner for name in ast.walk(node) if isinstance(name, ast.Name)}
    names = [node for node in ast.walk(statement) if isinstance(node, ast.Name) and id(node) not in inside]
    own = {n.id for n in names if isinstance(n.ctx, ast.Load)} - {n.id for n in names if isinstance(n.ctx, ast.Store)}
    return own.union(*map(globals_read, inner))


def _outermost(node: ast.AST):
    """The defs, classes and lambdas inside `node` that are inside no other one: the nested ones are theirs."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*DEFINITIONS, ast.Lambda)):
            yield child
        else:
            yield from _outermost(child)


def _reads(statement: ast.stmt) -> set[str]:
    """The names a statement reads that it does not bind itself (a loop's `n` is its own)."""
    names = [node for node in ast.walk(statement) if isinstance(node, ast.Name)]
    return {n.id for n in names if isinstance(n.ctx, ast.Load)} - {n.id for n in names if isinstance(n.ctx, ast.Store)}


def _defines(statement: ast.stmt, read: set[str], modules: set[str], setters: dict[str, set[str]]) -> bool:
    """Whether a cell's statement defines something: an import or a def (in a `try:` or an `if` too), a class or a
    lambda, a call that sets a library up, or a change to a global a function reads, whether by name (`EPS =
    1e-9`), in place (`FILL[0] = -np.inf`, `Config.fill = ...`, `TABLE.append(x)` in a loop), through `globals()`
    or by calling a function that sets it through `global`."""
    if isinstance(statement, DEFINITIONS) or isinstance(getattr(statement, "value", None), ast.Lambda):
        return True
    if _sets_up_a_library(statement, modules):
        return True
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and node.id == "globals":
            return True
        # A def under `if` or `try` (the file's own way of defining it), and an import there where a function reads
        # what it binds (`try: import torch`): a demo block's own `import time` had kept the block, demo and all.
        if isinstance(node, DEFINITIONS) or (isinstance(node, (ast.Import, ast.ImportFrom))
                                             and set(set_by(node)) & read):
            return True
        if isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            node = _root(node)
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in read:
            return True
        if isinstance(node, ast.Expr) and _changes(node.value, read - modules, setters):
            return True
    return False


def _changes(call: ast.expr, read: set[str], setters: dict[str, set[str]]) -> bool:
    """Whether a call standing alone (its result unused: it is made for what it changes) changes a global in `read`:
    a method of it (`INV_SQRT.append(...)`, `W.fill_(0)`), a call given it first (`np.fill_diagonal(M, 0)`; not a
    print), or a function of the file that sets it through `global` (`_init_constants()`)."""
    if not isinstance(call, ast.Call):
        return False
    func, first = call.func, call.args[0] if call.args else None
    owner = _root(func.value) if isinstance(func, ast.Attribute) else None
    if isinstance(owner, ast.Name) and owner.id in read:
        return True
    if isinstance(first, ast.Name) and first.id in read and not (isinstance(func, ast.Name) and func.id == "print"):
        return True
    return isinstance(func, ast.Name) and bool(setters.get(func.id, set()) & read)


def _sets_up_a_library(statement: ast.stmt, modules: set[str]) -> bool:
    """`np.seterr(all="raise")`, `torch.set_default_dtype(torch.float64)`: a call standing alone of a setting taken
    from an imported module (`modules`); a demo's `ax.set_title(...)` is a figure's, whose `ax` the trim removes."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    root = _root(call.func)
    return isinstance(root, ast.Name) and root.id in modules and call.func.attr.startswith(SETUP_CALLS)


def _root(node: ast.expr) -> ast.expr:
    """The name an item or attribute is taken from (`FILL` of `FILL[0]`, `Config` of `Config.fill`), as stored."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return ast.Name(node.id, ast.Store()) if isinstance(node, ast.Name) else node


def read_by_functions(sources: list[str], graded: Iterable[str] = ()) -> set[str]:
    """The graded functions' names and the globals they read, and those of the notebook's top-level functions and
    classes they read in turn (`reached`: a function's own `S` is not a demo's, nor is a demo helper's), and what
    the top level of a cell reads before a def of its own: `print(X.shape)` there stops the defs after it too.
    What a cell's demo reads after its last def is its own (a benchmark's `_t0`): keeping what sets it kept the
    demo, and the def before it went with the cell."""
    read: set[str] = set()
    definitions = []
    for tree in filter(None, map(_parsed, sources)):
        last_def = max((i for i, node in enumerate(tree.body) if isinstance(node, DEFINITIONS)), default=-1)
        for i, node in enumerate(tree.body):
            if isinstance(node, DEFINITIONS):
                definitions.append(node)
            elif isinstance(getattr(node, "value", None), ast.Lambda):  # `score = lambda ...`: read as a def of it
                read |= globals_read(node.value)
            elif i < last_def:
                read |= _reads_from_outside(node)
    return read | reached(definitions, graded)


def global_setters(sources: list[str]) -> dict[str, set[str]]:
    """The notebook's top-level functions that set globals through a `global` statement, and those names."""
    setters: dict[str, set[str]] = {}
    for tree in filter(None, map(_parsed, sources)):
        for node in tree.body:
            names = {name for inner in ast.walk(node) if isinstance(inner, ast.Global) for name in inner.names}
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and names:
                setters[node.name] = names
    return setters


def imported(sources: list[str]) -> set[str]:
    """The names the notebook's top-level imports bind (`np` of `import numpy as np`), in any cell."""
    return {name for tree in filter(None, map(_parsed, sources)) for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) for name in set_by(node)}


def _parsed(source: str) -> ast.Module | None:
    if len(source) > MAX_PARSED:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
