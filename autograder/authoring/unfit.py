"""What to tell a student whose function a call did not fit: the parameter it lacks, and what to name it.

The checks may pass options by keyword in the stub's names (`f(x, option=...)`), so a function with
parameters of other names raises TypeError before it runs. The worker says so (`Raised.unfit`) and reads the
function's parameters; they are text the code could have chosen while it ran, so they go into a message `declared`,
shown in a hidden check only where the submission's text defines the function with just those parameters.
"""
from __future__ import annotations

import inspect

from autograder.authoring.protocol import declared


def stub_parameters(ref, function: str, parameters: dict | None = None) -> tuple[str, ...]:
    """`function`'s parameters as the stub defines them: the reference's where it has the function, else the
    released manifest's (`parameters`, Trial.parameters); () where neither has it."""
    target = getattr(ref, function, None)
    try:
        names = tuple(inspect.signature(target).parameters) if callable(target) else ()
    except (TypeError, ValueError):
        names = ()
    return names or tuple((parameters or {}).get(function, ()))


def missing_keyword(function: str, keyword: str, own: tuple[str, ...], stub: tuple[str, ...]) -> str:
    """The message for a call that passed `keyword` by name to a function whose parameters (`own`, the worker's
    word, `declared`) lack it: which parameter, and what to rename where the stub says which one it is."""
    at = stub.index(keyword) if keyword in stub else None
    instead = own[at] if at is not None and at < len(own) and own[at] not in stub else ""
    advice = f"rename `{instead}` to `{keyword}`" if instead else f"give it the stub's parameters{_listed(stub)}"
    return (f"your {function} has no parameter `{keyword}`: the checks pass `{keyword}=` by name, as the stub "
            f"defines it; " + declared(function, own, f"its parameters are {', '.join(own) or 'none'}, so {advice}"))


def _listed(stub: tuple[str, ...]) -> str:
    return f" ({', '.join(stub)})" if stub else ", their names and order"


def signature_hint(raised, function: str) -> str:
    """What to do when the call itself did not fit the function's parameters (`Raised.unfit`); a TypeError
    from inside the function, or from a wrapper such as a cache refusing an array, gets nothing."""
    if not raised.unfit:
        return ""
    own = "" if raised.parameters is None else declared(
        function, raised.parameters, f" (its parameters are {', '.join(raised.parameters) or 'none'})")
    return f"; the checks call it as the stub defines it{own}, so keep the stub's parameters, their names and order"
