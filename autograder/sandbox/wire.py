"""The wire format between the trusted grader and an untrusted worker: frames.

Only plain data crosses: a frame is a 4-byte big-endian header length, a JSON
header, then raw bytes (buffers) the header refers to. What a header says of
a value (arrays, text, numbers, lists, tuples, dicts) is `sandbox.values`'
format; anything else is sent as the *name* of its type, never as the object.

The arrays of a call do not travel in the frame: the grader puts them in
shared memory (`sandbox.region`) and sends its file descriptor with the
frame, so it can read back what the function did to its arguments from
memory it owns, whatever the worker says.

This module runs on both sides of the boundary, so it imports only the
standard library. The grader reads frames with `FrameParser` and
`parse_header`, which trust nothing: headers are bounded in size and nesting
and hold no NaN or infinity, a frame's bytes are capped before they are read,
and nothing a worker sends is unpickled or evaluated.
"""
from __future__ import annotations

import json
import os
import socket
import struct

HEADER_LIMIT = 1 << 20  # bytes of JSON header accepted from the other side
MAX_TEXT = 300  # characters of a type name, an exception message or a detail
MAX_KINDS = 80  # built-in exception classes named for one exception: every one Python has (about 70)
MAX_BUFFERS = 1 << 16  # buffers of one frame: more than a message's values hold (values.MAX_ITEMS each)


class WireError(Exception):
    """The other side sent something that is not a well-formed message."""


