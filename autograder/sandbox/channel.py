"""The grader's end of one worker child: its socket, its output pipe, and the frames in between.

A `Channel` writes the grader's frames (a stream of calls queues several),
reads the child's frames and what it prints, and says how the child went
wrong when it did (`NoReply`): it closed its end, printed more than a call
may, or sent something too large or malformed. It also reads when the child
marked each call's end (`Channel.stamps`), as the kernel stamped it. It
decides nothing else: what a frame means, and when a call is late, are the
caller's (sandbox.session, sandbox.stream).
"""
from __future__ import annotations

import contextlib
import os
import selectors
import socket
import struct
import time
from collections import deque
from collections.abc import Callable

from autograder.sandbox import wire
from autograder.sandbox.replies import CapturedOutput, Stopped, how_it_ended, too_large


class NoReply(Exception):
    """The child gave no usable reply: how; what the call or unit did, after its name, in the student's words
    (says; "" for a timeout, which the caller words); the same, short, for the worker (cause); see CallFailed.ended."""

    def __init__(self, how: Stopped, says: str = "", cause: str = "", ended: tuple | None = None):
        super().__init__(says or how.value)
        self.how, self.says, self.cause, self.ended = how, says, cause or says, ended


class Flooded(NoReply):
    """The child printed more than `limit` bytes since its channel's mark, and was stopped: a load stopped so runs
    its definitions alone once (sandbox.session), as one stopped at its time limit does. printed: what it did, in
    the student's words ("printed more than 16 MB of output")."""

    def __init__(self, limit: int):
        self.printed = f"printed more than {limit >> 20} MB of output"
        super().__init__(Stopped.CRASHED, f"{self.printed} and was stopped; remove the prints from your code")


def died(cause: str, ended: tuple | None = None) -> NoReply:
    """The child's process ended; cause: how ("it exited with status 1"). The student's message adds what to look
    for, by how it ended."""
    return NoReply(Stopped.CRASHED, f"stopped the worker process ({cause}){_look_for(ended)}", cause, ended)


def _look_for(ended: tuple | None) -> str:
    if ended is not None and ended[0] == "exit":  # an exception, SystemExit too, is a reply: this ended the process
        return ("; graded code must never end its process: remove the os._exit() (or the exit in a thread or a "
                "library) it reached, and return the result instead")
    return {("signal", "SIGKILL"): "; look for a very large array made in the call",
            ("signal", "SIGSEGV"): "; the crash is in compiled code: look for ctypes, a C extension, or arrays "
                                   "made from memory NumPy does not own (as_strided, frombuffer)"}.get(ended, "")


# Linux's numbers (asm-generic), where Python's socket module has no name for them: the receive time of each
# datagram, as a struct timespec of the real-time clock.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
TIMESPEC = struct.Struct("@qq")
MAX_STAMPS = 4096  # records read at one time: more than an honest child sends between two replies read
REPLY_BUFFER = 8 << 20  # bytes asked for the child's sending buffer; the kernel caps it (net.core.wmem_max)


def call_pair() -> tuple[socket.socket, socket.socket]:
    """The socket pair for a child's submission, calls and replies: the grader's end and the child's."""
    ours, theirs = socket.socketpair()
    # Room for a whole answer (at T = 512 a few MB) in one write where the kernel allows it:
    # each time a full buffer waits for the grader to read costs a turn on a busy machine.
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, REPLY_BUFFER)
    return ours, theirs


