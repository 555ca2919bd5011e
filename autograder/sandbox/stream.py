"""A session's calls sent as one stream, and their replies read as they come.

The calls a submission sees are fixed before any of its answers is judged
(grading.plan), so the grader need not wait for one reply before it sends
the next call: it sends them as it plans them, and the worker answers them in
order, back to back. What the grader establishes about each call stays its
own, call by call:

- time: a call's clock starts when the worker is done with the call before
  it (or when the grader sent it, if later) and stops when its function
  returns, as the kernel saw those moments (sandbox.call_clock), however late
  the grader reads the replies. Its deadline is extended only by the time it
  waited for a processor (sandbox.waiting). A reply begun is read whole,
  deadline or not, for as long as a call may run at most (waiting.MAX_FACTOR
  times its limit), since a worker whose reply is larger than its socket holds
  waits for the grader to read it;
- arguments after the call are read from the grader's shared memory, where
  each call in flight has arrays of its own (sandbox.region);
- processes left running are counted from outside after each reply. The
  worker is already running the next call by then, so a process found then
  could be that call's: the calls from the one that found it are sent
  again, one at a time, in a fresh child, where the count is exact;
- a call still importing a module at its limit ends its child; a fresh one
  runs its function on other inputs first, to pay that one-time cost, and
  then the call again, timed against its limit (sandbox.grace). Nothing is
  sent while that warm-up runs: the call's inputs must not reach the child
  before the warm-up is done, or the warm-up could work out its answer;
- a large call (more than ALONE_BYTES of arrays: where speed is checked, at
  T = 512) is sent only to a worker with nothing in flight. A call queued
  behind others is in the child's reach before its clock starts, and a child
  that answered the calls before it slowly, within their limits, could have
  worked it out meanwhile (on another thread) and then answer it at once.

The first call without a usable reply ends the stream and its child: the
calls sent after it are never answered, and the caller decides what to send
next (work as large as a call that timed out is not sent again). A child
whose call is stopped at its limit is first asked where its code is, for the
student's message (sandbox.stopped_at).
"""
from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from autograder.authoring.protocol import Call, Reply
from autograder.sandbox import stopped_at, values, wire
from autograder.sandbox.call_clock import Frame, Marks, Midway, begun, read_by
from autograder.sandbox.channel import NoReply, died
from autograder.sandbox.in_flight import InFlight, Resend
from autograder.sandbox.replies import (
    CallFailed,
    CallTimedOut,
    LeftRunning,
    ReplyRejected,
    Request,
    Stopped,
    argument_trees,
    encode_call,
    read_reply,
    reply_limit,
)
from autograder.sandbox.waiting import MAX_FACTOR, Extensions, ProcessorUse, WaitCredit, processor_use

ALONE_BYTES = 1 << 16  # a call with more bytes of arrays than this waits until the worker has nothing in flight


@dataclass(frozen=True)
class Answer:
    """What one call brought back: its Reply, or the CallFailed that ended it; seconds: the call's wall-clock time."""

    reply: Reply | CallFailed
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        return isinstance(self.reply, CallFailed)


