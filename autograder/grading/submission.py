"""Reading one student's file — a .py module or a Jupyter notebook — into code to run.

The grader parses but never executes: a notebook is read and validated with
nbformat here, and only the text of its code cells travels to the worker.
A file that cannot be read (empty, binary, not JSON, not a notebook, no code)
becomes a Submission with a `problem` that the student's feedback shows.
"""
from __future__ import annotations

import json
import re
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.handin import MAX_BYTES, FileBytes, file_sha256, over_size_limit, read_bytes
from autograder.grading.ipython_cells import Cell, definitions_of, imports_of, parses, read_cell, read_from_demos
from autograder.grading.restored_cells import LockedEdit, ReleaseMarks, runs_as_code
from autograder.grading.source_text import encoding_note, module_text
from autograder.grading.test_cells import PACKAGE, checked_names, is_grader_test, only_course_checks, words
from autograder.text import safe, valid_utf8

# jsonschema (which nbformat imports) loads every optional format checker that is installed, and
# Jupyter's packages install them all: the IRI one, rfc3987_syntax, compiles a grammar for 1.2-3 s on
# every start, and the others take 0.12 s together, twice nbformat's own import. nbformat checks no
# format. Set here, early, for whichever module imports nbformat first (`import` reports a module set
# to None missing); only modules that nothing but jsonschema imports (idna is not one: requests needs it).
_UNUSED_FORMAT_CHECKERS = ("rfc3987_syntax", "rfc3986_validator", "rfc3339_validator", "isoduration", "fqdn",
                           "webcolors", "jsonpointer", "uri_template")
for _checker in _UNUSED_FORMAT_CHECKERS:
    sys.modules.setdefault(_checker, None)

__all__ = ["MAX_BYTES", "FileBytes", "Submission", "file_sha256", "prepare_notebook_reader", "read_bytes",
           "read_submission", "submission_from_bytes"]
MAX_CELLS = 5000  # code cells graded in one notebook
# Characters of code in one hand-in, all its code cells together: a week's solution is some kB, and each MB costs
# the grader a second or more to parse and the worker to compile (10 MB of cells took the grader 60 s, and the
# worker past its load limit).
MAX_CODE = 1 << 20
MAX_JSON_CONTAINERS = 500_000  # a real notebook, outputs and all, holds some thousands
MAX_TEXT_CELLS = 20  # markdown and raw cells holding code kept for the message that names them
# As grading.loading reads a top-level def: at the very start of a line.
_DEF_AT_LINE_START = re.compile(r"^(?:async[ \t]+)?def[ \t]", re.MULTILINE)
SUFFIXES = (".py", ".ipynb")
# A line only a notebook runs: a magic as nbconvert writes it, or a test cell's import of the course's checks.
_NOTEBOOK_ONLY = re.compile(rf"\bget_ipython\(\)|^(?:from|import)[ \t]+{PACKAGE}\b", re.MULTILINE)
_ASSIGNED_TO = r"(?:[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*)?"  # `files = !ls`
_NOTEBOOK_LINE = re.compile(rf"^[ \t]*{_ASSIGNED_TO}[!%]", re.MULTILINE)  # a shell line or a magic: a notebook's
NOTEBOOK_LINES_NOTE = ("{name} holds lines only a notebook runs (a `!` shell line or a `%` magic, such as `!pip "
                       "install` or `%matplotlib inline`), as a .py downloaded from Colab does, which Python reads as "
                       "syntax errors: it was graded as the notebook's code, where those lines did nothing. Delete "
                       "them, or hand in the notebook itself")
_CELL_MARKER = re.compile(r"# (?:In\[[ \d]*\]:|%%(?![%\w]))")  # nbconvert's `# In[3]:`, Jupytext's `# %%`
_TOP_LEVEL_NAME = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
DEMO_TAG = "demo"  # a cell tag: an instructor's illustration, of which the grader runs only the imports


