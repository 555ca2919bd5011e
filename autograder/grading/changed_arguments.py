"""Arguments changed in place cost one check per function, however many calls show it.

Where the assignment asks it (course.yaml `arguments_unchanged`), every call's array arguments are read back
after it, from the grader's own shared memory (authoring.checks.Trial). A function that changes one in place on
some input (a shift of large scores done with `-=`, a fill done with `out=` for a broadcast mask) shows it only
in the checks whose calls reach that branch, and one that always does would otherwise fail all its checks for
one fault. So the change is charged once: to the function's check that carries such changes (a Check with
`charges_changes`), wherever the change showed, or, where the suite names none, to the first of the checks that
showed it, in the suite's order, whose values passed. A check that already failed on its values loses nothing
more for it.
"""
from __future__ import annotations

from dataclasses import replace

from autograder.grading.explain import Judged
from autograder.grading.statuses import FAILED, PASSED


def charged_for_changes(judged: list[Judged]) -> list[Judged]:
    """`judged` (one submission's checks in suite order, as judged) with each function that changed an argument in
    place (Attempt.changed) charged once, as the module says. Apply it once, to the whole list."""
    first_seen: dict[str, tuple[str, str]] = {}  # function -> (message, the check whose call showed it)
    for one in judged:
        for function, message in one.tried.changed if one.tried else ():
            first_seen.setdefault(function, (message, one.entry.name))
    carriers = {one.entry.function: one.entry.name for one in judged if one.entry.check.charges_changes}
    charged: set[str] = set()
    out = []
    for one in judged:
        function = _charged_here(one, first_seen, carriers, charged)
        if function is None:
            out.append(one)
            continue
        charged.add(function)
        own = [message for f, message in one.tried.changed if f == function] if one.tried else []
        message, where = (own[0], one.entry.name) if own else first_seen[function]
        message += "" if where == one.entry.name else f" (in the call of the check {where})"
        out.append(Judged(one.entry, replace(one.result, status=FAILED, score=0.0, message=message),
                          replace(one.tried, status=FAILED, message=message) if one.tried else None))
    return out


def _charged_here(one: Judged, first_seen: dict, carriers: dict, charged: set) -> str | None:
    """The function whose change `one` is charged with, or None: its carrier check for a function that has one,
    else the first check that showed it; in either case, only a check that passed on its values."""
    if one.result.status != PASSED:
        return None
    if one.entry.check.charges_changes and one.entry.function in first_seen:
        return one.entry.function if one.entry.function not in charged else None
    shown = [function for function, _ in one.tried.changed] if one.tried else []
    return next((f for f in shown if f not in carriers and f not in charged), None)
