"""Where a call's code was when the grader stopped it at its limit: the line a student's timeout names.

Just before it ends a child whose call ran past its limit, the grader sends the child WHERE_SIGNAL and
reads until the child has had RUN_SECONDS on a processor since (`AnswerWait`). Python runs the child's
handler in its main thread at the next bytecode: at once in a Python loop, in `time.sleep` or in a wait
on a lock; only once it returns to Python from a long NumPy or PyTorch operation (too late: the timeout
then says nothing of a place). The handler sends the place of the deepest frame of the student's own
file: its notebook cell, line, function and the line's text.

The place is the child's word, like every reply: it is only shown to the student, sanitized, as where
to look, and decides nothing. The handler sends only while a call is under way and the worker itself
is not sending (`in_call` is None otherwise), so its frame never lands inside another one.
"""
from __future__ import annotations

import linecache
import os
import re
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from autograder.authoring.protocol import place
from autograder.sandbox import loader, wire
from autograder.text import safe

WHERE_SIGNAL = signal.SIGUSR2
# Per stopped call, of the child's main thread's own running since it was asked: one that answers at all answers
# within microseconds of running. Counted in its running, not the wall clock's: on a loaded machine 20 ms of wall
# time may give it no processor at all, and its silence was then taken for one long library operation.
RUN_SECONDS = 0.02
MAX_WAIT_SECONDS = 0.5  # wall clock: a child kept from a processor this long is not waited for further
POLL_SECONDS = 0.005  # how often its running is read meanwhile
# What starts a loop's first line, and a comprehension's `for` inside brackets: a line inside either was repeating.
LOOP_STARTS = ("for ", "while ", "async for ", "for(", "while(")
COMPREHENSION = re.compile(r"[\[{(][^\]})]*\bfor\b[^\]})]*\bin\b")
# A comprehension's own code object (Python 3.11: each runs in a frame of its own), whatever lines it spans.
COMPREHENSIONS = ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>")
# Library code that calls a function once per entry, and the calls on a line that do so from C (no frame of theirs).
PER_ENTRY_FRAMES = ("_vectorize_call", "_vectorize_call_with_signature", "apply_along_axis", "apply_over_axes")
PER_ENTRY_CALL = re.compile(r"\b(vectorize|frompyfunc|map|apply_along_axis|apply_over_axes)\(")
STRINGS_AND_COMMENT = re.compile(r"\"[^\"]*\"|'[^']*'|#.*")
MAX_LINES_UP = 400  # lines read upwards from the stopped one for its loop: a function longer is not searched further


# ---------------------------------------------------------------- in the child


def install(sock: socket.socket, in_call: Callable[[], int | None], filename: str) -> None:
    """Answer WHERE_SIGNAL on `sock` with the place in `filename` (the student's file, or its cells' prefix)
    where the call `in_call()` names is; nothing when it names none."""
    def tell(_signal, frame):
        call_id = in_call()
        place = _place(frame, filename) if call_id is not None else None
        if place is not None:
            wire.send(sock, {"event": "where", "id": call_id, **place})

    signal.signal(WHERE_SIGNAL, tell)


def _place(frame, filename: str) -> dict | None:
    """The deepest frame of the student's file from `frame` outwards, as a line, its cell, function and text; the
    library the innermost frame is in, where it is not the student's ("matplotlib"); and the loop of the student's
    it was in (`_loop`), for the advice: a call stopped outside any loop of its own is vectorised, not looping."""
    innermost = frame
    while frame is not None and not frame.f_code.co_filename.startswith(filename):
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    inside = "" if innermost is frame else str(innermost.f_globals.get("__name__", "")).split(".")[0]
    return {"line": frame.f_lineno, "cell": loader.cell_of(code.co_filename, filename),
            "in": "" if code.co_name == "<module>" else code.co_name[:80],
            "code": linecache.getline(code.co_filename, frame.f_lineno).strip()[:200], "inside": inside[:40],
            "loop": _loop(frame, filename)}


