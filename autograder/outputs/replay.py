"""Replaying one check for one student, for a TA answering "why did I lose this point?".

The check runs again as graded (autograder.grading.grader.Grader.replay):
same file, same seed, same sizes, in a fresh sandbox session that first gets
the calls of every check before it, as the graded session did. The output
leads with the verdict, beside the stored one, and says when the two differ:
with the same calls in the same order, a different verdict is evidence that
the file's answers depend on something besides their inputs. Then come the
failing call's inputs, the expected and the returned values. Hidden inputs
are shown: this is a TA's tool, never part of a student's feedback.
"""
from __future__ import annotations

import sys

import numpy as np

from autograder.authoring.protocol import Call, Opaque, Reply, TensorData, unmarked
from autograder.authoring.shown import shown
from autograder.grading.attempt import Replayed
from autograder.grading.results import CheckResult
from autograder.grading.statuses import TIMEOUT
from autograder.outputs import audience
from autograder.text import one_line

SCREEN = 50  # lines: a longer replay is abbreviated unless --full
VALUE_LINES = 8  # lines per value in an abbreviated replay
PRINT_OPTIONS = {"threshold": 60, "edgeitems": 3, "precision": 5, "linewidth": 100}
FULL_OPTIONS = {**PRINT_OPTIONS, "threshold": sys.maxsize}


def format_replay(student: str, check: str, seed: int, replayed: Replayed, stored: CheckResult | None,
                  comparable: bool = True, full: bool = False) -> str:
    """The verdict beside the stored one, then the calls' inputs and the expected and returned values.

    stored: the check's stored result (None if it had none). comparable:
    False when the file or the suite changed since grading, so a difference
    is no evidence about the file. full: every call and every entry, however long.
    """
    if full:
        return "\n".join(_lines(student, check, seed, replayed, stored, comparable, full=True))
    whole = _lines(student, check, seed, replayed, stored, comparable, full=False, abbreviate=False)
    if len(whole) <= SCREEN:
        return "\n".join(whole)
    return "\n".join(_lines(student, check, seed, replayed, stored, comparable, full=False, abbreviate=True)
                     + ["(abbreviated to fit a screen: --full shows every call and every entry)"])


def _lines(student, check, seed, replayed: Replayed, stored, comparable, full: bool, abbreviate: bool = False):
    now, tried = replayed.result, replayed.tried
    lines = [f"replay of {check} for {student} (seed {seed}): {now.status}"]
    if now.message:
        lines.append(f"verdict: {one_line(audience.message(now, audience.INSTRUCTOR))}")
    lines += _compared(now, stored, comparable, replayed.earlier_calls)
    calls = tried.calls if tried is not None else []
    cap = VALUE_LINES if abbreviate else None
    with np.printoptions(**(FULL_OPTIONS if full else PRINT_OPTIONS)):
        for number, (call, reply) in enumerate(calls, start=1):
            if abbreviate and number < len(calls):
                lines.append(f"call {number}: {_signature(call)} -> {_brief(reply)}")
            else:
                lines += _call_lines(number, call, reply, cap)
        failure = tried.failure if tried is not None else None
        for label, value in (("expected", getattr(failure, "expected", None)), ("got", getattr(failure, "got", None))):
            if value is not None:
                lines.append(f"{label}:")
                lines += _capped(_indented(_show(value)), cap)
    return lines


def _compared(now: CheckResult, stored: CheckResult | None, comparable: bool, earlier: int) -> list[str]:
    """The stored verdict, and whether the replay reproduces it."""
    before = f"after the {earlier} calls of the checks before it, as when graded"
    if stored is None:
        return [f"stored: no verdict for this check (replayed {before})"]
    if _same_verdict(stored, now):
        return [f"stored: {stored.status}, the same verdict: the replay ({before}) reproduces the grade"]
    said = one_line(audience.message(stored, audience.INSTRUCTOR))
    lines = [f"stored: {stored.status}" + (f": {said}" if said else "")]
    if not comparable:
        return lines + ["the verdicts differ, but the file or the suite changed since grading, so that is expected"]
    return lines + [f"DIFFERENT FROM THE STORED VERDICT. The replay sent the same calls in the same order ({before}) "
                    "to the same file, so its answers depend on something besides their inputs: state kept between "
                    "calls, the time, or chance (a timeout can also come from a busy machine). Read the file for "
                    "global state and clock or random use before trusting either verdict; `autograder grade --force` "
                    "grades it again"]


def _same_verdict(stored: CheckResult, now: CheckResult) -> bool:
    """The same status and points, and for any status but a timeout the same message: a timeout's message counts
    the seconds this run's call took and waited, which no two runs share."""
    if (stored.status, stored.score) != (now.status, now.score):
        return False
    return stored.status == TIMEOUT or stored.message == now.message


def _signature(call: Call) -> str:
    arguments = [f"arg {i}" for i in range(len(call.args))] + list(call.kwargs)
    return f"{call.function}({', '.join(arguments)})" + (" (as torch tensors)" if call.as_tensors else "")


def _call_lines(number: int, call: Call, reply: Reply, cap: int | None) -> list[str]:
    lines = [f"call {number}: {_signature(call)}"]
    for name, value in zip([f"arg {i}" for i in range(len(call.args))] + list(call.kwargs),
                           [*call.args, *call.kwargs.values()]):
        lines.append(f"  {name} =")
        lines += _capped(_indented(_show(value), 4), cap)
    if reply.raised is not None:
        lines.append(f"  raised {one_line(unmarked(reply.raised.describe(called=call.function)))}")
    else:
        lines.append("  returned:")
        lines += _capped(_indented(_show(reply.value), 4), cap)
    if reply.grad_error:
        lines.append(f"  gradients: {reply.grad_error}")
    return lines


def _brief(reply: Reply) -> str:
    """One line for a reply: what was raised, or the shapes returned."""
    if reply.raised is not None:
        return f"raised {one_line(unmarked(reply.raised.describe()))}"
    return f"returned {_kind(reply.value)}"


def _kind(value) -> str:
    if isinstance(value, TensorData):
        return f"a tensor of shape {value.array.shape}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}, dtype {value.dtype}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_kind(item) for item in value) + ")"
    return _show(value).splitlines()[0] if value is not None else "None"


def _show(value) -> str:
    if isinstance(value, TensorData):
        return f"tensor (requires_grad={value.requires_grad}, grad_fn={value.grad_fn}):\n" + _show(value.array)
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}, dtype {value.dtype}:\n{np.array2string(value)}"
    if isinstance(value, (tuple, list)):
        return "\n".join(f"[{i}] {_show(item)}" for i, item in enumerate(value))
    if isinstance(value, Opaque):
        return f"a {value.type_name} object {value.detail}".rstrip()
    return shown(value, None)


def _capped(lines: list[str], cap: int | None) -> list[str]:
    if cap is None or len(lines) <= cap:
        return lines
    indent = lines[-1][:len(lines[-1]) - len(lines[-1].lstrip())]
    return lines[:cap] + [f"{indent}... {len(lines) - cap} more lines"]


def _indented(text: str, spaces: int = 2) -> list[str]:
    return [" " * spaces + line for line in text.splitlines()]
