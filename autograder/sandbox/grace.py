"""The one-time grace: a call still importing at its limit is run again, warm, in a fresh process.

A library's lazy import on a first call (sympy, under `torch.broadcast_shapes`) can take longer
than a small call's whole limit, in every fresh child. A call still importing at its limit is
stopped there, and a fresh child runs the same function first on other inputs of the same shapes,
with up to `Limits.one_time_seconds`, to pay that cost; then the call itself, timed against its
limit, is the reply.

Only the worker says a call is importing, and the worker is the student's process, so the rule
gives nothing to a call that merely says so. The run that is timed happens in a process that has
never seen its inputs: the child that ran it first is gone, the scratch space is wiped with it
(Session.stop_child), and the warm-up's inputs are drawn here, unpredictably, so no answer can be
kept from the first run or worked out in the warm-up. A function that computes its answer slowly
is as slow the second time. This module holds the rule's state, its warm-up and its messages; the
stream holds the clock.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from autograder.sandbox.replies import CallFailed, CallTimedOut, Request, Stopped, encode_call


@dataclass
class OneTimeGrace:
    """Whether a submission may still have a call that was importing at its limit run again, warm.

    seconds: how long the warm-up may take (Limits.one_time_seconds). The grace is the submission's,
    not its child's: every fresh child pays a lazy import again and is forgiven it again, while a call
    that does not prove its cost one-time (its warm-up not done within `seconds`, or the call too slow
    once warm) ends it, so a hang that imports costs one warm-up at most.
    """

    seconds: float
    available: bool = True

    def warm_up(self, request: Request) -> Request | None:
        """The call that pays `request`'s one-time cost in a fresh child: its function on other inputs.

        Every floating-point array (arguments, keyword arguments, upstream gradients) is drawn afresh
        with the same shape and dtype; sizes, masks and flags stay as they were, so the call takes the
        same path. Its limit is the grace's; its reply is never looked at. None for a call with no
        floating-point array (a mask of size n): its warm-up would be the call itself, whose answer the
        timed run could hand back."""
        call = request.call
        if not any(_drawable(a) for a in (*call.args, *call.kwargs.values(), *(call.backward or ()))):
            return None
        rng = np.random.default_rng()  # seeded from the OS: the student cannot predict these inputs
        call = dataclasses.replace(
            call, args=tuple(_redrawn(a, rng) for a in call.args),
            kwargs={name: _redrawn(a, rng) for name, a in call.kwargs.items()},
            backward=None if call.backward is None else tuple(_redrawn(g, rng) for g in call.backward),
            return_inputs=False, seconds=self.seconds)
        return encode_call(call)

    def warm_up_failed(self, function: str, limit: float, failure: CallFailed) -> CallTimedOut:
        """The grace is over: the call was importing at its limit, and its warm-up gave no reply (`failure`)."""
        self.available = False
        timeout = CallTimedOut(f"{function} did not return within its limit of {limit:g} s. It was still importing "
                               "modules then (a one-time cost), so a fresh process ran it on other inputs first, with "
                               f"up to {self.seconds:g} s, to pay that cost; that run gave no reply either: {failure}",
                               Stopped.TIMEOUT)
        timeout.at_limit = False  # it ends on the warm-up's time, not on the call's limit
        return timeout

    def not_warmed(self, timeout: CallTimedOut) -> CallTimedOut:
        """The timeout of a call still importing at its limit that could not be warmed up (`warm_up` gave None)."""
        stopped = CallTimedOut(f"{timeout}. It was still importing modules then (a one-time cost), but its "
                               "arguments hold no floating-point array the grader could draw afresh for a warm-up "
                               "run, so it was not run again", timeout.how)
        stopped.cause = "import what the function needs at the top of the file, where loading pays for it"
        return stopped

    def slow_again(self, function: str, slow: CallTimedOut) -> CallTimedOut:
        """The grace is over: the call was importing at its limit, and timed out again once warm (`slow`)."""
        self.available = False
        return CallTimedOut(f"{function} was still importing modules at its limit (a one-time cost), so it was run "
                            f"again in a fresh process once that cost was paid; {slow}", slow.how)


def _drawable(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "fc" and value.size > 0


def _redrawn(value, rng: np.random.Generator):
    return rng.standard_normal(value.shape).astype(value.dtype) if _drawable(value) else value
