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
    """Shared memory the grader owns, holding one call's buffers at a time.

    One region per worker child: the grader writes a call's buffers with
    `place`, sends the layout in the call's header (and the region's file
    descriptor with the first call, or when the region grew), and the
    worker's function works on them in place there (`shared_buffers`), so
    `read` afterwards shows the arguments as the function left them. A new
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
    """

    def __init__(self):
        self.fd: int | None = None  # the descriptor sent to the worker
        self.size = 0
        self.unsent = False  # the worker has not been given this region's descriptor yet
        self._own: int | None = None  # the grader's own file description of the same memory

    def place(self, buffers: list) -> list[list[int]]:
        """Write `buffers` from the start of the region (growing it if need be); their [offset, size] layout."""
        layout, end = [], 0
        for buffer in buffers:
            size = memoryview(buffer).nbytes
            layout.append([end, size])
            end += -(-size // ALIGN) * ALIGN
        if end > self.size:
            self._grow(max(end, 2 * self.size, 1 << 16))
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
        for fd in (self.fd, self._own):
            if fd is not None:
                os.close(fd)
        self.fd, self._own, self.size = None, None, 0

    def _grow(self, size: int) -> None:
        self.close()
        self.fd = os.memfd_create("call", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, size)
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self._own = os.open(f"/proc/self/fd/{self.fd}", os.O_RDWR | os.O_CLOEXEC)
        self.size, self.unsent = size, True


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
