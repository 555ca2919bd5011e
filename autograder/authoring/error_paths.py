"""Error paths: a function raises the right exception on an invalid input and answers its valid neighbour."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from autograder.authoring.checks import CheckFailed, Trial, raise_for
from autograder.authoring.environment import environment_hint


@dataclass(frozen=True)
class Inputs:
    """The arguments of one call: `args` positional, `kwargs` by keyword."""

    args: tuple
    kwargs: dict = field(default_factory=dict)


def expect_error_path(t: Trial, exception: str, function: str, invalid: Inputs, valid: Inputs, *,
                      what: str, advice: str, valid_what: str, valid_advice: str):
    """An error path: `function` raises `exception` (a type name) on `invalid` and returns on `valid`, its
    neighbour (the same input with the fault removed). Returns the valid call's value, for the check to compare.

    Both calls are made before either is judged, so the calls never depend on the answers; which comes
    first is drawn from the check's own generator (`invalid_first`). When the valid input raises too, that
    is the message: the function raises on ordinary input, so its exception says nothing about the invalid
    one. what/valid_what: name the two inputs; advice: why raising is right, for a function that returns
    instead; valid_advice: when raising is right, for a function that raises `exception` on the valid input.
    """
    if invalid_first(t):
        faulty = t.call(function, *invalid.args, **invalid.kwargs)
        ordinary = t.call(function, *valid.args, **valid.kwargs)
    else:
        ordinary = t.call(function, *valid.args, **valid.kwargs)
        faulty = t.call(function, *invalid.args, **invalid.kwargs)
    if ordinary.raised is not None:
        if ordinary.raised.type in ("NotImplementedError", "SystemExit") or ordinary.raised.missing:
            raise_for(function, ordinary, stub=t.stub(function))
        raise CheckFailed(_raises_on_ordinary_input(function, ordinary.raised, faulty.raised, exception, valid_what,
                                                    valid_advice))
    if faulty.raised is None:
        raise CheckFailed(f"{what} returned instead of raising {exception}; {advice}",
                          got=faulty.value if isinstance(faulty.value, np.ndarray) else None)
    if not faulty.raised.is_a(exception):
        raise CheckFailed(f"{what} raised {faulty.raised.describe(called=function)}; expected {exception}"
                          f"{_shadowed(faulty.raised, exception)}")
    return ordinary.value


def invalid_first(t: Trial) -> bool:
    """Whether an error path asks its invalid input before its valid one, drawn from the student's generator.

    The two inputs differ in one entry; in a fixed order, code that raises whenever a call differs from the one
    before it in one entry passed without looking for the fault. Drawn, the order is fixed before any answer
    (and the same for the same seed) yet not known from a call's place: such code raises on the valid input
    for half the students, and loses the check. The draw makes the plan the seed's own (grading.plan.KeptPlans).
    """
    return bool(t.rng.integers(2))


def _shadowed(raised, exception: str) -> str:
    """What to do where the code raised a class of its own named as the built-in: `except ValueError` misses it."""
    if not raised.shadows(exception):
        return ""
    return (f", Python's built-in one: this {exception} is a class your file defines (or imports) under that name, "
            f"which `except {exception}` does not catch. Remove that class and raise the built-in {exception}")


def _raises_on_ordinary_input(function: str, raised, also_raised, exception: str, what: str, advice: str) -> str:
    """The message for a function that raised on the valid neighbour of an error case (see expect_error_path)."""
    message = (f"{function} raises on ordinary input: {what} raised {raised.describe(called=function)}"
               f"{environment_hint(raised)}").rstrip(".")  # a library's message may end its sentence
    if not raised.is_a(exception):
        return f"{message}; this check needs the right values there before it can judge the error case"
    if also_raised is None:  # raises where it should return, returns where it should raise
        return f"{message}; {advice}"
    if raised.own is False:  # NumPy's (or another library's) error at that line: no raise of the student's to move
        return f"{message}; the code that line calls raised it, not a raise statement of yours"
    return f"{message} (if this {exception} is your own, {advice})"
