"""What a check is, and what it gets to work with.

A check is a plain function `run(trial)` that builds inputs, calls a student
function through `trial.call` (which crosses into the sandbox) and judges the
reply with `autograder.authoring.compare`, raising `CheckFailed` with a message for the
student. Checks run in the trusted grader; the student's process only ever
sees the inputs of the calls.

Assignments list their checks in two files: `public_checks.py` beside the
stub (released to students, so it uses lecture constants and properties, no
reference) and `hidden_checks.py` under solutions/ (compares with the
reference on randomized inputs). Points come from course.yaml.

What a check raises says whose fault a lost point is. `CheckFailed` (the
answer is wrong) and `StudentError` (the student's function did something no
answer comes of) are the student's. Anything else is taken for a bug in the
check itself: the submission becomes an internal error, shown to the
instructor with the traceback and graded again by the next run, so that no
student pays for the author's mistake (grading.attempt).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from autograder.authoring.arguments_after import (
    changed_argument,
    changed_message,
    holds_returned_mark,
    returned_message,
)
from autograder.authoring.environment import environment_hint
from autograder.authoring.protocol import Call, Parameter, Reply
from autograder.authoring.seeds import check_rng
from autograder.authoring.unfit import missing_keyword, signature_hint, stub_parameters, stub_signature


@dataclass(frozen=True)
class Tolerance:
    """Values match when |got - expected| <= atol * max(1, max|expected|) + rtol * |expected|.

    For a sum or a matrix product (C = A V) the relative part is rtol * Σⱼ |aᵢⱼ| |vⱼₖ|, the magnitude of
    the terms summed, instead of |expected| (compare.expect_close's `terms`).

    coarser: the tolerance of a lower precision (float64's has float32's), for an answer computed in it: a
    float32 result of float64 inputs is rounded to float32, so float64's tolerance would pass or fail it by
    where its values happen to round, that is, by the student's random inputs.
    """

    rtol: float
    atol: float
    coarser: Tolerance | None = None


class CheckFailed(Exception):
    """The student's answer is wrong; `message` says how, `hint` what to look at. expected/got: the arrays
    compared, for a TA's replay and public feedback."""

    def __init__(self, message: str, expected=None, got=None, hint: str = ""):
        super().__init__(message)
        self.message, self.expected, self.got, self.hint = message, expected, got, hint


class StudentError(Exception):
    """The student's function raised where it should have returned (or did something else no answer comes of).

    Raise it, rather than letting an exception escape, when the student's
    code makes the check impossible: any other exception is the suite's bug.
    """


@dataclass(frozen=True)
class Sizes:
    """The named input sizes of a randomized check; shrinking a failure makes them smaller.

    Each assignment names its own sizes: `Sizes.of(batch=(2, 3), n=5)`. A
    size is an int, or a tuple of ints for a varying number of axes (leading
    batch axes, say), which shrinks by losing axes as well as by getting
    smaller. A check reads them as `t.sizes["n"]`.
    """

    named: tuple[tuple[str, int | tuple[int, ...]], ...]

    @classmethod
    def of(cls, **named) -> Sizes:
        return cls(tuple((name, tuple(value) if isinstance(value, (tuple, list)) else value)
                         for name, value in named.items()))

    def __getitem__(self, name: str):
        return dict(self.named)[name]

    def as_dict(self) -> dict:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in self.named}

    def smallest(self) -> Sizes:
        """Every size at its least: no batch axes, every count 1."""
        return Sizes(tuple((name, () if isinstance(value, tuple) else 1) for name, value in self.named))

    def jumps(self, needed: frozenset[str] = frozenset()) -> list[Sizes]:
        """The largest steps down, tried before `smaller()` when shrinking: everything at its least, then one
        size at a time. Most bugs already show at the least sizes, and then one run is enough.

        needed: sizes without which the failure went away (at their least, the run passed). They keep their
        value in the first jump and are not lowered alone again; each count among them jumps to 2 instead,
        the least value that still has it, since a bug that needs two keys mostly shows with two.
        """
        least = self.smallest()
        floor = Sizes(tuple((name, value if name in needed else least[name]) for name, value in self.named))
        each = [self._with(name, least[name]) for name, value in self.named
                if value != least[name] and name not in needed]
        twos = [self._with(name, 2) for name, value in self.named
                if name in needed and isinstance(value, int) and value > 2]
        return ([floor] if len(each) > 1 else []) + each + twos

    def smaller(self) -> list[Sizes]:
        """One-step reductions, most aggressive first, for shrinking a failing input."""
        options = []
        for name, value in self.named:
            if isinstance(value, tuple):
                if value:
                    options.append(self._with(name, value[1:]))
                options += [self._with(name, value[:i] + (1,) + value[i + 1:]) for i, n in enumerate(value) if n > 1]
            elif value > 1:
                options += [self._with(name, max(1, value // 2)), self._with(name, value - 1)]
        return options

    def following(self, other: Sizes) -> Sizes:
        """These sizes where `other` names them too, at its value there if no larger (a batch at its axes, as
        many as both have), and every other size at its least. Another check's smallest failure, tried early
        when shrinking: a function that calls a wrong one mostly fails at the sizes where that one does."""
        theirs, least = dict(other.named), self.smallest()
        return Sizes(tuple((name, _no_larger(theirs[name], value) if name in theirs else least[name])
                           for name, value in self.named))

    def _with(self, name: str, value) -> Sizes:
        return Sizes(tuple((key, value if key == name else old) for key, old in self.named))


def _no_larger(theirs, mine):
    """`theirs` where it is a size of the same kind as `mine`, no larger than `mine`; else `mine`'s least."""
    if isinstance(mine, tuple):
        return tuple(min(t, m) for t, m in zip(theirs, mine)) if isinstance(theirs, tuple) else ()
    return min(theirs, mine) if isinstance(theirs, int) and theirs >= 1 else 1


# What a student whose call was stopped is told to look for, where its check gives no advice of its own.
UNENDING_HINT = ("look for a loop that never ends (a `while` whose condition never changes) or a Python loop over "
                 "every entry where one array operation would do, and run the function on a small input yourself "
                 "to see that it returns at once")


@dataclass(frozen=True)
class Check:
    """One graded aspect of one student function, named `<function>.<aspect>`.

    run: the check itself; its docstring says what it verifies.
    uses: other student functions the check calls (it may fail with them).
    sizes: input sizes for randomized checks; None for fixed cases.
    slow_hint: what a student whose call was stopped at the check's time
        limit should change, in the assignment's words; without one, the
        grader gives UNENDING_HINT.
    charges_changes: this check carries its function's arguments changed in
        place, in whichever check's call the change showed (course.yaml
        `arguments_unchanged`; grading.changed_arguments).
    """

    name: str
    run: Callable[[Trial], None]
    uses: tuple[str, ...] = ()
    sizes: Sizes | None = None
    slow_hint: str = ""
    charges_changes: bool = False

    @property
    def function(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def functions(self) -> tuple[str, ...]:
        return (self.function, *self.uses)

    @property
    def description(self) -> str:
        return " ".join((self.run.__doc__ or "").split())


@dataclass
class Trial:
    """Everything one run of one check gets.

    name: the check's name.
    rng: seeded from (course salt, assignment, student, check name).
    ref: the reference module, or None where it is not available (a student's
        own machine), which only public checks may rely on.
    call_function: sends one Call to the student's worker.
    tolerance: by input dtype name ("float32", "float64").
    sizes: the sizes a randomized check should use.
    seconds: per-call limit for this check, or None for the default.
    shared_cache: where `shared` keeps cases built for the whole class.
    class_seed: the seed of those cases (course salt and assignment only).
    """

    name: str
    rng: np.random.Generator
    ref: Any
    call_function: Callable[[Call], Reply]
    tolerance: dict[str, Tolerance]
    sizes: Sizes | None = None
    seconds: float | None = None
    shared_cache: dict = field(default_factory=dict)
    class_seed: int = 0
    calls: list = field(default_factory=list)  # (Call, Reply) in order, for replays and examples
    remember: Callable[[Callable], Callable] | None = None  # see `reused`
    # Every call's arguments are read back after it (course.yaml `arguments_unchanged`), and a function that
    # changed an array argument in place goes into `changed` as (function, message): the grader charges it once.
    arguments_unchanged: bool = False
    changed: list = field(default_factory=list)
    # Each function's positional parameters in the stub: they name its arguments in messages where `ref` is None.
    parameters: dict = field(default_factory=dict)

    def call(self, function: str, *args, as_tensors: bool = False, backward=None,
             return_inputs: bool = False, mark_returned: bool = False, called_for: str = "", **kwargs) -> Reply:
        """Call the student's `function` in the sandbox; the reply may hold an exception.

        The keyword options are Call's; every other keyword goes to the function. With `mark_returned`, an
        argument returned itself (the answer is the caller's array) goes into `changed` as a change would, its
        message saying which call it was in `called_for`'s words ("for a mask that hides no key").
        """
        return_inputs = return_inputs or self.arguments_unchanged or mark_returned
        request = Call(function, args, kwargs, as_tensors, backward, return_inputs, self.seconds, mark_returned)
        reply = self.call_function(request)
        self.calls.append((request, reply))
        if (self.arguments_unchanged or mark_returned) and reply.inputs is not None:
            sent = (*args, *kwargs.values())
            change = changed_argument(sent, reply.inputs)
            if change is not None:  # named only now: a signature costs more than the comparisons
                name = (_argument_names(self.ref, function, args, self.parameters) + list(kwargs))[change]
                returned = mark_returned and holds_returned_mark(sent[change], reply.inputs[change])
                said = returned_message(function, name, called_for) if returned else changed_message(function, name)
                self.changed.append((function, said))
        return reply

    def stub(self, function: str) -> tuple[Parameter, ...]:
        """`function`'s parameters as the stub defines them, with kinds and defaults (`stub_signature`), for
        raise_for's advice."""
        return stub_signature(self.ref, function, self.parameters)

    def returned(self, function: str, *args, **kwargs):
        """The value `function` returned; a raised exception fails the check, its message saying what it was given."""
        reply = self.call(function, *args, **kwargs)
        if reply.raised is not None:
            raise_for(function, reply, called_with(self.ref, function, args, kwargs, self.parameters),
                      self.stub(function))
        return reply.value

    def shared(self, build: Callable[[Trial], Any]):
        """A case every student gets, built once per grader: `build(trial)` draws from the class seed.

        For large inputs (T = 512) whose reference values cost more than the
        student's call; the case is the same for the whole class.
        """
        if self.name not in self.shared_cache:
            self.shared_cache[self.name] = build(replace(self, rng=check_rng(self.class_seed, self.name), calls=[]))
        return self.shared_cache[self.name]

    def reused(self, function: Callable, *args):
        """`function(*args)`, for a check's own costly computation from plain data (a peer library's answer).

        The grader runs every check twice on the same inputs (planning, then judging); `remember`, which it
        sets, keeps such results as it keeps the reference's, by the content of the arguments, and hands
        back copies. `function` must depend on its arguments alone. Without `remember`: computed each time.
        """
        if self.remember is None:
            return function(*args)
        return self.remember(function)(*args)

    def tol(self, dtype) -> Tolerance:
        """Tolerance suited to an input of this dtype."""
        return self.tolerance["float32" if np.dtype(dtype).itemsize <= 4 else "float64"]


def raise_for(function: str, reply: Reply, arguments: str = "", stub: tuple[Parameter, ...] = ()):
    """Turn a student exception into the right failure. arguments: what the call was given (`called_with`); stub:
    the function's parameters in the stub (`stub_signature`), for advice on a call that did not fit."""
    raised = reply.raised
    if raised.unfit and raised.missing and raised.parameters is not None:
        raise StudentError(missing_keyword(function, raised.missing, raised.parameters, stub))
    if raised.type == "NotImplementedError" and raised.within in ("", function) and \
            raised.message.strip().strip("'\"") in ("", function):
        raise CheckFailed(f"{function} is not implemented yet (it raises NotImplementedError); if you did write it, "
                          "delete the template's `raise NotImplementedError(...)` line, which still runs before your "
                          "code")
    if raised.type == "SystemExit":
        raise StudentError(f"{function} called sys.exit() or exit(); a function should return its result")
    # What the call was given is beside the point where the place it ran is the cause (a module it lacks).
    where = environment_hint(raised)
    raise StudentError(f"{function} raised {raised.describe(called=function)}{'' if where else arguments}"
                       f"{signature_hint(raised, function, stub)}{_template_hint(raised)}{where}")


def _template_hint(raised) -> str:
    """Where another function of the file still raises its template's NotImplementedError, which one."""
    if raised.type != "NotImplementedError" or not raised.within or raised.message.strip().strip("'\"") not in (
            "", raised.within):
        return ""
    return f"; {raised.within} still raises the template's NotImplementedError: write it (or delete that line)"


# Trial.call's own keywords, not the function's
_CALL_OPTIONS = ("as_tensors", "backward", "return_inputs", "mark_returned", "called_for")


def called_with(ref, function: str, args: tuple, kwargs: dict, parameters: dict | None = None) -> str:
    """" (given S: a float64 array of shape (3, 4, 5), allowed: a bool array of shape (3, 1, 1, 5))": what a raised
    error's message adds, so the student sees which input their code refused. The names are the reference's
    parameters where it has the function, else the stub's (`parameters`, Trial.parameters), else the arguments are
    numbered."""
    given = {name: value for name, value in kwargs.items() if name not in _CALL_OPTIONS}
    named = list(zip(_argument_names(ref, function, args, parameters), args))
    parts = [f"{name}: {_kind_of(value, kwargs.get('as_tensors'))}" for name, value in named + list(given.items())]
    return f" (given {', '.join(parts)})" if parts else ""


def _argument_names(ref, function: str, args: tuple, parameters: dict | None = None) -> list[str]:
    """The names of `args`: the reference's parameters where it has `function`, else the stub's (`parameters`),
    else "argument 1", ...."""
    names = stub_parameters(ref, function, parameters)
    return [names[i] if i < len(names) else f"argument {i + 1}" for i in range(len(args))]


def _kind_of(value, as_tensor: bool = False) -> str:
    if isinstance(value, np.ndarray):
        return f"{_a(str(value.dtype))} {'tensor' if as_tensor else 'array'} of shape {tuple(value.shape)}"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return _a(type(value).__name__)


def _a(name: str) -> str:
    """"an int64", "a float64": the article a name takes as the feedback reads it."""
    return f"an {name}" if name[:1] in ("a", "e", "i", "o", "u") else f"a {name}"
