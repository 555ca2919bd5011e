"""Which of a notebook's cells a load that ran past the load limit runs only the imports of, next time.

The load limit counts every cell before the one running, so demo cells that each finish (a toy training run of
3 s after each function) can together outlast it: the load is stopped at whichever cell is running then. Skipping
only that cell, each later load ran the same demos again, was stopped a cell further on, and the functions after
them were never loaded. So each cell before the stopped one that ran for a tenth of the limit or more, and is a
demo, is trimmed to its imports for the next load: what it computes goes, what it imports (which a function may
use) stays, and the feedback names the cell. A demo defines no function or class and sets no name that one of the
notebook's functions reads (a table `LOOKUP = build()` that a function uses is kept, however slow). Loads stopped
again and again (each at a later demo) trim every such cell after the first stopped one (`demo_cells_after`),
before the last resort of loading only the cells before it.
"""
from __future__ import annotations

import ast

SLOW_SHARE = 0.1  # of the load limit a cell ran for, in a load that was stopped, to be trimmed in the next (1 s of 10)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
MAX_READ = 100_000  # characters of a cell parsed here (the grader's process): a larger one is left as it is


def slow_demo_cells(starts: list[tuple[int, str, float]], stopped_at: float, sources: list[str],
                    limit: float) -> list[tuple[int, str, float, str]]:
    """(index, label, seconds it ran, its imports' code) of the cells to trim in the next load.

    starts: (index, label, time it began) of each cell the stopped load ran, in order; stopped_at: when it was
    stopped (the last cell's end); sources: every cell's code, by index; limit: the load limit in seconds.
    """
    ends = [began for _, _, began in starts[1:]] + [stopped_at]
    slow = [(index, label, end - began) for (index, label, began), end in zip(starts[:-1], ends)
            if end - began >= SLOW_SHARE * limit]
    read = _read_by_functions(sources) if slow else set()
    demos = [(index, label, took, imports_of_demo(sources[index], read)) for index, label, took in slow]
    return [demo for demo in demos if demo[3] is not None]


def demo_cells_after(first: int, labels: list[str], sources: list[str]) -> list[tuple[int, str, str]]:
    """(index, label, its imports' code) of each demo cell after `first`."""
    read = _read_by_functions(sources)
    demos = [(index, labels[index], imports_of_demo(sources[index], read)) for index in range(first + 1, len(sources))]
    return [(index, label, imports) for index, label, imports in demos if imports is not None]


def imports_of_demo(source: str, read: set[str]) -> str | None:
    """The import statements of a demo cell, as code; None for any other cell (one that defines a function or a
    class, sets a name in `read`, or cannot be read here)."""
    tree = _parsed(source)
    if tree is None or any(isinstance(node, DEFINITIONS) for node in tree.body):
        return None
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    sets = {name.id for node in tree.body if node not in imports for name in ast.walk(node)
            if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store)}
    if sets & read:
        return None  # it sets a global one of the notebook's functions reads: kept whole
    return "\n".join(code for code in (ast.get_source_segment(source, node) for node in imports) if code)


def _read_by_functions(sources: list[str]) -> set[str]:
    """The globals the notebook's top-level functions and classes read: names they read but never set or take
    as a parameter (a function's own `S` is not the demo's `S`)."""
    read: set[str] = set()
    for tree in filter(None, map(_parsed, sources)):
        for node in tree.body:
            if isinstance(node, DEFINITIONS):
                names = [name for name in ast.walk(node) if isinstance(name, ast.Name)]
                local = {name.id for name in names if not isinstance(name.ctx, ast.Load)}
                local |= {arg.arg for arg in ast.walk(node) if isinstance(arg, ast.arg)}
                read |= {name.id for name in names if isinstance(name.ctx, ast.Load)} - local
    return read


def _parsed(source: str) -> ast.Module | None:
    if len(source) > MAX_READ:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
