"""Trusted comparison of the gradients autograd gave a call with `backward=`, and what to do when it gave none.

Runs in the grader only. The values are compared, never the worker's account of its autograd state, which the
student's code could forge; that account only chooses the advice shown with a failure.
"""
from __future__ import annotations

from autograder.authoring.checks import CheckFailed, Tolerance
from autograder.authoring.compare import expect_close
from autograder.authoring.protocol import TensorData

# A result autograd cannot follow back to the inputs.
DETACHED = ("Keep every step in torch operations on the input tensors, with autograd on (no .detach(), .numpy(), "
            "torch.tensor(...) re-wrapping or torch.no_grad()), so autograd can follow from the result back to the "
            "inputs")
# PyTorch's "modified by an inplace operation": a tensor the backward pass needs was overwritten after its use.
IN_PLACE = ("A tensor autograd still needed was changed in place after it was used (x[...] = ..., masked_fill_, "
            "+=, or an out= argument): use the out-of-place form instead (masked_fill, torch.where, x = x * ...)")


def expect_gradients(reply, expected: dict, tol: Tolerance, what: str, terms: dict | None = None) -> None:
    """The gradients a call with `backward=` brought back match the trusted ones, input by input.

    expected: argument name -> its expected gradient, (..., shape of that argument), in the call's argument
    order (e.g. Q, K, V). terms: argument name -> the magnitudes of the terms its gradient sums (see expect_close).
    """
    if reply.grad_error:
        advice = IN_PLACE if "modified by an inplace operation" in reply.grad_error else DETACHED
        raise CheckFailed(f"{what}: {reply.grad_error.rstrip('.')}. {advice}")
    grads = tuple(reply.grads or ())
    for position, (name, exp) in enumerate(expected.items()):
        got = grads[position] if position < len(grads) else None
        if got is None:
            raise CheckFailed(f"{what}: no gradient reached {name}; compute the result from {name} with torch "
                              "operations so autograd can follow")
        expect_close(got.array if isinstance(got, TensorData) else got, exp, tol,
                     f"the gradient with respect to {name} of {what}", terms=(terms or {}).get(name))
