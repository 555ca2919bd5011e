"""Which of a notebook's cells a load that ran past the load limit runs only the imports of, next time.

The load limit counts every cell before the one running, so demo cells that each finish (a toy training run of
3 s after each function) can together outlast it: the load is stopped at whichever cell is running then. Skipping
only that cell, each later load ran the same demos again, was stopped a cell further on, and the functions after
them were never loaded. So each cell before the stopped one that ran for a tenth of the limit or more and defines no
function or class is trimmed to its imports for the next load: what a demo computes goes, what it imports (which
a function may use) stays, and the feedback names the cell. Loads stopped again and again (each at a later demo)
trim every such cell after the first stopped one (`demo_cells_after`), before the last resort of loading only the
cells before it.
"""
from __future__ import annotations

import ast

SLOW_SHARE = 0.1  # of the load limit a cell ran for, in a load that was stopped, to be trimmed in the next (1 s of 10)
MAX_READ = 100_000  # characters of a cell parsed here (the grader's process): a larger one is left as it is


def slow_demo_cells(starts: list[tuple[int, str, float]], stopped_at: float, sources: list[str],
                    limit: float) -> list[tuple[int, str, float, str]]:
    """(index, label, seconds it ran, its imports' code) of the cells to trim in the next load.

    starts: (index, label, time it began) of each cell the stopped load ran, in order; stopped_at: when it was
    stopped (the last cell's end); sources: every cell's code, by index; limit: the load limit in seconds.
    """
    ends = [began for _, _, began in starts[1:]] + [stopped_at]
    trimmed = []
    for (index, label, began), end in zip(starts[:-1], ends):
        imports = imports_of_demo(sources[index]) if end - began >= SLOW_SHARE * limit else None
        if imports is not None:
            trimmed.append((index, label, end - began, imports))
    return trimmed


def demo_cells_after(first: int, labels: list[str], sources: list[str]) -> list[tuple[int, str, str]]:
    """(index, label, its imports' code) of each cell after `first` that defines no function or class."""
    demos = [(index, labels[index], imports_of_demo(sources[index])) for index in range(first + 1, len(sources))]
    return [(index, label, imports) for index, label, imports in demos if imports is not None]


def imports_of_demo(source: str) -> str | None:
    """The import statements of a cell that defines no function or class, as code; None for any other cell (one
    that defines something, or that cannot be read here)."""
    if len(source) > MAX_READ:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for node in tree.body):
        return None
    imports = [ast.get_source_segment(source, node) for node in tree.body if isinstance(node, (ast.Import,
                                                                                                 ast.ImportFrom))]
    return "\n".join(code for code in imports if code)
