"""Arguments changed in place cost one check per function, however many calls show it.

Where the assignment asks it (course.yaml `arguments_unchanged`), every call's array arguments are read back
after it, from the grader's own shared memory (authoring.checks.Trial). A function that changes one in place on
some input (a shift of large scores done with `-=`, a fill done with `out=` for a broadcast mask) shows it only
in the checks whose calls reach that branch, and one that always does would otherwise fail all its checks for
one fault. So the change is charged once: to the function's check that carries such changes (a Check with
`charges_changes`), wherever the change showed, or, where the suite names none, to the check of fewest points
among those that showed it and passed on their values (the first of them in the suite's order), so that where
a change happens to show fixes no fine. A check that already failed on its values loses nothing more for it.
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
    target = {one.entry.function: one.entry.name for one in judged if one.entry.check.charges_changes}
    for function in first_seen.keys() - target.keys():
        showed = [one for one in judged if one.result.status == PASSED and one.tried
                  and any(f == function for f, _ in one.tried.changed)]
        if showed:
            target[function] = min(showed, key=lambda one: one.entry.points).entry.name
    out = []
    for one in judged:
        function = next((f for f in first_seen if target.get(f) == one.entry.name), None)
        if function is None or one.result.status != PASSED:
            out.append(one)
            continue
        own = [message for f, message in one.tried.changed if f == function] if one.tried else []
        message, where = (own[0], one.entry.name) if own else first_seen[function]
        message += "" if where == one.entry.name else f" (in the call of the check {where})"
        out.append(Judged(one.entry, replace(one.result, status=FAILED, score=0.0, message=message),
                          replace(one.tried, status=FAILED, message=message) if one.tried else None))
    return out
