"""Which of a student's files is graded, when their hand-in holds several: files, or an LMS's attempts.

A student's folder (or an LMS download) may hold more than the work: an empty
`Untitled.ipynb`, a scratch notebook, a .py exported beside the notebook, a
link, each attempt Blackboard kept. One file is graded, and the note says which
and why, so that the student can tell if the rule picked the wrong one.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import math
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.handin import read_bytes
from autograder.grading.ids import canonical
from autograder.grading.lms_downloads import LmsName
from autograder.text import safe

_TOP_LEVEL_DEF = re.compile(rb'(?:^|\n|"|\\n)(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)\s*\(')


def latest_attempt(paths: list[Path], download: dict[str, LmsName]) -> tuple[list[Path], str, list[Path]]:
    """Of a student's files in an LMS download, those of their latest attempt (Blackboard keeps each) and any the TA
    put beside them (no attempt of the download's), a note when there were several attempts, and the files of the
    earlier attempts, latest first: graded only where the latest is retracted (grading.retract)."""
    attempts = sorted({_attempt(p, download) for p in paths} - {""})
    if len(attempts) < 2:
        return paths, "", []
    earlier = sorted((p for p in paths if _attempt(p, download) not in ("", attempts[-1])),
                     key=lambda p: _attempt(p, download), reverse=True)
    return ([p for p in paths if p not in earlier],
            f"{len(attempts)} attempts were downloaded; {LATEST_GRADED}, of {_shown(attempts[-1])}", earlier)


LATEST_GRADED = "graded the latest"  # latest_attempt's words, which picked_not_graded rewrites
LATER_GRADED = "the later upload is the one graded"  # latest_uploads' words, likewise


def picked_not_graded(note: str) -> str:
    """A note of `choose`, latest_attempt or latest_uploads said of a file that was picked but not graded (it is a
    retracted hand-in, and another file is graded instead: grading.retract): what the rules pick, and why."""
    return (note.replace(SEVERAL, "several files were handed in; the rules pick ", 1)
            .replace(LATEST_GRADED, "the rules pick the latest").replace(LATER_GRADED, "the rules pick the later "
                                                                                      "upload"))


def _shown(attempt: str) -> str:
    """Blackboard's attempt time as people write it: 2026-12-01-22-40-13 is 2026-12-01 22:40:13."""
    return f"{attempt[:10]} {attempt[11:].replace('-', ':')}"


def _attempt(path: Path, download: dict[str, LmsName]) -> str:
    return download[path.name].attempt if path.name in download else ""


@dataclass(frozen=True)
class Chosen:
    """The file `choose` grades, the note saying why (empty for a lone file), and the student's other files, best
    first: where the graded one is a retracted hand-in, the next of those is graded (grading.retract)."""

    path: Path
    note: str = ""
    others: tuple[Path, ...] = ()
    # Those of `others` alike to `path` by every rule up to the time (within the same TIE_SECONDS step): a copy of
    # the folder may have reordered them, so the one already stored as the student's hand-in is graded (retract)
    tied: tuple[Path, ...] = ()


def choose(paths: list[Path], module: str, folder: Path, download: dict[Path, LmsName] | None = None) -> Chosen:
    """The one file to grade among a student's .py/.ipynb files, and a note when there were several.

    Regular files first (a link or a FIFO among them is never preferred to
    the student's real file), then one that writes a function (below) over one
    that writes none, whatever their names (`nbgrader submit` hands in the
    released notebook, untouched, beside the student's own `my_solution.py`),
    then the file named after the assignment's module, in any case or as a
    browser names a second download of it
    (`hw (1).ipynb`), as nbgrader grades the released notebook's name;
    then the one that writes the most functions (the work, not an empty
    Untitled.ipynb or a scratch notebook saved after it: a function whose body
    only raises NotImplementedError, as the template's do, is not written),
    then a notebook over a .py, then Canvas's later upload (a larger file id:
    the times in its zip say nothing of the order of uploads), then the newest
    (times in the same TIE_SECONDS step, floor(time / TIE_SECONDS), are
    equally new: a zip keeps times to that step, so a folder and its zip give
    one choice; copying a folder moves them apart), then a browser's later download of one name
    (`hw (2).py` after `hw (1).py` after `hw.py`), then the one nearest
    `folder` (which the note's names are relative to), then by name: the same
    folder copied gives the same choice. Nothing is followed.
    download: the LMS's entry of each file it named (lms_downloads): the name
    it was handed in under, and Canvas's file id; the file's own name otherwise.
    """
    if len(paths) == 1:
        return Chosen(paths[0])
    ranks = _ranks(paths, module, download or {})
    ranked = sorted(paths, key=ranks.__getitem__)
    others = ", ".join(safe(p.relative_to(folder)) + ("" if _regular(p) else " (a link or not a regular file)")
                       for p in ranked[1:])
    first, second = ranks[ranked[0]], ranks[ranked[1]]
    why = next((reason for reason, a, b in zip(_REASONS, first, second) if a != b), _REASONS[-1])
    graded = safe(ranked[0].relative_to(folder))
    note = f"{SEVERAL}{graded}, not {others} ({why})"
    tied = tuple(p for p in ranked[1:] if ranks[p][:_UP_TO_TIME] == first[:_UP_TO_TIME])
    return Chosen(ranked[0], note + _helpers_note(ranked[0], ranked[1:], graded), tuple(ranked[1:]), tied)


SEVERAL = "several files were handed in; graded "  # how choose's note begins: grading.retract rewrites it
TIE_SECONDS = 2  # a zip keeps file times to 2 seconds (DOS times), and a copy (`cp -r`) moves them by microseconds


def _ranks(paths: list[Path], module: str, download: dict[Path, LmsName]) -> dict[Path, tuple]:
    """Each file's place by `choose`'s rules, one element a rule, in the order of _REASONS (smallest first)."""
    written = {p: _functions_written(p) for p in paths}
    names = {p: download[p].name if p in download else p.name for p in paths}
    alike = {p: (not _regular(p), written[p] == 0, not named_after(Path(names[p]).stem, module), -written[p],
                 p.suffix != ".ipynb", -(download[p].upload if p in download else 0)) for p in paths}
    copies = {p: _copy_of(names[p]) for p in paths}
    shared = [base for base, _ in copies.values()]
    # Newest first, two times in one TIE_SECONDS step equally new: a zip of the folder keeps each time's step.
    return {p: (*alike[p], -math.floor(_mtime(p) / TIE_SECONDS),
                -copies[p][1] if shared.count(copies[p][0]) > 1 else 0, len(p.parts), str(p)) for p in paths}


_UP_TO_TIME = 7  # how many of a rank's elements are the rules up to and including the time


def _copy_of(name: str) -> tuple[str, int]:
    """(the name a browser downloaded, which download of it): `hw (2).py` is ("hw.py", 2), `hw.py` ("hw.py", 0)."""
    path = Path(name)
    match = re.fullmatch(r"(.*) \((\d+)\)", path.stem)
    return (match[1] + path.suffix, int(match[2])) if match else (name, 0)


def _helpers_note(graded_path: Path, others: list[Path], graded: str) -> str:
    """What to do where the graded file imports a module the student handed in beside it (`from helpers import
    ...` with helpers.py): its sandbox has the graded file alone, so that import fails, as nbgrader's copy of the
    folder would not; "" otherwise."""
    imported = _modules_imported(graded_path)
    helpers = [safe(p.name) for p in others if p.suffix == ".py" and _regular(p) and p.stem in imported]
    if not helpers:
        return ""
    names = ", ".join(helpers)
    return (f"; {graded} imports {names}, handed in beside it, which grading does not have: only {graded} is "
            f"graded, so put the code of {names} into {graded} (and drop the import)")


def _modules_imported(path: Path) -> set[str]:
    """The top-level modules a file's code imports outside a `try:` (`from helpers import f`, `from . import
    helpers`: helpers) that the grader's own Python does not have: a stray numpy.py beside the work is not what
    `import numpy` imports, and a guarded import has its own way out."""
    content = read_bytes(path) if _regular(path) else None
    if content is None or content.error:
        return set()
    names = set()
    for code in _code_of(content.data, path.suffix):
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # such a file does not load: its own error says so
        guarded = {id(node) for attempt in ast.walk(tree) if isinstance(attempt, ast.Try)
                   for statement in attempt.body for node in ast.walk(statement)}
        for node in ast.walk(tree):
            if id(node) not in guarded:
                names |= _imported_names(node)
    return {name for name in names if not _installed(name)}


def _imported_names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    if isinstance(node, ast.ImportFrom):
        if node.level == 0:
            return {node.module.split(".")[0]} if node.module else set()
        return {node.module.split(".")[0]} if node.module else {alias.name for alias in node.names}
    return set()


def _installed(name: str) -> bool:
    if name in sys.stdlib_module_names:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def named_after(stem: str, module: str) -> bool:
    """Whether a file's name is the assignment's module's, as saved on any machine: in any case (`HW.ipynb`,
    as a Mac or Windows keeps it) or as a browser names a second download of it (`hw (1).ipynb`)."""
    return re.fullmatch(rf"{re.escape(module)}(?: \(\d+\))?", stem, flags=re.IGNORECASE) is not None


SCRATCH_NAMES = ("untitled", "copy of", "scratch", "draft", "test", "notes", "tmp", "temp")


def a_draft_of(stem: str, module: str) -> bool:
    """Whether a file's name is that of one student's own draft or scratch file beside their work (`hw_v2`,
    `hw-old`, `Untitled1`, `Copy of hw`), not another student's hand-in (`bob`)."""
    lowered = stem.lower()
    return lowered.startswith((module.lower(), *SCRATCH_NAMES))


# Why `choose` graded the file it did: the first of its rules that told the two best files apart.
_REASONS = ("a regular file over one that is not", "a file that writes a function over one that writes none: the "
            "template's functions only raise NotImplementedError", "the file named after the assignment",
            "the file that writes the most functions (one that only raises NotImplementedError, as the template's "
            "do, is not written)", "a notebook over a .py of as many functions",
            "Canvas's later upload of files alike by those rules (a larger file id)",
            f"the newest of files alike by those rules (times in the same {TIE_SECONDS}-second step count as "
            "equally new, as a zip keeps them)",
            "a browser's later download of one name, of files alike by those rules (`x (1).py` after `x.py`)",
            "the one nearest the top of the folder", "the first by name of files alike by every other rule")


def latest_uploads(paths: list[Path], download: dict[str, LmsName]) -> tuple[list[Path], str, list[Path]]:
    """Of a student's files in a Canvas download, each name's latest upload (Canvas names a file uploaded again
    under a name the student used `name-1.ipynb`, with a larger file id), a note when one was left out, and those
    left out, latest first: graded only where a later upload is retracted (grading.retract)."""
    by_name: dict[str, list[Path]] = {}
    for path in paths:
        entry = download.get(path.name)
        by_name.setdefault(entry.name if entry is not None and entry.upload else path.name, []).append(path)
    kept, notes, dropped = [], [], []
    for uploads in by_name.values():
        latest = max(uploads, key=lambda p: _upload(p, download))
        kept.append(latest)
        earlier = [p for p in uploads if p is not latest]
        dropped += earlier
        if earlier:
            notes.append(f"{safe(latest.name)} was uploaded after {', '.join(safe(p.name) for p in earlier)} under "
                         f"the same name (a larger file id): {LATER_GRADED}")
    return kept, "; ".join(notes), sorted(dropped, key=lambda p: _upload(p, download), reverse=True)


def _upload(path: Path, download: dict[str, LmsName]) -> int:
    return download[path.name].upload if path.name in download else 0


def two_formats_joined(students: dict[str, list[Path]]) -> dict[str, list[Path]]:
    """student -> their files, with `Alice.py` beside `alice.ipynb` one student's two formats, under the notebook's
    id, as `bob.py` beside `bob.ipynb` is (`choose` grades the notebook and says so): ids compare case-folded, and
    two ids of one form would each be refused as a collision. Two files of one format stay apart, and are refused."""
    by_form: dict[str, list[str]] = {}
    for student in students:
        by_form.setdefault(canonical(student), []).append(student)
    joined = {}
    for names in by_form.values():
        suffixes = sorted(path.suffix for name in names for path in students[name])
        if len(names) == 2 and suffixes == [".ipynb", ".py"]:
            notebook = next(name for name in names if students[name][0].suffix == ".ipynb")
            joined[notebook] = [path for name in names for path in students[name]]
        else:
            joined.update({name: students[name] for name in names})
    return joined


def _functions_written(path: Path) -> int:
    """How many functions the file defines at its top level (a notebook's: at a code cell's) with a body of its own:
    not a template's, which only raises NotImplementedError. 0 for what is not a regular file or cannot be read."""
    if not _regular(path):
        return 0
    content = read_bytes(path)
    if content.error:
        return 0
    return len(set().union(*map(_written_in, _code_of(content.data, path.suffix))))


def _code_of(data: bytes, suffix: str) -> list[str]:
    """The file's code: a .py's text, or each code cell of a notebook, its magics and shell lines left out."""
    if suffix != ".ipynb":
        return [data.decode("utf-8", errors="replace")]
    try:
        cells = json.loads(data)["cells"]
        sources = ["".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                   for cell in cells if cell.get("cell_type") == "code"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return [data.decode("utf-8", errors="replace")]  # read as text: its defs are found by their look
    magic = re.compile(r"^\s*[%!].*$", re.MULTILINE)
    return [magic.sub("", source) for source in sources if isinstance(source, str)]


def _written_in(source: str) -> set[str]:
    """The names of the functions `source` writes at its top level; for code that does not parse, every def found
    at the start of a line (JSON that is no notebook: at the start of a string too)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {name.decode() for name in _TOP_LEVEL_DEF.findall(source.encode("utf-8", errors="replace"))}
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _template_body(node.body)}


def _template_body(body: list[ast.stmt]) -> bool:
    """Whether a function's body holds only what a template's does: a docstring, `pass`, `...`, comments, and
    `raise NotImplementedError(...)`."""
    def placeholder(statement: ast.stmt) -> bool:
        if isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr) and
                                               isinstance(statement.value, ast.Constant)):
            return True
        raised = statement.exc if isinstance(statement, ast.Raise) else None
        raised = raised.func if isinstance(raised, ast.Call) else raised
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return all(map(placeholder, body))


def _regular(path: Path) -> bool:
    """A regular file of one name: a link, hard or symbolic, is read by no layout (grading.handin)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def _mtime(path: Path) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0