@dataclass(frozen=True)
class Submission:
    """One student's file, read and ready to send to a worker.

    kind: "py" or "ipynb". problem: why the file cannot be graded (empty when it can).
    """

    student: str
    path: Path
    kind: str
    sha256: str
    source: str = ""
    cells: tuple[Cell, ...] = ()
    problem: str = ""
    note: str = ""  # a warning that did not stop grading, e.g. a notebook with schema problems
    # (label, source) of a notebook's markdown and raw cells with a def at the start of a line: code where
    # Jupyter never runs it, read only to say so when a function is missing (grading.loading)
    text_cells: tuple[tuple[str, str], ...] = ()
    kernel: str = ""  # a notebook's kernel language where it is not Python (an R notebook): its code is not ours
    # (code cell number, the names it checks: its nbgrader grade_id's, or the words in it) of a notebook's test
    # cells, the course's checks, which run only in Jupyter
    checks: tuple[tuple[int, tuple[str, ...]], ...] = ()
    # What nbgrader's autograde puts back (grading.restored_cells): locked cells the student changed, and the
    # functions whose test cell keeps its nbgrader grade_id
    edited_locked: tuple[LockedEdit, ...] = ()
    test_ids: tuple[str, ...] = ()

    def worker_spec(self, module: str, graded: Iterable[str] = ()) -> dict:
        """What the worker needs to load this submission (see sandbox.loader.load): its units' labels and sources.

        The code is compiled under the file's own name, so a traceback the
        student's code prints names the file they handed in. graded: the
        functions the checks call, which the load's list of functions names
        first, whatever else the file defines.
        """
        spec = {"module": module, "filename": safe(Path(self.path).name, 100), "graded": sorted(graded)}
        if self.kind == "py":
            return dict(spec, kind="py", labels=["the file"], sources=[self.source])
        # Where each graded function's check cell ran: a helper defined after it is not what that check saw.
        checks = {name: [number for number, names in self.checks if name in names] for name in spec["graded"]}
        return dict(spec, kind="cells", labels=[c.label for c in self.cells], sources=[c.code() for c in self.cells],
                    numbers=[int(c.label.rsplit(" ", 1)[-1]) for c in self.cells], checks=checks)


def read_submission(path: Path, student: str | None = None, root: Path | None = None) -> Submission:
    """Read a .py or .ipynb file (grading.handin's rule, links under `root` refused); the id defaults to its stem."""
    path = Path(path)
    return submission_from_bytes(path, student or path.stem, read_bytes(path, root))


def submission_from_bytes(path: Path, student: str, content: FileBytes) -> Submission:
    """The submission in `content`, the bytes read from the file at `path` (perhaps on another machine)."""
    path = Path(path)
    kind = path.suffix.lstrip(".")
    if content.error:  # grading.handin refused it, and says why
        return Submission(student, path, kind, "", problem=content.error)
    data, size, digest = content.data, content.size, content.sha256
    shown = safe(path.name)  # the student chose the name
    problem = _basic_problem(data, size, shown)
    if problem:
        return Submission(student, path, kind, digest, problem=problem)
    kind, renamed = _kind_read(kind, data, shown)
    if kind == "py":
        source, renamed = module_text(data), "; ".join(n for n in (renamed, encoding_note(data, shown)) if n)
        if len(source) > MAX_CODE:
            return Submission(student, path, kind, digest, problem=_too_much_code(shown))
        exported, checks = _exported_cells(source)
        if exported:
            return Submission(student, path, "ipynb", digest, cells=exported, checks=checks, note="; ".join(
                n for n in (renamed, _exported_note(shown)) if n))
        kept = _with_notebook_lines(source)
        if kept:
            return Submission(student, path, "ipynb", digest, cells=kept, note="; ".join(
                n for n in (renamed, NOTEBOOK_LINES_NOTE.format(name=shown)) if n))
        return Submission(student, path, kind, digest, source=source, note=renamed)
    # JSON is UTF-8; a byte-order mark (Notepad's) is dropped as Jupyter's own reader would not choke on it.
    checks, marks = [], ReleaseMarks()
    cells, problem, note, text_cells = _notebook_cells(data.decode("utf-8", errors="replace").removeprefix("\ufeff"),
                                                       shown, checks, marks)
    return Submission(student, path, kind, digest, cells=cells, problem=problem, checks=tuple(checks),
                      note="; ".join(n for n in (renamed, note) if n), text_cells=text_cells, kernel=_kernel(data),
                      edited_locked=tuple(marks.edited), test_ids=tuple(marks.tests))


