"""The protocol between a check and a student's function: what is asked, and what comes back.

A check asks with a `Call` ("run function F on these arguments") and gets a
`Reply`: the returned value, or the exception raised. Values in a reply are
plain data the grader owns: None, bool, int, float, str, lists, tuples and
dicts of them, NumPy arrays, `TensorData` (a tensor's values and autograd
state) and `Opaque` (the name of any other object's type, never the object).
A reply carries the whole answer: no request says which part of it will be
looked at. There is no process code here: the sandbox carries these across
(autograder.sandbox.values), the authoring API judges them.

`chosen` marks text the student's code chose while it ran (an exception's message, a returned object's type
name, a returned value, shape or entry) where a check's message quotes it: grading.results keeps it out of a
hidden check's message for students. `Raised.describe` marks the place it names (line, cell, function) with what
to check it against: code can set those too while it runs (`code.replace(co_firstlineno=...)`), so a place is
shown as it is only where it fits the submission's own text (`vouched`, which grading.places calls), else as chosen.
`declared` marks words about a function's own parameters, as the worker read them from the function it called: code
can build a function with any names while it runs, so they are shown only where the submission's text has a `def`
of that function with just those parameters, else as chosen.

Shipped to the worker with the wire format (see sandbox.boot.BOOT): standard library and NumPy only.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# The marks around chosen text: control characters, which text.safe escapes in all text that enters the grader (and
# repr() in every returned value a message shows), so no text of a student's can hold a mark of its own.
CHOSEN_START, CHOSEN_END = "\x0e", "\x0f"
_CHOSEN = re.compile(f"{CHOSEN_START}[^{CHOSEN_END}]*(?:{CHOSEN_END}|\\Z)")  # unclosed: a cut that ended inside it


# The marks around a place an exception reports: its cell, line and function, each ended by FIELD, then its text.
PLACE_START, PLACE_END, FIELD = "\x10", "\x11", "\x1f"
_PLACE = re.compile(f"{PLACE_START}([^{PLACE_END}]*)(?:{PLACE_END}|\\Z)")  # unclosed: as _CHOSEN


# The marks around words about a function's parameters: the function and its parameters (each `Parameter.token`,
# comma-separated), each ended by FIELD, then the text.
DECLARED_START, DECLARED_END = "\x12", "\x13"
_DECLARED = re.compile(f"{DECLARED_START}([^{DECLARED_END}]*)(?:{DECLARED_END}|\\Z)")  # unclosed: as _CHOSEN
MARKS = (CHOSEN_START, PLACE_START, DECLARED_START)  # what starts a part a hidden check's message may withhold


def chosen(text: str) -> str:
    """`text`, which the student's code chose while it ran, marked as such inside a message."""
    return f"{CHOSEN_START}{text}{CHOSEN_END}"


@dataclass(frozen=True)
class Parameter:
    """One parameter of a function as its `def` line writes it: its name, its kind (inspect.Parameter.kind's number:
    POSITIONAL_ONLY before `/`, KEYWORD_ONLY after `*` or `*args`) and whether it has a default. Not the default
    itself: that is a value the code chose, where the kind and the presence of a default are the def line's syntax."""

    name: str
    kind: int = int(inspect.Parameter.POSITIONAL_OR_KEYWORD)
    default: bool = False

    def token(self) -> str:
        """"1scale=": the kind's number, the name, and "=" where it has a default; `of_token` reads it back."""
        return f"{int(self.kind)}{self.name}{'=' if self.default else ''}"

    @classmethod
    def of_token(cls, token: str) -> Parameter | None:
        """The parameter a `token` writes; None for text that is no token."""
        name = token[1:].removesuffix("=")
        if not (token[:1] and token[0] in "01234" and name.isidentifier()):
            return None
        return cls(name, int(token[0]), token.endswith("="))


def names(parameters) -> tuple[str, ...]:
    """The names of `parameters` (Parameter), in order."""
    return tuple(parameter.name for parameter in parameters)


def declared(function: str, parameters: tuple[Parameter, ...], text: str) -> str:
    """`text`, which tells of `function`'s `parameters` (their names, kinds and defaults) as the worker read them,
    marked to be `vouched` for."""
    tokens = ",".join(parameter.token() for parameter in parameters)
    return f"{DECLARED_START}{function}{FIELD}{tokens}{FIELD}{text}{DECLARED_END}"


