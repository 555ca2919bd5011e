"""Calls in this process, through the sandbox's own message code: no sandbox, the same verdicts.

For nbgrader's test cells, which run in the student's own kernel
(autograder.nbgrader.inkernel), and for timing the reference on a check's
calls (autograder.grading.calibration). Each Call is encoded by
`replies.encode_call` and framed by `wire.pack`, answered by
`worker._call` against the namespace, and the reply framed back and decoded
by `replies.read_reply`: arguments are fresh copies, replies plain data, and
every comparison and message is the one a sandboxed call gives. A per-call
alarm stands in for the sandbox's deadline, and output printed by the
called functions is captured, not shown.

What this cannot do is protect anything from the code it calls, which
shares the process: it is for code that is trusted anyway (the reference)
or that runs in its own kernel regardless (nbgrader).
"""
from __future__ import annotations

import contextlib
import io
import signal
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from autograder.authoring.protocol import Call, Reply
from autograder.sandbox import values, wire, worker
from autograder.sandbox.limits import Limits
from autograder.sandbox.replies import (
    CallFailed,
    ReplyRejected,
    Request,
    argument_trees,
    encode_call,
    past_limit,
    read_reply,
    reply_limit,
    too_large,
)
from autograder.sandbox.session import CapturedOutput
from autograder.sandbox.stream import Answer

WORKER_FRAME_LIMIT = 1 << 30  # what worker._serve accepts from the grader


class _Deadline(BaseException):
    """Raised into a student function at its time limit (BaseException, so `except Exception` lets it pass)."""


@dataclass
class _Alarm:
    """A one-shot per-call deadline by SIGALRM: in the main thread on POSIX; elsewhere there is none.

    One-shot on purpose: once it has rung it cannot ring again, so a ring
    that lands while it is being disarmed is absorbed by a second disarm and
    never escapes into the kernel's own code, which would kill the kernel.
    A function that catches the alarm and runs on is left to nbgrader's cell
    timeout; its call still counts as timed out.
    """

    seconds: float
    rang: bool = False
    _previous: object = None
    _installed: bool = False
    _outer: tuple = ((0.0, 0.0), 0.0)  # the interval timer this alarm replaced, and when

    def arm(self) -> None:
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            return
        self._previous = signal.signal(signal.SIGALRM, self._ring)
        self._installed = True
        self._outer = (signal.setitimer(signal.ITIMER_REAL, self.seconds), time.monotonic())

    def disarm(self) -> None:
        if not self._installed:
            return
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        self._installed = False
        (left, every), started = self._outer
        if left:  # the clock of the check making this call (grading.attempt.run_check) goes on where it was
            signal.setitimer(signal.ITIMER_REAL, max(left - (time.monotonic() - started), 1e-3), every)

    def _ring(self, _signum, _frame):
        self.rang = True
        raise _Deadline()


class CapturedText(io.TextIOBase):
    """A text stream into a CapturedOutput: keeps the first bytes, counts the rest."""

    def __init__(self, output: CapturedOutput):
        super().__init__()
        self._output = output

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._output.add(str(text).encode(errors="replace"))
        return len(text)


@dataclass
class InProcessSession:
    """Calls functions of a namespace in this process, through the sandbox's message code.

    namespace: a notebook's globals(), or the reference module's. limits: the
    assignment's (call_seconds, output_kib). Has the methods of `Session`
    that checks use, `call` and `stream`. seconds: the processor time each call took on this thread, in
    order (what a busy machine leaves alone, unlike the wall clock; and what the process's other threads,
    a progress bar or a Dask client, do not add to, unlike the process's time).
    """

    namespace: dict
    limits: Limits
    output: CapturedOutput | None = None  # None: a new one, capped at limits.output_kib
    calls: int = 0
    seconds: list = field(default_factory=list)

    def __post_init__(self):
        if self.output is None:
            self.output = CapturedOutput(self.limits.output_kib * 1024)

    def stream(self, calls: Iterable[Call | Request]) -> list[Answer]:
        """Each call's Answer, in turn, up to the first that gives no reply, as `Session.stream` gives them."""
        answers = []
        for call in calls:
            started = time.monotonic()
            try:
                answers.append(Answer(self.call(call), time.monotonic() - started))
            except CallFailed as failure:
                answers.append(Answer(failure, time.monotonic() - started))
                break
        return answers

    def call(self, call: Call | Request) -> Reply:
        """Run one call (a Request: one encoded already); raises CallTimedOut past its limit, as `Session.call`
        does."""
        request = call if isinstance(call, Request) else encode_call(call)
        call = request.call
        self.calls += 1
        header, buffers = _through_wire(*request.frame(self.calls), limit=WORKER_FRAME_LIMIT)
        seconds = call.seconds or self.limits.call_seconds
        alarm = _Alarm(seconds)
        try:
            with contextlib.redirect_stdout(CapturedText(self.output)), \
                    contextlib.redirect_stderr(CapturedText(self.output)):
                alarm.arm()
                started = time.thread_time()
                try:
                    answer = worker._call(header, buffers, self.namespace)
                finally:
                    alarm.disarm()
                    self.seconds.append(time.thread_time() - started)
        except _Deadline:
            alarm.disarm()  # it rang outside the function, perhaps inside disarm; spent, it cannot ring again
        if alarm.rang:
            raise past_limit(call.function, seconds)
        # The function worked on these buffers in place, as a sandboxed one works on shared memory.
        inputs = tuple(values.decode(tree, buffers) for tree in argument_trees(header)) if call.return_inputs else None
        reply_header, reply_buffers = answer
        if (reply_header.get("raised") or {}).get("type") == "KeyboardInterrupt":
            raise KeyboardInterrupt  # the cell was interrupted (e.g. nbgrader's cell timeout): stop it
        try:
            reply_header, reply_buffers = _through_wire(reply_header, reply_buffers, limit=reply_limit(call))
        except wire.FrameTooLarge as big:
            raise ReplyRejected(f"{call.function} {too_large(big)}") from None
        return read_reply(reply_header, reply_buffers, call, inputs)


def _through_wire(header: dict, buffers: list, limit: int) -> tuple[dict, list]:
    """One frame packed and parsed exactly as it crosses a sandbox's socket."""
    parser = wire.FrameParser(limit)
    frames = parser.feed(b"".join(wire.pack(header, buffers)))
    return frames[0]