def _exported_cells(source: str) -> tuple[tuple[Cell, ...], tuple]:
    """The code cells of a .py that Jupyter ("Save and Export As → Python", nbconvert: `# In[3]:`) or Jupytext
    (`# %%`) wrote from a notebook, where its code only runs in one: it calls get_ipython() for its magics, or the
    released test cells import the course's checks. Run as a module, its first such line stopped it (0 points).
    Each cell keeps the file's line numbers (blank lines before it); ((), ()) for any other .py. With the cells,
    its test cells as Submission.checks, found by their code (an export keeps no metadata)."""
    if not _NOTEBOOK_ONLY.search(source):
        return (), ()
    lines = source.split("\n")
    starts = [number for number, line in enumerate(lines) if _CELL_MARKER.match(line)]
    if not starts:
        return (), ()
    blocks = zip([0, *starts], [*starts, len(lines)])
    cells = [read_cell(f"code cell {number}", "\n" * start + "\n".join(lines[start:end]))
             for number, (start, end) in enumerate(blocks)]
    # The text before the first marker is a header nbconvert writes (`# coding: utf-8`): cell 0, run all the same.
    tests = [number for number, cell in enumerate(cells) if only_course_checks(cell.source)]
    return (tuple(cell for number, cell in enumerate(cells) if number not in tests),
            tuple((number, words(cells[number].source)) for number in tests))


def _exported_note(name: str) -> str:
    return (f"{name} was written from a notebook (its cell markers, and code only a notebook runs: get_ipython() "
            "or the course's test cells), so it was graded as "
            "that notebook's cells, as Jupyter runs them: the course's test cells in it were skipped, its magics "
            "(!pip, %matplotlib) did nothing, and a cell that failed did not stop the ones after it. Line numbers "
            "are the file's. Next time hand in the notebook itself")


def _with_notebook_lines(source: str) -> tuple[Cell, ...]:
    """A .py that is Python but for lines only a notebook runs (`!pip install`, `%matplotlib inline`), as Colab's
    "Download .py" keeps its shell lines: one cell, run as the notebook ran it (as a module, its first such line was
    a syntax error: 0 points). () for any other .py: one that parses, or that such lines do not explain."""
    if not _NOTEBOOK_LINE.search(source) or parses(source):
        return ()
    cell = read_cell("code cell 1", source)  # named as an exported file's cells are: "the file" is a .py's
    return (cell,) if parses(cell.source) else ()


def _kernel(data: bytes) -> str:
    """The kernel language a notebook names in its metadata where it is not Python ("R", "Julia"); "" otherwise.
    Read with a pattern, not the JSON: a notebook's metadata is student data like the rest of it."""
    found = _KERNEL_LANGUAGE.search(data[-8192:]) or _KERNEL_LANGUAGE.search(data[:8192])
    language = found.group(1).decode("ascii", "replace") if found else ""
    return "" if language.lower().startswith("python") else language[:20]


def _kind_read(kind: str, data: bytes, name: str) -> tuple[str, str]:
    """How the file is read, by what it holds where its name says otherwise, and a note saying so: a notebook
    renamed to .py (an upload page asked for a .py), or Python code saved with an .ipynb name."""
    start = data[:4096].lstrip().removeprefix(b"\xef\xbb\xbf").lstrip()[:1]  # not a copy of the whole file
    if kind == "py" and start == b"{" and b'"cells"' in data and b'"nbformat"' in data:
        return "ipynb", (f"{name} is a Jupyter notebook (JSON) with a .py name, so it was read as the notebook it is. "
                         "Hand in a notebook as .ipynb, or for a .py use Jupyter's File → Save and Export As → Python")
    if kind == "ipynb" and start not in (b"{", b"["):  # JSON, however broken, is read as a notebook and told why
        return "py", (f"{name} is not a notebook (it is plain text, not JSON), so it was read as Python code, as a "
                      ".py file is. Hand in Python code as a .py file, or a notebook as saved by Jupyter")
    return kind, ""


_KERNEL_LANGUAGE = re.compile(rb'"kernelspec"\s*:\s*\{[^{}]*"language"\s*:\s*"([A-Za-z][\w+#.-]{0,30})"')


