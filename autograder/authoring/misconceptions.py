"""Known wrong ideas, as an assignment's author writes them down.

An assignment may bring a catalogue, `<solution>/misconceptions.py`, which
defines `CATALOGUE`, a `Catalogue`. Each `Misconception` in it knows how a
student who holds that wrong idea answers a call: either it computes that
wrong answer itself from the reference (`wrong`), or it recognises the
behaviour (`shows`: raising the wrong exception, changing an input in place,
cutting the autograd graph), or it is named where a scale check times out
(`too_slow`) after every earlier check of the same function passed: right
values on small inputs, too slow on a large one (a timeout has no values to compare). The grader's engine
(autograder.grading.diagnosis) holds a failing check's calls against them.
The catalogue lives under solutions/ because it needs the reference, and is
never released.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from autograder.authoring.protocol import Call, Reply


@dataclass(frozen=True)
class Observed:
    """One call of a check, as a misconception's functions see it.

    function: the student function that was called.
    args: its arguments by the reference's parameter names, defaults filled
        in, exactly as sent (NumPy arrays even when the worker got tensors).
    value: what it returned, torch tensors replaced by their arrays; None if it raised.
    raised: (exception type name, message) if it raised, else None.
    args_after: the arguments after the call, by name, when the check asked for them.
    call, reply: the raw call and reply, for behaviour such as autograd state.
    ref: the reference module.
    """

    function: str
    args: dict
    value: Any
    raised: tuple[str, str] | None
    args_after: dict | None
    call: Call
    reply: Reply
    ref: ModuleType


@dataclass(frozen=True)
class Misconception:
    """One known wrong idea, with a stable id and the sentence a student reads.

    functions: calls of these functions can show it; the first is the
        function the idea lives in (a wrong exception there is evidence,
        while in a function built from others one exception has many causes).
    wrong: the answer a student with this idea returns for the call, computed
        from the reference; None where the idea does not apply to the call.
        An exception it raises is the wrong answer too (matched by type and message).
    shows: instead, or as well (checked first), whether the call's behaviour reveals the idea: what
        no single computed answer covers (each student's own fill, whatever was subtracted first).
    too_slow: alternatively, checks (names) whose timeout reveals the idea,
        when every check of the same function run before them passed.
    also_from: other functions whose own mistake gives the idea's very answer in a function built on them,
        as the sentence says. Where the idea's own function passes its checks, a function that calls it
        shows the idea only through a failing one of these (grading.loading).
    """

    id: str
    sentence: str
    functions: tuple[str, ...]
    wrong: Callable[[Observed], Any] | None = None
    shows: Callable[[Observed], bool] | None = None
    too_slow: tuple[str, ...] = ()
    also_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class Catalogue:
    """An assignment's misconceptions, in priority order, and the right answer to any call.

    right: the reference's answer to an observed call (arrays, not tensors).
    """

    misconceptions: tuple[Misconception, ...]
    right: Callable[[Observed], Any]


def bind_arguments(ref: ModuleType | None, function: str, args: tuple, kwargs: dict) -> dict | None:
    """Arguments by the reference function's parameter names, defaults filled in; None if they do not fit."""
    target = getattr(ref, function, None) if ref is not None else None
    if not callable(target):
        return None
    try:
        bound = _signature(target).bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


@functools.lru_cache(maxsize=256)
def _signature(function: Callable) -> inspect.Signature:
    """The signature of a reference function: read once, not at each of a failing file's ~30 observed calls."""
    return inspect.signature(function)


