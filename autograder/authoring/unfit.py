"""What to tell a student whose function a call did not fit: the parameter it lacks, and what to name it; or the
parameter it takes otherwise than the stub (by keyword only, by position only, with no default).

The checks may pass options by keyword in the stub's names (`f(x, option=...)`), or every parameter by position in
the stub's order, so a function whose parameters differ from the stub's raises TypeError before it runs. The worker
says so (`Raised.unfit`) and reads the function's parameters (`Parameter`: name, kind, whether it has a default);
they are text the code could have chosen while it ran, so they go into a message `declared`, shown in a hidden check
only where the submission's text defines the function with just those parameters.
"""
from __future__ import annotations

import inspect

from autograder.authoring.protocol import Parameter, declared, names

POSITIONAL_ONLY, KEYWORD_ONLY = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.KEYWORD_ONLY


def stub_parameters(ref, function: str, parameters: dict | None = None) -> tuple[str, ...]:
    """`function`'s parameters as the stub defines them: the reference's where it has the function, else the
    released manifest's (`parameters`, Trial.parameters); () where neither has it."""
    return names(stub_signature(ref, function, parameters))


def stub_signature(ref, function: str, parameters: dict | None = None) -> tuple[Parameter, ...]:
    """`function`'s parameters as the stub defines them, with their kinds and defaults where the reference has the
    function (its signature is the stub's: tests/test_release.py); else the released manifest's names, which say
    nothing of defaults; () where neither has it."""
    target = getattr(ref, function, None)
    try:
        found = inspect.signature(target).parameters.values() if callable(target) else ()
    except (TypeError, ValueError):
        found = ()
    own = tuple(Parameter(p.name, int(p.kind), p.default is not p.empty) for p in found)
    return own or tuple(Parameter(name) for name in (parameters or {}).get(function, ()))


def missing_keyword(function: str, keyword: str, own: tuple[Parameter, ...], stub: tuple[Parameter, ...]) -> str:
    """The message for a call that passed `keyword` by name to a function whose parameters (`own`, the worker's
    word, `declared`) do not take it by name: which parameter, and what to rename where the stub says which one it
    is, or that it comes before `/`."""
    if any(p.name == keyword and p.kind == POSITIONAL_ONLY for p in own):
        return (f"your {function} " + declared(function, own, f"takes `{keyword}` by position only (before `/`)")
                + f"; the checks pass `{keyword}=` by name, as the stub defines it: remove the `/`")
    own_names, stub_names = names(own), names(stub)
    at = stub_names.index(keyword) if keyword in stub_names else None
    instead = own_names[at] if at is not None and at < len(own) and own_names[at] not in stub_names else ""
    advice = f"rename `{instead}` to `{keyword}`" if instead else f"give it the stub's parameters{_listed(stub_names)}"
    return (f"your {function} has no parameter `{keyword}`: the checks pass `{keyword}=` by name, as the stub "
            f"defines it; " + declared(function, own, f"its parameters are {', '.join(own_names) or 'none'}, "
                                                       f"so {advice}"))


def _listed(stub: tuple[str, ...]) -> str:
    return f" ({', '.join(stub)})" if stub else ", their names and order"


def signature_hint(raised, function: str, stub: tuple[Parameter, ...] = ()) -> str:
    """What to do when the call itself did not fit the function's parameters (`Raised.unfit`); a TypeError
    from inside the function, or from a wrapper such as a cache refusing an array, gets nothing. Names and order
    are called wrong only where they differ from the stub's (`stub`, stub_signature)."""
    if not raised.unfit:
        return ""
    own = raised.parameters
    if own is not None and stub and names(own) == names(stub):
        told = _unlike_the_stub(function, own, stub)
        listed = f"its parameters are {', '.join(names(own)) or 'none'}, as the stub names and orders them"
        return "; " + declared(function, own, told or f"the checks call it as the stub defines it; {listed}")
    listed = "" if own is None else declared(function, own, f" (its parameters are {', '.join(names(own)) or 'none'})")
    return f"; the checks call it as the stub defines it{listed}, so keep the stub's parameters, their names and order"


def _unlike_the_stub(function: str, own: tuple[Parameter, ...], stub: tuple[Parameter, ...]) -> str:
    """What a function whose parameters have the stub's names and order takes otherwise than the stub: by keyword
    only (after `*`), or with no default where the stub gives one; "" where neither."""
    keyword_only = [o.name for o, s in zip(own, stub) if o.kind == KEYWORD_ONLY and s.kind != KEYWORD_ONLY]
    no_default = [o.name for o, s in zip(own, stub) if s.default and not o.default]
    told = []
    if keyword_only:
        told.append(f"your {function} takes {_both(keyword_only)} by keyword only (after `*`); the checks pass "
                    f"{_them(keyword_only)} by position, in the stub's order: remove the `*`")
    if no_default:
        told.append(f"your {function} gives {_both(no_default)} no default; the checks leave {_them(no_default)} "
                    f"out where the stub's default is meant: give {_them(no_default)} the stub's default")
    return "; ".join(told)


def _both(parameters: list[str]) -> str:
    """"`allowed` and `scale`"."""
    quoted = [f"`{name}`" for name in parameters]
    return " and ".join([", ".join(quoted[:-1]), quoted[-1]]) if len(quoted) > 1 else quoted[0]


def _them(parameters: list[str]) -> str:
    return "them" if len(parameters) > 1 else "it"
