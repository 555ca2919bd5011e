"""Exceptions that come from where graded code runs, not from the code itself: what the student's own machine
would not show (a module the sandbox's Python lacks, an operation it refuses, a name the grader's NumPy lacks), and
what to do about each. Shown after the exception in a check's message, a cell's note and a file's load reason."""
from __future__ import annotations

import re

import numpy as np

# What Python raises for a connection or a name lookup on a machine without a network (urllib, socket, requests).
_NO_NETWORK = ("URLError", "gaierror", "ConnectionError", "ConnectionRefusedError", "ConnectionResetError",
               "ConnectionAbortedError", "NewConnectionError", "MaxRetryError")
# NumPy's words for a name it no longer has: "`np.infty` was removed in the NumPy 2.0 release", and "module 'numpy'
# has no attribute 'float'" (and its submodules': 'numpy.linalg').
_NUMPY_REMOVED = re.compile(r"`(?P<name>np(?:\.\w+)+)` was removed in the NumPy")
_NUMPY_LACKS = re.compile(r"module '(?P<module>numpy(?:\.\w+)*)' has no attribute '(?P<attribute>\w+)'")


def environment_hint(raised) -> str:
    """What to do about `raised` (protocol.Raised) where it comes from where graded code runs, in brackets after
    the exception (" (...)"); "" where it does not."""
    if raised.type == "ModuleNotFoundError":
        return (" (the grader has no such module: import only the libraries the assignment names, and keep your own "
                "code in this one file)")
    if _no_network(raised):
        return " (graded code runs without a network: download nothing, and read only what the function is given)"
    if raised.type == "PermissionError":
        return (" (the sandbox refused it: graded code has no network, no multiprocessing and no writing outside "
                "its working folder; do the work in the function itself)")
    if raised.type == "EOFError" and "when reading a line" in raised.message:  # input()'s
        return " (input() waits for someone to type, and the grader types nothing)"
    if raised.type == "FileNotFoundError":
        return (" (graded code runs in an empty folder with your file alone: no data or other files of yours are "
                "there, so compute from what the function is given)")
    lacks = numpy_lacks(raised)
    if lacks:  # the student's NumPy may still have it, and their own run then shows no error
        return (f" (the grader runs NumPy {np.__version__}, which has no {lacks}: if your own `python` runs this line "
                f"without an error, your NumPy is another version, where it still exists. Write it as NumPy "
                f"{np.__version__} has it; the error's own words may say how)")
    return ""


def numpy_lacks(raised) -> str:
    """The NumPy name an AttributeError says the grader's NumPy lacks ("np.infty", which NumPy 2.0 removed;
    "np.float", which 1.24 did; "np.linalg.x"), or ""."""
    if raised.type != "AttributeError":
        return ""
    removed, lacks = _NUMPY_REMOVED.search(raised.message), _NUMPY_LACKS.search(raised.message)
    if removed is not None:
        return removed.group("name")
    return f"np{lacks.group('module')[5:]}.{lacks.group('attribute')}" if lacks is not None else ""


def _no_network(raised) -> bool:
    """Whether it is what a download or a connection raises in grading: no route, no name lookup, and no socket
    but a Unix one (the sandbox refuses the rest with EPERM, which socket.socket() raises as PermissionError)."""
    return (raised.type in _NO_NETWORK or (raised.type == "OSError" and "Network is unreachable" in raised.message)
            or (raised.type == "PermissionError" and raised.module == "socket"))
