"""A .py file's bytes as the text Python reads, and a note for the student where Python would refuse them.

Python reads a module in the encoding its byte-order mark or coding line (PEP 263) names, UTF-8 otherwise, and
refuses one whose bytes are not of that encoding ("SyntaxError: Non-UTF-8 code starting with '\\xe9'"): a file
saved as Latin-1 or Windows' cp1252 with an accent in a comment. The grader reads such a file all the same, each
undecodable byte as U+FFFD, since the code is usually fine; the student is told, or their file fails elsewhere.
A coding line naming an encoding Python does not know, or one that says ASCII of a file saved as UTF-8, is the
fault to mend, and the note says so.
"""
from __future__ import annotations

import codecs
import io
import re
import tokenize

from autograder.text import safe

# PEP 263's coding line, as Python's tokenizer reads it; line 2 holds one only below a comment or blank line 1.
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_BLANK_OR_COMMENT = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)", re.ASCII)


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
    """The student's note where Python would refuse `data`, a .py file named `name`: a coding line naming an encoding
    Python does not know, or bytes the file's encoding does not have (which byte, on which line, and how to save
    it, or, where the bytes are UTF-8 and a coding line says otherwise, that the line is what to mend); "" where
    Python reads it."""
    declared = _coding_line(data)
    if declared is not None and _unknown(declared[1]):
        return _unknown_note(name, *declared)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError):  # a first line not UTF-8 (Python's default), or a BOM against a coding line
        encoding = "utf-8"
    try:
        data.decode(encoding)
        return ""
    except UnicodeDecodeError as error:
        where = data.count(b"\n", 0, error.start) + 1
        if declared is not None and _is_utf8(data):
            return _wrong_line_note(name, declared, where, data[error.start], encoding)
        return _not_saved_note(name, where, data[error.start], encoding)


def _coding_line(data: bytes) -> tuple[int, str] | None:
    """The line number and encoding of the file's coding line (PEP 263: line 1, or line 2 below a comment or blank
    line 1), None for none."""
    lines = data.split(b"\n", 2)[:2]
    for number, line in enumerate(lines, start=1):
        match = _CODING.match(line)
        if match:
            return number, match[1].decode("ascii")
        if not _BLANK_OR_COMMENT.match(line):
            return None
    return None


def _unknown(encoding: str) -> bool:
    try:
        codecs.lookup(encoding)
        return False
    except LookupError:
        return True


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8-sig")
        return True
    except UnicodeDecodeError:
        return False


def _unknown_note(name: str, line: int, encoding: str) -> str:
    return (f"{safe(name)}: line {line}, its coding line, names the encoding {safe(encoding)!r}, which Python does "
            f"not know, so Python itself refuses the file (`python {safe(name)}` stops with \"SyntaxError: encoding "
            f"problem: {safe(encoding)}\"). It was graded all the same, read as UTF-8. Delete that line (Python reads "
            "UTF-8 without one; save the file as UTF-8 if it is not), or correct it to the encoding the file is "
            "saved in (`# -*- coding: utf-8 -*-`), before you hand it in again")


def _wrong_line_note(name: str, declared: tuple[int, str], line: int, byte: int, encoding: str) -> str:
    return (f"{safe(name)} is saved as UTF-8, but line {declared[0]}, its coding line, says it is "
            f"{safe(declared[1])}: line {line} holds the byte 0x{byte:02x}, which {encoding.upper()} does not have, "
            f"so Python itself refuses the file as it is (`python {safe(name)}` stops with a SyntaxError). It was "
            "graded all the same, such bytes read as \ufffd. Delete the coding line (Python reads UTF-8 without "
            "one), or make it `# -*- coding: utf-8 -*-`, before you hand it in again")


def _not_saved_note(name: str, line: int, byte: int, encoding: str) -> str:
    guess = bytes([byte]).decode("cp1252", errors="replace")
    shown = f" (the Windows or Latin-1 code of {guess!r})" if guess != "\ufffd" else ""
    return (f"{safe(name)} is not saved as {encoding.upper()}: line {line} holds the byte 0x{byte:02x}{shown}, "
            f"which {encoding.upper()} does not have, so Python itself refuses the file as it is (`python "
            f"{safe(name)}` stops with a SyntaxError). It was graded all the same, such bytes "
            "read as \ufffd. Save it as UTF-8 (most editors: Save with Encoding, or File > Save As > Encoding: "
            "UTF-8) before you hand it in again")
