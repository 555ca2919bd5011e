"""What a notebook is told about a name a later cell took for something else (`masked = mask.sum(-1)`
after the def of a helper `masked`, `score = score(Q, Q)`, `del score`).

Jupyter and nbgrader run each check cell right after its answer, so they never see what a later cell binds: the
worker (sandbox.loader.KeptFunctions) grades each function with the names it reads as they were before that
cell, and the note says which cell took which name, and that the other thing needs a name of its own.
"""
from __future__ import annotations

from autograder.text import joined


def taken_note(name: str, cell: str, users: tuple) -> str:
    """The note for `name`, which `cell` took: a graded function's own (no users), or a global the graded functions
    `users` read (they, or a function of the notebook's they call), each graded with it as its check cell saw it."""
    if users:
        calls = [f"{user}()" for user in users]
        one = len(users) == 1
        graded = (f"{joined(calls)}, which read{'s' if one else ''} it, {'was' if one else 'were'} graded with {name} "
                  "as it was before that cell, as the check cells in Jupyter and nbgrader saw it")
    else:
        calls, graded = [f"{name}()"], f"{name}() was graded as your notebook last defined it"
    return (f"{cell} took the name {name} for something else (`{name} = ...`, an import of that name, or `del "
            f"{name}`); {graded}, but in Jupyter every cell after that one that calls {' or '.join(calls)} gets the "
            "other thing. Give the other thing a name of its own")
