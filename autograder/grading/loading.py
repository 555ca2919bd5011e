"""What loading a hand-in means for its grade: loaded, or "not loaded" with the reason first.

A .py file is a module: Python stops importing it at its first failing
statement, so a file with a syntax error anywhere, or a top-level statement
that raises (an ImportError, a NameError, sys.exit()), kills the worker
(os._exit, a crash) or hangs, does not load, and none of its functions is
graded. That is what `import` and `python file.py` do, which the student can
try themselves.

A notebook is run as Jupyter's Restart & Run All would (with errors allowed): a failing cell is skipped and the
others still run, so a notebook with one failing demo cell is graded, with that cell named in its notes. It does not
load when a cell failed and, as a result, none of the functions the checks grade is defined: then there is nothing to
grade, and the failing cell is what the student needs to read first.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import re

from autograder.authoring.environment import environment_hint
from autograder.authoring.misconceptions import Misconception
from autograder.authoring.protocol import Raised, unmarked
from autograder.code_names import MAX_PARSED, globals_read, names_set
from autograder.grading.load_advice import newer_python_hint, py_advice, raised_line, syntax_hint
from autograder.grading.results import NOT_LOADED, CheckResult
from autograder.grading.statuses import ERROR, FAILED, PASSED, TIMEOUT
from autograder.grading.submission import Submission
from autograder.grading.suite import Suite
from autograder.grading.taken_names import taken_note
from autograder.sandbox.load_report import LoadReport
from autograder.text import counted, joined, safe

NOT_RUN = "not run: the file did not load (see the top of this feedback)"
RESTART = "run the notebook from the top (Kernel → Restart & Run All) and hand it in again"
DEFINITIONS_ONLY = "only its definitions were run (imports, defs, classes, the names your functions read), not its demo"
PRINT_LESS = "Print less (a line every few thousand steps, not every step)"


def not_loaded(submission: Submission, load: LoadReport, graded: set[str]) -> str:
    """The result's `problem` for a hand-in that did not load, reason first; "" when it loaded.

    graded: the functions the suite's checks call.
    """
    first, unparsed, raised = _first_failure(load)
    if not first:
        return ""
    name = safe(submission.path.name, 100)
    if load.gave_up:
        places = ", ".join(unit for unit, _ in load.stopped)
        return (f"{NOT_LOADED}: {name}: loading stopped at {len(load.stopped)} cells in turn ({places}), each of "
                "which was still running at the load limit (which counts the cells before it too) or ended the "
                "worker process; each was skipped and the notebook loaded again, and then the grader stopped "
                "trying, so no function could be graded. Top-level code should only import, define and run "
                "quickly: put demo and training loops in a function you call when you want them (or delete them), "
                "call no exit(), check that Kernel → Restart & Run All finishes quickly, and hand it in again")
    if submission.kind == "py":
        ran, todo = py_advice(name, load, raised, unparsed, raised_line(raised, {"": submission.source}))
        return f"{NOT_LOADED}: {name}, {first}; {ran}, so no function could be graded. {todo}"
    if graded & load.functions:
        return ""
    return (f"{NOT_LOADED}: {name}, {first}{_defining_cells_failed(submission, load, graded)}, and no cell defined "
            f"any of the graded functions ({', '.join(sorted(graded))}). Fix that cell, run the notebook from the top "
            f"(Kernel → Restart & Run All) and hand it in again{syntax_hint(submission, raised)}")


def _defining_cells_failed(submission: Submission, load: LoadReport, graded: set[str]) -> str:
    """The later cells that hold graded defs and failed too, each with what it did: often the first cell's doing
    (an import it never reached leaves `dataclass` undefined in the cell of functions), which its message shows."""
    sources = {cell.label: cell.source for cell in submission.cells}
    defined = {unit: sorted(set(names_set(sources.get(unit, ""))) & graded) for unit, _ in load.problems[1:3]}
    return "".join(f"; then {unit}, which defines {', '.join(defined[unit])}, {_what_it_did(unit, raised)}"
                   for unit, raised in load.problems[1:3] if defined[unit])


def load_notes(load: LoadReport, loaded: bool, submission: Submission, graded: set[str]) -> list[str]:
    """The notes a loaded hand-in's feedback shows about its cells, and about each graded function it defines more
    than once (graded: the functions the suite's checks call)."""
    if not loaded:
        return []  # the reason is the result's problem, shown first
    notes = _redefinitions(submission, graded - load.graded_at_check)  # those have a note of their own (taken_note)
    parts = {c.label: f" ({c.part})" for c in submission.cells if c.part}
    notes += [f"{unit}{parts.get(unit, '')} {_what_it_did(unit, raised)}{environment_hint(raised)}; the rest of the "
              "notebook still ran" for unit, raised in load.problems]
    notes += [f"{unit} {reason}; it was skipped and the rest of the notebook was graded"
              for unit, reason in load.stopped]
    notes += [f"{unit} {'came after' if took is None else f'ran for {took:.1f} s, and'} the notebook's cells together "
              "ran past the load limit (which counts every cell before the one running); so that the cells after it "
              f"could load, {DEFINITIONS_ONLY}. Keep demos short, or put them in a function you call when you want them"
              for unit, took in load.trimmed if submission.kind != "py"]
    notes += [_top_level_trimmed(line, f"ran past the load limit{'' if took is None else f' ({took:.1f} s)'}")
              for line, took in load.trimmed if submission.kind == "py"]
    notes += [_top_level_trimmed(unit, printed, f"{PRINT_LESS}. ") if submission.kind == "py" else f"{unit} {printed} "
              f"and was stopped; so that its functions could be graded, {DEFINITIONS_ONLY}. {PRINT_LESS}, or put the "
              "demo in a function you call when you want it" for unit, printed in load.flooded]
    notes += [taken_note(*restored) for restored in load.restored if restored[6] != "copy"]  # the same code again
    notes += [f"the file's top-level code left {counted(load.threads, 'thread')} running after loading; threads "
              "share the processor with every call the grader times, so a call may be stopped at its limit for their "
              "work: start no thread at the top level, or join it before the code ends"] if load.threads else []
    notes += [f"the file's top-level code left {counted(load.stray_processes, 'process', 'processes')} running while "
              "loading. The grader stopped what was left and charged no function for it. Start no processes at the "
              "top level of your file"] if load.stray_processes else []
    return notes


def _top_level_trimmed(unit: str, what: str, advice: str = "") -> str:
    """The note of a .py whose top-level code `what` ("ran past the load limit") while its statement `unit` ("line
    102") ran, and was then run with its definitions alone; advice: what to do besides keeping demos out of imports."""
    return (f"the file's top-level code {what}{f', while {unit} was running' if unit.startswith('line ') else ''}; so "
            f"that its functions could be graded, {DEFINITIONS_ONLY}. {advice}Put demo, test and training code under "
            '`if __name__ == "__main__":`, where it runs when you run the file but not when it is imported or graded')


MAX_PLACES = 4  # definitions of one function a note lists: the first ones and the last, the one graded


def _redefinitions(submission: Submission, graded: set[str]) -> list[str]:
    """A note for each graded function with more than one top-level def: a stub cell run after the real answer, or
    an old version left above a new one, replaces what came before, and the student's question is which one ran."""
    notes, units, trees = [], _units(submission), {}
    for function in sorted(graded):
        found = [(where, source, line) for where, source in units for line in _top_level_defs(source, function)]
        if len(found) > 1:  # a def in the text may be inside a string (an old version kept in a """ block)
            found = [(where, source, line) for where, source, line in found if _runs(source, function, line, trees)]
        places = [f"{where}, line {line}" if where != "your file" else f"line {line}" for where, _, line in found]
        if len(places) > 1:
            shown = places if len(places) <= MAX_PLACES else [*places[:MAX_PLACES - 1],
                                                                f"{len(places) - MAX_PLACES} more", places[-1]]
            notes.append(f"{function}() is defined {len(places)} times ({'; '.join(shown)}): each def replaces the "
                         f"one before it, so only the last that ran was graded. Keep one definition of {function}()")
    return notes


def _units(submission: Submission) -> list[tuple[str, str]]:
    """(label, source) of each unit of code a hand-in runs in turn: the whole .py file, or each code cell (but a
    `%%writefile` cell, whose code is written to a file, not run)."""
    if submission.kind == "py":
        return [("your file", submission.source)]
    return [(cell.label, cell.source) for cell in submission.cells if not cell.writes]


def _top_level_defs(source: str, function: str) -> list[int]:
    """The lines where `source` defines `function` with a def at the start of a line (read as text: see
    `_definition`)."""
    pattern = rf"^(?:async[ \t]+)?def[ \t]+{re.escape(function)}[ \t]*\("
    return [source.count("\n", 0, found.start()) + 1 for found in re.finditer(pattern, source, re.MULTILINE)]


def _runs(source: str, function: str, line: int, trees: dict) -> bool:
    """Whether the def of `function` at `line` of `source` is code at the top level, not text in a string, nor a
    signature for type checkers (`@typing.overload`, which the def after it needs); where the unit does not parse (a
    magic, a syntax error), as the text shows it. trees: the units parsed so far."""
    if source not in trees:
        try:
            trees[source] = ast.parse(source).body if len(source) <= MAX_PARSED else None
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            trees[source] = None
    return trees[source] is None or any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                                        and node.name == function and node.lineno == line
                                        and not any(_names_overload(d) for d in node.decorator_list)
                                        for node in trees[source])


