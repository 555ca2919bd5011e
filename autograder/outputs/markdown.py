"""Text printed into the Markdown feedback pages, so that what a student controls stays text.

A student's text reaches a page inside check messages (an exception's message), printed output and
ids. Escaping the inline marks is not enough: Markdown builds blocks from the start of each line, so
a message holding a newline followed by `===`, `- `, `1. ` or four spaces would make a heading, a
list item or a code block of its own on the student's page (a forged "Total: 100 / 100"). So every
line of a value is joined to the one before by a hard line break, its indentation dropped and its
first character escaped where it could open a block; links are never formed from it either.
A pair of single backticks on one line around plain text (our messages' `np.swapaxes(K, -1, -2)`) stays a code
span: its content is shown as written, so it can form nothing. The HTML pages show the same spans as code.
"""
from __future__ import annotations

import re

from markupsafe import Markup
from markupsafe import escape as html_escape

from autograder.text import safe

# Marks with an inline meaning (emphasis, code, links, tables, headings, strikethrough, e-mail links); `_` but between
# two letters or digits, where (additive_score) it never makes emphasis.
_INLINE = re.compile(r"([\\`*\[\]|#~@]|(?<![^\W_])_|_(?![^\W_]))")
# A bare web address that GitHub-flavoured renderers would make a link: `http://…`, `www.…`.
_ADDRESS = re.compile(r"(?i):(?=//)|(?<=www)\.")
# What opens a block at the start of a line once the inline marks are escaped: a list item or thematic
# break (-, +), a setext heading's underline (=), an ordered list item (1. or 1), followed by a space or nothing: a
# number such as 53.1 opens no list).
_BLOCK_START = re.compile(r"^([-+=])|^(\d+)([.)])(?=\s|$)")
# Backticks paired left to right on one line; a pair is kept as a code span when no backtick touches it and what it
# holds is plain (no mark that a table cell or an entity would still read inside a span: | < > & \\).
_BACKTICK_PAIR = re.compile(r"`([^`\n]*)`")
_PLAIN_CODE = re.compile(r"[^`\n|<>&\\]+")


class Verbatim(str):
    """Text the Markdown templates print as it is: a fenced code block built by `code_block`."""


def escape(value) -> str:
    """Any value printed into Markdown as plain text: no raw HTML, emphasis, links, table cells or blocks."""
    if isinstance(value, Verbatim):
        return value
    text = "" if value is None else safe(value)
    text = "".join(part if is_code else _escaped_inline(part) for part, is_code in code_spans(text))
    lines = (line.strip() for line in text.split("\n"))
    return "\\\n".join(_BLOCK_START.sub(_escaped_start, line) for line in lines if line)


def code_spans(text: str) -> list[tuple[str, bool]]:
    """`text` in pieces, each with whether it is a code span to show as code (backticks included) or plain text."""
    pieces, at = [], 0
    for pair in _BACKTICK_PAIR.finditer(text):
        alone = text[pair.start() - 1:pair.start()] != "`" and text[pair.end():pair.end() + 1] != "`"
        is_code = bool(alone and _PLAIN_CODE.fullmatch(pair.group(1)))
        pieces += [(text[at:pair.start()], False), (pair.group(0), is_code)]
        at = pair.end()
    return pieces + [(text[at:], False)]


def html_with_code(value) -> Markup:
    """A message for an HTML page: its code spans (`code_spans`) as <code>, the rest as escaped text."""
    return Markup("".join(f"<code>{html_escape(part[1:-1])}</code>" if is_code else str(html_escape(part))
                          for part, is_code in code_spans(safe(value))))


def _escaped_inline(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _ADDRESS.sub(r"\\\g<0>", _INLINE.sub(r"\\\1", text))


def _escaped_start(match: re.Match) -> str:
    return "\\" + match.group(1) if match.group(1) else match.group(2) + "\\" + match.group(3)


def code_block(text) -> Verbatim:
    """A fenced block longer than any backtick run inside, so the text cannot end it."""
    text = safe(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return Verbatim(f"{fence}\n{text}\n{fence}")
