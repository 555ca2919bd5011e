"""A session's calls as one stream (sandbox.stream), through the real sandbox.

What streaming must not change: each call's reply is its own, in order; a call
that hangs is stopped at its own limit and ends the stream; a call that
imported a module ends its batch in the worker, whose queued calls run once,
after it, not twice. What it must change: calls are in the worker's socket
before the first reply, where sending one at a time leaves none.
"""
from __future__ import annotations

import copy
import time

import numpy as np
import pytest

from autograder.authoring.protocol import Call
from autograder.grading.submission import read_submission
from autograder.sandbox.limits import Limits
from autograder.sandbox.replies import CallTimedOut, encode_call
from autograder.sandbox.session import Session

SOURCE = '''
import fcntl, os, termios, time
import numpy as np

_calls = []


def queued(x):
    """How many requests wait behind this call, once the grader has had time to send more: those the worker
    has read already (its inbox, found in its own frames) and the bytes still in its socket."""
    import sys
    time.sleep(0.2)
    frame = sys._getframe(1)
    while frame is not None and "inbox" not in frame.f_locals:
        frame = frame.f_back
    inbox = frame.f_locals["inbox"]
    waiting = int.from_bytes(fcntl.ioctl(inbox.sock.fileno(), termios.FIONREAD, bytes(4)), "little")
    return np.array([len(inbox.frames), waiting])


def counted(x):
    """x, and how many calls of this function this child has run, this one included."""
    _calls.append(x)
    return np.array([float(x), float(len(_calls))])


def imports(x):
    import colorsys  # a module no worker has loaded: this call begins importing
    return np.array([colorsys.rgb_to_hsv(0.0, 0.0, 1.0)[0], float(x)])


def hangs(x):
    while True:
        pass


def spins(seconds):
    """Computes for `seconds` of processor time, then returns them."""
    began = time.process_time()
    while time.process_time() - began < seconds:
        pass
    return np.array([seconds])


def large(x):
    """4 MB, through a sending buffer made small first, so the worker sends it in many writes."""
    import socket
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            if fd > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                socket.socket(fileno=os.dup(fd)).setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
        except OSError:
            pass
    return np.ones(1 << 19)
'''
LIMITS = Limits(call_seconds=1.0)


@pytest.fixture
def session(sandbox, tmp_path):
    path = tmp_path / "attention.py"
    path.write_text(SOURCE)
    with Session(sandbox, read_submission(path).worker_spec("attention"), LIMITS) as session:
        assert not session.open().failure
        yield session


def test_a_stream_sends_later_calls_before_the_first_reply(session):
    # One call at a time: nothing waits. (Run first, so what a first call imports, which would pause the
    # stream, is imported by then.)
    assert session.call(Call("queued", (0,))).value.sum() == 0
    answers = session.stream([Call("queued", (0,))] + [Call("counted", (i,)) for i in range(5)])
    assert not any(answer.failed for answer in answers)
    assert answers[0].reply.value.sum() > 0  # the calls after it were waiting, read or in its socket


def test_each_reply_is_its_own_call_in_order_with_no_wait_for_any_deadline(session):
    started = time.monotonic()
    answers = session.stream(Call("counted", (i,), seconds=1.0) for i in range(40))
    assert [answer.reply.value.tolist() for answer in answers] == [[float(i), float(i + 1)] for i in range(40)]
    assert time.monotonic() - started < 10  # a grader that waited out each 1 s limit would take 40


def test_a_hang_ends_the_stream_at_its_own_limit(session):
    answers = session.stream([Call("counted", (1,)), Call("hangs", (0,), seconds=0.3), Call("counted", (2,))])
    assert [answer.failed for answer in answers] == [False, True]
    # At its limit, or later by the time it waited for a processor on a loaded machine (at most 5x).
    assert isinstance(answers[1].reply, CallTimedOut) and 0.3 <= answers[1].seconds < 5 * 0.3 + 0.5
    # The next call gets a fresh child, which has run nothing yet.
    assert session.call(Call("counted", (3,))).value.tolist() == [3.0, 1.0]