class FrameTooLarge(WireError):
    """A frame announced more bytes than the reader accepts."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"message of {size} bytes is over the limit of {limit}")
        self.size, self.limit = size, limit


# ---------------------------------------------------------------- framing

# Built once, as `_HEADER_DECODER`: json.dumps with any option builds a new encoder at every call.
_HEADER_ENCODER = json.JSONEncoder(separators=(",", ":"))


def pack(header: dict, buffers: list) -> list:
    """Frame `header` and `buffers` (bytes-like) as a list of chunks to write."""
    header = dict(header, _buffers=[memoryview(b).nbytes for b in buffers])
    body = _HEADER_ENCODER.encode(header).encode()
    return [struct.pack(">I", len(body)), body, *buffers]


MAX_CHUNKS = 512  # chunks per system call (the kernel takes at most 1024)


def send(fd_or_sock, header: dict, buffers: list = ()) -> None:
    """Write one frame to a blocking socket or file descriptor."""
    views = views_of(pack(header, list(buffers)))
    while views:
        if isinstance(fd_or_sock, int):
            sent = os.writev(fd_or_sock, views[:MAX_CHUNKS])
        else:
            sent = fd_or_sock.sendmsg(views[:MAX_CHUNKS])
        views = after(views, sent)


# ---------------------------------------------------------------- stamps

# When a call ended, as the kernel saw it: the worker writes a small record on a datagram socket of its own at
# two moments of each call, and the kernel stamps each record with the time it was sent (SO_TIMESTAMPNS on the
# grader's end). The grader's own clock says when it got round to reading a reply, which on a busy machine can
# be long after the worker went on to the next call. A record is the call's id and the moment.
STAMP = struct.Struct("<qB")
RETURNED = 0  # the function returned and its reply is encoded: the call's end
SENT = 1  # its reply, which the socket could not take at once, is written whole: the next call may begin


def stamp(stamps, call_id, moment: int) -> None:
    """Mark `moment` of call `call_id` on the socket `stamps` (None: no stamps); never waits: a record the
    socket has no room for is left out, and the grader then goes by its own clock."""
    if stamps is None or type(call_id) is not int:
        return
    try:
        stamps.send(STAMP.pack(call_id, moment), socket.MSG_DONTWAIT)
    except (OSError, struct.error):
        pass


def send_reply(sock, stamps, call_id, header: dict, buffers: list) -> None:
    """The worker's reply to call `call_id`, marked on `stamps` (see STAMP): RETURNED before it is written
    and, if the socket would not take it whole at once, SENT after it is."""
    stamp(stamps, call_id, RETURNED)
    views = views_of(pack(header, list(buffers)))
    try:
        views = after(views, sock.sendmsg(views[:MAX_CHUNKS], [], socket.MSG_DONTWAIT))
    except BlockingIOError:
        pass
    if not views:
        return
    while views:
        views = after(views, sock.sendmsg(views[:MAX_CHUNKS]))
    stamp(stamps, call_id, SENT)


def views_of(chunks: list) -> list[memoryview]:
    """`chunks` as flat byte views, the empty ones left out."""
    views = [memoryview(c).cast("B") for c in chunks]
    return [v for v in views if v.nbytes]


def after(views: list[memoryview], sent: int) -> list[memoryview]:
    """What is left of `views` once their first `sent` bytes are written.

    A frame goes out in one gathered write, not one per chunk: a reader woken
    by a 4-byte length prefix alone would only go back to waiting.
    """
    while sent and views:
        if sent < views[0].nbytes:
            return [views[0][sent:], *views[1:]]
        sent -= views[0].nbytes
        views = views[1:]
    return views


class FrameParser:
    """Incremental frame reader: feed it bytes (or let it read a socket), take complete frames out.

    `limit` caps the bytes of one frame's buffers; a larger frame raises
    FrameTooLarge before its bytes are read, so a hostile side cannot make
    the reader hold gigabytes. `limit_for`, when set, gives each frame's cap
    from its header and its size instead (a stream's replies each have their
    own, and all of them together one more). Buffers
    come out as memoryviews of one allocation per frame, filled straight from
    the socket.
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.limit_for = None  # (header, the frame's buffers' bytes) -> the cap of those bytes
        self._error: WireError | None = None  # found after frames that were returned; raised next
        self._head = bytearray()  # length prefix and JSON header of the frame being read
        self._header: dict | None = None
        self._sizes: list[int] = []
        self._payload = bytearray()
        self._filled = 0

    @property
    def midway(self) -> bool:
        """Whether part of a frame has been read and the rest has not."""
        return bool(self._head) or self._header is not None

    def receive(self, sock) -> list[tuple[dict, list]]:
        """Read once from `sock` (non-blocking or ready); raises EOFError when it is closed."""
        if self._error is not None:
            raise self._error
        if self._header is not None and self._filled < len(self._payload):
            count = sock.recv_into(memoryview(self._payload)[self._filled:])
            if not count:
                raise EOFError
            self._filled += count
            return self.feed(b"")
        data = sock.recv(1 << 16)
        if not data:
            raise EOFError
        return self.feed(data)

    def feed(self, data) -> list[tuple[dict, list]]:
        """The frames `data` completes, in order. A frame that cannot be read raises WireError, but only once the
        frames before it are returned: the error comes with the next feed, so no good frame is lost with it."""
        if self._error is not None:
            raise self._error
        frames: list = []
        try:
            self._feed(memoryview(data).cast("B"), frames)
        except WireError as error:
            if not frames:
                raise
            self._error = error
        return frames

    def _feed(self, view: memoryview, frames: list) -> None:
        while True:
            if self._header is None:
                self._head += view
                view = memoryview(b"")
                if not self._start_frame():
                    return
                view = memoryview(self._head[self._header_end:])
                self._head = bytearray()
            take = min(len(view), len(self._payload) - self._filled)
            self._payload[self._filled:self._filled + take] = view[:take]
            self._filled += take
            view = view[take:]
            if self._filled < len(self._payload):
                return
            frames.append(self._finish_frame())
            if not view:
                return

    def _start_frame(self) -> bool:
        if len(self._head) < 4:
            return False
        (size,) = struct.unpack(">I", self._head[:4])
        if size > HEADER_LIMIT:
            raise WireError(f"message header of {size} bytes is over the limit")
        if len(self._head) < 4 + size:
            return False
        header = parse_header(bytes(self._head[4:4 + size]))
        sizes = header.pop("_buffers", None)
        if not (isinstance(sizes, list) and len(sizes) <= MAX_BUFFERS
                and all(type(n) is int and n >= 0 for n in sizes)):
            raise WireError("message header is not valid")
        limit = self.limit if self.limit_for is None else self.limit_for(header, sum(sizes))
        if sum(sizes) > limit:
            raise FrameTooLarge(sum(sizes), limit)
        self._header, self._sizes, self._header_end = header, sizes, 4 + size
        self._payload, self._filled = bytearray(sum(sizes)), 0
        return True

    def _finish_frame(self) -> tuple[dict, list]:
        whole = memoryview(self._payload)
        buffers, start = [], 0
        for size in self._sizes:
            buffers.append(whole[start:start + size])
            start += size
        header, self._header = self._header, None
        self._payload, self._filled = bytearray(), 0
        return header, buffers


def parse_header(data: bytes) -> dict:
    """A frame's JSON header as a dict; WireError for anything else.

    Deep nesting (which makes a recursive decoder fail), NaN and infinity
    (which JSON itself does not have) and text that is not UTF-8 are refused here.
    """
    try:
        header = _HEADER_DECODER.decode(data.decode("utf-8"))
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError):
        raise WireError("message header is not valid JSON") from None
    if not isinstance(header, dict):
        raise WireError("message header is not a JSON object")
    return header


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


# Built once: json.loads with any option builds a new decoder at every call, a third of a small header's cost
# (both ends read and write about a hundred headers a submission).
_HEADER_DECODER = json.JSONDecoder(parse_constant=_no_constant)