def _names_overload(decorator: ast.expr) -> bool:
    """`@overload` or `@typing.overload` (as written: any name it was imported under but these is not read)."""
    return (isinstance(decorator, ast.Name) and decorator.id == "overload") or \
        (isinstance(decorator, ast.Attribute) and decorator.attr == "overload")


def _first_failure(load: LoadReport) -> tuple[str, bool, Raised | None]:
    """The first unit that failed, in words ("line 5 raised ...", "code cell 2 stopped ..."; "" if none did),
    whether it is a .py file that did not parse, and what it raised (None where it raised nothing).

    A unit that stopped the worker comes first: the worker died there before
    it could reach (and report) anything later. A .py file's syntax error is
    "line 62: SyntaxError: ..." (the worker reports it for the whole file).
    """
    if load.stopped:
        where, reason = load.stopped[0]
        return f"{where} {reason} while loading", False, None
    if not load.problems:
        return "", False, None
    where, raised = load.problems[0]
    if where == "the file":  # the worker's label for a .py file that does not parse
        line = f"line {raised.line}" if raised.line else "the file"
        return f"{line}: {unmarked(raised.describe(line=False))}", True, raised
    return f"{where} {_what_it_did(where, raised)}{environment_hint(raised)} while loading", False, raised


def _what_it_did(unit: str, raised) -> str:
    if raised.type == "SystemExit":
        return "called sys.exit() (or exit(), or raised SystemExit)"
    # A statement's own line is its label; a line deeper in (a function it called, a cell's line) is shown.
    return f"raised {unmarked(raised.describe(line=f'line {raised.line}' != unit, unit=unit))}"


