"""Text a student controls stays on its own line of a TA's terminal: an exception message with newlines in it
(graded through the real sandbox) cannot add a line such as "# You got 100/100" to `grade`'s output."""
from __future__ import annotations

import dataclasses
import io
import unicodedata

import pytest

from autograder.grading.ids import REFUSED_CATEGORIES
from autograder.outputs.progress import Progress
from autograder.outputs.terminal import SummaryRow, format_check, format_result, format_summary, summary_row
from autograder.text import visible

from conftest import compose, run_cli

FENCE = '''
def causal_mask(n_q, n_k=None):
    raise RuntimeError("x\\n```\\n\\n# You got 100/100\\n\\tnote: forged\\r\\x1b[2J")
'''
INJECTED = ("# You got 100/100", "note: forged", "\t", "\r", "\x1b")


def _lines_of_their_own(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith(("# You got", "note: forged"))]


def test_a_message_with_newlines_stays_on_its_line_everywhere_the_terminal_shows_it(grade_once, tmp_path):
    snippet = tmp_path / "fence_snippet.py"
    snippet.write_text(FENCE)
    result = grade_once(compose(tmp_path, "fence", snippet))
    failing = [t for t in result.tests if t.function == "causal_mask"]
    public = [t for t in failing if t.visibility == "public"]  # a hidden check's is the instructor's (withheld)
    assert public and all("# You got 100/100" in t.message for t in public)  # kept, as text
    # A forged id and reason too: a file name and a reason the student's text went into.
    forged = dataclasses.replace(result, student="fence\n# You got 100/100", problem="not loaded: x\n# You got 100/100",
                                 notes=("a\nnote: forged",))
    shown = {"table": format_result(result), "forged table": format_result(forged),
             "summary": format_summary([summary_row(forged)]), "check": "\n".join(map(format_check, failing))}
    stream = io.StringIO()
    Progress(1, stream=stream).update(forged)
    shown["progress"] = stream.getvalue()
    for where, text in shown.items():
        assert _lines_of_their_own(text) == [], where
        assert not any(c in text for c in INJECTED[2:]), where
    assert "x\\n```\\n\\n# You got 100/100" in shown["table"]  # shown, escaped, on the check's line


def test_format_characters_are_escaped_like_the_ids_that_hold_them_are_refused():
    """What grading.ids refuses in an id (Unicode's Cc, Cf, Zl, Zp) is what `visible` escapes in any text: an Arabic
    letter mark (a bidirectional control), zero-width characters and a byte order mark included."""
    hidden = "\u061c\u200b\u200d\u2060\ufeff\u180e\u202e\u2066"
    assert visible(f"a{hidden}b") == "a" + "".join(f"\\u{ord(c):04x}" for c in hidden) + "b"
    escaped = [chr(cp) for cp in range(0x110000) if visible(chr(cp)) != chr(cp)]
    assert all(unicodedata.category(c) in REFUSED_CATEGORIES for c in escaped)
    assert [c for c in map(chr, range(0x10000)) if unicodedata.category(c) in REFUSED_CATEGORIES - {"Cs"}
            and c not in "\n\t" and c not in escaped] == []


@pytest.mark.parametrize("command", [("grade", "w07_attention", "."), ("regrade", "w07_attention"),
                                     ("similarity", "w07_attention", ".")])
def test_jobs_below_one_are_refused_saying_what_to_give(command):
    for given, words in (("0", "0 is less than 1; give 1 or more"), ("-3", "-3 is less than 1"),
                         ("two", "'two' is not a whole number")):
        done = run_cli(*command, "--jobs", given)
        assert done.returncode == 2 and f"argument --jobs: {words}" in done.stderr, done.stderr


def test_a_long_id_keeps_the_summary_columns_aligned():
    rows = [SummaryRow("ann", 100.0, 100.0, ()), SummaryRow("broadcast_shapes_mask_2", 59.0, 100.0, ("error",))]
    lines = format_summary(rows).splitlines()
    ends = {line.index("/ 100") + len("/ 100") for line in lines[1:3]}  # each row's points end in one column
    assert ends == {lines[0].index("points") + len("points")}, lines
    assert "broadcast_shapes_mask_2  " in lines[2]  # the id never runs into the points
