"""What a student whose .py file did not load is told happened, and what to do about it.

The student's own `python file.py` shows no error for a module their machine has and the grader lacks, for
a download or another operation only the sandbox refuses, nor for syntax their newer Python accepts: the
advice says so where it applies, instead of sending them to a command that shows nothing.
"""
from __future__ import annotations

import re
import sys

from autograder.authoring.environment import environment_hint, numpy_lacks
from autograder.authoring.protocol import Raised
from autograder.grading.submission import Submission
from autograder.sandbox.load_report import LoadReport
from autograder.text import safe

# The workers run the grader's own Python, unless $AUTOGRADER_WORKER_PYTHON names another (sandbox.protections):
# then this names the grader's, which a course that sets it should keep the same.
GRADER_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
# A line only Jupyter runs: a shell line or a magic, as a .py downloaded from Colab keeps them.
_NOTEBOOK_LINE = re.compile(r"[ \t]*[!%]")
# The statements newer Pythons added that this one reads as "invalid syntax": `type X = ...`, `def f[T](...)`,
# `class C[T]:`, `except A, B:`.
_NEWER_STATEMENT = re.compile(r"[ \t]*(?:type[ \t]+\w+.*=|(?:async[ \t]+)?def[ \t]+\w+[ \t]*\[|class[ \t]+\w+[ \t]*\[|"
                              r"except[ \t]*[\w.]+[ \t]*,)")


def py_advice(name: str, load: LoadReport, raised: Raised | None, unparsed: bool,
              line: str | None = None) -> tuple[str, str]:
    """(what ran of the file, what to do) for the .py file `name` that did not load; unparsed: it did not parse.
    line: the text of the line `raised` names, where known."""
    if unparsed:
        ran = "nothing in it ran"
    elif load.hung or load.stopped:  # a demo that hung, printed without end or ended the worker
        ran = "a file is imported whole before any of its functions can be called"
    else:
        ran = "Python stops a file at its first error"
    if raised is not None and raised.type == "SyntaxError" and _NOTEBOOK_LINE.match(line or ""):
        todo = ("That line is a notebook command (a `!` shell line or a `%` magic, such as `!pip install` or "
                "`%matplotlib inline`), which only Jupyter runs: Python reads it as a syntax error. Delete it, or "
                "make it a comment, and hand the file in again (or hand in the notebook itself)")
        return ran, todo
    if load.hung or load.stopped:
        todo = ("Top-level code should only import, define and do quick one-time setup: put demo, test and "
                'training code under `if __name__ == "__main__":`, where it runs when you run the file but not when '
                "it is imported or graded (or remove it), keep a table built at the top level quick (it counts "
                "toward the load limit, as the rest of the file does), and hand the file in again")
    elif raised is not None and raised.type == "EOFError" and environment_hint(raised):  # input()
        todo = ('Put the code that asks for input (and any other demo code) under `if __name__ == "__main__":`, '
                "where it runs when you run the file but not when it is imported or graded, and hand the file "
                "in again")
    elif raised is not None and ran_a_magic(raised):
        todo = ("get_ipython() exists only in Jupyter: a .py exported from a notebook turns its magics "
                "(%matplotlib, !pip, ...) into get_ipython() calls. Remove those lines from the file, or hand "
                "in the notebook itself")
    elif raised is not None and raised.type == "MemoryError":  # a laptop has more memory than a submission gets
        todo = ("Your own `python` may have the memory this line asked for, but each submission is given a few GB "
                "at most here: put demo and test code that builds large arrays under "
                '`if __name__ == "__main__":`, where it runs when you run the file but not when it is imported or '
                "graded, and hand the file in again")
    elif raised is not None and raised.type == "ModuleNotFoundError":
        todo = ("Remove that import, or move it into the function that needs it so that the others can be "
                "graded, and hand the file in again")
    elif raised is not None and numpy_lacks(raised):
        todo = "Write that name as the grader's NumPy has it (see above), and hand the file in again"
    elif raised is not None and environment_hint(raised):
        todo = ("Your own `python` may not show this error: remove that line from the file's top level "
                "(top-level code should only import and define) and hand the file in again")
    else:
        todo = (f"Run `python {name}` to see the error, fix it and hand the file in again (top-level code "
                "should only import and define)")
    return ran, todo + newer_python_hint(raised, line)


def syntax_hint(submission: Submission, raised: Raised | None) -> str:
    """What a syntax error may mean: a notebook of another kernel's language, else a newer Python's syntax."""
    if submission.kernel and raised is not None and raised.type == "SyntaxError":
        return (f". This notebook was made for the {safe(submission.kernel, 20)} kernel (its kernelspec), but the "
                "assignment's notebook runs Python, and so does the grader: write your answers in the released "
                "notebook, in Python, and hand that in")
    return newer_python_hint(raised, raised_line(raised, {cell.label: cell.source for cell in submission.cells}))


def newer_python_hint(raised: Raised | None, line: str | None = None) -> str:
    """For a syntax error a newer Python might not make, which Python grades the file: a newer one accepts f-strings
    it does not, and statements it does not know (3.12's `type X = ...` and `def f[T](...)`, 3.14's `except A, B:`),
    all of them "invalid syntax" here, and shows no error. Any other syntax error ("expected ':'") is the same in
    every Python, and gets no hint; nor does an "invalid syntax" whose line (`line`, where known) is none of
    those statements (a `!pip` line, a typo)."""
    if raised is None or raised.type != "SyntaxError":
        return ""
    if "f-string" in raised.message:
        return (f". The grader runs Python {GRADER_PYTHON}: if your own Python runs this line without an error, it is "
                f"a newer one, which accepts syntax {GRADER_PYTHON} does not (Python 3.12's f-strings may reuse their "
                "quotes or hold a backslash: f\"{', '.join(names)}\"). Write that line the way Python "
                f"{GRADER_PYTHON} reads it: joined = ', '.join(names), then f\"{{joined}}\"")
    if "invalid syntax" in raised.message and (line is None or _NEWER_STATEMENT.match(line)):  # Python's words
        return (f". The grader runs Python {GRADER_PYTHON}: if your own Python runs this line without an error, it is "
                f"a newer one, which accepts statements {GRADER_PYTHON} does not: write a type alias `type Array = "
                "np.ndarray` as `Array = np.ndarray`, a generic `def f[T](x: T)` without its `[T]`, and `except A, B:` "
                "as `except (A, B):`")
    return ""


def raised_line(raised: Raised | None, sources: dict[str, str]) -> str | None:
    """The text of the line `raised` names, from `sources` (a unit's label -> its code: "" for a .py file); None
    where it is not known."""
    source = sources.get(raised.cell) if raised is not None and raised.line else None
    if source is None:
        return None
    lines = source.split("\n")
    return lines[raised.line - 1] if 0 < raised.line <= len(lines) else None


def ran_a_magic(raised: Raised) -> bool:
    """Whether the code called get_ipython(), as a .py exported from a notebook does for each magic."""
    return raised.type == "NameError" and "'get_ipython'" in raised.message
