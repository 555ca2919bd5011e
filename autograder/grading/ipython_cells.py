"""A notebook cell's IPython syntax as the plain Python a worker runs, doing what Jupyter would do.

Jupyter runs a cell's magics and shell lines; a worker runs Python only. Most
magics change nothing a grade depends on (`%matplotlib inline`, `!pip install`),
so they become `pass`, and a cell magic whose body is Python (`%%time`) runs
its body. Two write or run the student's own code, so they are done here as
Jupyter does them, or functions the student wrote would go missing:

- `%%writefile NAME` (`%%file`, `-a` to append) writes the cell's text to NAME in the
  worker's folder instead of running it, for a later `import` or `%run` of it;
- `%run FILE` runs FILE and keeps what it defines (`-i`: in the notebook's own namespace).

`%time STATEMENT` runs its statement, as IPython does; `%pylab` puts NumPy's names in the
notebook, through the notebook's `get_ipython()` (sandbox.notebook_modules); `x = !ls` and `x = %magic` assign
what a shell or magic with no output would ([] and None); help (`np.dot?`) and a magic
written without its `%` (automagic: `pip install torch`, `cd ..`) become `pass`. A cell
that parses as Python is left as it is: a line inside a string that only looks like
IPython stays text.

Translated here, in the grader, from text the student chose: file names and
text reach the worker only as Python string literals (repr). Every cell keeps its
line count, so a line the worker reports is the line the student sees.
"""
from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass

from autograder.sandbox import notebook_modules

# Cell magics whose body is still Python (as a notebook's get_ipython() runs them too); any other (%%bash,
# %%html...) skips the cell.
PYTHON_CELL_MAGICS = {f"%%{name}" for name in notebook_modules.PYTHON_CELL_MAGICS}
WRITE_CELL_MAGICS = {"%%writefile", "%%file"}
# The most text the grader parses itself (ast.parse takes hundreds of bytes a character, and the grading process
# has no memory limit of its own): a 2 MB line had it use 1.2 GB.
MAX_PARSED = 1 << 18
_LINE_MAGIC = re.compile(r"^(\s*)(%|!)")
_TARGET = r"[A-Za-z_][\w.]*(?:\[[^\]=]*\])*"  # x, self.out, d['k']
_ASSIGNED = re.compile(rf"^(\s*)({_TARGET}(?:\s*,\s*{_TARGET})*)\s*=\s*([!%])")  # x = !ls, x = %timeit -o f()
_HELP = re.compile(r"^\s*(\?{1,2}[\w.*%]+|[\w.*%]+\?{1,2})\s*$")  # np.dot?, ?np.dot, np.*load*??
# Line magics Jupyter runs without their % (automagic, on by default), where the line is not Python.
_AUTOMAGIC = re.compile(r"^(\s*)(pip|conda|cd|pwd|ls|mkdir|cat|rm|cp|mv|matplotlib|load_ext|reload_ext|autoreload|"
                        r"time|timeit|run|env|set_env|who|whos|history|reset|config)(\s|$)")
# Built-ins reached through the builtins module: a student's own `open` or `exec` must not change what these do.
_BUILTINS = "__import__('builtins')"


@dataclass(frozen=True)
class Cell:
    """One code cell as the grader reads it.

    label: "code cell 3", counting code cells from 1 (Jupyter numbers none of them).
    source: its Python, magics made plain; for a `%%writefile` cell, the text it writes (the magic's line blank).
    writes: for a `%%writefile` cell, the file it writes ("" for any other cell); append: with `-a`.
    """

    label: str
    source: str
    writes: str = ""
    append: bool = False

    def code(self) -> str:
        """What the worker runs for this cell: its source, or for a `%%writefile` cell the write itself (one line
        per line of the cell, so later lines keep their numbers)."""
        if not self.writes:
            return self.source
        text = self.source.split("\n", 1)[1] if "\n" in self.source else ""
        mode = "a" if self.append else "w"
        return (f"{_BUILTINS}.open({self.writes!r}, {mode!r}, encoding='utf-8').write({text!r})"
                + "\n" * self.source.count("\n"))


