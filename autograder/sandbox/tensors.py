"""A call's PyTorch side, in the worker: tensors in, gradients out, and the library state each call starts from.

Runs in the child (sandbox.worker), after the student's code has loaded. Checks run in an order the
student does not choose, so no call may see what an earlier call switched: each starts with autograd,
PyTorch's default dtype and NumPy's error handling as the file's top-level code left them (a notebook's graded
function: as they were when its check cell ran, which never saw the cells after it). A
`torch.set_grad_enabled(False)` left on by one function would otherwise cost another, graded later, its
gradient checks, and the feedback would blame that other one. The warnings filters count too: a debugging cell's
`warnings.filterwarnings("error")` turns NumPy's divide-by-zero warning into an error for every call after it.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from autograder.sandbox import values, wire

# Taken when the zygote imports this module, before any student code: a file that replaces np.seterr changes
# what its own code calls, not what restores the state between calls.
_GETERR, _SETERR = np.geterr, np.seterr
# PyTorch's threads in a call, as the zygote set them (libraries.keep_threads): a file's own
# torch.set_num_threads(64) had its next parallel call start threads past the sandbox's process limit, and the
# worker exit.
THREADS = 1


class LibraryState:
    """What a function can switch for every later call: read once after loading, restored before each call (and
    PyTorch's threads set back to the zygote's one, whatever the file set).

    A file that replaced PyTorch's switches with functions of its own (or broke them) has its calls start from
    whatever those leave: restoring never stops the worker, which would cost the file every later check."""

    def __init__(self, source: str = "your file's top-level code"):
        """source: what left the switches so, for a message (`backward`)."""
        self.source = source
        self.errors = _GETERR()
        self.warnings = _warnings_now()
        torch = sys.modules.get("torch")
        try:
            self.grad, self.dtype = (torch.is_grad_enabled(), torch.get_default_dtype()) if torch else (None, None)
        except Exception:  # noqa: BLE001 - replaced by the file's own code
            self.grad = self.dtype = None

    def changes(self, other: LibraryState) -> list[str]:
        """The switches `other` holds otherwise: "grad", "dtype", "errors", "warnings"."""
        pairs = {"grad": (self.grad, other.grad), "dtype": (self.dtype, other.dtype),
                 "errors": (self.errors, other.errors), "warnings": (self.warnings, other.warnings)}
        return [switch for switch, (mine, theirs) in pairs.items() if _differ(mine, theirs)]

    def restore(self) -> str:
        """Set the switches back; what left them so (`source`)."""
        _SETERR(**self.errors)
        _set_warnings(self.warnings)
        torch = sys.modules.get("torch")
        if torch is not None and self.grad is not None:
            try:
                torch.set_grad_enabled(self.grad)
                torch.set_default_dtype(self.dtype)
                if torch.get_num_threads() != THREADS:  # set through torch._C: torch.set_num_threads is kept
                    torch._C.set_num_threads(THREADS)
            except Exception:  # noqa: BLE001 - replaced by the file's own code
                pass
        return self.source


def _differ(mine, theirs) -> bool:
    """Whether two states of a switch differ; a filter whose category's own `==` raises counts as a change."""
    try:
        return bool(mine != theirs)
    except Exception:  # noqa: BLE001 - the file's own class in a warnings filter
        return True


def _warnings_now() -> list | None:
    """A copy of the warnings filters (filterwarnings changes the list in place); None where the file broke it."""
    try:
        return list(warnings.filters)
    except Exception:  # noqa: BLE001 - the file's own code replaced warnings.filters with something else
        return None


def _set_warnings(kept: list) -> None:
    """Put the warnings filters back as `kept`, in the list Python reads them from now (a file may have replaced
    warnings.filters); nothing where the file broke the module."""
    if kept is None:
        return
    try:
        warnings.filters[:] = kept
        warnings._filters_mutated()  # Python caches which warnings were shown under the filters before
    except Exception:  # noqa: BLE001 - the file's own code replaced warnings.filters with something else
        pass


def to_tensor(value, requires_grad: bool):
    """An array argument as a tensor sharing its memory (so the grader sees in-place changes); others as given."""
    torch = sys.modules["torch"]
    if not isinstance(value, np.ndarray):
        return value
    tensor = torch.from_numpy(value)
    if requires_grad and tensor.is_floating_point():
        tensor.requires_grad_(True)
    return tensor


def backward(result, args, upstream_trees, buffers, out, off_by: str) -> dict:
    """Backpropagate the grader's upstream gradients; return d(output)/d(each input). off_by: what left autograd
    off when the call began ("" where it was on)."""
    torch = sys.modules["torch"]
    outputs = values.items_of(result) if isinstance(result, (tuple, list)) else (result,)  # as encoded
    pairs = []
    for position, (output, tree) in enumerate(zip(outputs, upstream_trees)):
        upstream = values.decode(tree, buffers)
        if upstream is None:
            continue
        if not isinstance(output, torch.Tensor) or output.grad_fn is None:
            which = "the output" if len(outputs) == 1 else f"returned value {position + 1} of {len(outputs)}"
            return {"grad_error": f"{which} is not connected to the autograd graph (no grad_fn): "
                                  + _why_unconnected(off_by, torch.is_grad_enabled())}
        pairs.append((output, torch.from_numpy(np.array(upstream)).to(output.dtype)))
    try:
        # sum(output * upstream) has the same gradients as backward(output, upstream), and a scalar
        # backward skips torch's lazy import of sympy (~1 s per fresh child).
        total = sum((output * upstream).sum() for output, upstream in pairs)
        total.backward()
    except (RuntimeError, AttributeError) as error:
        # PyTorch's own hint (anomaly detection) is for its users' debugging, and would crowd out the grader's.
        return {"grad_error": f"backward failed: {str(error).split(' Hint: ')[0][:wire.MAX_TEXT]}"}
    return {"grads": [values.encode(a.grad, out) if isinstance(a, torch.Tensor) else {"t": "none"}
                      for a in args]}


def _why_unconnected(off_by: str, at_return: bool) -> str:
    if off_by:
        return ("autograd was already switched off when the call began (torch.set_grad_enabled(False) or "
                f"torch.no_grad() left on by {off_by}), so nothing was recorded")
    if not at_return:
        return ("autograd was switched off during the call (torch.set_grad_enabled(False) in this function or one "
                "it calls), so nothing was recorded; use `with torch.no_grad():` only around what needs no gradient")
    return "it was detached, or computed outside PyTorch"
