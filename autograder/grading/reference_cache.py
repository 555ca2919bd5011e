"""The reference's results, remembered by the content of their arguments.

Each check runs twice per submission in the grader (once against the
reference to fix the session's calls, once to judge the student's replies,
autograder.grading.plan), on the same inputs. `CachedReference` stands in for
the reference module so the second run, and the reference's own answers to
the planned calls, reuse what the first computed instead of doubling the
grader's reference cost. Keys are the function's name and a digest of every
argument's dtype, shape and bytes, so equal inputs hit whatever object holds
them; results come back as copies, so no caller can change what is kept.
Arguments that are not plain data (torch tensors, for autograd) are never cached.
"""
from __future__ import annotations

import copy
import functools
import hashlib
from collections import OrderedDict
from types import ModuleType

import numpy as np

MAX_BYTES = 64 << 20  # results kept, least recently used first out: the T = 512 cases stay, one student's go


class _NotData(Exception):
    """An argument the cache cannot fingerprint; the call is computed, not cached."""


class CachedReference:
    """The reference module's attributes, its functions answering from a bounded cache.

    module: the reference. Attribute access is the module's: `ref.score(Q, K)`
    returns what `module.score(Q, K)` returns (a copy of it on a repeat).
    """

    def __init__(self, module: ModuleType, max_bytes: int = MAX_BYTES):
        self._module = module
        self._max_bytes = max_bytes
        self._kept: OrderedDict = OrderedDict()
        self._bytes = 0
        self._functions: dict = {}
        self.hits = self.misses = 0

    def __getattr__(self, name: str):
        value = getattr(self._module, name)
        if not callable(value) or isinstance(value, type):
            return value
        if name not in self._functions:
            self._functions[name] = self._cached(name, value)
        return self._functions[name]

    def remembered(self, function):
        """`function`, answering from this cache as the reference's functions do (Trial.reused).

        function: depends on its arguments alone; kept by its module and qualified name.
        """
        key = ("remembered", function.__module__, function.__qualname__)
        if key not in self._functions:
            self._functions[key] = self._cached(key, function)
        return self._functions[key]

    def namespace(self) -> dict:
        """The module's public functions, cached: what an in-process worker calls by name."""
        return {name: getattr(self, name) for name in dir(self._module)
                if not name.startswith("_") and callable(getattr(self._module, name))}

    def _cached(self, name, function):
        @functools.wraps(function)  # keeps the signature, which misconceptions bind arguments to
        def call(*args, **kwargs):
            try:
                key = (name, _fingerprint(args), _fingerprint(tuple(sorted(kwargs.items()))))
            except _NotData:
                return function(*args, **kwargs)
            if key in self._kept:
                self._kept.move_to_end(key)
                self.hits += 1
                return copied(self._kept[key][0])
            self.misses += 1
            value = function(*args, **kwargs)
            self._keep(key, value)
            return copied(value)
        return call

    def _keep(self, key, value) -> None:
        size = _nbytes(value)
        if size > self._max_bytes:
            return
        self._kept[key] = (value, size)
        self._bytes += size
        while self._bytes > self._max_bytes:
            _, (_, dropped) = self._kept.popitem(last=False)
            self._bytes -= dropped


def _fingerprint(value):
    """A hashable stand-in for `value` that equal data share; _NotData for anything else."""
    kind = type(value)
    if kind is np.ndarray or isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        if data.dtype.hasobject:
            raise _NotData
        # The C-contiguous array is its bytes in order: hashed as they are (no view; an empty one too).
        return ("array", data.dtype.str, data.shape, hashlib.blake2b(data, digest_size=16).digest())
    if value is None or kind in _PLAIN:
        return (kind.__name__, repr(value))  # repr: -0.0 and 0.0 are different arguments
    if kind is tuple or kind is list:
        return (kind.__name__, tuple([_fingerprint(item) for item in value]))
    if isinstance(value, np.generic):
        return _fingerprint(np.asarray(value))
    if kind is dict:  # in its order: a function may read a dict's order
        return ("dict", tuple([(_fingerprint(key), _fingerprint(item)) for key, item in value.items()]))
    raise _NotData


_PLAIN = frozenset((bool, int, float, str))


def copied(value):
    """copy.deepcopy(value), quicker for what a reference returns: arrays (their layout kept) and tuples
    or lists of them."""
    kind = type(value)
    if kind is np.ndarray and not value.dtype.hasobject:
        return value.copy(order="K")  # what ndarray.__deepcopy__ makes
    if kind is tuple or kind is list:
        return kind([copied(item) for item in value])
    if value is None or kind in _PLAIN:
        return value
    return copy.deepcopy(value)


def _nbytes(value) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(item) for item in value)
    if isinstance(value, dict):
        return sum(_nbytes(key) + _nbytes(item) for key, item in value.items())
    return 64
