"""What feedback may show of a failing check: its example, as a small JSON text.

Public checks may show the inputs, the expected and the returned values of
the failing run (the smallest one, when the failure was shrunk). Hidden
checks show only the sizes the failure was shrunk to — never their inputs
or expected values, nor the message at those sizes, which at the smallest
sizes could quote the whole expected answer. The rule is applied here,
where the example is built in the grader, so nothing stored or reported
later can hold more than this.

What a reply holds is the student's, so an example is bounded here too: at
most MAX_SHOWN items of a tuple or list, names of at most MAX_NAME characters,
a message of at most MAX_MESSAGE, and the whole JSON within EXAMPLE_BUDGET
(the earliest calls go first, then the example is replaced by a note).
grading.results enforces the check's budget again, whatever built it.
"""
from __future__ import annotations

import json
from types import ModuleType

import numpy as np

from autograder.authoring.checks import Sizes
from autograder.authoring.misconceptions import bind_arguments
from autograder.authoring.protocol import Opaque, TensorData, unmarked
from autograder.authoring.shown import int_too_long, shown, sized
from autograder.grading.results import CHECK_BUDGET, clip, omitted_example

MAX_VALUES = 64  # larger arrays are shown by shape and dtype only
MAX_CALLS = 3  # the last calls of the run; the failing one is usually the last
MAX_DEPTH = 2  # tuples in tuples shown; deeper ones by their length
MAX_SHOWN = 16  # items of a tuple or list shown; the rest are counted
MAX_NAME = 80  # characters of a type name or a text value
MAX_MESSAGE = 2 << 10  # bytes of a message or an exception's description
EXAMPLE_BUDGET = CHECK_BUDGET // 2  # bytes of one example's JSON


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
    example = {**sizes, "message": clip(unmarked(str(attempt.message)), MAX_MESSAGE), "calls": calls}
    failure = attempt.failure
    if failure is not None and failure.expected is not None:
        example["expected"] = value_json(failure.expected)
    text = json.dumps(example, allow_nan=False)
    if len(text) > EXAMPLE_BUDGET:  # what the student's code returned is what can be large: it goes first
        for call in example["calls"]:
            if "returned" in call:
                call["returned"] = {"note": "(too large to show: over the example's size budget)"}
        text = json.dumps(example, allow_nan=False)
    while len(text) > EXAMPLE_BUDGET and example["calls"]:
        example["calls"] = example["calls"][1:]  # the failing call is the last: it stays longest
        text = json.dumps(example, allow_nan=False)
    return text if len(text) <= EXAMPLE_BUDGET else omitted_example(len(text))


def load_example(text: str) -> dict | None:
    """The example stored with a check result, or None."""
    if not text:
        return None
    try:
        example = json.loads(text)
    except ValueError:
        return None
    return example if isinstance(example, dict) else None


def value_json(value, depth: int = 0):
    """A value as plain JSON: arrays as shape, dtype and (when small) rounded values; nesting at most MAX_DEPTH."""
    if isinstance(value, TensorData):
        return {**value_json(value.array, depth), "tensor": True}
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        described = {"shape": list(array.shape), "dtype": str(array.dtype)}
        # Bounded by every axis, not by the size alone: an empty array of shape (2**31, 0) would be 2**31 lists.
        # Floats as float64: a longdouble's tolist() gives NumPy scalars, which JSON cannot write.
        if array.size <= MAX_VALUES and max(array.shape, default=0) <= MAX_VALUES and array.dtype.kind in "biuf":
            described["values"] = _plain((array.astype(np.float64) if array.dtype.kind == "f" else array).tolist())
        return described
    if isinstance(value, (tuple, list, dict)) and depth >= MAX_DEPTH:
        return {"object": sized(value)}
    if isinstance(value, (tuple, list)):
        items = [value_json(v, depth + 1) for v in value[:MAX_SHOWN]]
        return {"items": items, **({"list": True} if isinstance(value, list) else {}),
                **({"more": len(value) - MAX_SHOWN} if len(value) > MAX_SHOWN else {})}
    if isinstance(value, dict):
        entries = [[shown(key, MAX_NAME), value_json(item, depth + 1)] for key, item in list(value.items())[:MAX_SHOWN]]
        return {"entries": entries, **({"more": len(value) - MAX_SHOWN} if len(value) > MAX_SHOWN else {})}
    if isinstance(value, Opaque):
        return {"object": value.type_name[:MAX_NAME]}
    if isinstance(value, str):
        return {"text": shown(value, MAX_NAME * 4)}  # quoted and escaped as Python writes it, never raw
    if isinstance(value, int) and not isinstance(value, bool) and int_too_long(value):
        return {"text": shown(value)}  # an int too long for JSON to write: in words
    if value is None or isinstance(value, (bool, int, float)):
        return _plain(value)
    return {"object": type(value).__name__[:MAX_NAME]}


def render_value(described) -> str:
    """`value_json`'s output as text a student reads (NumPy's own array notation)."""
    if isinstance(described, dict):
        if "note" in described:
            return str(described["note"])
        if "items" in described:
            shown_items = [render_value(v) for v in described["items"]]
            shown_items += [f"... {described['more']} more"] if described.get("more") else []
            if described.get("list"):
                return "[" + ", ".join(shown_items) + "]"
            return "(" + ", ".join(shown_items) + ("," if len(shown_items) == 1 else "") + ")"
        if "entries" in described:
            more = [f"... {described['more']} more"] if described.get("more") else []
            return "{" + ", ".join([f"{key}: {render_value(v)}" for key, v in described["entries"]] + more) + "}"
        if "text" in described:
            return str(described["text"])
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
        described["raised"] = clip(unmarked(reply.raised.describe(called=call.function)), MAX_MESSAGE)
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
