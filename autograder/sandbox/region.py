"""The shared memory where a call's arrays live: the grader's `SharedRegion`, the worker's mapping of it.

Like `wire`, this module runs on both sides of the boundary (it is shipped to
the worker), so it imports only the standard library and `wire`.
"""
from __future__ import annotations

import ctypes
import fcntl
import mmap
import os

from autograder.sandbox.wire import WireError

ALIGN = 64  # bytes: arrays in shared memory start on cache-line boundaries


class SharedRegion:
    """Shared memory the grader owns, holding the buffers of the calls in flight to one worker child.

    One region per worker child at a time: the grader writes a call's buffers
    with `place`, after those of the calls still in flight, sends the layout
    in the call's header with the region's number (and the region's file
    descriptor with the first call that uses it), and the worker's function
    works on them in place there (`shared_buffers`), so `read` afterwards
    shows the arguments as the function left them. Space is reused only once
    every call placed is answered (`reuse`), and a region is replaced by a
    larger one only then, so no call in flight ever loses its arrays. A new
    child gets a new region, so nothing of an earlier child's calls is in it.

    Nothing the worker does to the region can hurt the grader:
    - its size is sealed once set (F_SEAL_SHRINK, F_SEAL_GROW, and F_SEAL_SEAL
      so no other seal can be added). Seals belong to the memory itself, so
      they hold for every descriptor a worker could reach it by: the one it
      is sent, a reopening through /proc, a mapping;
    - the grader never maps it. It reads and writes with pread and pwrite,
      where a hole punched in the memory reads as zeros and anything else
      fails as an error, never as a signal;
    - it does so through a file description of its own, opened apart from
      the one the worker is sent, so flags the worker sets on its own
      (O_APPEND, which would turn every pwrite into a refused append) are
      not the grader's.
    What the worker can still do is write any bytes into the region, which
    it could do to its arguments anyway: the grader reads them back as
    evidence of what the function did, and nothing else.

    initial: bytes of the first region, so a stream of calls need not wait
    for room (memory is only used where written).
    """

    def __init__(self, initial: int = 1 << 16):
        self.fd: int | None = None  # the descriptor sent to the worker
        self.size = 0
        self.number = -1  # which region of this child's this is (the worker numbers them as they come)
        self.unsent = False  # the worker has not been given this region's descriptor yet
        self._own: int | None = None  # the grader's own file description of the same memory
        self._initial = initial
        self._end = 0  # where the next call's buffers go

    def fits(self, buffers: list) -> bool:
        """Whether `buffers` fit after the calls in flight, without a new region."""
        return self._end + _extent(buffers) <= self.size

    def reuse(self) -> None:
        """Every call placed is answered: the next one may start at the beginning again."""
        self._end = 0

    def place(self, buffers: list) -> list[list[int]]:
        """Write `buffers` after those in flight (in a larger region if they do not fit); their [offset, size] layout.

        A larger region replaces this one, so grow only with no call in flight (`reuse` first)."""
        if not self.fits(buffers):
            self._grow(max(_extent(buffers), 2 * self.size, self._initial))
        layout, end = [], self._end
        for buffer in buffers:
            size = memoryview(buffer).nbytes
            layout.append([end, size])
            end += _aligned(size)
        self._end = end
        for (offset, _), buffer in zip(layout, buffers):
            view = memoryview(buffer).cast("B")
            while view.nbytes:
                written = os.pwrite(self._own, view, offset)
                view, offset = view[written:], offset + written
        return layout

    def read(self, layout: list) -> list[bytes]:
        """Copies of the buffers at `layout` as they are now (the function may have written to them)."""
        copies = []
        for offset, size in layout:
            data = os.pread(self._own, size, offset)
            if len(data) != size:  # the seals make this impossible; an error here, never a misread
                raise WireError("the shared memory changed size")
            copies.append(data)
        return copies

    def close(self) -> None:
        """Let go of the region (a new child starts numbering afresh)."""
        self._release()
        self.number = -1

    def _release(self) -> None:
        for fd in (self.fd, self._own):
            if fd is not None:
                os.close(fd)
        self.fd, self._own, self.size, self._end = None, None, 0, 0

    def _grow(self, size: int) -> None:
        self._release()
        self.fd = os.memfd_create("call", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, size)
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self._own = os.open(f"/proc/self/fd/{self.fd}", os.O_RDWR | os.O_CLOEXEC)
        self.size, self.unsent = size, True
        self.number += 1


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


def _extent(buffers: list) -> int:
    """Bytes `buffers` take in a region, each aligned."""
    return sum(_aligned(memoryview(b).nbytes) for b in buffers)


def map_region(fd: int) -> memoryview:
    """The worker's writable mapping of the grader's region; `fd` is closed, since the mapping is all it needs.

    Mapped with mmap(2) itself: Python's mmap.mmap keeps a duplicate of the
    descriptor for as long as the mapping lives. A mapping is never unmapped
    (a function may keep a view of its arguments), and lives as long as the child.
    """
    size = os.fstat(fd).st_size
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    address = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    number = ctypes.get_errno()
    os.close(fd)
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(number, f"mmap of the shared memory failed: {os.strerror(number)}")
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


def shared_buffers(region: memoryview | None, layout) -> list:
    """The worker's view of a call's buffers: writable slices of the grader's shared memory."""
    size = len(region) if region is not None else 0
    if not (isinstance(layout, list) and all(isinstance(e, list) and len(e) == 2 and all(type(n) is int and n >= 0
                                                                                             for n in e)
                                             and e[0] + e[1] <= size for e in layout)):
        raise WireError("shared memory layout is not valid")
    view = memoryview(region) if layout else memoryview(b"")
    return [view[offset:offset + length] for offset, length in layout]