def stamp_pair() -> tuple[socket.socket, socket.socket]:
    """A datagram socket pair for a child's stamps (wire.STAMP): the grader's end, on which the kernel stamps
    each record it receives with its send time, and the child's. Where the kernel will not stamp, records
    come unstamped and are left out (the grader then goes by its own clock)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with contextlib.suppress(OSError):
        ours.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    ours.setblocking(False)
    return ours, theirs


class Channel:
    """One child's socket (frames both ways) and output pipe, watched by one selector for the child's life.

    output: where what the child prints is kept; max_output: bytes a call may print before it is stopped,
    counted from `output_mark`. death: called when the child closes its socket; kills what is left
    of it and says how it ended (see replies.child_end). stamps: the grader's end of the child's
    stamp_pair (None: none).
    """

    def __init__(self, sock: socket.socket, out: int, output: CapturedOutput, max_output: int,
                 death: Callable[[], tuple | None], stamps: socket.socket | None = None):
        self.sock, self.out, self.output, self._stamps = sock, out, output, stamps
        self.parser = wire.FrameParser(0)
        self.output_mark = output.total
        self._max_output, self._death = max_output, death
        self._queue: deque = deque()  # [views, fds] of frames not yet written whole, in order
        self._error: NoReply | None = None  # how the child went wrong, found after frames that were returned
        sock.setblocking(False)
        os.set_blocking(out, False)  # once: the output is drained after every reply (drain_output)
        self._selector = selectors.DefaultSelector()
        self._selector.register(sock, selectors.EVENT_READ)
        self._selector.register(out, selectors.EVENT_READ)

    def send(self, chunks: list, fds: list = ()) -> None:
        """Queue one frame (`fds` ride with its first byte) and write what the socket takes now.

        To a child that has gone, nothing is written: `wait` then reads its end."""
        self._queue.append([wire.views_of(chunks), list(fds)])
        self._flush()

    def wait(self, seconds: float) -> list[tuple[dict, list]]:
        """Up to `seconds` for the child (0: only what is there): write what is queued, keep what it prints,
        and return the frames that came, perhaps none. Raises NoReply when the child went wrong."""
        if self._error is not None:
            raise self._error
        self._selector.modify(self.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if self._queue else 0))
        frames = []
        try:
            for key, mask in self._selector.select(max(seconds, 0.0)):
                if key.fileobj == self.out:
                    self._read_output()
                    continue
                if mask & selectors.EVENT_WRITE:
                    self._flush()
                if mask & selectors.EVENT_READ:
                    frames += self._read_frames()
        except NoReply as error:
            if not frames:
                raise
            self._error = error  # after the replies that came before it, which are the calls' own
        return frames

    def stamps(self) -> list[tuple[int, int, float]]:
        """The records the child sent since last asked: (call id, wire moment, when the kernel stamped it,
        as time.monotonic()), in the order sent. Untrusted: the child's code may send any records."""
        if self._stamps is None:
            return []
        found = []
        for _ in range(MAX_STAMPS):
            try:
                data, ancillary, flags, _ = self._stamps.recvmsg(wire.STAMP.size, socket.CMSG_SPACE(TIMESPEC.size))
            except OSError:  # none waiting (BlockingIOError), or the child is gone: its replies say how
                break
            if not data:  # its end is closed (or an empty record: what is left waits for the next time)
                break
            when = _stamped(ancillary)
            if len(data) == wire.STAMP.size and not flags & socket.MSG_TRUNC and when is not None:
                found.append((*wire.STAMP.unpack(data), when))
        return found

    def drain_output(self) -> None:
        """Keep what the child has printed so far, without waiting for more."""
        if self.out is None:
            return
        try:
            while chunk := os.read(self.out, 1 << 16):
                self.output.add(chunk)
        except BlockingIOError:
            pass

    def close(self) -> None:
        """Close both ends, keeping what the child printed before."""
        self._selector.close()
        self.sock.close()
        if self._stamps is not None:
            self._stamps.close()
        self.drain_output()
        if self.out is not None:
            os.close(self.out)
            self.out = None

    def _flush(self) -> None:
        """Write queued frames, each in one gathered write, until the socket is full."""
        while self._queue:
            views, fds = self._queue[0]
            try:
                if fds:
                    sent = socket.send_fds(self.sock, views[:wire.MAX_CHUNKS], fds)
                else:
                    sent = self.sock.sendmsg(views[:wire.MAX_CHUNKS])
            except BlockingIOError:
                return
            except OSError:  # the child is gone: reading says how (what it sent before, then its end)
                self._queue.clear()
                return
            self._queue[0] = [wire.after(views, sent), []]  # the descriptors went with the first bytes sent
            if self._queue[0][0]:
                return
            self._queue.popleft()

    def _read_frames(self) -> list:
        try:
            return self.parser.receive(self.sock)
        except BlockingIOError:
            return []
        except (EOFError, ConnectionError):
            ended = self._death()
            raise died(how_it_ended(ended), ended) from None
        except wire.FrameTooLarge as error:
            raise NoReply(Stopped.REJECTED, too_large(error)) from error
        except wire.WireError as error:
            raise NoReply(Stopped.REJECTED, f"was stopped: its process sent a malformed reply ({error})",
                          f"it sent a malformed reply ({error})") from error

    def _read_output(self) -> None:
        try:
            chunk = os.read(self.out, 1 << 16)
        except BlockingIOError:
            return
        if chunk:
            self.output.add(chunk)
            if self.output.total - self.output_mark > self._max_output:
                raise Flooded(self._max_output)
        else:
            self._selector.unregister(self.out)
            os.close(self.out)
            self.out = None


def _stamped(ancillary: list) -> float | None:
    """The kernel's send time of a record received with `ancillary` data, on time.monotonic()'s clock."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) == TIMESPEC.size:
            seconds, nanoseconds = TIMESPEC.unpack(data)
            return seconds + nanoseconds / 1e9 - (time.time() - time.monotonic())
    return None
