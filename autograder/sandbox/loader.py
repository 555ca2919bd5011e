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


def load(spec: dict, sources: list[str], sock) -> dict:
    """Execute the submission's top-level code, reporting each unit before it runs.

    A notebook's cell that raises is recorded and skipped, as Jupyter would;
    a .py file stops at its first statement that raises, as `import` would
    (the grader then reports it as not loaded). A unit that hangs or kills
    the process is reported by the grader, which restarts the child with
    that unit in `spec["skip"]`.
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
    kept = KeptFunctions(graded, spec["filename"]) if notebook else None
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
        if kept is not None:
            kept.after(label, module.__dict__)
    exit_if_forked_copy(me)
    sys.stdout.flush()
    restored, graded_as = kept.restore(module.__dict__) if kept is not None else ([], {})
    # The graded functions first, then the file's own: a cell with `from numpy import *` (%pylab) adds hundreds
    # of callables, and a file may define hundreds of its own; only 500 names are sent.
    functions = sorted((name for name, value in vars(module).items()
                        if callable(value) and not name.startswith("__") and given.get(name) is not value),
                       key=lambda name: (name not in graded, not _defined_in(vars(module)[name], spec["filename"]),
                                         name))[:500]
    wire.send(sock, {"event": "ready", "functions": functions, "problems": problems[:50], "restored": restored,
                     "threads": threading.active_count() - 1})
    # Calls find each graded function here: as the notebook defined it where a library's function was imported
    # over its name later, while the notebook's own code still finds that one under the name, as in Jupyter.
    return collections.ChainMap(graded_as, module.__dict__) if graded_as else module.__dict__


class KeptFunctions:
    """A notebook's graded functions, and every global they read, as its check cells saw them.

    Jupyter runs a notebook's check cells in order, so `score = score(Q, Q)` in a demo cell after them takes
    nothing from what they saw: each function is kept as the last of the notebook's own functions its name
    held. Where the name ends holding a value, or nothing, the function is put back under it. Where it ends
    holding a library's function (imported over a graded name, for a later function's use), the name keeps
    that, as the later cells' code calls it; the grader's calls get the notebook's function. A name that ends
    holding another function of the notebook's is graded as that one, the notebook's last word.

    The same holds for each global a graded function, or a function of the notebook's it calls, reads (a
    helper `masked()` that a later cell reuses as `masked = mask.sum(-1)`, a constant): the grader
    calls it with that name as it was from the function's cell on, which is what its check cell saw, as
    nbgrader runs it. A function of the notebook's that replaces another under the name is followed (a fix
    written below); anything else that a later cell binds there, or `del`, is what the check cell never saw.
    """

    def __init__(self, graded: set, filename: str):
        self._graded, self._filename = sorted(graded), filename
        self._kept: dict = {}  # name -> (its last function of the notebook's own, the cell's number then)
        self._lost: dict = {}  # name -> (the label of the cell after which it held another thing, its number)
        # graded name -> {global it reads: [its value as the function's check cell saw it, the label of the cell
        # that took the name for something else, or None]}
        self._reads: dict = {}
        self._names: dict = {}  # (code object, exactly) -> (the globals it reads, those it sets): each read once
        self._closures: dict = {}  # graded name -> the globals it and its helpers read, until one of them changes
        self._cells = 0

    def after(self, label: str, namespace: dict) -> None:
        self._cells += 1
        for name in self._graded:
            value = namespace.get(name)
            if _defined_in(value, self._filename):
                if self._kept.get(name, (None,))[0] is not value:
                    self._kept[name] = (value, self._cells)
                    self._reads[name] = {}  # a new definition, whose check cells come after this one
                    self._closures.pop(name, None)
                self._lost.pop(name, None)
            elif name in self._kept:
                self._lost.setdefault(name, (label, self._cells))
        for name, seen in self._reads.items():
            reads = self._closures.get(name)
            # What the function reads is looked for again only where a name it reads took a new value it keeps.
            if reads is None or any([self._watch(other, seen, label, namespace) for other in reads]):
                self._closures[name] = reads = self._read_by(self._kept[name][0], seen, namespace) - {name}
                for other in reads:
                    self._watch(other, seen, label, namespace)

    def _watch(self, name: str, seen: dict, label: str, namespace: dict) -> bool:
        """Note what the global `name` holds now against what a graded function's check cell saw (`seen`); whether
        the value kept for it changed (a function then may read other names)."""
        value = namespace.get(name, _UNSET)
        if name not in seen:
            if value is not _UNSET:  # first bound at or after the function's cell: before its check cell
                seen[name] = [value, None]
            return value is not _UNSET
        if value is seen[name][0]:
            seen[name][1] = None
        elif _defined_in(value, self._filename) and _defined_in(seen[name][0], self._filename):
            seen[name] = [value, None]  # the notebook's own function for its own: its last word
            return True
        elif seen[name][1] is None:
            seen[name][1] = label
        return False

    def _read_by(self, function, seen: dict, namespace: dict, exactly: bool = False) -> set:
        """The globals `function` reads, and those each function of the notebook's it reads reads in turn; not
        those any of them sets (`global calls`): the functions' own state, which their calls change.

        While the cells run, every name the code holds (its attributes' too: `S.sum()`), which costs nothing to
        find; `exactly`, only its globals, read from its bytecode (some ms), once a name was taken."""
        found, written, todo = set(), set(), [function]
        while todo:
            code = getattr(_unwrapped(todo.pop()), "__code__", None)
            if not isinstance(code, types.CodeType):
                continue
            if (code, exactly) not in self._names:
                self._names[code, exactly] = _globals_of(code) if exactly else (_all_names(code), frozenset())
            read, sets = self._names[code, exactly]
            written |= sets
            for name in read - found:
                found.add(name)
                value = seen[name][0] if name in seen else namespace.get(name)
                if isinstance(_unwrapped(value), types.FunctionType) and _defined_in(value, self._filename):
                    todo.append(value)
        return found - written

    def restore(self, namespace: dict) -> tuple[list, dict]:
        """([{"name", "cell", "by"}] for each name a later cell took: a graded function's own ("by" empty), or a
        global graded functions read ("by": those functions); {name: function} for the grader's calls where they
        differ from `namespace`). Graded functions whose name ends holding a value are put back in `namespace`."""
        graded_as, lost, by = {}, [], {}
        for name, (label, _) in self._lost.items():
            if callable(namespace.get(name)):
                graded_as[name] = self._kept[name][0]
            else:
                namespace[name] = self._kept[name][0]
            lost.append({"name": name, "cell": label, "by": []})
        for name, seen in self._reads.items():
            function = self._kept[name][0]
            taken = {other for other, (_, cell) in seen.items() if cell is not None}
            if not taken or not isinstance(function, types.FunctionType):
                continue  # a decorated function keeps its module's globals
            reads = self._read_by(function, seen, namespace, exactly=True)
            if taken & reads:
                graded_as[name] = _as_checked(name, function, {**namespace, **{o: seen[o][0] for o in taken & reads}},
                                              reads, self._filename)
            for other in sorted(taken & reads - set(self._kept)):  # a graded function's own name has its note
                by.setdefault((other, seen[other][1]), []).append(name)
        return lost + [{"name": name, "cell": cell, "by": users} for (name, cell), users in by.items()], graded_as


_UNSET = object()  # a name nothing is bound to


def _globals_of(code: types.CodeType) -> tuple[frozenset, frozenset]:
    """The global names `code` reads, and those it sets or deletes (`global calls; calls += 1`), a comprehension's
    and an inner function's among them; not the attribute names its co_names holds beside them (`S.sum()`)."""
    import dis  # the worker's own import, once: a .py file never needs it

    read, written, todo = set(), set(), [code]
    while todo:
        current = todo.pop()
        for op in dis.get_instructions(current):
            if op.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(op.argval, str):
                read.add(op.argval)
            elif op.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") and isinstance(op.argval, str):
                written.add(op.argval)
        todo += [const for const in current.co_consts if isinstance(const, types.CodeType)]
    return frozenset(read), frozenset(written)


def _all_names(code: types.CodeType) -> frozenset:
    """Every name `code` and the code inside it (a comprehension, an inner function) hold: globals and attributes."""
    names, todo = set(), [code]
    while todo:
        current = todo.pop()
        names.update(current.co_names)
        todo += [const for const in current.co_consts if isinstance(const, types.CodeType)]
    return frozenset(names)


def _as_checked(name: str, function: types.FunctionType, view: dict, reads: set, filename) -> types.FunctionType:
    """`function`, and each function of the notebook's it calls, looking their globals up in `view`: the module's,
    with the names a later cell took as the check cell saw them."""
    for other in reads | {name}:
        value = view.get(other)
        if isinstance(value, types.FunctionType) and _defined_in(value, filename):
            view[other] = _with_globals(value, view)
    view[name] = _with_globals(function, view)
    return view[name]


def _with_globals(function: types.FunctionType, namespace: dict) -> types.FunctionType:
    """`function` looking its globals up in `namespace` instead of its module's."""
    copy = types.FunctionType(function.__code__, namespace, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


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


def _defined_in(value, filename) -> bool:
    """Whether `value` is a function whose code was compiled from the submission (any of its cells), decorated
    or not (`@functools.lru_cache` and `@np.errstate(...)` keep the function as `__wrapped__`)."""
    code = getattr(_unwrapped(value), "__code__", None)
    return isinstance(getattr(code, "co_filename", None), str) and code.co_filename.startswith(str(filename))


def _unwrapped(value):
    """The function a decorator wraps (`__wrapped__`), or `value` itself; None where unwrapping fails."""
    try:
        return inspect.unwrap(value) if callable(value) else value
    except Exception:  # noqa: BLE001 - a loop of __wrapped__ (ValueError), or a student's attribute that raises
        return None


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
