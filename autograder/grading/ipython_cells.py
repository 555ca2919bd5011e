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
import os
import re
import shlex
from dataclasses import dataclass

from autograder.code_names import MAX_PARSED, globals_read, kept_lines, set_by
from autograder.sandbox import notebook_modules

# Cell magics whose body is still Python (as a notebook's get_ipython() runs them too); any other (%%bash,
# %%html...) skips the cell.
PYTHON_CELL_MAGICS = {f"%%{name}" for name in notebook_modules.PYTHON_CELL_MAGICS}
WRITE_CELL_MAGICS = {"%%writefile", "%%file"}
_LINE_MAGIC = re.compile(r"^(\s*)(%|!)")
_TARGET = r"[A-Za-z_][\w.]*(?:\[[^\]=]*\])*"  # x, self.out, d['k']
_ASSIGNED = re.compile(rf"^(\s*)({_TARGET}(?:\s*,\s*{_TARGET})*)\s*=\s*([!%])")  # x = !ls, x = %timeit -o f()
_HELP = re.compile(r"^\s*(\?{1,2}[\w.*%\[\]]+|[\w.*%\[\]]+\?{1,2})\s*$")  # np.dot?, ?np.dot, np.*load*??, fs[0]?
# Line magics Jupyter runs without their % (automagic, on by default), where the line is not Python.
_AUTOMAGIC = re.compile(r"^(\s*)(pip|conda|cd|pwd|ls|mkdir|cat|rm|cp|mv|matplotlib|load_ext|reload_ext|autoreload|"
                        r"time|timeit|run|env|set_env|who|whos|history|reset|config)(\s|$)")
# The forms of a line that may be IPython's. Past MAX_CANDIDATES of them in a cell, or past MAX_CANDIDATE_CHARS in a
# line, a line of that form is taken for IPython's unparsed: a cell of thousands is no notebook's.
_CANDIDATES = (_LINE_MAGIC, _ASSIGNED, _HELP, _AUTOMAGIC)
MAX_CANDIDATES = 1000
MAX_CANDIDATE_CHARS = 2000
# What IPython takes for Python after a magic's name, not for the magic's arguments (its AssignmentChecker and
# PythonOpsChecker): `history = dict(`, `ls, that = 1, 2`, `time (x)`. An empty rest is the magic alone.
_PYTHON_AFTER_NAME = set("!=()<>,+*/%^&|")
# Prompts pasted with the code, which IPython strips (its classic_prompt and ipython_prompt transforms).
_CLASSIC_START = re.compile(r"^>>>( |$)")
_CLASSIC_PROMPT = re.compile(r"^(>>>|\.\.\.)( |$)")
_IPYTHON_PROMPT = re.compile(r"^(In \[\d+\]: |\s*\.{3,}: ?)")
# What `x = %timeit -o f()` gives here, where nothing is timed: IPython's TimeitResult's fields, all 0.
_TIMED = ("__import__('types').SimpleNamespace(best=0.0, worst=0.0, average=0.0, stdev=0.0, all_runs=[], "
          "timings=[], loops=1, repeat=1)")
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
    part: str = ""  # for a course's cell (demo, test), what of it runs, for notes about it; "" for the student's

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
    lines = _cleaned(source.split("\n"))
    first = next((number for number, line in enumerate(lines) if line.strip()), 0)
    if lines[first].startswith("%%"):
        magic, *arguments = lines[first].split(None, 1) or [""]
        if magic in WRITE_CELL_MAGICS:
            target = _written_file(arguments[0] if arguments else "")
            if target is None:
                return Cell(label, "")  # a %%writefile line IPython itself would refuse: nothing runs
            return Cell(label, _plain("\n".join(["" for _ in lines[:first + 1]] + lines[first + 1:])),
                        writes=target[0], append=target[1])
        if magic not in PYTHON_CELL_MAGICS:
            return Cell(label, "")
        lines[first] = _captured(magic, arguments[0] if arguments else "")
    return Cell(label, _plain("\n".join(lines)))


