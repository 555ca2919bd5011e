"""The reference solution's own words in hand-ins: a leaked solution found by its wording, not its code.

Code written to the lecture's formulas looks alike whether it was copied or not, so once normalised, a copy of
the reference solution hides among honest work (similarity.index gives what much of the class writes alike no
weight), and small edits keep its copies from being grouped. Its docstrings, comments and messages do not hide:
a line of them that nothing released to students holds (the stub, the notebook outside its answers) can only
have come from the reference. Whitespace, case and punctuation are ignored; lines too short to be anyone's own
(MIN_WORDS) are left out, and a hand-in is listed for LISTED_FROM lines or more.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

# Words of three letters or more: "return the weights" could be anyone's, and a line of symbols (a shape such as
# "Q: (..., Nq, dk)") is the lecture's notation; a sentence of five words is its writer's own.
MIN_WORDS = 5
LISTED_FROM = 3  # the reference's own lines a hand-in holds, from which it is listed: one could be the lecture's


@dataclass(frozen=True)
class Wording:
    """One hand-in holding the reference's own lines: `lines` of them (as the reference writes them), out of
    `of` the reference holds."""

    student: str
    lines: tuple[str, ...]
    of: int


def text_lines(source: str) -> dict[str, str]:
    """normalised line -> the line as written, for each line of `source`'s comments and strings (docstrings,
    messages) of MIN_WORDS words or more. A source that does not tokenise gives what it gave up to there."""
    found: dict[str, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                texts = [token.string.lstrip("#")]
            elif token.type == tokenize.STRING:
                texts = [_string_text(token.string)]
            else:
                continue
            for text in texts:
                for line in text.splitlines():
                    key = normalised(line)
                    if sum(len(word) >= 3 and word.isalpha() for word in key.split()) >= MIN_WORDS:
                        found.setdefault(key, line.strip())
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return found


def normalised(line: str) -> str:
    """A line as compared: lower case, words only (punctuation and runs of space are layout)."""
    return " ".join(re.findall(r"\w+", line.lower()))


def _string_text(literal: str) -> str:
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):  # an f-string: its text as written, braces and all
        return literal
    return value if isinstance(value, str) else ""


def reference_wording(reference: Path, released: list[str], sources: dict[str, str]) -> list[Wording]:
    """The hand-ins (student -> their code's text) holding LISTED_FROM or more of the reference's own lines,
    most first. released: the text of everything students were given."""
    given = set().union(*(text_lines(text) for text in released)) if released else set()
    own = {key: line for key, line in text_lines(Path(reference).read_text(encoding="utf-8")).items()
           if key not in given}
    found = []
    for student, text in sources.items():
        held = [own[key] for key in text_lines(text) if key in own]
        if len(held) >= LISTED_FROM:
            found.append(Wording(student, tuple(held), len(own)))
    return sorted(found, key=lambda w: (-len(w.lines), w.student))