def _loop(frame, filename: str) -> str:
    """How the student's code was repeating when stopped, as a phrase ("in the loop `for i in range(n):`"), from its
    frames from `frame` outwards: a line inside a loop or comprehension, a function of the file calling itself, or
    a library calling a function for each entry (np.vectorize, map); "" where none was. Other library code between
    two of the file's frames (a decorator's wrapper, `@np.errstate`) calls once, and is not a loop."""
    seen, per_entry = set(), False
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(filename):
            per_entry = per_entry or (code.co_name in PER_ENTRY_FRAMES
                                      and str(frame.f_globals.get("__name__", "")).startswith("numpy"))
        elif code in seen:
            return "in a call of itself (recursion)"
        elif per_entry or PER_ENTRY_CALL.search(_code_of(linecache.getline(code.co_filename, frame.f_lineno))):
            return "called entry by entry from library code (as np.vectorize does)"
        elif code.co_name in COMPREHENSIONS:
            return f"in the comprehension that begins on line {code.co_firstlineno}"
        else:
            seen.add(code)
            header = _loop_around(code, frame.f_lineno)
            if header:
                return f"in the loop `{header}`"
        frame = frame.f_back
    return ""


def _code_of(line: str) -> str:
    """A line without its strings and comment: `# for every row in S` is no comprehension, `"map("` no call."""
    return STRINGS_AND_COMMENT.sub('""', line)


def _loop_around(code, line: int) -> str:
    """The first line of the innermost loop of the function `code` around `line` (a comprehension on the line
    itself counts), read from its lines upwards by their indentation: parsing the file took 50 ms for 64 KiB, more
    than the grader waits for the answer."""
    lines = linecache.getlines(code.co_filename)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if COMPREHENSION.search(_code_of(text)) or text.lstrip().startswith(LOOP_STARTS):
        return text.strip()[:80]
    indent = len(text) - len(text.lstrip())
    for number in range(line - 1, max(code.co_firstlineno, line - MAX_LINES_UP) - 1, -1):
        above = lines[number - 1]
        stripped = above.lstrip()
        if not stripped or stripped.startswith("#") or len(above) - len(stripped) >= indent:
            continue
        if stripped.startswith(LOOP_STARTS):
            return stripped.strip()[:80]
        indent = len(above) - len(stripped)
    return ""


# ---------------------------------------------------------------- in the grader


def ask(pid: int) -> bool:
    """Send the child `pid` (as this process sees it) WHERE_SIGNAL; whether it could be sent."""
    try:
        os.kill(pid, WHERE_SIGNAL)
    except OSError:  # gone already, or not ours to signal
        return False
    return True


@dataclass
class AnswerWait:
    """How long the grader reads for the answer of a child it asked: until the child's main thread has run
    RUN_SECONDS since (read from outside, by the kernel's count), or MAX_WAIT_SECONDS have passed."""

    read: Callable  # () -> the child's sandbox.waiting.ProcessorUse now, or None (gone, or no statistics kept)
    asked_ran: float | None  # its main thread's processor seconds when asked; None: unknown, the wall clock counts
    began: float  # time.monotonic() when asked

    @classmethod
    def begin(cls, read: Callable) -> AnswerWait:
        """Start waiting now, just after the signal was sent; `read` as the field says."""
        use = read()
        return cls(read, None if use is None else use.ran, time.monotonic())

    def left(self) -> float:
        """Seconds to read for next; 0.0: wait no more."""
        waited = time.monotonic() - self.began
        if self.asked_ran is None:
            return max(RUN_SECONDS - waited, 0.0)
        use = self.read()
        if use is None or use.ran - self.asked_ran >= RUN_SECONDS or waited >= MAX_WAIT_SECONDS:
            return 0.0
        return min(POLL_SECONDS, MAX_WAIT_SECONDS - waited)


def place_text(header: dict, function: str) -> str:
    """What the child said of its place, for the student: "line 5 (`while True:`)", "code cell 3, line 2, in
    helper (`...`)" ("in" left out for the called function itself); "" when it said nothing usable."""
    line = header.get("line")
    if type(line) is not int or line < 1:
        return ""
    cell, within, code, loop, inside = (safe(header.get(key) or "", limit) for key, limit in (
        ("cell", 40), ("in", 80), ("code", 120), ("loop", 120), ("inside", 40)))
    return (place(line, cell, within, called=function) + (f" (`{code}`)" if code else "")
            + (f", {loop}" if loop else "") + (f", inside {inside}" if inside else ""))