def undefined_messages(submission: Submission, load: LoadReport, graded: set[str]) -> dict[str, str]:
    """For each graded function the loaded file does not define, the message its checks fail with.

    The student's own question is "but I wrote it": so the message says where the file's definition
    is when it has one that did not run (a cell that stopped before it, a def inside another block),
    or the close name the file used instead. The file's sources are the grader's own copy; which
    cells raised is the worker's word, used here only for words.
    """
    return {function: _undefined(function, submission, load, graded) for function in sorted(graded - load.functions)}


def _undefined(function: str, submission: Submission, load: LoadReport, graded: set[str]) -> str:
    found = [(where, *_definition(source, function)) for where, source in _units(submission)]
    for where, line, top_level in found:
        why = _why_not_run(where, line, load) if line is not None and top_level else ""
        if why:
            return f"{function}() is in {where} at line {line}, but {why}"
    for cell in submission.cells:
        line, top_level = _definition(cell.source, function)
        if cell.writes and top_level:
            return (f"{function}() is in {cell.label} at line {line}, which writes its code to {cell.writes} "
                    f"(%%writefile) without running it; a later cell has to run that file (`%run {cell.writes}`, "
                    f"or import it) for {function}() to be defined, and by the end of the notebook it was not")
    for where, line, top_level in found:
        if line is not None and not top_level:
            return (f"{function}() is defined only inside another block ({where}, line {line}), so it cannot be "
                    f"called as {function}(); write its def at the start of a line, outside any if, class or function")
    for where, source in _units(submission):
        lines = _top_level_defs(source, function)
        why = _why_not_run(where, lines[0], load) if lines else ""
        if why:
            return f"{function}() is in {where} at line {lines[0]}, but {why}"
        if lines:  # the def ran: the name was taken back after it
            return (f"{function}() is defined in {where} at line {lines[0]}, which ran, but by the end of the "
                    f"{'notebook' if submission.kind == 'ipynb' else 'file'} the name {function} no longer held a "
                    f"function: a later line deleted or replaced it (`del {function}`, or `{function} = ...`). Keep "
                    f"that name for your function")
    for label, source in submission.text_cells:
        lines = _top_level_defs(source, function)
        if lines:
            return (f"{function}() is written only in {label}, at line {lines[0]}, which Jupyter shows as text and "
                    "never runs. If that is your code, make it a code cell (select the cell, press Esc, then Y), run "
                    "it, save the notebook and resubmit")
    # Another graded function is never a misspelling (a `forward_torch` is not a missing `forward`).
    close = difflib.get_close_matches(function, sorted(load.functions - graded), n=1, cutoff=0.75)
    return not_defined(function, f", only {close[0]}()" if close else "")


