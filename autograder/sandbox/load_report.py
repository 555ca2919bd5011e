"""How loading a submission's top-level code went (`LoadReport`), and the worker's account of it read.

Everything the worker reports here is the student's process's word: it is checked for type and size, made
safe to show, and decides nothing but what the feedback says (the functions it names are called, and fail if
they are not there).
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.sandbox.replies import read_raised
from autograder.text import safe


@dataclass(frozen=True)
class LoadReport:
    """How loading the submission's top-level code went."""

    functions: frozenset
    problems: tuple = ()  # (unit label, Raised) for units that raised
    stopped: tuple = ()  # (unit label, reason) for units that hung or killed the worker
    failure: str = ""  # non-empty when the submission could not be loaded at all
    stray_processes: int = 0  # processes the top-level code left running, stopped after loading
    hung: bool = False  # a .py file's top-level code ran past the load limit (a demo loop, a wait), and stopped there
    gave_up: bool = False  # a notebook's loads were stopped MAX_LOAD_ATTEMPTS times, each at a cell then skipped
    # (name, cell, users, defined, unchanged) for each name a later cell of a notebook took (sandbox.kept_names): a
    # graded function's own (users empty), or a global that the graded functions in users read, which were graded
    # with it as before that cell; defined: that cell defined a function of the notebook's there after their check
    # cells; unchanged: the graded functions that read it that could not be graded so (a library's decorator); first:
    # the name was first bound after their check cells; changed: "data" (changed in place there), "switch" (the name
    # is a library switch, sandbox.tensors.LibraryState.changes, changed there) or "copy" (a graded function defined
    # again word for word, kept_names.same_function: graded as its check ran it, with no note)
    restored: tuple = ()
    trimmed: tuple = ()  # (cell, seconds it ran or None) of slow cells that ran only their definitions (slow_cells)
    # (cell, what it printed: "printed more than 16 MB of output") of cells, or a .py's statement, stopped for their
    # output, which then ran only their definitions (slow_cells); not in trimmed
    flooded: tuple = ()
    threads: int = 0  # threads of its own the top-level code left running after loading (the worker's word)
    # False: no child got as far as the submission's code, through the sandbox's failure (it could not start one, or
    # one was not ready in a load limit the file had not used): never the file's doing. The session's word only.
    started: bool = True

    @property
    def graded_at_check(self) -> frozenset:
        """The graded functions a cell of the notebook defined again after their check cells had run, each graded as
        its check cell ran it (its `restored` entry: no users, defined)."""
        return frozenset(name for name, _, users, defined, *_ in self.restored if defined and not users)


def load_failed(why: str, sandbox_to_blame: bool = True) -> LoadReport:
    """The report of a load no child began, with why: through the sandbox's failure (`started` False), or the file's
    (a budget its earlier loads used up)."""
    return LoadReport(frozenset(), failure=why, started=not sandbox_to_blame)


def read_ready(header: dict, **session) -> LoadReport:
    """The LoadReport of a worker's "ready" report; session: what the session itself knows of the load (stopped,
    stray_processes, trimmed, flooded). A report of the wrong shape is the worker's failure."""
    functions, problems = header.get("functions"), header.get("problems")
    restored, threads = header.get("restored", []), header.get("threads", 0)
    if not all(isinstance(x, list) for x in (functions, problems, restored)) or type(threads) is not int:
        return LoadReport(frozenset(), failure="the worker sent a malformed report")
    return LoadReport(
        functions=frozenset(safe(f, 100) for f in functions[:500]),
        problems=tuple((safe(p.get("unit"), 40), read_raised(p.get("raised"))) for p in problems[:50]
                       if isinstance(p, dict)),
        restored=tuple((safe(r.get("name"), 100), safe(r.get("cell"), 40), _names(r.get("by")),
                        r.get("defined") is True, _names(r.get("unchanged")), r.get("first") is True,
                        r.get("changed") if r.get("changed") in ("data", "switch", "copy") else "")
                       for r in restored[:20] if isinstance(r, dict)),
        threads=min(max(threads, 0), 10_000), **session)


def _names(names) -> tuple:
    """The worker's list of function names, made safe to show (a few; anything else, none)."""
    return tuple(safe(name, 100) for name in names[:20]) if isinstance(names, list) else ()
