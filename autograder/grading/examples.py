"""What feedback may show of a failing check: its example, as a small JSON text.

Public checks may show the inputs, the expected and the returned values of
the failing run (the smallest one, when the failure was shrunk). Hidden
checks show only the sizes the failure was shrunk to — never their inputs
or expected values, nor the message at those sizes, which at the smallest
sizes could quote the whole expected answer. The rule is applied here,
where the example is built in the grader, so nothing stored or reported
later can hold more than this.
"""
from __future__ import annotations

import json
from types import ModuleType

import numpy as np

from autograder.authoring.checks import Sizes
from autograder.authoring.misconceptions import bind_arguments
from autograder.authoring.protocol import Opaque, TensorData

MAX_VALUES = 64  # larger arrays are shown by shape and dtype only
MAX_CALLS = 3  # the last calls of the run; the failing one is usually the last


def example_json(visibility: str, attempt, ref: ModuleType | None, shrunk_from: Sizes | None = None) -> str:
    """The example of a failing attempt, as JSON text; "" when there is nothing to show.

    attempt: has .status, .message, .failure (CheckFailed or None), .calls
        ((Call, Reply) pairs) and .sizes (Sizes or None).
    shrunk_from: the original sizes when `attempt` is a shrunk re-run.
    """
    sizes = {"sizes": attempt.sizes.as_dict(), "shrunk_from": shrunk_from.as_dict()} if shrunk_from else {}
    if visibility != "public":
        return json.dumps(sizes) if sizes else ""
    calls = [_call_json(call, reply, ref) for call, reply in attempt.calls[-MAX_CALLS:]]
    example = {**sizes, "message": attempt.message, "calls": calls}
    failure = attempt.failure
    if failure is not None and failure.expected is not None:
        example["expected"] = value_json(failure.expected)
    return json.dumps(example, allow_nan=False)


def load_example(text: str) -> dict | None:
    """The example stored with a check result, or None."""
    if not text:
        return None
    try:
        example = json.loads(text)
    except ValueError:
        return None
    return example if isinstance(example, dict) else None


def value_json(value):
    """A value as plain JSON: arrays as shape, dtype and (when small) rounded values."""
    if isinstance(value, TensorData):
        return {**value_json(value.array), "tensor": True}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        described = {"shape": list(array.shape), "dtype": str(array.dtype)}
        if array.size <= MAX_VALUES and array.dtype.kind in "biuf":
            described["values"] = _plain(array.tolist())
        return described
    if isinstance(value, (tuple, list)):
        return {"items": [value_json(v) for v in value]}
    if isinstance(value, Opaque):
        return {"object": value.type_name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return _plain(value)
    return {"object": type(value).__name__}


def render_value(described) -> str:
    """`value_json`'s output as text a student reads (NumPy's own array notation)."""
    if isinstance(described, dict):
        if "items" in described:
            return "(" + ", ".join(render_value(v) for v in described["items"]) + ")"
        if "object" in described:
            return f"a {described['object']} object"
        if "shape" in described:
            kind = "tensor" if described.get("tensor") else "array"
            head = f"{kind} of shape {tuple(described['shape'])}, {described['dtype']}"
            if "values" not in described:
                return head + " (too large to show)"
            values = np.array(_numbers(described["values"]), dtype=described["dtype"])
            return head + ":\n" + np.array2string(values, precision=6, separator=", ", max_line_width=100)
    return "None" if described is None else str(described)


def _call_json(call, reply, ref) -> dict:
    named = bind_arguments(ref, call.function, call.args, call.kwargs)
    if named is None:
        named = {**{f"argument {i + 1}": a for i, a in enumerate(call.args)}, **call.kwargs}
    described = {"function": call.function, "args": {k: value_json(v) for k, v in named.items()}}
    if call.as_tensors:
        described["as_tensors"] = True
    if reply.raised is not None:
        described["raised"] = reply.raised.describe()
    else:
        described["returned"] = value_json(reply.value)
    return described


def _plain(value):
    """Nested lists of numbers as JSON: floats rounded to 7 significant digits, inf/NaN as text."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.7g}") if np.isfinite(value) else str(value)
    return value


def _numbers(value):
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return float(value) if isinstance(value, str) else value