def unmarked(text: str) -> str:
    """`text` with the marks of `chosen`, `declared` and `Raised.describe`'s places taken out and all the text
    kept."""
    if DECLARED_START in text:
        text = _DECLARED.sub(lambda match: _declared_fields(match)[2], text)
    if PLACE_START in text:
        text = _PLACE.sub(lambda match: _fields(match)[3], text)
    return text.replace(CHOSEN_START, "").replace(CHOSEN_END, "") if CHOSEN_START in text else text


def without_chosen(text: str, stand_in: str) -> str:
    """`text` with every part `chosen` marked, and every place or `declared` part not `vouched` for, replaced by
    `stand_in`."""
    text = _DECLARED.sub(lambda _: stand_in, text) if DECLARED_START in text else text
    return unmarked(_CHOSEN.sub(lambda _: stand_in, _PLACE.sub(lambda _: stand_in, text)))


def vouched(text: str, fits, declares=None) -> str:
    """`text` with each place `Raised.describe` marked shown as it is where fits(cell, line, within) says the
    submission's own text has it, and each `declared` part where declares(function, parameters) says its text
    defines that function with those parameters (Parameter: names, kinds and defaults); either marked as `chosen`
    where not (a mark cut short never fits)."""
    def one(match: re.Match) -> str:
        cell, line, within, shown = _fields(match)
        whole = match.group(0).endswith(PLACE_END)
        return shown if whole and line.isdigit() and fits(cell, int(line), within) else chosen(shown)

    def declared_one(match: re.Match) -> str:
        function, tokens, shown = _declared_fields(match)
        parameters = tuple(Parameter.of_token(token) for token in filter(None, tokens.split(",")))
        whole = match.group(0).endswith(DECLARED_END) and declares is not None and None not in parameters
        return shown if whole and declares(function, parameters) else chosen(shown)
    text = _DECLARED.sub(declared_one, text) if DECLARED_START in text else text
    return _PLACE.sub(one, text) if PLACE_START in text else text


def _declared_fields(match: re.Match) -> list[str]:
    """A `declared` part's function, parameters and text ("" for those a cut left out)."""
    return (match.group(1).split(FIELD, 2) + ["", "", ""])[:3]


def _fields(match: re.Match) -> list[str]:
    """A marked place's cell, line, function and text ("" for those a cut left out)."""
    return (match.group(1).split(FIELD, 3) + ["", "", "", ""])[:4]


@dataclass(frozen=True)
class TensorData:
    """A torch tensor as the grader sees it: its values and its autograd state."""

    array: np.ndarray
    requires_grad: bool
    grad_fn: str | None


@dataclass(frozen=True)
class Opaque:
    """A returned object that is not plain data (an instance of a custom class, a set, a generator...)."""

    type_name: str
    detail: str = ""


# What a call with `mark_returned` writes into each argument whose memory an array it returned shares, after the
# reply is taken: exact in every float and integer dtype an argument has (True for a mask), and no value a check sends.
RETURNED_MARK = 1234.0


@dataclass(frozen=True)
class Call:
    """One request: run the student's `function` on these arguments.

    args/kwargs: plain values (NumPy arrays, numbers, str, None, and lists, tuples and dicts of them).
    as_tensors: hand every array argument to the function as a torch tensor.
    backward: upstream gradients, one per returned tensor (None to skip one);
        when given, the float inputs require grad and the reply carries their
        gradients.
    return_inputs: read the arguments back after the call (from the
        grader's shared memory), to detect in-place modification.
    mark_returned: once the answer is taken for the reply, fill with
        RETURNED_MARK every array argument whose memory an array it returned
        shares, whatever either's writeable flag: an argument read back
        holding it was returned itself (or a view of it), not a new array.
        The grader reads that from its own memory: Trial.call asks
        return_inputs with it.
    seconds: wall-clock limit for this call; None means the course default.
    """

    function: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    as_tensors: bool = False
    backward: tuple | None = None
    return_inputs: bool = False
    seconds: float | None = None
    mark_returned: bool = False

    def payload_bytes(self) -> int:
        arrays = [a for a in (*self.args, *self.kwargs.values(), *(self.backward or ()))
                  if isinstance(a, np.ndarray)]
        return sum(a.nbytes for a in arrays)


