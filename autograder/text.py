"""Text from untrusted places, made safe to store and to show.

Student code chooses exception messages, type names, printed output and file
names. Such text may hold lone surrogates (which UTF-8, and so SQLite,
cannot encode) and control characters (terminal escapes that clear a TA's
screen, carriage returns that overwrite a line, bidi overrides that reorder
it). `safe` makes any of it valid UTF-8 with every control character except
newline and tab shown as a visible escape, such as `\\x1b`. It is applied
where such text enters the grader and again wherever text is displayed, and
is idempotent, so applying it twice changes nothing.

`one_line` is for text printed in a line of a terminal summary: its
newlines are escapes too, so no student text can start a line of its own.
`counted` says a count with its noun, "1 process" and "3 processes"; `joined` a list of names, "a, b and c".
`command` writes a command line to paste, whatever the ids in it (`'mary ann'`, `-x`).
(A value a student's function returned is written by
`autograder.authoring.shown`, which any int can go through.)

This module is shipped to the worker too (see sandbox.BOOT): standard library only.
"""
from __future__ import annotations

import re
import shlex

# Every character of Unicode's categories Cc (controls, but newline and tab), Cf (format: bidirectional
# marks and overrides, zero-width characters, the byte order mark) and Zl, Zp (line and paragraph
# separators), as Unicode 14 (Python 3.11) lists them: what grading.ids refuses in an id, a terminal or
# a table would interpret or hide. Written out, since finding them at import would read every code point.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
                      "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                      "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]")
_ASCII_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # the same, for ASCII text: a quarter of the time


def counted(count: float, noun: str, plural: str = "") -> str:
    """A count with its noun, singular for one: counted(1, "item") is '1 item', counted(3, "process", "processes")
    '3 processes' (plural: the noun's plural when it is not noun + "s")."""
    return f"{count:g} {noun if count == 1 else plural or noun + 's'}"


def joined(names: list[str]) -> str:
    """Names as a phrase: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def valid_utf8(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def visible(text: str) -> str:
    """`text` with control characters (not newline or tab) written as escapes: ESC becomes `\\x1b`."""
    return (_ASCII_CONTROL if text.isascii() else _CONTROL).sub(_escape, text)


def safe(value, limit: int | None = None) -> str:
    """Any value as text to store and show: valid UTF-8, no control characters, at most `limit` characters."""
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:  # noqa: BLE001 - a hostile __str__
        text = "(text that could not be read)"
    if limit is not None:
        text = text[:limit]
    return visible(valid_utf8(text))


def _escape(match: re.Match) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def one_line(value, limit: int | None = None) -> str:
    """`safe` text with its newlines and tabs as escapes too (`\\n`): for one line of a terminal summary."""
    return safe(value, limit).replace("\n", "\\n").replace("\t", "\\t")


def command(name: str, positional: list[str], options: list[str] = ()) -> str:
    """`autograder NAME` with its positional arguments and options, each shell-quoted, so that it can be pasted
    whatever the ids (`'mary ann'`, `'o'"'"'neil'`); where a positional argument starts with '-', which would read
    as an option, the options come first and `--` before the positional ones."""
    words = [shlex.quote(word) for word in positional]
    extra = [shlex.quote(str(word)) for word in options]
    if any(word.startswith("-") for word in positional):
        return " ".join(["autograder", name, *extra, "--", *words])
    return " ".join(["autograder", name, *words, *extra])
