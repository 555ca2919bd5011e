"""What a session's stream keeps of each call: one sent and not yet answered, or one to send (again).

Its clock (when it could begin, its deadline, the waits credited to it) is
set by the stream (sandbox.stream) as the worker comes to it.
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.authoring.protocol import Call
from autograder.sandbox.replies import Request
from autograder.sandbox.waiting import Extensions, ProcessorUse


@dataclass
class InFlight:
    """A call sent to the current child and not yet answered."""

    request: Request
    id: int
    args: list  # the header's trees of its arguments (replies.argument_trees), to read them back
    layout: list  # where its buffers are in the region
    sent_at: float  # when its frame was handed to the socket (set by _send, just before)
    grace: bool  # it may be run again warm if it is still importing at its limit (sandbox.grace)
    warm_up: bool  # it pays the next call's one-time cost; its reply is not an answer
    again: bool  # the warm run again of a call that was importing at its limit
    started: float = 0.0  # when it could begin: sent, and the worker done with the call before it (call_clock)
    deadline: float = 0.0  # when it is stopped, unless the extensions say otherwise
    last_read: float = 0.0  # until when a reply it has begun is read, deadline or not
    before: ProcessorUse | None = None  # the child's latest processor use read before it was sent
    extensions: Extensions | None = None
    importing: bool = False
    where: str = ""  # where the child said its code was when it was stopped (sandbox.stopped_at)

    @property
    def call(self) -> Call:
        return self.request.call


@dataclass
class Resend:
    """A call to send (again): a call pulled from the caller, or one in flight when its child was let go."""

    request: Request
    grace: bool = True
    warm_up: bool = False
    again: bool = False

    @classmethod
    def of(cls, sent: InFlight) -> Resend:
        return cls(sent.request, sent.grace, sent.warm_up, sent.again)