@dataclass(frozen=True)
class Raised:
    """An exception raised by student code: its type, message and where in the student's file.

    line: the line of the student's file (of `cell`, in a notebook) where it was raised.
    cell: the notebook cell that line is in ("code cell 3"); "" in a .py file.
    within: the student's function that line is in; "" at top level.
    unfit: the call's arguments did not bind to the function's own parameters (a renamed or missing one),
    so it raised before running. The worker's word, like the rest, used only to say what to do.
    parameters: for an unfit call, the function's parameters (`Parameter`: name, kind, whether it has a default) as
    the worker read them (None where it could not), and missing: the first keyword the call passed that it does not
    take by name (none of them, or one before `/`), as the grader reads it from its own call
    (sandbox.replies.read_raised). Shown only `declared`.
    kinds: the built-in classes it is an instance of, its own first where it is one, as the worker read them: no
    more to be trusted than `type`. A student's own class named ValueError has the name, not the kind.
    own: raised by a `raise` statement in the student's file (True), or by a library the line called (False:
    NumPy's ValueError for shapes that do not fit), as the worker saw it; None where it could not tell (no
    line of the file in the traceback, an in-kernel check). For what the feedback advises only.
    module: the module whose code raised it (the traceback's innermost frame): "socket" for a socket the sandbox
    refused, so the feedback says there is no network. The worker's word, for advice only.
    """

    type: str
    message: str
    line: int | None = None
    unfit: bool = False
    cell: str = ""
    within: str = ""
    kinds: tuple[str, ...] = ()  # the built-in exception classes it is an instance of
    own: bool | None = None
    module: str = ""
    parameters: tuple[Parameter, ...] | None = None
    missing: str = ""

    def is_a(self, exception: str) -> bool:
        """Whether `except <exception>` (a built-in's name) catches it: it is that built-in or subclasses it. Its
        type's name is not enough: a class of the student's own may be named ValueError."""
        return exception in self.kinds

    def shadows(self, exception: str) -> bool:
        """Whether it is a class of the student's own named as the built-in `exception`, which `except` does not
        catch."""
        return self.type == exception and not self.is_a(exception)

    def describe(self, line: bool = True, called: str = "", unit: str = "") -> str:
        """"ValueError at code cell 7, line 3, in helper: message". called: the function the call named, which
        goes without saying; unit: the unit being loaded (a cell), likewise. line=False leaves out the place.
        The message is the code's own text, which it can make of its arguments: marked (`chosen`), so that a
        hidden check's feedback leaves it out; the place is marked to be `vouched` for; text shown anywhere else
        takes the marks out (`unmarked`)."""
        message = f": {chosen(self.message)}" if self.message else ""
        if not (line and self.line):
            return f"{self.type}{message}"
        shown = place(self.line, self.cell, self.within, called, unit)
        return f"{self.type} at {PLACE_START}{FIELD.join((self.cell, str(self.line), self.within, shown))}{PLACE_END}" \
               f"{message}"


def place(line: int, cell: str = "", within: str = "", called: str = "", unit: str = "") -> str:
    """A line of the student's file as a student finds it: "code cell 7, line 3, in helper". called: the function
    the call named, and unit: the unit being loaded (a cell), each left out as going without saying."""
    shown_cell = f"{cell}, " if cell and cell != unit else ""
    shown_within = f", in {within}" if within and within != called else ""
    return f"{shown_cell}line {line}{shown_within}"


@dataclass(frozen=True)
class Reply:
    """What one call produced, decoded and validated by the grader.

    inputs: the arguments as the call left them, positional then keyword in
        the call's order (when the call asked for them), read by the grader
        from its own memory.
    grads: for a call with `backward`, one gradient per positional argument
        (None where none reached it), each of its argument's shape.
    """

    value: Any = None
    raised: Raised | None = None
    inputs: tuple | None = None
    grads: tuple | None = None
    grad_error: str | None = None
