"""What a notebook is told about a name a later cell took for something else (`masked = mask.sum(-1)`
after the def of a helper `masked`, `score = score(Q, Q)`, `del score`, `min = A.min()` over the built-in).

Jupyter and nbgrader run each check cell right after its answer, so they never see what a later cell binds: the
worker (sandbox.kept_names.KeptFunctions) grades each function with the names it reads as they were before that
cell, and the note says which cell took which name, and that the other thing needs a name of its own.
"""
from __future__ import annotations

from autograder.text import joined


def taken_note(name: str, cell: str, users: tuple, defined: bool = False, unchanged: tuple = (),
               first: bool = False, changed: str = "") -> str:
    """The note for `name`, which `cell` took: a graded function's own (no users), or a global the graded functions
    `users` read (they, or a function of the notebook's they call), each graded with it as its check cell saw it.
    defined: `cell` defined a function of the notebook's under the name after their check cells ran (or, with no
    users, after its own check cell: the graded function itself, graded as that check ran it). unchanged: the
    graded functions that read it but could not be graded so (a decorator the grader cannot re-point wraps them).
    first: `cell` bound the name first, after their check cells ran, so they were graded with it unbound. changed:
    "data" where `cell` changed the dict, list, set or array under the name in place, "switch" where it changed the
    library switch `name` (SWITCHES), after their check cells ran."""
    if changed == "switch":
        return _switch_note(name, cell, users)
    if changed == "data":
        calls = [f"{user}()" for user in (*users, *unchanged)]
        return (f"{cell} changed {name} in place after the check cell of {joined(calls)} had run: "
                f"{_graded_with(name, users)}{_not_restored(name, unchanged, bool(users))}, but in Jupyter every cell "
                f"after that one that calls {' or '.join(calls)} gets the changed {name}. Where a cell should try "
                f"another value, change a copy (`{name}.copy()`), not what your functions read")
    calls = [f"{user}()" for user in (*users, *unchanged)] or [f"{name}()"]
    if first:
        checks = " and ".join(f"{user}'s" for user in (*users, *unchanged))
        return (f"{cell} first defines {name} after {checks} check cell; Jupyter and nbgrader ran the check before "
                f"it, where {name} was not defined yet, and so did the grader: define {name} in the answer cell or "
                f"above{'. ' + _not_restored(name, unchanged, False) if unchanged else ''}")
    if defined and not (users or unchanged):
        return _defined_again_note(name, cell)
    if defined:
        return (f"{cell} defined {name} again, after the check cell of {joined(calls)} had run: "
                f"{_graded_with(name, users)}{_not_restored(name, unchanged, bool(users))}. Jupyter and nbgrader "
                f"grade the definition a check cell runs with, so if the new {name} is a fix, put it in the answer "
                "cell above the check cell; if it is another helper, give it a name of its own")
    graded = f"{name}() was graded as your notebook last defined it" if not (users or unchanged) else \
        _graded_with(name, users) + _not_restored(name, unchanged, bool(users))
    return (f"{cell} took the name {name} for something else (`{name} = ...`, an import of that name, or `del "
            f"{name}`); {graded}, but in Jupyter every cell after that one that calls {' or '.join(calls)} gets the "
            "other thing. Give the other thing a name of its own")


def _defined_again_note(name: str, cell: str) -> str:
    """The note for the graded function `name`, which `cell` defined again after its check cell had run: graded as
    that check cell ran it, as nbgrader grades it, while the cells after `cell` get the new one."""
    return (f"{cell} defined {name}() again, after the check cell of {name}() had run: {name}() was graded as that "
            f"check cell ran it, with the definition above the check, as nbgrader grades it; only the cells after "
            f"{cell} get the new one. If the new {name}() is a fix, put it in the answer cell above the check cell "
            f"and run the notebook again; if it is a trial version, give it a name of its own (`{name}_try`)")


def _graded_with(name: str, users: tuple) -> str:
    """The words for the graded functions `users`, each graded with `name` as its check cell saw it."""
    if not users:
        return ""
    calls, one = [f"{user}()" for user in users], len(users) == 1
    return (f"{joined(calls)}, which read{'s' if one else ''} it, {'was' if one else 'were'} graded with {name} as it "
            "was before that cell, as the check cells in Jupyter and nbgrader saw it")


def _not_restored(name: str, unchanged: tuple, also: bool) -> str:
    """The words for the graded functions `unchanged`, which read `name` but could not be given it as it was
    (also: after the words for those that were)."""
    if not unchanged:
        return ""
    calls, one = [f"{user}()" for user in unchanged], len(unchanged) == 1
    return (f"{'; ' if also else ''}{joined(calls)}, which read{'s' if one else ''} it{' too' if also else ''}, "
            f"{'is' if one else 'are'} wrapped by a decorator (not a "
            f"plain function or @lru_cache) that the grader cannot give {name} as it was without running it again, so "
            f"{'it was' if one else 'they were'} graded with the other thing")


# What a later cell can switch for every call after it (sandbox.tensors.LibraryState.changes), and how to keep such a
# change to the code that needs it.
SWITCHES = {"grad": ("switched autograd (torch.set_grad_enabled)", "`with torch.no_grad():`"),
            "errors": ("changed NumPy's error handling (np.seterr)", "`with np.errstate(...):`"),
            "dtype": ("changed PyTorch's default dtype (torch.set_default_dtype)",
                      "a `try`/`finally` that sets it back"),
            "warnings": ("changed the warnings filters (warnings.filterwarnings)",
                         "`with warnings.catch_warnings():`")}


def _switch_note(switch: str, cell: str, users: tuple) -> str:
    """The note for a library switch `cell` changed after the check cells of the graded functions `users` ran."""
    what, keep = SWITCHES.get(switch, ("changed a library's settings", "code that sets them back"))
    calls, one = [f"{user}()" for user in users], len(users) == 1
    return (f"{cell} {what} after the check cell of {joined(calls)} had run; {joined(calls)} "
            f"{'was' if one else 'were'} graded with the setting as that check cell saw it, as Jupyter and nbgrader "
            "ran it, but in Jupyter every cell after that one runs with the change. Keep such a change to the code "
            f"that needs it, with {keep}")
