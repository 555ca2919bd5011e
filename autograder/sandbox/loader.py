"""The untrusted side, in a worker child: running a submission's top-level code, unit by unit.

Shipped to the worker with `worker` (see sandbox.boot.BOOT): standard
library and `wire` only. What it reports (which units raised, which
functions exist) is the worker's word, used only for messages.
"""
from __future__ import annotations
import __future__

import ast
import builtins
import collections
import functools
import inspect
import linecache
import operator
import os
import sys
import threading
import types

from autograder.sandbox import notebook_modules, wire
from autograder.sandbox.kept_names import KeptFunctions, defined_in
from autograder.sandbox.kept_state import KeptState


def units(spec: dict, sources: list[str]):
    """The submission as (label, code or SyntaxError) units, in order.

    spec: {"kind": "py" or "cells", "filename", "labels": one per source}.
    """
    filename = spec["filename"]
    compiler = _Compiler()
    if spec["kind"] == "py":
        remember_source(filename, sources[0])
        try:
            tree = ast.parse(sources[0], filename)
            # What only compiling finds (`return` outside a function, `await` at the top level), found before any
            # statement runs, as `import` finds it.
            compile(tree, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            return [("the file", error)]
        return [(f"line {node.lineno}", compiler.compile(ast.Module([node], []), filename)) for node in tree.body]
    units = []
    for label, source in zip(spec["labels"], sources):
        remember_source(f"{filename} ({label})", source)
        try:  # IPython runs a cell's top-level `await` (autoawait), so it compiles here
            units.append((label, compiler.compile(source, f"{filename} ({label})", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)))
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            units.append((label, error))
    return units


class _Compiler:
    """Compiles a submission's units as Python runs its file, or IPython its cells: with the `from __future__`
    imports of the units before, and never with this module's own (its `annotations` would make every
    annotation of the student's a string, which `isinstance(x, f.__annotations__["x"])` refuses)."""

    FUTURE = functools.reduce(operator.or_, (getattr(__future__, name).compiler_flag
                                             for name in __future__.all_feature_names), 0)

    def __init__(self):
        self.flags = 0

    def compile(self, source, filename: str, flags: int = 0) -> types.CodeType:
        code = compile(source, filename, "exec", flags=self.flags | flags, dont_inherit=True)
        self.flags |= code.co_flags & self.FUTURE
        return code


def remember_source(filename: str, source: str) -> None:
    """Let code read its own source, which exists only in memory here, as it could from the student's file:
    `inspect.getsource` (TorchScript's torch.jit.script reads the function it compiles) and printed tracebacks
    look it up in linecache, where IPython puts each cell too. No modification time: nothing evicts it."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)


def load(spec: dict, sources: list[str], sock, switches) -> tuple[dict, dict]:
    """Execute the submission's top-level code, reporting each unit before it runs.

    A notebook's cell that raises is recorded and skipped, as Jupyter would;
    a .py file stops at its first statement that raises, as `import` would
    (the grader then reports it as not loaded). A unit that hangs or kills
    the process is reported by the grader, which restarts the child with
    that unit in `spec["skip"]`.

    switches: (source) -> the library switches now (tensors.LibraryState). Returns the namespace the calls find the
    graded functions in, and {graded name, or None for any other: the switches its calls start from}: a notebook's
    function's as its check cell saw them, every other call's as the file's code left them.
    """
    notebook = spec["kind"] != "py"
    # A notebook runs as Jupyter runs it: as __main__, with its folder first on sys.path, so a module its cells
    # write (%%writefile) can be imported; a .py file is imported as the module the assignment names.
    module = types.ModuleType("__main__" if notebook else spec["module"])
    module.__file__ = spec["filename"]
    given = notebook_names(vars(module)) if notebook else {}
    vars(module).update(given)
    sys.modules[module.__name__] = module
    if notebook:
        sys.path.insert(0, "")
        notebook_modules.install(given["display"], given["get_ipython"])  # google.colab, IPython.display, ...
    problems = []
    events = EventLoop()
    skip = set(spec["skip"])
    me = os.getpid()
    graded = set(spec.get("graded", ()))
    kept = KeptFunctions(graded, spec["filename"], spec.get("checks"), KeptState(
        lambda: switches("the cells run before its check cell"))) if notebook else None
    for index, (label, code) in enumerate(units(spec, sources)):
        if index in skip:
            continue
        if isinstance(code, BaseException):
            problems.append({"unit": label, "raised": describe(code, spec["filename"])})
            continue
        if os.getpid() == me:  # a process the file forked runs the rest of the file silently, as in Python
            wire.send(sock, {"event": "unit", "index": index, "label": label})
        try:
            run_unit(code, module.__dict__, events)
        except BaseException as error:  # noqa: BLE001 - SystemExit at import is the student's problem
            problems.append({"unit": label, "raised": describe(error, spec["filename"])})
            if spec["kind"] == "py":
                break
        if kept is not None:  # a code cell's number places it among the check cells, which never run here
            if os.getpid() == me:  # the grader's own work from here to the next unit is no cell's time (load_clock)
                wire.send(sock, {"event": "keeping"})
            kept.after(label, module.__dict__, spec["numbers"][index] if "numbers" in spec else index)
    exit_if_forked_copy(me)
    sys.stdout.flush()
    restored, graded_as = kept.restore(module.__dict__) if kept is not None else ([], {})
    started = {**(kept.switches() if kept is not None else {}),
               None: switches("your notebook's cells" if notebook else "your file's top-level code")}
    # The graded functions first, then the file's own: a cell with `from numpy import *` (%pylab) adds hundreds
    # of callables, and a file may define hundreds of its own; only 500 names are sent.
    functions = sorted((name for name, value in vars(module).items()
                        if callable(value) and not name.startswith("__") and given.get(name) is not value),
                       key=lambda name: (name not in graded, not defined_in(vars(module)[name], spec["filename"]),
                                         name))[:500]
    wire.send(sock, {"event": "ready", "functions": functions, "problems": problems[:50], "restored": restored,
                     "threads": threading.active_count() - 1})
    # Calls find each graded function here: as the notebook defined it where a library's function was imported
    # over its name later, while the notebook's own code still finds that one under the name, as in Jupyter.
    return collections.ChainMap(graded_as, module.__dict__) if graded_as else module.__dict__, started


def run_unit(code: types.CodeType, namespace: dict, events: EventLoop) -> None:
    """Run one unit of top-level code; a cell with a top-level `await` runs to its end in `events`."""
    if code.co_flags & inspect.CO_COROUTINE:
        events.run(eval(code, namespace))
    else:
        exec(code, namespace)


class EventLoop:
    """The one event loop of a notebook's cells with a top-level `await`, made for the first of them: IPython's
    autoawait keeps one for the kernel, so a task one cell starts, a later cell can await."""

    def __init__(self):
        self._loop = None

    def run(self, coroutine) -> None:
        if self._loop is None:
            import asyncio  # only for such a cell: most notebooks never need it

            self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(coroutine)


def notebook_names(namespace: dict) -> dict:
    """What Jupyter gives every notebook without an import: `display`, here printing each object as
    IPython shows a plain one, and `get_ipython` (notebook_modules.Shell, over `namespace`). Without them,
    a cell that shows a value before it defines a function would stop at the display and the function
    would be missing, which Jupyter never did."""
    def display(*objects, **options):
        for shown in objects:
            print(repr(shown))
    shell = notebook_modules.Shell(namespace)
    return {"display": display, "get_ipython": lambda: shell}


def exit_if_forked_copy(me: int) -> None:
    """A process the student forked that returned into this code must not speak on our socket."""
    if os.getpid() != me:
        os._exit(0)


def describe(error: BaseException, filename) -> dict:
    """Exception type, message and where in the student's file it was raised: the line, the notebook cell it
    is a line of ("" in a .py file) and the function it is in ("" at top level).

    The deepest frame of the student's own file is the place: for a function that fails in a helper it calls,
    a line of the helper, perhaps in another cell, which a bare line number would send the student looking
    for in the wrong place."""
    try:
        # A SyntaxError's str() repeats the file name and line, which are reported on their own.
        message = str(error.msg if isinstance(error, SyntaxError) else error)[:wire.MAX_TEXT]
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "(the exception's message could not be read)"
    line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else None
    code, last = None, None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename.startswith(str(filename)):
            line, code = trace.tb_lineno, trace.tb_frame.f_code
        last, trace = trace, trace.tb_next
    described = {"type": type(error).__name__[:80], "message": message, "line": line, "kinds": builtin_kinds(error)}
    if last is not None:  # where it was raised: "socket" for socket.socket(), refused a network in grading
        module = last.tb_frame.f_globals.get("__name__")
        described["module"] = module[:80] if isinstance(module, str) else ""
    if code is not None:
        described["cell"] = cell_of(code.co_filename, str(filename))
        described["in"] = "" if code.co_name == "<module>" else code.co_name[:80]
        # A raise statement of the student's own, not NumPy's error for shapes that do not fit at that line.
        described["own"] = last.tb_frame.f_code is code and linecache.getline(
            code.co_filename, line).lstrip().startswith("raise")
    return described


def unfit(function, args: list, kwargs: dict) -> dict:
    """Where a call that raised TypeError does not fit `function`'s parameters: the reply's word for it, and each
    parameter's name, kind (inspect.Parameter.kind's number) and whether it has a default, as the def line writes
    them (authoring.protocol.Parameter); else {}."""
    signature = None
    try:
        signature = inspect.signature(function)
        signature.bind(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - no signature to read (a builtin), or one the student's code broke
        if signature is None or not isinstance(error, TypeError):
            return {}
        try:
            return {"unfit": True, "parameters": [[str(p.name), int(p.kind), p.default is not inspect.Parameter.empty]
                                                  for p in signature.parameters.values()]}
        except Exception:  # noqa: BLE001 - a signature object of the code's own making
            return {"unfit": True}
    return {}


def builtin_kinds(error: BaseException) -> list[str]:
    """The built-in exception classes `error` is an instance of, its own first where it is one, nearest first (a
    student's `class MaskError(ValueError)` is a ValueError, as `except ValueError` would catch it; a class of their
    own named ValueError is none, whatever its `__module__` says). Each is the built-in itself, found by identity;
    all of them (Python has about 70), since the one a check asks for may come after many others."""
    try:
        return [kind.__name__ for kind in type(error).__mro__
                if kind is not object and getattr(builtins, kind.__name__, None) is kind][:wire.MAX_KINDS]
    except BaseException:  # noqa: BLE001 - a metaclass's hostile __mro__
        return []


def cell_of(code_filename: str, filename: str) -> str:
    """The unit label a cell was compiled under (`units`: "name (code cell 3)" gives "code cell 3"); "" for a
    .py file."""
    label = code_filename[len(filename):].strip()
    return label[1:-1] if label.startswith("(") and label.endswith(")") else ""