def not_defined(function: str, instead: str = "") -> str:
    """The message of a check whose function the file does not define (instead: what it defines in its place)."""
    return f"your file does not define {function}(){instead}; keep the function names of the stub"


def _definition(source: str, function: str) -> tuple[int | None, bool]:
    """Where `source` defines `function`: its line and whether at the top level; (None, False) if nowhere.

    Read as text, not parsed: the source is the student's, and parsing it here, in the grader, could
    take seconds a megabyte; a cell with a syntax error anywhere is read the same way.
    """
    name = re.escape(function)
    top = re.search(rf"^(?:(?:async[ \t]+)?def[ \t]+{name}[ \t]*\(|{name}[ \t]*=[^=])", source, re.MULTILINE)
    found = top or re.search(rf"^[ \t]+(?:async[ \t]+)?def[ \t]+{name}[ \t]*\(", source, re.MULTILINE)
    if found is None:
        return None, False
    return source.count("\n", 0, found.start()) + 1, top is not None


def _why_not_run(where: str, line: int, load: LoadReport) -> str:
    """Why the definition at `line` of the unit `where` never ran, with what to do; "" if the load says nothing."""
    for unit, raised in load.problems:
        if unit != where:
            continue
        if raised.type == "SyntaxError":
            return (f"that cell has a syntax error ({unmarked(raised.describe())}), so nothing in it ran. Fix it, then "
                    f"{RESTART}{newer_python_hint(raised)}")
        if raised.line is None or raised.cell not in ("", unit) or raised.line < line:  # or in another cell's code
            return (f"that cell {_what_it_did(unit, raised)} before reaching it{environment_hint(raised)}. Fix that "
                    f"line or give the function a cell of its own, then {RESTART}")
    for unit, reason in load.stopped:
        if unit == where:
            return (f"that cell {reason} while loading, so the whole cell was skipped. Give the function a cell "
                    f"of its own, away from the slow code, then {RESTART}")
    return ""


_MISSING_NAME = re.compile(r"NameError\b.*?name '([A-Za-z_]\w*)' is not defined")
MAX_NAMES = 8  # names of a failed cell a message lists


WRONG = (FAILED, ERROR, TIMEOUT)  # a check that ran and found the function wrong (not one left ungraded)


def with_causes(tests: list[CheckResult], submission: Submission, load: LoadReport | None,
                suite: Suite | None = None) -> list[CheckResult]:
    """`tests` with what the file's own text tells of each failure's cause: a cell that failed while loading
    (`with_load_causes`), a graded function called by the failing one that fails its own checks
    (`with_failing_parts`). load: None for a file that did not load, whose checks did not run. suite: its
    misconceptions say the function each idea lives in."""
    explained = with_load_causes(tests, submission, load)
    catalogue = suite.misconceptions if suite is not None else None
    ideas = {idea.id: idea for idea in catalogue.misconceptions} if catalogue is not None else {}
    return explained if load is None else with_failing_parts(explained, submission, ideas)


def with_failing_parts(tests: list[CheckResult], submission: Submission,
                       ideas: dict[str, Misconception] | None = None) -> list[CheckResult]:
    """`tests` with a pointer added to each failed check whose function names, in its definition, another graded
    function that fails its own checks. A part that is wrong makes wrong whatever is built on it, and the
    messages of what is built on it show only its numbers. ideas: the misconceptions by id. And without the
    misconception it names where that idea lives in a graded function that passes its own checks and that the
    failing one calls (unless it also calls a failing one the idea names, `also_from`): the numbers matched the
    idea by coincidence (two bugs elsewhere giving the same weights), for the part the idea is about is right.
    Read from the file's text (a notebook's last definition of each name), never run: it words a message, and
    moves no point."""
    ideas = ideas or {}
    failing = {test.function for test in tests if test.status in WRONG}
    # A part that is only too slow gives right values: a wrong answer built on it is not its doing, a timeout is.
    wrong_values = {test.function for test in tests if test.status in (FAILED, ERROR)}
    elsewhere = {test.function for test in tests if test.status in WRONG and test.misconception in ideas
                 and ideas[test.misconception].functions[0] not in wrong_values}
    if len(failing) < 2 and not elsewhere:
        return list(tests)
    uses = _graded_names_used(submission, {test.function for test in tests}, failing)
    pointed = []
    for test in tests:
        if test.function in elsewhere and _coincidence(ideas.get(test.misconception), uses.get(test.function, set()),
                                                       wrong_values):
            test = dataclasses.replace(test, misconception=None, explanation="")
        parts = sorted(uses.get(test.function, set()) & (failing if test.status == TIMEOUT else wrong_values)
                       - {test.function})
        if test.status in WRONG and parts and "own checks: fix" not in test.message:
            one = len(parts) == 1
            test = dataclasses.replace(test, message=(
                f"{test.message}. {test.function} calls {joined(parts)}, which {'fails its' if one else 'fail their'} "
                f"own checks: fix {'that' if one else 'those'} first, and {test.function} may pass with "
                f"{'it' if one else 'them'}"))
        pointed.append(test)
    return pointed


