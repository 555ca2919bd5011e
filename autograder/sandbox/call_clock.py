"""When each call of a stream began and ended, whatever the grader was doing meanwhile.

The grader reads replies when it gets round to them. On a busy machine that
can be long after the worker returned and went on to the next call, which
then ran on a clock not yet started: a slow function finished "within" its
limit. So the moments are taken from what the kernel recorded:

- the worker marks two moments of each call on a datagram socket of its own
  (wire.STAMP): its function returned, and (for a reply too large to write at
  once) its reply is written whole. The kernel stamps each record with the
  time it was sent (channel.Channel.stamps);
- a call sent to a worker with nothing else to do begins when it is sent;
  if the grader was held up around the send, the call is charged only the
  processor time the worker had since (`begun`). One sent behind others
  begins when the worker is done with the one before, or when it was sent if
  later: a hold-up there is charged to it, and at worst makes a call idle at
  its limit, which is graded again (grading.confirm);
- a call's wait credit (sandbox.waiting) counts from the child's processor
  use read at or before it began (`read_by`).

The marks are the worker's own, so they are bounded by what the grader saw
itself: a call ends no later than its reply was read, and the next begins no
later either. A worker that forges or drops its marks gets at most what a
grader reading late would have given it; an honest one is timed as it ran.

A reply begun is read whole however long it takes (sandbox.stream), so a
worker could mark its return, write the start of its reply, and only then
compute the answer, while the grader waits for the rest. An honest worker
only writes once its reply has begun (the reply is encoded before its
return is marked), so one that used more than MIDWAY_COMPUTING of
processor time while its reply was half written, or ran another process
meanwhile, has the marks of its next reply ignored (`Midway`), whichever
frame was half written (a frame no call waits for, written to take the
blame, included): the call ends when the grader read the reply's last byte.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Container
from dataclasses import dataclass, field

from autograder.sandbox import wire
from autograder.sandbox.waiting import TICK, ProcessorUse

HELD_UP = 0.001  # seconds: a send that took the grader longer than this was held up (see `begun`)


@dataclass(frozen=True)
class Frame:
    """A frame read from the child, and what the grader knew when it read it."""

    header: dict
    buffers: list
    seen: float  # when the grader read it (time.monotonic)
    use: ProcessorUse | None  # the child's processor use read then
    prior: ProcessorUse | None  # the latest read before then
    computed: bool = False  # the worker computed while a frame was half written: the next reply's marks are doubted


@dataclass(frozen=True)
class Ended:
    """When a call ended (time.monotonic): its function returned, and the worker could go on to the next."""

    returned: float
    done: float
    marked: bool  # False: the worker marked no return (or the kernel stamped nothing): `returned` is when the
    # grader read the reply, which says nothing of whether the call was in time


@dataclass
class Marks:
    """The worker's marks of the calls in flight: (call id, wire moment) -> the earliest stamp of it."""

    _kept: dict = field(default_factory=dict)

    def note(self, stamps: list[tuple[int, int, float]], in_flight: Container[int]) -> None:
        """Keep `stamps` (Channel.stamps) of the calls `in_flight` (their ids); any other record is dropped."""
        for call_id, moment, when in stamps:
            if call_id in in_flight:
                self._kept[call_id, moment] = min(when, self._kept.get((call_id, moment), when))

    def ended(self, call_id: int, seen: float, started: float, believed: bool = True) -> Ended:
        """When the call's function returned, and when the worker was done with it and could go on: as marked,
        within [started, seen] (seen: when the grader read its reply). believed: False for a reply the worker
        computed while writing (`Midway`), which ended when it was read."""
        marked = self._kept.pop((call_id, wire.RETURNED), None)
        if not believed:
            self._kept.pop((call_id, wire.SENT), None)
            return Ended(max(started, seen), max(started, seen), True)
        returned = seen if marked is None else max(started, min(seen, marked))
        sent = self._kept.pop((call_id, wire.SENT), returned)
        return Ended(returned, max(returned, min(seen, sent)), marked is not None)

    def clear(self) -> None:
        self._kept.clear()


MIDWAY_COMPUTING = 0.02  # seconds of processor time: sendmsg's copying takes a few ms of a 2 MB reply


@dataclass
class Midway:
    """The child's processor use when the grader first saw a frame half written, until that frame is whole."""

    began: ProcessorUse | None = None

    def begin(self, read: Callable[[], ProcessorUse | None]) -> None:
        """Note the child's use now (`read` reads it), unless the frame being written was noted already."""
        if self.began is None:
            self.began = read()

    def computed(self, use: ProcessorUse | None, company: Callable[[], bool]) -> bool:
        """Whether, since `begin`, the child computed or ran another process; `use`: its use now, as the frame
        was read whole. Ends the half-written frame (the next `begin` notes another)."""
        began, self.began = self.began, None
        if began is None:
            return False
        if use is None:  # the child is gone: whatever it did is unknown, so its marks are not believed
            return True
        return (max(use.ran - began.ran, use.all_threads - began.all_threads - 1 / TICK) > MIDWAY_COMPUTING
                or use.reaped > began.reaped or company())


def read_by(when: float, readings: tuple, otherwise: ProcessorUse | None) -> ProcessorUse | None:
    """Of `readings` (ProcessorUse or None), the latest read by `when`; `otherwise` if none was.

    A call's wait credit counts from a reading before the call began: one taken later would leave out the
    wait the call had meanwhile, and the processor time too (grading.confirm would take it for idle)."""
    by = [use for use in readings if use is not None and use.at <= when]
    return max(by, key=lambda use: use.at) if by else otherwise


def begun(before: float, idle: ProcessorUse | None, read: Callable[[], ProcessorUse | None]) -> float:
    """When a call sent to a waiting worker from `before` until now began, at the earliest.

    Normally `before`. A grader held up longer than HELD_UP around the send would charge the call for its
    own wait: then the call began no earlier than `before`, and had no more of the time since than the
    worker's processor time since `idle` (read before sending) says; `read` reads it now."""
    after = time.monotonic()
    now = read() if idle is not None and after - before > HELD_UP else None
    if now is None:
        return before
    computed = max(now.ran - idle.ran, now.all_threads - idle.all_threads)
    return min(after, max(before, after - computed))
