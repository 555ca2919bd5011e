"""Statements nested too deeply for the comparison's recursive passes, left out so the rest of a hand-in is compared.

Python runs a line of a few hundred terms (`x = 0.0 + 0.0 + …`) that the recursive walks over a syntax tree
(normalise.py, statements.py) cannot follow. Without this, one such line, junk or not, would take the whole
hand-in out of the comparison, and with it a copy that the line was added to.
"""
from __future__ import annotations

import ast

MAX_DEPTH = 100  # levels of expression below a statement; each costs the recursive passes a few Python frames


def drop_deep_statements(tree: ast.Module) -> list[int]:
    """Each innermost statement of `tree` whose expression nests deeper than MAX_DEPTH replaced, in place, by a
    `pass` on its line (which the comparison drops as dead code); their first lines, sorted.

    Measured with an explicit stack, so a tree of any depth is measured without recursion.
    """
    deep: set[int] = set()
    stack: list[tuple[ast.AST, ast.AST | None, int]] = [(tree, None, 0)]
    while stack:
        node, owner, depth = stack.pop()
        if isinstance(node, ast.stmt):
            owner, depth = node, 0
        elif depth > MAX_DEPTH and owner is not None:
            deep.add(id(owner))
            continue
        stack.extend((child, owner, depth + 1) for child in ast.iter_child_nodes(node))
    lines = []
    for node in ast.walk(tree):  # itself iterative; a deep statement's own subtree is no longer below any body
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and any(id(item) in deep for item in value):
                lines += [item.lineno for item in value if id(item) in deep]
                setattr(node, field, [ast.copy_location(ast.Pass(), item) if id(item) in deep else item
                                      for item in value])
    return sorted(lines)