def read_cell(label: str, source: str) -> Cell:
    """The cell `label` holding `source` (IPython syntax), as a Cell whose `code()` is plain Python."""
    lines = source.split("\n")
    if lines and lines[0].startswith("%%"):
        magic, *arguments = lines[0].split(None, 1) or [""]
        if magic in WRITE_CELL_MAGICS:
            target = _written_file(arguments[0] if arguments else "")
            if target is None:
                return Cell(label, "")  # a %%writefile line IPython itself would refuse: nothing runs
            return Cell(label, _plain("\n".join(["", *lines[1:]])), writes=target[0], append=target[1])
        if magic not in PYTHON_CELL_MAGICS:
            return Cell(label, "")
        lines[0] = ""
    return Cell(label, _plain("\n".join(lines)))


def _plain(source: str) -> str:
    """The cell's IPython lines as Python, line for line; a cell that parses as Python already is kept."""
    lines = source.split("\n")
    ipython = [_ipython_line(line) for line in lines]  # once a line: a candidate may cost a parse
    if not any(ipython) or _parses(source):
        return source
    return "\n".join(_python_line(line) if marked else line for line, marked in zip(lines, ipython))


def _ipython_line(line: str) -> bool:
    """A line of IPython that is not Python: a magic or shell line, an assignment from one, help, automagic."""
    if _LINE_MAGIC.match(line):
        return True
    return bool(_ASSIGNED.match(line) or _HELP.match(line) or _AUTOMAGIC.match(line)) and not _parses(line.strip())


def _python_line(line: str) -> str:
    """One line of IPython (`_ipython_line`) as one line of Python, its indentation kept."""
    written = line.strip()
    assigned = _ASSIGNED.match(line)
    if assigned:
        return f"{assigned.group(1)}{assigned.group(2)} = {'[]' if assigned.group(3) == '!' else 'None'}  # {written}"
    if _AUTOMAGIC.match(line):
        line = _AUTOMAGIC.sub(r"\1%\2\3", line, count=1)
    indent = line[:len(line) - len(line.lstrip())]
    if line.lstrip().startswith("%run "):
        return indent + _run_line(line.lstrip())
    if line.lstrip().startswith("%time "):
        return indent + line.lstrip()[len("%time "):].lstrip()
    if re.match(r"%pylab(\s|$)", line.lstrip()):  # NumPy's names for the cells after it (notebook_modules.pylab)
        return f"{indent}get_ipython().run_line_magic('pylab', {line.lstrip()[len('%pylab'):].strip()!r})  # {written}"
    if _LINE_MAGIC.match(line) or _HELP.match(line):
        return f"{indent}pass  # {written}"
    return line


def _parses(source: str) -> bool:
    """Whether `source` is Python; text over MAX_PARSED is taken as Python unparsed: the worker parses it, under
    its memory limit, and reports what does not parse."""
    if len(source) > MAX_PARSED:
        return True
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a null byte
        return False
    return True


def _run_line(line: str) -> str:
    """`%run [-i] FILE [args]` as Python: FILE run as a script (its `__name__` "__main__"), what it defines
    then kept in the notebook; with -i, run in the notebook's own namespace, as IPython does."""
    try:
        words = shlex.split(line[len("%run "):])
    except ValueError:
        return "pass  # " + line
    in_namespace = "-i" in words
    files = [word for word in words if not word.startswith("-")]
    if not files:
        return "pass  # " + line
    path = files[0]
    if in_namespace:
        return (f"{_BUILTINS}.exec({_BUILTINS}.compile({_BUILTINS}.open({path!r}, encoding='utf-8').read(), "
                f"{path!r}, 'exec'), {_BUILTINS}.globals())")
    return (f"{_BUILTINS}.globals().update({{name: value for name, value in "
            f"__import__('runpy').run_path({path!r}, run_name='__main__').items() if not name.startswith('__')}})")


def _written_file(arguments: str) -> tuple[str, bool] | None:
    """(file name, append?) of `%%writefile [-a] NAME`; None where there is no name to write to."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        return None
    append = any(word in ("-a", "--append") for word in words)
    names = [word for word in words if not word.startswith("-")]
    return (names[0], append) if names else None
