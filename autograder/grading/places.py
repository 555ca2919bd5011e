"""Whether the place an exception reports (its cell, line and function) is one the submission's own text has.

The worker reads the place from the code object that raised, and code can make such an object while it runs
(`code.replace(co_firstlineno=..., co_name=...)`), so line 1009379751 "in LEAKFN_1049370999" can carry a hidden
check's inputs. A place is shown as it is only where it fits the text the worker loaded: a cell the submission has,
a line within that cell's (or the file's) line count, a function name that appears in its text as an identifier.
Anything else is the code's choice, withheld from a hidden check's student message as its exception's message is
(authoring.protocol.vouched, grading.results). A place that fits can still be picked among the unit's lines and
names by code that wants to: a few bits, no more. Likewise the parameters the worker read from a function a call
did not fit (authoring.protocol.declared) are shown only where the text has a `def` of that function with just
those parameters, of those kinds (before `/`, after `*`) and with defaults where they have them.
"""
from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass, field

from autograder.authoring.protocol import Parameter, vouched

# The names Python gives code that has none of its own (a lambda, a comprehension): the grader's words, not the code's.
NAMELESS = frozenset({"<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<module>"})
_IDENTIFIER = re.compile(r"[^\W\d]\w*")


@dataclass(frozen=True)
class SourceText:
    """The text the worker loaded, by the cell label a place names ("" for a .py file), and what that text shows
    stops a graded function at its calls (`causes`: function -> advice, grading.compiled.stop_causes), told in
    place of any other advice when it is stopped."""

    units: dict[str, str]
    causes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, spec: dict, causes: dict[str, str] | None = None) -> SourceText:
        """From a worker spec (grading.submission.Submission.worker_spec): what was compiled, unit by unit."""
        labels = [""] if spec["kind"] == "py" else spec["labels"]
        return cls(dict(zip(labels, spec["sources"])), causes or {})

    def fits(self, cell: str, line: int, within: str) -> bool:
        """Whether `cell` is one of the units, `line` one of its lines, and `within` ("" at top level) a name in it."""
        source = self.units.get(cell)
        if source is None:
            return False
        lines = source.count("\n") + 1
        return 1 <= line <= lines and (not within or within in NAMELESS
                                       or within in set(_IDENTIFIER.findall(source)))

    def declares(self, function: str, parameters: tuple[Parameter, ...]) -> bool:
        """Whether some unit has a `def function(...)` whose parameters are just `parameters`, in order, each of its
        kind and with a default where it has one."""
        return any(parameters == _parameters(node) for source in self.units.values() for node in _defs(source)
                   if node.name == function)

    def vouch(self, message: str) -> str:
        """`message` with each place it names shown where it fits, and each part about a function's parameters
        where the text declares them, else marked as text the code chose."""
        return vouched(message, self.fits, self.declares)


def _defs(source: str) -> list:
    """Every function definition in `source`; none where it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parameters(node) -> tuple[Parameter, ...]:
    """A definition's parameters in the order inspect.signature gives them, each with its kind and whether it has a
    default."""
    args, kind = node.args, inspect.Parameter
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)  # the defaults belong to the last positional parameters
    found = [Parameter(a.arg, int(kind.POSITIONAL_ONLY if a in args.posonlyargs else kind.POSITIONAL_OR_KEYWORD),
                       number >= first_default) for number, a in enumerate(positional)]
    found += [Parameter(args.vararg.arg, int(kind.VAR_POSITIONAL))] if args.vararg else []
    found += [Parameter(a.arg, int(kind.KEYWORD_ONLY), default is not None)
              for a, default in zip(args.kwonlyargs, args.kw_defaults)]
    return tuple(found + ([Parameter(args.kwarg.arg, int(kind.VAR_KEYWORD))] if args.kwarg else []))
