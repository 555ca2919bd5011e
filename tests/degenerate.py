"""Degenerate answers: the right shape, no arithmetic. The suite must give them nothing.

For every function of the stub, `write_degenerate` builds a submission:
tests/fixtures/submissions/correct/plain.py with that one function replaced by
an answer that computes nothing of what the function is for (issue 11):

| variant | what the replaced function returns |
| --- | --- |
| zeros, ones | arrays of the right shape and dtype filled with 0 / 1 (False / True for a mask) |
| uniform | rows of 1/Nk over the last axis; for a pair (C, A): A uniform and C = A V, the values' mean |
| identity | the identity matrix over the last two axes, broadcast to the right shape |
| echo | its first array argument unchanged (the first argument if none is an array; twice for a pair) |
| random | random values of the right shape (random booleans for a mask) |
| raises | nothing: it always raises ValueError, as softmax and attention do for an all-masked row |
| wrapped | the right NumPy result as torch tensors, outside autograd (plain.py's own NumPy code) |

Only shapes come from the arguments, by the expressions in RETURNS, which
mirror the stub's docstrings. The degenerate code runs in the sandbox like
any submission and never sees the reference.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from conftest import PLAIN, STUB

VARIANTS = ("zeros", "ones", "uniform", "identity", "echo", "random", "raises", "wrapped")


@dataclass(frozen=True)
class Returns:
    """What a function returns, for building a degenerate answer of the right shape.

    shapes: one Python expression over the function's parameters per
        returned array, as the stub's docstring gives it (two for (C, A)).
    kind: "float", "bool" (a mask) or "tensor" (float torch tensors).
    numpy: the NumPy function whose result the `wrapped` variant hands back as tensors.
    values: for a pair (C, A), the parameter holding V, so the `uniform` variant returns C = A V.
    """

    shapes: tuple[str, ...]
    kind: str = "float"
    numpy: str | None = None
    values: str | None = None


_PAIR = ("_batch(Q, K, V) + (Q.shape[-2], V.shape[-1])", "_batch(Q, K, V) + (Q.shape[-2], K.shape[-2])")

RETURNS = {
    "score": Returns(("_batch(Q, K) + (Q.shape[-2], K.shape[-2])",)),
    "additive_score": Returns(("(Q.shape[0], K.shape[0])",)),
    "causal_mask": Returns(("(n_q, n_q if n_k is None else n_k)",), kind="bool"),
    "padding_mask": Returns(("(len(lengths), 1, n_k)",), kind="bool"),
    "apply_mask": Returns(("S.shape",)),
    "softmax": Returns(("S.shape",)),
    "context": Returns(("_batch(A, V) + (A.shape[-2], V.shape[-1])",)),
    "attention": Returns(_PAIR, values="V"),
    "attention_torch": Returns(_PAIR, kind="tensor", numpy="attention", values="V"),
}

# Runs inside the submission, after plain.py's own definitions. Names start with `_degenerate`
# or `_` so they never shadow a function the grader calls.
_HELPERS = '''

# ---- degenerate answers (tests/degenerate.py): right shapes, no arithmetic
import numpy as _np
import torch as _torch


def _batch(*arrays):
    """The broadcast batch axes of arrays shaped (..., rows, columns)."""
    return tuple(_np.broadcast_shapes(*(tuple(a.shape[:-2]) for a in arrays)))


def _float_dtype(args):
    """The dtype a right answer has: the inputs' floating dtype (float64 when none is floating)."""
    dtypes = [_np.dtype(str(a.dtype).replace("torch.", "")) for a in args if hasattr(a, "dtype")]
    floating = [d for d in dtypes if d.kind == "f"]
    return _np.result_type(*floating) if floating else _np.dtype(_np.float64)


def _fill(variant, shape, kind, dtype):
    shape = tuple(int(n) for n in shape)
    if variant == "zeros":
        return _np.zeros(shape, dtype=bool if kind == "bool" else dtype)
    if variant == "ones":
        return _np.ones(shape, dtype=bool if kind == "bool" else dtype)
    if variant == "uniform":
        return _np.full(shape, 1.0 / shape[-1], dtype=dtype)
    if variant == "identity":
        eye = _np.eye(shape[-2], shape[-1], dtype=bool if kind == "bool" else dtype)
        return _np.broadcast_to(eye, shape).copy()
    if variant == "random":
        values = _np.random.default_rng(0).random(shape)
        return values < 0.5 if kind == "bool" else values.astype(dtype)
    raise AssertionError(variant)


def _numpy(value):
    return value.detach().numpy() if isinstance(value, _torch.Tensor) else value


def _tensor(value):
    return _torch.from_numpy(_np.ascontiguousarray(value))


def _degenerate(variant, args, shapes, kind, right, values=None):
    """A degenerate answer. args: every parameter in order; shapes: one per returned array;
    right: the NumPy function whose result `wrapped` returns as tensors; values: V, for a pair."""
    pair = len(shapes) == 2
    if variant == "raises":
        raise ValueError("this answer always raises")
    if variant == "echo":
        first = next((a for a in args if hasattr(a, "shape")), args[0])
        return (first, first) if pair else first
    if variant == "wrapped":
        result = right(*[_numpy(a) for a in args])
        return tuple(_tensor(r) for r in result) if pair else _tensor(result)
    made = [_fill(variant, shape, kind, _float_dtype(args)) for shape in shapes]
    if variant == "uniform" and values is not None:
        made[0] = (made[1] @ _numpy(values)).astype(made[1].dtype)
    if kind == "tensor":
        made = [_tensor(m) for m in made]
    return tuple(made) if pair else made[0]
'''


def stub_signatures() -> dict[str, ast.FunctionDef]:
    """The stub's functions by name, in the stub's order."""
    tree = ast.parse(STUB.read_text())
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


def degenerate_source(function: str, variant: str) -> str:
    """plain.py with `function` replaced by its `variant` degenerate answer (a later def wins)."""
    node = stub_signatures()[function]
    returns = RETURNS[function]
    parameters = [a.arg for a in node.args.args]
    right = f"_right_{function}"
    replacement = f'''

{right} = {returns.numpy or function}


def {function}({ast.unparse(node.args)}):
    return _degenerate({variant!r}, ({", ".join(parameters)},), [{", ".join(returns.shapes)}], {returns.kind!r},
                       {right}, values={returns.values or "None"})
'''
    return PLAIN.read_text() + _HELPERS + replacement


def write_degenerate(directory: Path, function: str, variant: str) -> Path:
    """The submission file for one degenerate answer, named after it (the name is the student id)."""
    path = Path(directory) / f"degenerate_{function}_{variant}.py"
    path.write_text(degenerate_source(function, variant))
    return path
