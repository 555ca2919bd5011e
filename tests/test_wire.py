"""Framing over a real socket: whatever is sent arrives whole, however the kernel splits the writes."""
from __future__ import annotations

import socket
import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.sandbox import wire

buffers = st.lists(st.binary(max_size=3000), max_size=700)  # more chunks than one gathered write takes


@settings(max_examples=40, deadline=None)
@given(chunks=buffers, big=st.integers(0, 3 << 20))
def test_a_frame_arrives_whole_over_a_socketpair(chunks, big):
    payload = [*chunks, bytes(range(256)) * (big // 256)]  # one buffer larger than the socket's buffer
    ours, theirs = socket.socketpair()
    received = []

    def read():
        parser = wire.FrameParser(1 << 30)
        while not received:
            received.extend(parser.receive(theirs))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        wire.send(ours, {"event": "reply", "id": 7}, payload)
        reader.join(timeout=30)
    finally:
        ours.close()
        theirs.close()
    [(header, got)] = received
    assert header["id"] == 7
    assert [bytes(b) for b in got] == [bytes(b) for b in payload]


@given(sizes=st.lists(st.integers(0, 50), max_size=20), data=st.data())
def test_after_drops_exactly_the_bytes_written(sizes, data):
    views = wire.views_of([bytes([i % 256]) * size for i, size in enumerate(sizes)])
    whole = b"".join(bytes(v) for v in views)
    sent = data.draw(st.integers(0, len(whole)))
    assert b"".join(bytes(v) for v in wire.after(views, sent)) == whole[sent:]
