"""The wire format between the trusted grader and an untrusted worker.

Only plain data crosses: a frame is a 4-byte big-endian header length, a JSON
header, then the raw bytes of any arrays the header describes. Values are
arrays (numeric and bool dtypes only, as dtype + shape + bytes), tuples and
lists of values, None, plain numbers and short strings; anything else is sent
as the *name* of its type, never as the object.

The arrays of a call do not travel in the frame: the grader puts them in
shared memory (`sandbox.region`) and sends its file descriptor with the
frame, so it can read back what the function did to its arguments from
memory it owns, whatever the worker says.

This module runs on both sides of the boundary, so it imports only the
standard library, NumPy, `autograder.text` and the protocol's value types. The grader decodes with
`parse_header` and `decode`, which trust nothing: headers are bounded in size
and nesting and hold no NaN or infinity, dtypes come from an allow-list,
shapes must match the byte counts, sizes and counts are capped, and every
string is made valid, visible text. Nothing a worker sends is unpickled or
evaluated.
"""
from __future__ import annotations

import json
import os
import struct

import numpy as np

from autograder.authoring.protocol import Opaque, TensorData
from autograder.text import safe

HEADER_LIMIT = 1 << 20  # bytes of JSON header accepted from the other side
MAX_DEPTH = 4
MAX_ITEMS = 64
MAX_DIMS = 32
MAX_TEXT = 300

# The dtypes an array may carry across the boundary, by their wire name.
DTYPES = {
    np.dtype(name).str: np.dtype(name)
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64", "complex64", "complex128")
}


class WireError(Exception):
    """The other side sent something that is not a well-formed message."""


class FrameTooLarge(WireError):
    """A frame announced more bytes than the reader accepts."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"message of {size} bytes is over the limit of {limit}")
        self.size, self.limit = size, limit


# ---------------------------------------------------------------- framing

def pack(header: dict, buffers: list) -> list:
    """Frame `header` and `buffers` (bytes-like) as a list of chunks to write."""
    header = dict(header, _buffers=[memoryview(b).nbytes for b in buffers])
    body = json.dumps(header, separators=(",", ":")).encode()
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
    the reader hold gigabytes. Buffers come out as memoryviews of one
    allocation per frame, filled straight from the socket.
    """

    def __init__(self, limit: int):
        self.limit = limit
        self._head = bytearray()  # length prefix and JSON header of the frame being read
        self._header: dict | None = None
        self._sizes: list[int] = []
        self._payload = bytearray()
        self._filled = 0

    def receive(self, sock) -> list[tuple[dict, list]]:
        """Read once from `sock` (non-blocking or ready); raises EOFError when it is closed."""
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
        frames = []
        view = memoryview(data).cast("B")
        while True:
            if self._header is None:
                self._head += view
                view = memoryview(b"")
                if not self._start_frame():
                    return frames
                view = memoryview(self._head[self._header_end:])
                self._head = bytearray()
            take = min(len(view), len(self._payload) - self._filled)
            self._payload[self._filled:self._filled + take] = view[:take]
            self._filled += take
            view = view[take:]
            if self._filled < len(self._payload):
                return frames
            frames.append(self._finish_frame())
            if not view:
                return frames

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
        if not (isinstance(sizes, list) and len(sizes) <= MAX_ITEMS * MAX_ITEMS
                and all(type(n) is int and n >= 0 for n in sizes)):
            raise WireError("message header is not valid")
        if sum(sizes) > self.limit:
            raise FrameTooLarge(sum(sizes), self.limit)
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
        header = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError, MemoryError, UnicodeDecodeError):
        raise WireError("message header is not valid JSON") from None
    if not isinstance(header, dict):
        raise WireError("message header is not a JSON object")
    return header


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


# ---------------------------------------------------------------- values