def _coincidence(idea: Misconception | None, used: set[str], failing: set[str]) -> bool:
    """Whether `idea`, named in a function that uses the graded functions `used`, lives in one of them that
    passes its own checks, with none of its `also_from` failing there to give its answer instead."""
    return (idea is not None and idea.functions[0] in used - failing
            and not set(idea.also_from) & used & failing)


def _graded_names_used(submission: Submission, graded: set[str], failing: set[str]) -> dict[str, set[str]]:
    """failing function -> the graded functions that its last top-level definition in the file reads as globals
    (a local `score = ...` or a parameter of that name is not the function). Only the units that define one are
    parsed (a notebook's demo cells are most of its text)."""
    sources = [submission.source] if submission.kind == "py" else [cell.source for cell in submission.cells]
    uses: dict[str, set[str]] = {}
    for source in (s for s in sources if len(s) <= MAX_PARSED and any(f"def {name}" in s for name in failing)):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # its load problem is reported already
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name in failing:
                uses[statement.name] = globals_read(statement) & graded
    return uses


def with_load_causes(tests: list[CheckResult], submission: Submission, load: LoadReport | None) -> list[CheckResult]:
    """`tests` with the cause added to each that failed on a NameError for a name a notebook cell would have
    defined, had it not failed while loading (an import the grader lacks, in the imports cell, leaves `np`
    undefined for every check: the cell is what to fix, and each such message says so)."""
    if load is None or submission.kind == "py" or not (load.problems or load.stopped or load.trimmed or load.flooded):
        return list(tests)
    sources = {cell.label: cell.source for cell in submission.cells}
    # (cell, its first line whose names are missing, what happened, what to do)
    cells = [(unit, _first_line(raised, unit), f"failed while loading: it {_what_it_did(unit, raised)}"
              f"{environment_hint(raised)}", "Fix that cell") for unit, raised in load.problems]
    cells += [(unit, 1, f"{reason} while loading", "Make that cell quick (a demo or a loop in a function you call "
               "when you want it), or set those names in a cell of their own") for unit, reason in load.stopped]
    cells += [(unit, 1, "ran only its definitions, for the notebook's cells together ran past the load limit (see "
               "the notes)", "Set those names in a cell of their own") for unit, _ in load.trimmed]
    cells += [(unit, 1, f"ran only its definitions, for it {printed} (see the notes)", "Set those names in a cell of "
               "their own") for unit, printed in load.flooded]
    causes = []  # (the names a cell left undefined, why, in words that list them)
    for unit, first, happened, todo in cells:
        names = names_set(sources.get(unit, ""), first)
        causes.append((names, f". The cause: {unit} {happened}; so the names it would have defined from there on "
                              f"({_listed(names)}) are missing. {todo}, then {RESTART}"))
    explained = []
    for test in tests:
        missing = _MISSING_NAME.search(test.message) if test.status != PASSED else None
        cause = next((why for names, why in causes if missing and missing.group(1) in names), None)
        if cause is not None:
            test = dataclasses.replace(test, message=test.message + cause)
        explained.append(test)
    return explained


def _listed(names: list[str]) -> str:
    return ", ".join(names[:MAX_NAMES]) + (", ..." if len(names) > MAX_NAMES else "")


def _first_line(raised: Raised, unit: str) -> int:
    """The line of a cell its statement that raised is on; 1 where the raise was in another cell's code."""
    return raised.line if raised.line is not None and raised.cell in ("", unit) else 1
