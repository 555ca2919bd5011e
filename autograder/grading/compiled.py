"""What a timeout tells a student whose graded function is compiled at its calls (`torch.compile`).

torch.compile traces and compiles a function again for each new shape of its inputs: seconds each time, which no
call's limit here allows, as every check sends shapes of its own. The timeout's general advice (a loop that
never ends, a Python loop over every entry, an array far larger than the answer) points elsewhere, and so does
what the kernel saw of the call (compiling in processes of its own, it looks idle): this names the compiler, in
place of that advice (explain.stopped_advice). Read from the file's text (each graded name's last top-level
binding), never run. It words the message, and it moves only this file's own points: a compiled function's idle
timeout counts at once, without the re-run that a machine's hold-up gets (grading.confirm), for compiling looks
idle too; a file that names torch.compile can only forgo that re-run for itself.
"""
from __future__ import annotations

import ast

from autograder.code_names import MAX_PARSED, set_by
from autograder.grading.submission import Submission

COMPILED_ADVICE = ("{function} is compiled with torch.compile, which compiles it again for each new shape of its "
                   "inputs, taking seconds each time, longer than a call's limit here (every check sends shapes of "
                   "its own): hand it in without torch.compile")


def stop_causes(submission: Submission, functions: set[str]) -> dict[str, str]:
    """function -> what the file's text shows stops its calls at their limit, as advice for the student: of each of
    `functions` whose last top-level binding uses torch.compile (`f = torch.compile(g)`, `@torch.compile` over its
    def, or a call of it in its body). Only functions with such a cause are keys."""
    return {name: COMPILED_ADVICE.format(function=name) for name in sorted(compiled_functions(submission, functions))}


def compiled_functions(submission: Submission, names: set[str]) -> set[str]:
    """Which of `names` the file binds last, at its top level, through torch.compile."""
    sources = [submission.source] if submission.kind == "py" else [cell.source for cell in submission.cells]
    if not any("compile" in source for source in sources):  # read for every file graded: most need no parsing
        return set()
    last: dict[str, bool] = {}
    for source in sources:
        if len(source) > MAX_PARSED:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # its load problem is reported already
        for statement in tree.body:
            for name in set(set_by(statement)) & names:
                last[name] = _compiles(statement)
    return {name for name, compiled in last.items() if compiled}


def _compiles(statement: ast.stmt) -> bool:
    """Whether `statement` calls or names torch.compile anywhere (`torch.compile(f)`, `@torch.compile(...)`)."""
    return any(isinstance(node, ast.Attribute) and node.attr == "compile" and isinstance(node.value, ast.Name)
               and node.value.id == "torch" for node in ast.walk(statement))