def _basic_problem(data: bytes, size: int, name: str) -> str:
    if size > MAX_BYTES:
        return over_size_limit(name, size)
    if not data.strip():
        return f"{name} is empty; submit the file with your code in it"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # Windows Notepad's "Unicode": a NUL byte in every ASCII character
        return (f"{name} is saved as UTF-16 text, which neither Python nor Jupyter reads; save it again as UTF-8 "
                "(in Notepad: Save As, Encoding UTF-8) and hand it in again")
    if b"\x00" in data[:8192]:
        return f"{name} is a binary file, not Python code or a notebook; submit the .py or .ipynb file itself"
    return ""


def _notebook_cells(text: str, name: str, checks: list, marks: ReleaseMarks) -> tuple[tuple[Cell, ...], str, str,
                                                                                     tuple]:
    """Code cells of a notebook (those nbgrader runs as code), a problem that stops grading, a note that does not,
    and its text cells that hold a def (Submission.text_cells); its test cells are added to `checks`
    (Submission.checks), what its nbgrader metadata says of the release to `marks`.

    Everything in the file is checked before it is used: a notebook is
    student data, and a list where text belongs must not stop the batch.
    """
    containers = text.count("{") + text.count("[")  # each a Python object of ~60 bytes once parsed
    if containers > MAX_JSON_CONTAINERS:
        return (), (f"{name} holds {containers:,} JSON objects and lists, far more than a notebook does; open it "
                    "in Jupyter, clear its outputs (Edit → Clear Outputs of All Cells), save it and resubmit"), "", ()
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        return (), (f"{name} is not a valid notebook: its JSON is broken at line {error.lineno}, column "
                    f"{error.colno} ({_json_problem(error.msg)}), so the file was probably cut short or edited "
                    "outside Jupyter. Open it in Jupyter (or restore a checkpoint), save it again and resubmit"), "", ()
    except (RecursionError, MemoryError, ValueError):
        return (), (f"{name} is not a valid notebook: its JSON is nested too deeply or too large to be one. "
                    "Open your notebook in Jupyter, save it again and resubmit"), "", ()
    raw = _as_version_4(raw)
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        return (), (f"{name} is JSON but not a Jupyter notebook (it has no list of cells); submit the .ipynb you "
                    "worked in"), "", ()
    notes = []
    invalid: dict = {}  # nbformat puts the validation error here, having validated once (validating is ~1 ms)
    try:
        with warnings.catch_warnings():  # its warnings (a cell without an id...) would only clutter the TA's terminal
            warnings.simplefilter("ignore")
            _check_format(raw, text, invalid)
    except Exception as error:  # noqa: BLE001 - nbformat raises several types for damaged files
        invalid["ValidationError"] = error
    if invalid:
        notes.append(f"{name} does not fully follow the notebook format ({_first_line(invalid['ValidationError'])}); "
                     "its code cells were graded anyway")
    cells, skipped, code = [], [], 0
    for number, cell in enumerate((c for c in raw["cells"] if isinstance(c, dict) and runs_as_code(c)), start=1):
        if number > MAX_CELLS:
            notes.append(f"{name} has more than {MAX_CELLS} code cells; only the first {MAX_CELLS} were graded")
            break
        test = is_grader_test(cell)  # the course's checks: not the student's work, but for a def written in a copy
        source, demo = _source_text(cell.get("source", "")), DEMO_TAG in _tags(cell)
        if test or (source is not None and only_course_checks(source)):
            checks.append((number, checked_names(cell, source or "")))
        if source is None:
            skipped += [] if demo or test else [f"code cell {number}"]
            continue
        code += len(source)
        if code > MAX_CODE:
            return (), _too_much_code(name), "", ()
        marks.read(cell, f"code cell {number}", source)
        if only_course_checks(source):
            continue  # a test cell that lost its nbgrader metadata (a copy of the notebook, another editor)
        cells.append((read_cell(f"code cell {number}", valid_utf8(source)), "test" if test else "demo" if demo else ""))
    # A course cell's definitions run only where no cell of the student's defines the name (nbgrader itself puts
    # those cells back as released before it grades).
    defined = frozenset(name for read, kind in cells if not kind for name in _TOP_LEVEL_NAME.findall(read.code()))
    wanted = read_from_demos([read for read, kind in cells if not kind],
                             [read for read, kind in cells if kind == "demo"])
    cells = [(definitions_of(read, defined) if kind == "test" else imports_of(read, defined, wanted) if kind else read,
              kind) for read, kind in cells]
    cells = [read for read, kind in cells if read.source.strip() or kind != "test"]
    notes += marks.notes
    if skipped:
        notes.append(f"{', '.join(skipped[:10])} of {name}: the cell's source is not text, so it was skipped; "
                     "open the notebook in Jupyter and save it again")
    if not any(c.source.strip() for c in cells):
        return (), f"{name} has no code cells with code in them; write your functions in code cells and resubmit", \
            "; ".join(notes), ()
    return tuple(cells), "", "; ".join(notes), _text_cells_with_code(raw["cells"])