def _cleaned(lines: list[str]) -> list[str]:
    """The cell's lines as IPython reads them before anything else, each kept in its place: the indentation every
    line that holds anything shares is taken off (code pasted from inside a function, textwrap.dedent), and a cell
    pasted from a Python or IPython prompt (`>>> `, `... `, `In [3]: `, `   ...: `) loses its prompts. Leading
    empty lines, which IPython drops, stay empty here: a cell magic after them is still the cell's."""
    first = next((number for number, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return lines
    indent = os.path.commonprefix([line[:len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()])
    if indent:
        lines = [line[len(indent):] if line.startswith(indent) else line for line in lines]
    for start, prompt in ((_CLASSIC_START, _CLASSIC_PROMPT), (_IPYTHON_PROMPT, _IPYTHON_PROMPT)):
        if start.match(lines[first]) or (first + 1 < len(lines) and prompt.match(lines[first + 1])):
            return [prompt.sub("", line, count=1) for line in lines]
    return lines


def _captured(magic: str, arguments: str) -> str:
    """The line that stands for a Python cell magic's: for `%%capture NAME`, NAME holds what IPython's CapturedIO
    would hold had nothing been captured (the cell's output stays where the worker keeps it); else empty."""
    names = [word for word in arguments.split() if not word.startswith("-")]  # --no-stderr and the like
    if magic != "%%capture" or not names or not names[0].isidentifier():
        return ""
    return (f"{names[0]} = __import__('types').SimpleNamespace(stdout='', stderr='', outputs=[], "
            f"show=lambda: None)  # {magic} {arguments}")


def _plain(source: str) -> str:
    """The cell's IPython lines as Python, line for line; a cell that parses as Python already is kept.

    Only a line that starts a statement can be IPython's, as in IPython: a line inside brackets, a triple-quoted
    string or after a backslash continues the Python before it, whatever it starts with (`% (a, b)`, `!= True`)."""
    lines = source.split("\n")
    candidates = sum(any(form.match(line) for form in _CANDIDATES) for line in lines)
    if not candidates:  # the most of a notebook's cells: nothing that looks like IPython
        return source
    # Each candidate line is parsed once to tell IPython from Python; a cell of thousands is not a notebook's.
    ipython = [_ipython_line(line, candidates <= MAX_CANDIDATES) for line in lines]
    if not any(ipython) or (len(source) <= MAX_PARSED and parses(source)):  # longer: its magics are read too
        return source
    plain, before, magic_continues = [], _Open(), False
    for line, marked in zip(lines, ipython):
        if magic_continues:  # a magic or shell line continued with a backslash: IPython joins them into one
            plain.append("")
            magic_continues = line.endswith("\\")
        elif marked and not before.continues():
            plain.append(_python_line(line.removesuffix("\\")))  # a whole statement: it leaves nothing open
            magic_continues = line.endswith("\\")
        else:
            plain.append(line)
            before = before.after(line)
    return "\n".join(plain)


@dataclass(frozen=True)
class _Open:
    """What the Python lines so far leave open for the next: brackets, a triple-quoted string, a backslash."""

    depth: int = 0
    quote: str = ""  # the triple quote of a string still open
    joined: bool = False

    def continues(self) -> bool:
        """Whether the next line continues a statement instead of starting one."""
        return self.depth > 0 or bool(self.quote) or self.joined

    def after(self, line: str) -> _Open:
        """What is open after `line`: brackets counted outside strings and comments."""
        depth, quote, at = self.depth, self.quote, 0
        while at < len(line):
            if quote:
                end = _closing(line, at, quote)
                if end < 0:
                    return _Open(depth, quote)
                quote, at = "", end
            elif line[at] == "#":
                return _Open(depth)  # a comment: no backslash after it continues the line
            elif line.startswith(('"""', "'''"), at):
                quote, at = line[at:at + 3], at + 3
            elif line[at] in "'\"":
                at = _closing(line, at + 1, line[at])
                if at < 0:  # a one-line string left open: an error Python reports; nothing stays open
                    break
            else:
                depth += (line[at] in "([{") - (line[at] in ")]}" and depth > 0)
                at += 1
        return _Open(depth, quote, not quote and line.endswith("\\"))


def _closing(line: str, at: int, quote: str) -> int:
    """Where in `line`, from `at`, the string closed by `quote` ends (just past it), or -1: escapes skipped."""
    while at < len(line):
        if line[at] == "\\":
            at += 2
        elif line.startswith(quote, at):
            return at + len(quote)
        else:
            at += 1
    return -1


def _ipython_line(line: str, parse: bool = True) -> bool:
    """A line of IPython that is not Python: a magic or shell line, an assignment from one, help, automagic (a
    magic's name followed by its arguments, not by Python: IPython leaves `history = dict(` and `time(x)` alone;
    alone or with options, `pwd` and `ls -la` are the magic, which Python would only take for names).
    parse: tell a candidate from Python that looks like one by parsing it."""
    if _LINE_MAGIC.match(line):
        return True
    automagic = _AUTOMAGIC.match(line)
    rest = line[automagic.end():].strip() if automagic else ""
    if automagic and (not rest or rest.startswith("-")):
        return True
    if automagic and rest[:1] in _PYTHON_AFTER_NAME:
        automagic = None
    parse = parse and len(line) <= MAX_CANDIDATE_CHARS  # a magic's line is short: a long one is decided as IPython
    return bool(_ASSIGNED.match(line) or _HELP.match(line) or automagic) and not (parse and parses(line.strip()))


def _python_line(line: str) -> str:
    """One line of IPython (`_ipython_line`) as one line of Python, its indentation kept."""
    written = line.strip()
    assigned = _ASSIGNED.match(line)
    if assigned:
        magic = line[assigned.end():].strip()  # `x = %time f()` is f()'s value, `x = %pwd` the folder, as in IPython
        value = (magic[len("time "):] if magic.startswith("time ") else "__import__('os').getcwd()" if magic == "pwd"
                 else _TIMED if magic.startswith("timeit ") and " -o" in f" {magic}"
                 else "[]" if assigned.group(3) == "!" or magic.split(" ", 1)[0] in ("sx", "system") else "None")
        return f"{assigned.group(1)}{assigned.group(2)} = {value}  # {written}"
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


def parses(source: str) -> bool:
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


_IMPORTS = (ast.Import, ast.ImportFrom)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def imports_of(cell: Cell, defined: frozenset[str] = frozenset(), wanted: frozenset[str] = frozenset()) -> Cell:
    """What the grader runs of an instructor's illustration (a cell tagged `demo`): its top-level imports, the
    functions and classes it defines that no other cell does, and its assignments of names the student's cells
    read (`wanted`, `read_from_demos`). A student's later cell may use what it imports (`F` for
    torch.nn.functional) or the example it built (`print(Q_x.shape)` above a def), and a student who copied the
    cell (Jupyter keeps its tag) to write a helper in it needs the def; its plots, timings and prints are not the
    student's work, and an illustration's own version of a function (a naive one to compare with) never replaces
    the student's. defined: the names the notebook's other cells define."""
    return _statements_of(cell, _IMPORTS + _DEFINITIONS, defined, "tagged demo: only its imports, definitions and the "
                          "examples other cells use run", wanted)


def read_from_demos(own: list[Cell], demos: list[Cell]) -> frozenset[str]:
    """The names the student's cells (`own`) read, at their top level or as their functions' globals, that a demo
    cell sets, and what the demos' own functions read (a default `w=WIDTH`), and in turn what those assignments
    read: in Jupyter every demo ran whole before the student's cells did, so `print(X_example.shape)` there found
    the example; run for its imports alone, it raised NameError and the defs after it in the cell never ran."""
    wanted: set[str] = set()
    for cell in own:
        for node in _statements(cell.source):
            wanted |= globals_read(node) if isinstance(node, _DEFINITIONS) else _names_loaded(node)
    setting = [node for cell in demos for node in _statements(cell.source) if not isinstance(node, _IMPORTS)]
    wanted |= {name for node in setting if isinstance(node, _DEFINITIONS) for name in globals_read(node)}
    needed: set[str] = set()
    while True:  # each round adds what the assignments kept so far read; it ends when none is added
        more = {name for node in setting if set(set_by(node)) & wanted for name in _names_loaded(node)} - wanted
        needed |= {name for node in setting for name in set_by(node)} & wanted
        if not more:
            return frozenset(needed)
        wanted |= more


def _statements(source: str) -> list[ast.stmt]:
    if len(source) > MAX_PARSED:
        return []
    try:
        return ast.parse(source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []


def _names_loaded(node: ast.AST) -> set[str]:
    return {name.id for name in ast.walk(node) if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load)}


def definitions_of(cell: Cell, defined: frozenset[str] = frozenset()) -> Cell:
    """What the grader runs of a cell with nbgrader's test metadata: the functions and classes it defines that no
    other cell does, there only where a student copied such a cell to write in (its imports and calls are the
    course's checks, and nbgrader puts the released cell back before it grades)."""
    return _statements_of(cell, _DEFINITIONS, defined, "a test cell: only its definitions run")


def _statements_of(cell: Cell, kinds: tuple[type, ...], defined: frozenset[str], why: str,
                   wanted: frozenset[str] = frozenset()) -> Cell:
    """`cell` with only its top-level statements of these kinds and those setting a name in `wanted`, each in its
    own lines, every other line blank, but definitions of names in `defined`; its `part` says so (`why`), for a
    note about the cell."""
    if cell.writes or len(cell.source) > MAX_PARSED:
        return Cell(cell.label, "", part=why)
    try:
        statements = ast.parse(cell.source).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return Cell(cell.label, "", part=why)
    code = kept_lines(cell.source, statements,
                      lambda node: (isinstance(node, kinds) and getattr(node, "name", "") not in defined)
                      or not isinstance(node, _DEFINITIONS) and bool(set(set_by(node)) & wanted)
                      and not set(set_by(node)) & defined)
    return Cell(cell.label, code, part=why)
