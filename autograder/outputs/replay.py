"""Replaying one check for one student, for a TA answering "why did I lose this point?".

The check runs again exactly as graded — same file, same seed, same sizes —
in a fresh sandbox, and every call is printed with its inputs, what the
student's function returned and what was expected. Hidden inputs are shown:
this is a TA's tool, never part of a student's feedback.
"""
from __future__ import annotations

import numpy as np

from autograder.authoring.protocol import Call, Opaque, Reply, TensorData
from autograder.grading.attempt import Attempt

PRINT_OPTIONS = {"threshold": 60, "edgeitems": 3, "precision": 5, "linewidth": 100}


def format_replay(student: str, check: str, seed: int, tried: Attempt) -> str:
    """The calls a check made and its verdict, readable in a terminal."""
    lines = [f"replay of {check} for {student} (seed {seed}): {tried.status}"]
    with np.printoptions(**PRINT_OPTIONS):
        for number, (call, reply) in enumerate(tried.calls, start=1):
            lines += _call_lines(number, call, reply)
        if tried.message:
            lines.append(f"verdict: {tried.message}")
        if tried.failure is not None and tried.failure.expected is not None:
            lines.append("expected:")
            lines += _indented(_show(tried.failure.expected))
        if tried.failure is not None and tried.failure.got is not None:
            lines.append("got:")
            lines += _indented(_show(tried.failure.got))
    return "\n".join(lines)


def _call_lines(number: int, call: Call, reply: Reply) -> list[str]:
    arguments = [f"arg {i}" for i in range(len(call.args))] + list(call.kwargs)
    values = [*call.args, *call.kwargs.values()]
    tensors = " (as torch tensors)" if call.as_tensors else ""
    lines = [f"call {number}: {call.function}({', '.join(arguments)}){tensors}"]
    for name, value in zip(arguments, values):
        lines.append(f"  {name} =")
        lines += _indented(_show(value), 4)
    if reply.raised is not None:
        lines.append(f"  raised {reply.raised.describe()}")
    else:
        lines.append("  returned:")
        lines += _indented(_show(reply.value), 4)
    if reply.grad_error:
        lines.append(f"  gradients: {reply.grad_error}")
    return lines


def _show(value) -> str:
    if isinstance(value, TensorData):
        return f"tensor (requires_grad={value.requires_grad}, grad_fn={value.grad_fn}):\n" + _show(value.array)
    if isinstance(value, np.ndarray):
        return f"array of shape {value.shape}, dtype {value.dtype}:\n{np.array2string(value)}"
    if isinstance(value, (tuple, list)):
        return "\n".join(f"[{i}] {_show(item)}" for i, item in enumerate(value))
    if isinstance(value, Opaque):
        return f"a {value.type_name} object {value.detail}".rstrip()
    return repr(value)


def _indented(text: str, spaces: int = 2) -> list[str]:
    return [" " * spaces + line for line in text.splitlines()]