def _too_much_code(name: str) -> str:
    return (f"{name} holds more than {MAX_CODE / 1e6:.1f} million characters of code, which the grader does not "
            "read (a week's solution is a few thousand); keep data and generated text out of your code (read data "
            "in a function instead) and resubmit")


def _text_cells_with_code(cells: list) -> tuple[tuple[str, str], ...]:
    """(label, source) of the markdown and raw cells among `cells` that hold a def at the start of a line."""
    found = []
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("markdown", "raw") or runs_as_code(cell):
            continue
        source = _source_text(cell.get("source", ""))
        if source is not None and _DEF_AT_LINE_START.search(source):
            found.append((f"a {cell['cell_type']} cell (the notebook's cell {number}, counting every cell)", source))
    return tuple(found[:MAX_TEXT_CELLS])


def _as_version_4(raw):
    """A notebook of nbformat 3 (IPython 1 and 2) in version 4's layout, as far as grading reads it: its
    worksheets' cells in one list, a code cell's text under "source" (version 3 called it "input")."""
    if not isinstance(raw, dict) or raw.get("nbformat") != 3 or not isinstance(raw.get("worksheets"), list):
        return raw
    cells = [cell for sheet in raw["worksheets"] if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list)
             for cell in sheet["cells"] if isinstance(cell, dict)]
    return dict(raw, cells=[dict(cell, source=cell.get("input", "")) if cell.get("cell_type") == "code" else cell
                            for cell in cells])


def _json_problem(message: str) -> str:
    """The json module's message as a phrase: "Unterminated string starting at" -> "unterminated string"."""
    for tail in (" starting at", " at"):
        message = message.removesuffix(tail)
    return message[:1].lower() + message[1:]


def _check_format(raw: dict, text: str, invalid: dict) -> None:
    """nbformat's verdict on the notebook, its ValidationError put in `invalid` as nbformat.reads puts it.

    A version-4 notebook is validated as already parsed: reading `text` again costs nbformat twice the
    validation (0.96 ms against 0.54 ms for the bench's notebooks), and reading converts nothing in a
    version-4 file; its outputs are left out. An older one is read and converted, as Jupyter would open it.
    """
    nbformat = _nbformat()
    if raw.get("nbformat") != 4:
        nbformat.reads(text, as_version=4, capture_validation_error=invalid)
        return
    # Without the outputs, which the grader never reads: checking 950,000 of them took 19 s.
    cells = [{**cell, "outputs": []} if isinstance(cell, dict) and isinstance(cell.get("outputs"), list) else cell
             for cell in raw["cells"]]
    try:
        nbformat.validate({**raw, "cells": cells})  # may give duplicate cell ids new ones; ids are not read
    except nbformat.ValidationError as error:
        invalid["ValidationError"] = error


def prepare_notebook_reader() -> None:
    """Import nbformat and build its schema's validator for today's notebooks (about 70 ms), in a command
    about to fork its grading processes: each would otherwise pay that again on its first notebook."""
    nbformat = _nbformat()
    nbformat.validator.get_validator(version=4, version_minor=nbformat.v4.nbformat_minor)


def _nbformat():
    """nbformat, imported on the first notebook: with jsonschema it costs ~0.2 s, which a class of .py files
    (and every command that reads none) need not pay."""
    import nbformat
    return nbformat


def _source_text(source) -> str | None:
    """A cell's source as text (nbformat allows a string or a list of strings); None for anything else."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


def _tags(cell: dict) -> list:
    tags = cell.get("metadata", {}).get("tags", []) if isinstance(cell.get("metadata"), dict) else []
    return [tag for tag in tags if isinstance(tag, str)] if isinstance(tags, list) else []


def _first_line(error: Exception) -> str:
    text = safe(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
