"""Text a student controls stays on its own line of a TA's terminal: an exception message with newlines in it
(graded through the real sandbox) cannot add a line such as "# You got 100/100" to `grade`'s output."""
from __future__ import annotations

import dataclasses
import io

from autograder.outputs.progress import Progress
from autograder.outputs.terminal import format_check, format_result, format_summary, summary_row

from conftest import compose

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
    assert failing and all("# You got 100/100" in t.message for t in failing)  # kept, as text
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
