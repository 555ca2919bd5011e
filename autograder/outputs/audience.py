"""Who may see what of a result: the one place every output asks.

Two audiences. STUDENT: the student's own feedback — feedback pages, the
visible fields of Gradescope's results.json, nbgrader's feedback (the test
cells' output in the autograded notebook), `autograder check`. INSTRUCTOR:
the class report, the terminal of `grade`, grades.csv, Gradescope's
extra_data and hidden stdout, the gradebook.

What each part of a result is, and who sees it (PARTS):
- scores, check names, our messages and hints, misconceptions: both; a
  hidden check's message never quotes its inputs (grading.examples builds it
  so, before anything is stored);
- what a check's message quotes of the student's reply (an exception's
  message and a place the file's text does not have, a returned value,
  shape, length or type name, the "got" entry): both for a
  public check; for a hidden check the instructor's only (`withheld`), since
  code can write its arguments into it; grading.results splits it off as the
  result is built, and the student's message says it was kept;
- a public check's example (inputs, expected and returned values): both;
- a hidden check's example: its shrunk sizes only, to both; its inputs and
  expected values are never stored, so no output can show them;
- what the student's code printed: the instructor's only whenever a hidden
  check ran while it was captured, since code can print its arguments (a
  hidden check's inputs); the student is told it was kept for the instructor;
- the grader's traceback (internal errors) and paths on the grading machine:
  the instructor's only.
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.grading.examples import load_example
from autograder.grading.results import CheckResult, SubmissionResult

STUDENT, INSTRUCTOR = "student", "instructor"
BOTH = frozenset({STUDENT, INSTRUCTOR})


@dataclass(frozen=True)
class Part:
    """One kind of thing a result holds, and who may see it."""

    name: str
    audiences: frozenset[str]
    why: str


PARTS = {part.name: part for part in (
    Part("scores and messages", BOTH, "our own text; hidden checks' messages never quote their inputs"),
    Part("public example", BOTH, "public checks' inputs are in the student's own notebook anyway"),
    Part("chosen text in public messages", BOTH, "only public inputs can have been written into it"),
    Part("chosen text in hidden messages", frozenset({INSTRUCTOR}),
         "code can write its arguments (a hidden check's inputs) into an exception's message or a class's name"),
    Part("hidden sizes", BOTH, "the sizes a hidden failure was shrunk to say where to look, not what to return"),
    Part("hidden inputs", frozenset(), "never stored: grading.examples keeps sizes only"),
    Part("hidden expected values", frozenset(), "never stored: they are the answer"),
    Part("printed output", frozenset({INSTRUCTOR}), "code can print its arguments, a hidden check's inputs"),
    Part("printed output without hidden checks", BOTH, "only public inputs can have been printed"),
    Part("traceback", frozenset({INSTRUCTOR}), "the grader's own internals and paths"),
    Part("grading paths", frozenset({INSTRUCTOR}), "where files lie on the grading machine"),
)}


def may_see(audience: str, part: str) -> bool:
    """Whether `audience` may see `part` (a key of PARTS)."""
    return audience in PARTS[part].audiences


def printed_output(output: str, audience: str, hidden_ran: bool = True) -> str:
    """What the code printed, as `audience` may see it ("" when it may not).

    hidden_ran: whether any hidden check ran while `output` was captured
    (a whole submission's output: whenever its suite has hidden checks).
    """
    part = "printed output" if hidden_ran else "printed output without hidden checks"
    return output if may_see(audience, part) else ""


def printed_note(output: str, audience: str, hidden_ran: bool = True) -> str:
    """The sentence that stands in for printed output `audience` may not see ("" when there is none to hide)."""
    if not output or printed_output(output, audience, hidden_ran):
        return ""
    return ("Your code printed something while it was graded (at its top level or in its functions), or a library "
            "it called printed a warning (NumPy's divide by zero, say). All of it is kept for your instructor only: "
            "hidden checks ran in the same process, and what a function prints can show their inputs. Remove the "
            "prints, or use `autograder check` to see what your code prints and warns on the public checks.")


def submission_output(result: SubmissionResult, audience: str) -> str:
    """A submission's printed output as `audience` may see it."""
    return printed_output(result.printed, audience, hidden_ran=_any_hidden(result))


def submission_output_note(result: SubmissionResult, audience: str) -> str:
    return printed_note(result.printed, audience, hidden_ran=_any_hidden(result))


def message(check: CheckResult, audience: str) -> str:
    """A check's message as `audience` may see it: a hidden check's in full (`withheld`) for the instructor only.

    A public check's message holds the chosen text itself, so there is nothing withheld to show."""
    part = "chosen text in hidden messages" if check.withheld else "chosen text in public messages"
    return check.withheld if check.withheld and may_see(audience, part) else check.message


def withheld(check: CheckResult, audience: str) -> str:
    """What a hidden check's message left out, as its whole message, for `audience` ("" when it may not see it)."""
    return check.withheld if may_see(audience, "chosen text in hidden messages") else ""


def example(check: CheckResult, audience: str) -> dict:
    """The stored example of a failing check as `audience` may see it: all of it when public, sizes when hidden."""
    stored = load_example(check.example) or {}
    if check.visibility == "public" and may_see(audience, "public example"):
        return stored
    shown = {}
    if may_see(audience, "hidden sizes"):
        shown = {key: stored[key] for key in ("sizes", "shrunk_from") if isinstance(stored.get(key), dict)}
    if "omitted" in stored:
        shown["omitted"] = stored["omitted"]
    return shown


def traceback(result: SubmissionResult, audience: str) -> str:
    """The grader's traceback of an internal error, for the instructor only."""
    return result.internal_error if may_see(audience, "traceback") else ""


def _any_hidden(result: SubmissionResult) -> bool:
    # A file that did not load was called by no check: what it printed, its top level printed.
    if result.did_not_load:
        return False
    # No checks at all (the file could not be graded): nothing hidden ran, but be strict unless it is plain.
    return any(test.visibility != "public" for test in result.tests) or not result.tests