@dataclass
class CallStream:
    """Sends `calls` to `session` and reads their replies, up to the first call without a usable reply.

    session: a sandbox.session.Session (its child, region, channel, clock and grace). calls: each a Call,
    or a Request, which is a call encoded already. lockstep: one call in flight at a time, as after a
    process was found running.
    """

    session: object
    calls: Iterable[Call | Request]
    lockstep: bool = False
    _source: Iterator[Call | Request] = field(init=False)
    _queue: deque = field(default_factory=deque)  # Resend, before anything new is pulled
    _flight: deque = field(default_factory=deque)  # InFlight, in the order sent
    _exhausted: bool = False
    _frames: deque = field(default_factory=deque)  # call_clock.Frame, not looked at
    _arrived: tuple | None = None  # the head call's reply: (header, buffers, call_clock.Ended)
    _reading: tuple = (None, None)  # the latest (child's /proc directory, ProcessorUse) read, see _keep
    _marks: Marks = field(default_factory=Marks)  # the worker's marks of when calls ended
    _midway: Midway = field(default_factory=Midway)  # the child's use as a frame was first seen half written
    _doubted: bool = False  # the worker computed while a frame was half written since the last reply was taken
    _ended: NoReply | None = None  # how the child went wrong, for the first call whose reply had not come

    def __post_init__(self):
        self._source = iter(self.calls)

    def run(self) -> list[Answer]:
        """Each call's Answer, in order; the last is a failure if a call gave no usable reply."""
        answers = []
        while True:
            failed = self._fill()
            if failed is not None:
                return answers + [failed]
            if not self._flight:
                return answers
            answer = self._settle()
            if answer is not None:
                answers.append(answer)
                if answer.failed:
                    return answers

    # -------------------------------------------------------------- sending

    def _fill(self) -> Answer | None:
        """Send what may go now; the failure of a call whose child could not be started, if that happened."""
        # Nothing goes after a warm-up while it runs (the call it warms up must stay unseen), so a warm-up in
        # flight is always the last call sent.
        while self._ended is None and not (self.lockstep and self._flight) and not self._late() \
                and not (self._flight and self._flight[-1].warm_up):
            item = self._next()
            if item is None:
                return None
            if self._flight and item.request.call.payload_bytes() > ALONE_BYTES:
                self._queue.appendleft(item)  # sent once the calls before it are answered
                return None
            if not self.session.has_child():
                failure = self.session.start_child_for_calls()
                if failure is not None:
                    return Answer(failure)
            if not self._send(item):
                self._queue.appendleft(item)
                return None
            self._take(0.0)  # replies already there, and when each next call began
        return None

    def _next(self) -> Resend | None:
        if self._queue:
            return self._queue.popleft()
        if self._exhausted:
            return None
        call = next(self._source, None)
        self._exhausted = call is None
        return None if call is None else Resend(call if isinstance(call, Request) else encode_call(call))

    def _send(self, item: Resend) -> bool:
        """Put the call's arrays in shared memory and send it; False when there is no room until replies come."""
        session = self.session
        region = session.region
        call_id = session.next_id()
        header, buffers = item.request.frame(call_id)
        if not region.fits(buffers):
            if self._flight:
                return False
            region.reuse()
        header["shared"] = layout = region.place(buffers)
        header["region"] = region.number
        fds = [region.fd] if region.unsent else []
        region.unsent = False
        proc, use = self._reading
        sent = InFlight(item.request, call_id, argument_trees(header), layout, 0.0, item.grace, item.warm_up,
                        item.again, before=use if proc == session.child_proc() else None)
        self._flight.append(sent)
        self._limits[call_id] = reply_limit(item.request.call)
        waiting = self._current() is sent  # the worker has nothing else to do: it begins once this arrives
        start = processor_use(session.child_proc(), files=session.proc_files) if waiting else None
        if start is not None:
            self._reading = (session.child_proc(), start)
        frame = wire.pack(header, [])
        sent.sent_at = time.monotonic()
        session.channel.send(frame, fds)
        if waiting:
            reading = functools.partial(processor_use, session.child_proc(), files=session.proc_files)
            self._start(sent, begun(sent.sent_at, start, reading), start)
        return True

    def _current(self) -> InFlight | None:
        """The call the worker is on: the first in flight whose reply has not come."""
        index = 0 if self._arrived is None else 1
        return self._flight[index] if len(self._flight) > index else None

    def _late(self) -> bool:
        """Whether the call the worker is on is past its deadline (then it is seen to before more is sent)."""
        current = self._current()
        return current is not None and time.monotonic() >= current.deadline

    def _start(self, sent: InFlight, when: float, use: ProcessorUse | None = None) -> None:
        """The call is at the head of the worker's queue from `when`: its clock and its wait credit begin.

        use: the child's processor use read by `when` (None: read now; see call_clock.read_by)."""
        session = self.session
        seconds = self._seconds(sent.call)
        budget_left = session.deadline - when
        sent.started, sent.deadline = when, when + min(seconds, budget_left)
        sent.last_read = when + min(MAX_FACTOR * seconds, budget_left)
        sent.extensions = Extensions(WaitCredit(session.child_proc(), seconds, start=use, files=session.proc_files,
                                                company=session.has_company),
                                     budget_left)
        if session.channel is not None:  # None: the child is gone, and this call's failure is known
            session.channel.output_mark = session.output.total  # the flood limit is per call

    # -------------------------------------------------------------- reading

    @property
    def _limits(self) -> dict:
        return self.session.reply_limits

    def _seconds(self, call: Call) -> float:
        return call.seconds or self.session.limits.call_seconds

    def _take(self, seconds: float) -> None:
        """Read what the child sends within `seconds`, then look at it in order until the head call's reply.

        A reply begun is read whole before the grader turns back to planning or judges a deadline: a worker
        whose reply is larger than the socket holds waits, mid-send, for the grader, and that wait must not
        run down its call's clock, however late the grader comes. How the child went wrong is kept for the
        call at the head once the replies read before are settled."""
        channel = self.session.channel
        if channel is None:  # the child is gone: how it went is in `_ended`, or this is all that is known
            self._ended = self._ended or died("its connection closed")
            return
        try:
            self._keep(channel.wait(seconds))
            while channel.parser.midway and (current := self._current()) is not None \
                    and time.monotonic() < current.last_read:
                self._midway.begin(self._child_use)
                self._keep(channel.wait(current.last_read - time.monotonic()))
        except NoReply as stop:
            self._ended = self._ended or stop
        self._sort()

    def _keep(self, frames: list) -> None:
        if not frames:
            return
        seen = time.monotonic()
        proc = self.session.child_proc()
        prior = self._reading[1] if self._reading[0] == proc else None
        use = self._child_use(proc)
        if use is not None:
            self._reading = (proc, use)
        self._marks.note(self.session.channel.stamps(), self._limits)  # the calls in flight
        computed = self._midway.computed(use, self.session.has_company)
        self._frames.extend(Frame(header, buffers, seen, use, prior, computed) for header, buffers in frames)

    def _child_use(self, proc: str | None = None):
        proc = proc or self.session.child_proc()
        return processor_use(proc, files=self.session.proc_files) if proc else None

    def _sort(self) -> None:
        """Note the head call's import, keep its reply; the frames after its reply wait for the next head."""
        while self._frames and self._arrived is None:
            frame = self._frames.popleft()
            self._doubted |= frame.computed  # whichever frame was half written: the next reply's marks are doubted
            header, head = frame.header, self._flight[0] if self._flight else None
            if head is None or header.get("id") != head.id:
                continue  # a reply to a call dropped or let go, or a frame no honest worker sends
            if header.get("event") == "importing":
                head.importing = True
            elif header.get("event") == "where":
                head.where = head.where or stopped_at.place_text(header, head.call.function)
            elif header.get("event") == "reply":
                ended = self._marks.ended(head.id, frame.seen, head.started, believed=not self._doubted)
                self._doubted = False
                self._arrived = (header, frame.buffers, ended)
                following = self._current()
                if following is not None:  # the worker went on to it as soon as it was done with this one
                    start = max(ended.done, following.sent_at)
                    self._start(following, start, read_by(start, (frame.prior, following.before), frame.use))

    def _settle(self) -> Answer | None:
        """Wait for the head call's reply and judge what the sandbox saw of it; None when it must be sent again."""
        session = self.session
        head = self._flight[0]
        seconds = self._seconds(head.call)
        budget_left = session.deadline - head.started
        deadline = head.deadline
        try:
            while True:
                if self._arrived is None and self._ended is None:
                    self._take(max(deadline - time.monotonic(), 0.0))
                # A reply is judged by when its function returned, however late the grader came to it; one
                # not marked is taken as in time (the grader cannot tell).
                if self._arrived is not None:
                    at = self._arrived[2].returned
                    if at <= deadline or not self._arrived[2].marked:
                        break
                elif self._ended is not None:
                    raise self._ended
                else:
                    at = time.monotonic()
                    if at < deadline:
                        continue
                    self._take(0.0)  # what came while the grader was held up before it read the clock
                    if self._arrived is not None or self._ended is not None:
                        continue
                deadline = head.extensions.extended(deadline, head.started)
                if deadline is None:
                    raise NoReply(Stopped.TIMEOUT)
        except NoReply as stop:
            took = time.monotonic() - head.started
            graced = stop.how is Stopped.TIMEOUT and budget_left > seconds and head.importing and head.grace \
                and session.grace.available
            if stop.how.timed_out and not graced and self._arrived is None:
                self._ask_where(head)
            session.stop_child()
            self._flight.popleft()
            warm_up = session.grace.warm_up(head.request) if graced else None
            if warm_up is not None:
                self._send_again([Resend(warm_up, grace=False, warm_up=True),
                                  Resend(head.request, grace=False, again=True)])
                return None
            failure = self._failure(head, stop, seconds, budget_left)
            return self._failed(head, session.grace.not_warmed(failure) if graced else failure, took)
        header, buffers, ended = self._arrived
        self._arrived = None
        if session.channel is not None:
            session.channel.drain_output()
        return self._replied(head, header, buffers, ended.returned)

    def _replied(self, head: InFlight, header: dict, buffers: list, returned: float) -> Answer | None:
        session = self.session
        took = returned - head.started
        self._flight.popleft()
        self._limits.pop(head.id, None)
        extra = session.extra_processes()  # counted from outside the sandbox
        if extra > 0 and self._flight and not self.lockstep:
            self._let_go(head)  # the call after it may have started them: count again, one call at a time
            return None
        if extra > 0:
            session.stop_child()
            left = f"{extra} process{'es' * (extra > 1)} running after it returned, which the grader stopped"
            return self._failed(head, LeftRunning(f"{head.call.function} left {left}; do not start processes"), took)
        self._sort()  # the next reply may have come with this one
        if head.warm_up:
            return None
        inputs = None
        if head.call.return_inputs:  # read back from the grader's own memory, whatever the worker says
            inputs = tuple(values.decode(tree, session.region.read(head.layout)) for tree in head.args)
        if not self._flight:
            session.region.reuse()
        try:
            return Answer(read_reply(header, buffers, head.call, inputs), took)
        except ReplyRejected as rejected:
            session.stop_child()  # the calls after it went on in the worker; the next ones get a fresh child
            return Answer(rejected, took)

    def _failed(self, head: InFlight, failure: CallFailed, took: float) -> Answer:
        """`head`'s failure as the last answer; a warm-up's is that of the call it warms up, which comes next."""
        if head.warm_up:
            call = (self._flight or self._queue)[0].request.call
            failure = self.session.grace.warm_up_failed(call.function, self._seconds(call), failure)
        return Answer(failure, took)

    def _let_go(self, head: InFlight) -> None:
        """Stop the child and send the calls in flight again, the head first, one at a time in a fresh child."""
        self.session.stop_child()
        self._send_again([Resend.of(head)])
        self.lockstep = True

    def _send_again(self, first: list[Resend]) -> None:
        """The child is gone: send `first`, then the calls still in flight, again in a fresh one."""
        again = first + [Resend.of(sent) for sent in self._flight]
        self._flight.clear()
        self._limits.clear()
        self._frames.clear()
        self._marks.clear()
        self._arrived = None
        self._ended = None  # that child's end, if it came, is not a call's
        self._queue.extendleft(reversed(again))

    def _ask_where(self, head: InFlight) -> None:
        """Ask the child where the head call's code is, and read its answer for a moment (sandbox.stopped_at)."""
        if not self.session.ask_where():
            return
        wait = stopped_at.AnswerWait.begin(self._child_use)
        while not head.where and self._ended is None and self._arrived is None and (left := wait.left()) > 0:
            self._take(left)

    def _failure(self, head: InFlight, stop: NoReply, seconds: float, budget_left: float) -> CallFailed:
        """The failure of the head call, which gave no reply, with the one-time grace's rules applied."""
        failure = self.session.failure(head.call.function, stop, seconds, budget_left < seconds)
        if head.again and isinstance(failure, CallTimedOut):
            return self.session.grace.slow_again(head.call.function, failure)
        if failure.how is Stopped.TIMEOUT:
            (failure.idle, failure.asleep, failure.resting, failure.busy, failure.in_kernel,
             failure.spent) = head.extensions.account()
        if isinstance(failure, CallTimedOut):
            failure.where = head.where
        return failure