def encode(value, buffers: list, depth: int = 0) -> dict:
    """Describe `value` as a JSON-able tree, appending array bytes to `buffers` (whole: never a sample)."""
    if value is None:
        return {"t": "none"}
    if isinstance(value, (bool, int, float)) and type(value) in (bool, int, float):
        return {"t": "scalar", "value": value if not isinstance(value, float) or np.isfinite(value) else repr(value)}
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return _encode_array(np.asarray(value), buffers)
    torch = _torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        array = value.detach().cpu().resolve_conj().resolve_neg().numpy()
        tree = _encode_array(array, buffers)
        if tree["t"] == "array":
            grad_fn = type(value.grad_fn).__name__ if value.grad_fn is not None else None
            tree.update(t="tensor", requires_grad=bool(value.requires_grad), grad_fn=grad_fn)
        return tree
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list) and depth < MAX_DEPTH:
        if len(value) > MAX_ITEMS:
            return {"t": "opaque", "type": type(value).__name__, "detail": f"{len(value)} items"}
        return {"t": type(value).__name__, "items": [encode(v, buffers, depth + 1) for v in value]}
    if isinstance(value, str) and type(value) is str:
        return {"t": "opaque", "type": "str", "detail": value[:MAX_TEXT]}
    return {"t": "opaque", "type": _type_name(value)}


def _encode_array(array: np.ndarray, buffers: list) -> dict:
    array = np.asarray(array)  # a subclass travels as its base data
    if array.dtype.str not in DTYPES:
        return {"t": "opaque", "type": "numpy.ndarray", "detail": f"dtype={array.dtype}"}
    buffers.append(np.ascontiguousarray(array).data.cast("B"))
    return {"t": "array", "dtype": array.dtype.str, "shape": list(array.shape), "buf": len(buffers) - 1}


def decode(tree, buffers: list, depth: int = 0):
    """Rebuild a value from `encode`'s tree, validating every field.

    Raises WireError on anything malformed. Arrays come back as base
    `np.ndarray` (never a subclass), views of the received bytes (writable
    when those are, as a call's arguments in shared memory are).
    """
    if not isinstance(tree, dict) or depth > MAX_DEPTH:
        raise WireError("value description is not valid")
    kind = tree.get("t")
    if kind == "none":
        return None
    if kind == "scalar":
        value = tree.get("value")
        if isinstance(value, str) and value in ("nan", "inf", "-inf"):
            return float(value)
        if type(value) not in (bool, int, float):
            raise WireError("scalar is not a number")
        return value
    if kind in ("array", "tensor"):
        array = _decode_array(tree, buffers)
        if kind == "tensor":
            grad_fn = tree.get("grad_fn")
            return TensorData(array, tree.get("requires_grad") is True,
                              safe(grad_fn, MAX_TEXT) if grad_fn is not None else None)
        return array
    if kind in ("tuple", "list"):
        items = tree.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise WireError("sequence is not valid")
        values = [decode(item, buffers, depth + 1) for item in items]
        return tuple(values) if kind == "tuple" else values
    if kind == "opaque":
        return Opaque(safe(tree.get("type"), MAX_TEXT), safe(tree.get("detail", ""), MAX_TEXT))
    raise WireError(f"unknown value kind {safe(kind, 40)!r}")


def _decode_array(tree: dict, buffers: list) -> np.ndarray:
    dtype = DTYPES.get(tree.get("dtype"))
    shape, index = tree.get("shape"), tree.get("buf")
    if dtype is None:
        raise WireError(f"array dtype {safe(tree.get('dtype'), 40)!r} is not allowed")
    if not _is_shape(shape):
        raise WireError("array shape is not valid")
    if type(index) is not int or not 0 <= index < len(buffers):
        raise WireError("array refers to a missing buffer")
    data = buffers[index]
    if _count(shape) * dtype.itemsize != memoryview(data).nbytes:
        raise WireError("array bytes do not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _is_shape(shape) -> bool:
    return isinstance(shape, list) and len(shape) <= MAX_DIMS and all(type(n) is int and n >= 0 for n in shape)


def _count(shape: list) -> int:
    """Entries of an array of `shape`, in Python integers: an int64 product could wrap to a small number."""
    count = 1
    for n in shape:
        count *= n
    return count


def _type_name(value) -> str:
    cls = type(value)
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"[:MAX_TEXT]


def _torch_module():
    import sys
    return sys.modules.get("torch")