def test_calls_queued_behind_an_import_run_once_after_it(session):
    answers = session.stream([Call("counted", (1,)), Call("imports", (7,)), Call("counted", (2,)),
                              Call("counted", (3,))])
    values = [answer.reply.value.tolist() for answer in answers]
    # The worker dropped the two calls behind the import and the grader sent them again: each ran once.
    assert values == [[1.0, 1.0], [0.6666666666666666, 7.0], [2.0, 2.0], [3.0, 3.0]]
    assert np.isclose(values[1][0], 2 / 3)


def test_a_call_encoded_once_is_sent_again_and_again_as_itself(session):
    # A kept plan's calls are encoded once and sent to every student of a set (grading.plan.KeptPlans),
    # here three times in one stream, two of them sent again after the import dropped them.
    counted = encode_call(Call("counted", (5,)))
    header = copy.deepcopy(counted.header)
    answers = session.stream([counted, encode_call(Call("imports", (7,))), counted, counted])
    assert [answer.reply.value.tolist() for answer in answers] == [[5.0, 1.0], [2 / 3, 7.0], [5.0, 2.0], [5.0, 3.0]]
    assert counted.header == header and "id" not in counted.header  # no sending wrote into it


def test_a_large_reply_is_read_whole_while_the_grader_is_busy_planning(session):
    """The calls come from a generator that takes 0.2 s per call (planning): a reply the grader read only
    between two of them, a socket's worth at a time, would take seconds and time out at its 0.5 s limit."""
    def planned():
        yield Call("large", (0,), seconds=0.5)
        for i in range(10):
            time.sleep(0.2)
            yield Call("counted", (i,))
    answers = session.stream(planned())
    assert [answer.failed for answer in answers] == [False] * 11, answers[0].reply
    assert answers[0].reply.value.shape == (1 << 19,) and answers[0].seconds < 0.5


def test_a_reply_already_there_when_the_grader_comes_late_is_not_a_timeout(session):
    """The planning after the last call takes longer than that call's limit; its reply came long before."""
    def planned():
        yield Call("counted", (1,), seconds=0.2)
        time.sleep(0.5)
    answers = session.stream(planned())
    assert [answer.failed for answer in answers] == [False], answers[0].reply
    assert answers[0].reply.value.tolist() == [1.0, 1.0]


def test_a_reply_already_read_is_taken_at_once_not_at_the_deadline(session):
    """The second call's reply is read while the grader settles the first: settling it must not wait for
    anything more to come (here, its 3 s limit)."""
    def planned():
        yield Call("counted", (1,), seconds=3.0)
        time.sleep(0.1)
        yield Call("counted", (2,), seconds=3.0)
    started = time.monotonic()
    answers = session.stream(planned())
    assert [answer.reply.value.tolist() for answer in answers] == [[1.0, 1.0], [2.0, 2.0]]
    assert time.monotonic() - started < 2.0


def test_a_large_reply_begun_when_the_grader_comes_late_is_read_whole(session):
    """The planning of the next call outlasts the large call's limit: the worker returned in time and waits,
    mid-send, for the grader. A reply begun is the function's return, whatever the deadline says by then."""
    def planned():
        yield Call("large", (0,), seconds=0.3)
        time.sleep(0.8)
        yield Call("counted", (1,))
    answers = session.stream(planned())
    assert [answer.failed for answer in answers] == [False, False], answers[0].reply
    assert answers[0].reply.value.shape == (1 << 19,)


def test_a_slow_call_is_timed_from_when_the_worker_began_it_however_late_the_grader_reads(session):
    """The grader plans for 1 s after sending a 0.5 s computation with a 0.2 s limit: by the time it reads the
    replies, the worker finished both calls long ago. Timed from when the grader read the first reply, the
    second took no time at all; by the kernel's stamps of the worker's marks it took 0.5 s, and that is
    what counts. A quick call read just as late keeps its reply."""
    def planned():
        yield Call("counted", (1,))
        yield Call("spins", (0.5,), seconds=0.2)
        time.sleep(1.0)
    answers = session.stream(planned())
    assert [answer.failed for answer in answers] == [False, True], answers[-1].reply
    assert isinstance(answers[1].reply, CallTimedOut) and not answers[1].reply.idle

    def quick():
        yield Call("counted", (2,), seconds=0.2)
        yield Call("spins", (0.01,), seconds=0.2)
        time.sleep(1.0)
    answers = session.stream(quick())
    assert [answer.failed for answer in answers] == [False, False], answers[-1].reply
    assert answers[1].seconds < 0.2
