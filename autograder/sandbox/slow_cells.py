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
"""
from __future__ import annotations

import ast

from autograder.code_names import MAX_PARSED, globals_read, kept_lines, set_by

SLOW_SHARE = 0.1  # of the load limit a cell ran for, in a load that was stopped, to be trimmed in the next (1 s of 10)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# A call `library.<...>.<name>(...)` standing alone whose name starts so sets the library up for what follows
# (np.seterr, torch.set_default_dtype, torch.manual_seed, warnings.filterwarnings): the functions run under it.
SETUP_CALLS = ("set", "seed", "manual_seed", "filterwarnings", "simplefilter", "use_deterministic_algorithms")


def slow_demo_cells(starts: list[tuple[int, str, float]], stopped_at: float, sources: list[str],
                    limit: float) -> list[tuple[int, str, float, str]]:
    """(index, label, seconds it ran, its definitions' code) of the cells to trim in the next load, the stopped one
    (the last to begin) among them.

    starts: (index, label, time it began) of each cell the stopped load ran, in order; stopped_at: when it was
    stopped (the last cell's end); sources: every cell's code, by index; limit: the load limit in seconds.
    """
    ends = [began for _, _, began in starts[1:]] + [stopped_at]
    slow = [(index, label, end - began) for (index, label, began), end in zip(starts, ends)
            if end - began >= SLOW_SHARE * limit]
    read, modules = (read_by_functions(sources), imported(sources)) if slow else (set(), set())
    demos = [(index, label, took, definitions_of(sources[index], read, modules)) for index, label, took in slow]
    return [demo for demo in demos if demo[3] is not None]


def module_definitions(source: str) -> str | None:
    """A .py file's code with only its definitions kept (`definitions_of`, with what its functions read: its own
    top level goes whole, so what that reads does not count), for a load after one its top-level code ran past
    the limit; None where that is the whole file, or where it defines no function or class (nothing to grade:
    the file did not load, and its message says why)."""
    tree = _parsed(source)
    if tree is None or not any(isinstance(node, DEFINITIONS) for node in ast.walk(tree)):
        return None
    read = set().union(*(globals_read(node) for node in ast.walk(tree) if isinstance(node, DEFINITIONS)))
    return definitions_of(source, read, imported([source]))


def trimmed_after(first: int, labels: list[str], sources: list[str]) -> list[tuple[int, str, str]]:
    """(index, label, its definitions' code) of each cell after `first` that does more than define."""
    read, modules = read_by_functions(sources), imported(sources)
    demos = [(index, labels[index], definitions_of(sources[index], read, modules))
             for index in range(first + 1, len(sources))]
    return [(index, label, code) for index, label, code in demos if code is not None]


def definitions_of(source: str, read: set[str], modules: set[str] = frozenset()) -> str | None:
    """A slow cell's code with only its definitions kept, in their lines (code_names.kept_lines): its imports, defs
    and classes, each statement that sets a global one of the notebook's functions reads (`read`), and each call
    that sets up a library imported under one of the names `modules`. None where that is the whole cell (nothing
    to leave out) or the cell cannot be read here."""
    tree = _parsed(source)
    if tree is None:
        return None
    while True:  # what a kept statement reads is kept too (`if HAVE_NUMPY:` around a def, `N` of `T = np.ones(N)`)
        kept = [node for node in tree.body if _defines(node, read, modules)]
        more = set(read).union(*map(_reads_from_outside, kept))
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
    inner = [node for node in ast.walk(statement) if isinstance(node, (*DEFINITIONS, ast.Lambda))]
    if not inner:
        return _reads(statement)
    inside = {id(name) for node in inner for name in ast.walk(node) if isinstance(name, ast.Name)}
    names = [node for node in ast.walk(statement) if isinstance(node, ast.Name) and id(node) not in inside]
    own = {n.id for n in names if isinstance(n.ctx, ast.Load)} - {n.id for n in names if isinstance(n.ctx, ast.Store)}
    return own.union(*map(globals_read, inner))


def _reads(statement: ast.stmt) -> set[str]:
    """The names a statement reads that it does not bind itself (a loop's `n` is its own)."""
    names = [node for node in ast.walk(statement) if isinstance(node, ast.Name)]
    return {n.id for n in names if isinstance(n.ctx, ast.Load)} - {n.id for n in names if isinstance(n.ctx, ast.Store)}


def _defines(statement: ast.stmt, read: set[str], modules: set[str]) -> bool:
    """Whether a cell's statement defines something: an import or a def (in a `try:` or an `if` too), a class or a
    lambda, a call that sets a library up, or a change to a global a function reads, whether by name (`EPS =
    1e-9`), in place (`FILL[0] = -np.inf`, `Config.fill = ...`) or through `globals()`."""
    if isinstance(statement, DEFINITIONS) or isinstance(getattr(statement, "value", None), ast.Lambda):
        return True
    if _sets_up_a_library(statement, modules):
        return True
    for node in ast.walk(statement):
        if isinstance(node, (ast.Import, ast.ImportFrom, *DEFINITIONS)) or (isinstance(node, ast.Name) and
                                                                           node.id == "globals"):
            return True  # a def under `if` or `try` too: the file's own way of defining it
        if isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            node = _root(node)
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id in read:
            return True
    return False


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


def read_by_functions(sources: list[str]) -> set[str]:
    """The globals the notebook's top-level functions and classes read (a function's own `S` is not a demo's), and
    what the top level of a cell reads before a def of its own: `print(X.shape)` there stops the defs after it
    too. What a cell's demo reads after its last def is its own (a benchmark's `_t0`): keeping what sets it kept
    the demo, and the def before it went with the cell."""
    read: set[str] = set()
    for tree in filter(None, map(_parsed, sources)):
        last_def = max((i for i, node in enumerate(tree.body) if isinstance(node, DEFINITIONS)), default=-1)
        for i, node in enumerate(tree.body):
            if isinstance(node, DEFINITIONS) or isinstance(getattr(node, "value", None), ast.Lambda):
                read |= globals_read(node if isinstance(node, DEFINITIONS) else node.value)
            elif i < last_def:
                read |= _reads_from_outside(node)
    return read


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
