"""A .py file's bytes as the text Python reads, and a note for the student where Python would refuse them.

Python reads a module in the encoding its byte-order mark or coding line (PEP 263) names, UTF-8 otherwise, and
refuses one whose bytes are not of that encoding ("SyntaxError: Non-UTF-8 code starting with '\\xe9'"): a file
saved as Latin-1 or Windows' cp1252 with an accent in a comment. The grader reads such a file all the same, each
undecodable byte as U+FFFD, since the code is usually fine; the student is told, or their file fails elsewhere.
"""
from __future__ import annotations

import io
import tokenize

from autograder.text import safe


def module_text(data: bytes) -> str:
    """A .py file's text as Python reads a module: a byte-order mark or a coding line (PEP 263) names its
    encoding, UTF-8 otherwise. Decoded as plain UTF-8, a Windows editor's mark became a syntax error
    at line 1 that `python file.py` never shows."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding, errors="replace")
    except (SyntaxError, LookupError):  # a coding line naming no codec: the worker's compile says so
        return data.decode("utf-8", errors="replace")


def encoding_note(data: bytes, name: str) -> str:
    """The student's note where Python would refuse `data`, a .py file named `name`, for bytes its encoding does not
    have: which byte, on which line, and how to save it; "" where Python reads it."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):  # a first line not UTF-8 (Python's default), or a coding line naming no codec
        encoding = "utf-8"
    try:
        data.decode(encoding)
        return ""
    except UnicodeDecodeError as error:
        byte = data[error.start]
        line = data.count(b"\n", 0, error.start) + 1
        guess = bytes([byte]).decode("cp1252", errors="replace")
        shown = f" (the Windows or Latin-1 code of {guess!r})" if guess != "\ufffd" else ""
        return (f"{safe(name)} is not saved as {encoding.upper()}: line {line} holds the byte 0x{byte:02x}{shown}, "
                f"which {encoding.upper()} does not have, so Python itself refuses the file as it is (`python "
                f"{safe(name)}` stops with a SyntaxError). It was graded all the same, such bytes "
                "read as \ufffd. Save it as UTF-8 (most editors: Save with Encoding, or File > Save As > Encoding: "
                "UTF-8) before you hand it in again")
