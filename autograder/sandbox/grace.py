"""The one-time grace: a call still importing a module at its limit is not slow yet.

A library's lazy import on a first call (sympy, under `torch.broadcast_shapes`) can take longer
than a small call's whole limit, in every fresh child. `Session.call` lets such a call run on up to
`Limits.one_time_seconds` and then runs it again, warm, timing that second run against the limit.
This module holds the rule's state and its messages; the session holds the clock.
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.sandbox.replies import CallTimedOut


@dataclass
class OneTimeGrace:
    """Whether a submission may still have a call run past its limit for a one-time cost, and for how long.

    seconds: the cap (Limits.one_time_seconds). The grace is the submission's, not its child's: a
    restarted child is forgiven the same cost again, while a call given the grace that does not prove
    its cost one-time (not done by the cap, or too slow when run again warm) ends it, so a hang that
    imports costs one extension at most, and one that imports nothing none.
    """

    seconds: float
    available: bool = True

    def cap(self, limit: float) -> float:
        """How long a call whose limit is `limit` may run if it is still importing at that limit."""
        return max(limit, self.seconds) if self.available else limit

    def not_done(self, function: str, cap: float, limit: float) -> CallTimedOut:
        """The grace is over: the call was importing at its limit and had not returned by `cap` either."""
        self.available = False
        return CallTimedOut(f"{function} was still importing modules at its limit, so it was given up to {cap:g} s "
                            "for that one-time cost, and had not returned by then either; it was stopped: it did "
                            f"not return within its limit of {limit:g} s")

    def slow_again(self, function: str, first: float, slow: CallTimedOut) -> CallTimedOut:
        """The grace is over: the call finished within the cap but timed out when run again warm (`slow`)."""
        self.available = False
        return CallTimedOut(f"{function}'s first call took {first:.2g} s, over its limit, while it imported modules "
                            f"(a one-time cost), so it was run again; {slow}", slow.how)
