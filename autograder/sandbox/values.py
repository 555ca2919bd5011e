"""Values on the wire: what a call's arguments and a function's answer become on their way across.

The plain values a Python function returns travel as themselves: None, bool,
int, float, str, lists, tuples and dicts of them (a subclass, such as a named
tuple, as its base type's items), NumPy arrays of numeric and
bool dtypes, and torch tensors (their values and autograd state, as
`TensorData`); anything else as the name of its type (`Opaque`), never the
object. A value is a tree in the frame's JSON header, its arrays, text and
big integers in the frame's buffers (`sandbox.wire`):

- {"t": "none"}; {"t": "scalar", "value": v}: a bool, an int of 64 bits, a
  finite float, or "nan", "inf", "-inf";
- {"t": "int", "buf": i}: a larger int, in hex (which has no digit limit);
  {"t": "str", "buf": i}: UTF-8, lone surrogates kept;
- {"t": "array" | "tensor", "dtype", "shape", "buf"};
- {"t": "list" | "tuple", "items": [...]}; {"t": "dict", "items": [[key, value], ...]};
- {"t": "opaque", "type", "detail"}; {"t": "over", "limit"}: a value over the limits.

Limits: MAX_ITEMS values in all, MAX_DEPTH of nesting, VALUE_SIZE bytes of
header; the bytes of arrays and text are the frame's limit, which the reader
enforces before reading them. The grader decodes with `decode`, which trusts
nothing: dtypes come from an allow-list, shapes must match the byte counts,
each buffer is read once, counts and depth are capped before anything is
built, and type names are made valid, visible text. A value over a limit is
`ValueTooLarge`, whatever the worker claims.

Runs on both sides of the boundary (shipped to the worker): standard library,
NumPy, `autograder.text` and the protocol's value types only.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

import numpy as np

from autograder.authoring.protocol import RETURNED_MARK, Opaque, TensorData
from autograder.sandbox.wire import HEADER_LIMIT, MAX_TEXT, WireError
from autograder.text import safe

MAX_DIMS = 32
# The dtypes an array may carry across the boundary, by their wire name.
DTYPES = {
    np.dtype(name).str: np.dtype(name)
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
                 "float32", "float64", "longdouble", "complex64", "complex128", "clongdouble")
}
MAX_ITEMS = 10_000  # values in one value, counted all the way down (every container, key and item)
MAX_DEPTH = 32  # lists, tuples and dicts inside each other
VALUE_SIZE = HEADER_LIMIT // 2  # bytes of header one value's description may take (the rest: gradients, errors)
_NODE_SIZE = 48  # the most header bytes one node but an opaque or array takes ('{"t":"scalar","value":-1.2e-300},')
_SMALL_INT = 1 << 63
_HEX = re.compile(r"-?[0-9a-f]+")

LIMITS = {  # a limit's name -> what a value over it is, in words for whoever wrote the function
    "items": f"more than {MAX_ITEMS} items in all (every list, tuple and dict counted with what it holds)",
    "depth": f"lists, tuples or dicts nested more than {MAX_DEPTH} deep",
    "size": f"a description of more than {VALUE_SIZE >> 10} kB (many arrays, or objects with long type names)",
}


class ValueTooLarge(WireError):
    """A value over one of the limits (`limit`, a key of LIMITS); the message says which in words."""

    def __init__(self, limit: str):
        super().__init__(LIMITS[limit])
        self.limit = limit


@dataclass
class Budget:
    """What the values of one message may still take: items, header bytes, and buffers (each read once).

    The reader shares one budget between the values of a message (a reply's value and its gradients), so
    no number of references to one large buffer makes it copy that buffer again.
    """

    items: int = MAX_ITEMS
    size: int = VALUE_SIZE
    taken: set = field(default_factory=set)

    def spend(self, items: int, size: int = 0) -> None:
        self.items -= items
        self.size -= size
        if self.items < 0:
            raise ValueTooLarge("items")
        if self.size < 0:
            raise ValueTooLarge("size")

    def afford(self, count: int) -> None:
        """Refuse a container of `count` items before reading any of them."""
        if count > self.items:
            raise ValueTooLarge("items")


def encode(value, buffers: list) -> dict:
    """Describe `value` as a JSON-able tree, appending array and text bytes to `buffers` (whole: never a sample).

    Plain values travel as themselves: None, bool, int, float, str, lists, tuples and dicts of them (their
    subclasses, a named tuple among them, as plain tuples, lists and dicts, by the items the base type holds;
    keys str, numbers, bool, None or tuples of them), NumPy arrays and scalars
    of numeric and bool dtypes, torch tensors. Anything else travels as the name of its type (Opaque). A
    value over the limits (LIMITS) is described as over them, and read as ValueTooLarge.
    """
    start = len(buffers)
    try:
        return _encode(value, buffers, Budget(), 0)
    except ValueTooLarge as over:
        del buffers[start:]
        return {"t": "over", "limit": over.limit}


def _encode(value, buffers: list, budget: Budget, depth: int) -> dict:
    if depth > MAX_DEPTH:
        raise ValueTooLarge("depth")
    budget.spend(1, _NODE_SIZE)
    kind = type(value)
    if value is None:
        return {"t": "none"}
    if kind in (bool, float) or (kind is int and -_SMALL_INT <= value < _SMALL_INT):
        return {"t": "scalar", "value": value if kind is not float or math.isfinite(value) else repr(value)}
    if kind is int:
        return {"t": "int", "buf": _append(buffers, format(value, "x").encode())}
    if isinstance(value, str):  # a subclass (NumPy's str_ among them) travels as its text
        return {"t": "str", "buf": _append(buffers, str.encode(value, "utf-8", "surrogatepass"))}
    if isinstance(value, (np.ndarray, np.generic)):
        return _encode_array(np.asarray(value), buffers, budget)
    torch = _torch_module()
    if torch is not None and isinstance(value, torch.Tensor):
        try:
            array = value.detach().cpu().resolve_conj().resolve_neg().numpy()
        except TypeError:  # a dtype NumPy has not (bfloat16) or a sparse layout: what the check can say
            strided = value.layout == torch.strided
            return _opaque("torch.Tensor", f"dtype={value.dtype}" if strided else f"layout={value.layout}", budget)
        tree = _encode_array(array, buffers, budget)
        if tree["t"] == "array":
            grad_fn = type(value.grad_fn).__name__ if value.grad_fn is not None else None
            tree.update(t="tensor", requires_grad=bool(value.requires_grad), grad_fn=grad_fn)
        return tree
    if isinstance(value, (tuple, list)):  # a subclass (a named tuple) by its items: it is a tuple or list
        base = tuple if isinstance(value, tuple) else list
        items = base.__len__(value)  # the base type's own length and items: an overridden __iter__ is not asked
        budget.afford(items)
        return {"t": base.__name__, "items": [_encode(item, buffers, budget, depth + 1)
                                              for item in items_of(value)]}
    if isinstance(value, dict):
        pairs = list(dict.items(value))
        budget.afford(2 * len(pairs))
        if not all(_is_key(key) for key, _ in pairs):
            return _opaque(_type_name(value), "a key that is not a str, a number, a bool, None or a tuple of them",
                           budget)
        return {"t": "dict", "items": [[_encode(key, buffers, budget, depth + 1),
                                        _encode(item, buffers, budget, depth + 1)] for key, item in pairs]}
    return _opaque(_type_name(value), "", budget)


def items_of(value: tuple | list) -> list:
    """The items of a tuple or list (or of a subclass of one) as the base type holds them: not what an
    overridden __iter__ or __getitem__ would give."""
    if isinstance(value, tuple):
        return [tuple.__getitem__(value, i) for i in range(tuple.__len__(value))]
    return list(list.__iter__(value))


def mark_returned(value, request: dict, buffers: list) -> None:
    """Fill with RETURNED_MARK each array argument of `request` whose memory a NumPy array of the returned `value`
    (itself, or an item of a returned tuple or list) shares: an argument that was returned itself, or a view of it,
    holds the mark when the grader reads it back from its own memory. The arguments are decoded afresh from
    `buffers` (the grader's shared memory, writeable), so no writeable flag the function set off, on the argument
    or on the array it returned, keeps the mark out. Through ndarray's own methods, so a subclass runs no code."""
    returned = [np.ndarray.view(item, np.ndarray) for item in (items_of(value) if isinstance(value, (tuple, list))
                                                               else [value]) if isinstance(item, np.ndarray)]
    if not returned:
        return
    trees = [*request["args"], *request["kwargs"].values()]
    for argument in (decode(tree, buffers) for tree in trees if isinstance(tree, dict) and tree.get("t") == "array"):
        if any(_shares_memory(argument, array) for array in returned):
            try:
                np.ndarray.fill(argument, RETURNED_MARK)
            except (TypeError, ValueError):  # a dtype the mark does not fit (a string): nothing is marked
                pass


def _shares_memory(argument: np.ndarray, array: np.ndarray) -> bool:
    """Whether `array` shares memory with `argument`; a layout too hard to decide in a few steps counts as shared
    (a view that intricate of anything but an argument's memory is not an answer either)."""
    try:
        return bool(np.shares_memory(argument, array, max_work=1000))
    except np.exceptions.TooHardError:
        return True


def _append(buffers: list, data) -> int:
    buffers.append(data)
    return len(buffers) - 1


def _opaque(type_name: str, detail: str, budget: Budget) -> dict:
    budget.spend(0, len(json.dumps(type_name)) + len(json.dumps(detail)))
    return {"t": "opaque", "type": type_name, "detail": detail}


def _encode_array(array: np.ndarray, buffers: list, budget: Budget) -> dict:
    array = np.asarray(array)  # a subclass travels as its base data
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("="))
    if array.dtype.str not in DTYPES:
        return _opaque("numpy.ndarray", f"dtype={array.dtype}", budget)
    budget.spend(0, 21 * array.ndim)
    buffers.append(np.ascontiguousarray(array).reshape(-1).data.cast("B"))  # flat: an empty 2-d view cannot cast
    return {"t": "array", "dtype": array.dtype.str, "shape": list(array.shape), "buf": len(buffers) - 1}


def decode(tree, buffers: list, budget: Budget | None = None):
    """Rebuild a value from `encode`'s tree, validating every field.

    Raises ValueTooLarge for a value over the limits (or described as over them) and WireError for
    anything else malformed. Arrays come back as base `np.ndarray` (never a subclass), views of the
    received bytes (writable when those are, as a call's arguments in shared memory are); each buffer may
    be used once in a `budget`, which the values of one message share.
    """
    return _decode(tree, buffers, Budget() if budget is None else budget, 0)


def _decode(tree, buffers: list, budget: Budget, depth: int):
    if depth > MAX_DEPTH:
        raise ValueTooLarge("depth")
    budget.spend(1)
    if not isinstance(tree, dict):
        raise WireError("value description is not valid")
    kind = tree.get("t")
    if kind == "none":
        return None
    if kind == "scalar":
        return _decode_scalar(tree.get("value"))
    if kind == "int":
        text = bytes(_take(tree, buffers, budget)).decode("ascii", "replace")
        if not _HEX.fullmatch(text):
            raise WireError("integer is not valid")
        return int(text, 16)
    if kind == "str":
        try:
            return bytes(_take(tree, buffers, budget)).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise WireError("text is not valid UTF-8") from None
    if kind in ("array", "tensor"):
        array = _decode_array(tree, _take(tree, buffers, budget))
        if kind == "tensor":
            grad_fn = tree.get("grad_fn")
            return TensorData(array, tree.get("requires_grad") is True,
                              safe(grad_fn, MAX_TEXT) if grad_fn is not None else None)
        return array
    if kind in ("tuple", "list"):
        values = [_decode(item, buffers, budget, depth + 1) for item in _items(tree, budget, 1)]
        return tuple(values) if kind == "tuple" else values
    if kind == "dict":
        return _decode_dict(_items(tree, budget, 2), buffers, budget, depth)
    if kind == "opaque":
        return Opaque(safe(tree.get("type"), MAX_TEXT), safe(tree.get("detail", ""), MAX_TEXT))
    if kind == "over":
        raise ValueTooLarge(tree.get("limit") if tree.get("limit") in LIMITS else "items")
    raise WireError(f"unknown value kind {safe(kind, 40)!r}")


def _decode_scalar(value):
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if type(value) not in (bool, int, float):
        raise WireError("scalar is not a number")
    return value


def _items(tree: dict, budget: Budget, width: int) -> list:
    """A container's items (pairs for a dict: `width` 2), refused whole when over the budget."""
    items = tree.get("items")
    if not isinstance(items, list) or (width == 2 and not all(isinstance(p, list) and len(p) == 2 for p in items)):
        raise WireError(f"{tree.get('t')} is not valid")
    budget.afford(width * len(items))
    return items


def _decode_dict(pairs: list, buffers: list, budget: Budget, depth: int) -> dict:
    result = {}
    for key_tree, value_tree in pairs:
        key = _decode(key_tree, buffers, budget, depth + 1)
        if not _is_key(key):
            raise WireError("a dict key is not a str, a number, a bool, None or a tuple of them")
        result[key] = _decode(value_tree, buffers, budget, depth + 1)
    if len(result) != len(pairs):
        raise WireError("a dict holds the same key twice")
    return result


def _is_key(value, depth: int = 0) -> bool:
    """Whether a dict key can travel: a str, an int, a float, a bool, None, or a tuple of them."""
    if type(value) is tuple:
        return depth < MAX_DEPTH and all(_is_key(item, depth + 1) for item in value)
    return value is None or type(value) in (bool, int, float) or isinstance(value, str)


def _take(tree: dict, buffers: list, budget: Budget):
    """The buffer a node refers to; each buffer of a message is read once."""
    index = tree.get("buf")
    if type(index) is not int or not 0 <= index < len(buffers):
        raise WireError("value refers to a missing buffer")
    if index in budget.taken:
        raise WireError("value refers to a buffer already read")
    budget.taken.add(index)
    return buffers[index]


def _decode_array(tree: dict, data) -> np.ndarray:
    dtype = DTYPES.get(tree.get("dtype"))
    shape = tree.get("shape")
    if dtype is None:
        raise WireError(f"array dtype {safe(tree.get('dtype'), 40)!r} is not allowed")
    if not _is_shape(shape):
        raise WireError("array shape is not valid")
    if _count(shape) * dtype.itemsize != memoryview(data).nbytes:
        raise WireError("array bytes do not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def _is_shape(shape) -> bool:
    return isinstance(shape, list) and len(shape) <= MAX_DIMS and all(type(n) is int and n >= 0 for n in shape)


def _count(shape: list) -> int:
    """Entries of an array of `shape`, in Python integers: an int64 product could wrap to a small number."""
    count = 1
    for n in shape:
        count *= n
    return count


def _type_name(value) -> str:
    cls = type(value)
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"[:MAX_TEXT]


def _torch_module():
    import sys
    return sys.modules.get("torch")
