"""When a call began and ended (sandbox.call_clock), with real processes and the kernel's own stamps.

The stream's behaviour with a grader that reads late is in test_stream; here, what each piece may be
trusted for: a record stamped by the kernel at its sending, a worker's marks bounded by what the grader saw,
and a send the grader was held up around charged only for what the worker computed meanwhile.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from autograder.sandbox import wire
from autograder.sandbox.call_clock import Ended, Marks, begun
from autograder.sandbox.channel import Channel, call_pair, stamp_pair
from autograder.sandbox.replies import CapturedOutput
from autograder.sandbox.waiting import processor_use


def test_the_kernel_stamps_each_record_when_it_was_sent_not_when_it_was_read():
    ours, theirs = stamp_pair()
    (calls, their_calls), (output, their_output) = call_pair(), os.pipe()
    channel = Channel(calls, output, CapturedOutput(1024), 1 << 20, lambda: None, ours)
    try:
        wire.stamp(theirs, 7, wire.RETURNED)
        sent = time.monotonic()
        time.sleep(0.3)
        wire.stamp(theirs, 7, wire.SENT)
        theirs.send(b"not a record")  # what a submission may send: left out
        stamps = channel.stamps()
        wire.stamp(theirs, 8, wire.RETURNED)
        theirs.close()  # the child gone: what it sent is read, then nothing more
        assert [call_id for call_id, _, _ in channel.stamps()] == [8] and channel.stamps() == []
    finally:
        channel.close()
        for end in (theirs, their_calls):
            end.close()
        os.close(their_output)
    assert [(call_id, moment) for call_id, moment, _ in stamps] == [(7, wire.RETURNED), (7, wire.SENT)]
    assert abs(stamps[0][2] - sent) < 0.05 and stamps[1][2] - stamps[0][2] >= 0.29


def test_a_workers_marks_are_bounded_by_what_the_grader_saw():
    marks = Marks()
    in_flight = {3, 4}
    marks.note([(3, wire.RETURNED, 10.2), (3, wire.SENT, 10.3), (3, wire.RETURNED, 10.25), (9, wire.RETURNED, 1.0)],
               in_flight)
    assert marks.ended(3, seen=11.0, started=10.0) == Ended(10.2, 10.3, True)  # the earliest of each, as marked
    # Not in flight: dropped. Unmarked, a call ended when the grader read it, and says so.
    assert marks.ended(9, seen=11.0, started=10.0) == Ended(11.0, 11.0, False)
    # Marked after the grader saw the reply, or before the call began: within what the grader saw.
    marks.note([(4, wire.RETURNED, 12.0), (4, wire.SENT, 13.0)], in_flight)
    assert marks.ended(4, seen=11.0, started=10.0) == Ended(11.0, 11.0, True)
    marks.note([(4, wire.RETURNED, 9.0), (4, wire.SENT, 8.0)], in_flight)
    assert marks.ended(4, seen=11.0, started=10.0) == Ended(10.0, 10.0, True)
    marks.note([(4, wire.RETURNED, 10.5)], in_flight)  # no SENT: written at once, done when it returned
    assert marks.ended(4, seen=11.0, started=10.0) == Ended(10.5, 10.5, True)


@pytest.fixture(params=["sleeps", "spins"])
def process(request):
    """(its /proc directory, what it does): a process that sleeps, or one that computes, all along."""
    code = {"sleeps": "import time; time.sleep(60)", "spins": "while True: pass"}[request.param]
    child = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(0.3)  # started, and importing nothing any more
    yield f"/proc/{child.pid}", request.param
    child.kill()
    child.wait()


def test_a_send_the_grader_was_held_up_around_charges_only_what_the_worker_computed(process):
    proc, does = process
    idle = processor_use(proc)
    before = time.monotonic()
    time.sleep(0.3)  # the grader, held up between reading the clock and sending
    began = begun(before, idle, lambda: processor_use(proc))
    if does == "spins":  # it computed all along: charged from before, but for the time it could not run
        # (waiting for a processor, or taken by the host: steal, summed over the machine's processors)
        now = processor_use(proc)
        assert before <= began <= before + (now.waited - idle.waited) + (now.stolen - idle.stolen) + 0.02
    else:  # it had not begun: the hold-up is not the call's
        assert began > before + 0.29
