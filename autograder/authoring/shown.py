"""A value a student's function returned, written as text for a message: `shown`, and `int_text` for an int.

Nothing a function returns may be written with repr() or str() alone: Python
refuses to write an int of more than 4,300 digits as text (ValueError), and a
returned 10**100000 must fail its own check with a message, not make the
check itself fail, which the grader blames on the suite. Every place that
writes a returned value (messages, examples, replays) goes through here.
"""
from __future__ import annotations

import math

INT_DIGITS = 4000  # digits of an int written out; below Python's own limit (4,300 by default) whatever it is set to
_INT_BITS = int(INT_DIGITS / math.log10(2))  # an int of at most this many bits has at most INT_DIGITS digits
_EXACT_BITS = 1 << 16  # past this (about 20,000 digits) the count of digits is estimated: counting costs 0.3 s at 2**22
SHOWN = 60  # characters of a value `shown` gives by default


def int_too_long(value: int) -> bool:
    """Whether an int is too long to write out (repr, str, JSON): `int_text` gives it in words."""
    return abs(value).bit_length() > _INT_BITS


def int_text(value: int) -> str:
    """An int as Python writes it; one of more than INT_DIGITS digits in words: "an int of 10,001 digits"."""
    if not int_too_long(value):
        return int.__repr__(int(value))
    bits = abs(value).bit_length()
    digits = int((bits - 1) * math.log10(2)) + 1  # the count, or one less
    if bits > _EXACT_BITS:
        return f"an int of about {digits:,} digits"
    return f"an int of {digits + (abs(value) >= 10 ** digits):,} digits"


def sized(value, count_as=str) -> str:
    """A container's type and length as feedback says them: 'list of 3 items', 'tuple of 1 item'. count_as: how
    the count is written (compare.returned_size marks it as the code's choice)."""
    count = len(value)
    return f"{type(value).__name__} of {count_as(f'{count} item' + 's' * (count != 1))}"


def shown(value, limit: int | None = SHOWN) -> str:
    """repr(value), cut to `limit` characters (ending "..."), for any value at all.

    An int too long to write (see `int_text`) is shown as <an int of 10,001 digits>, inside lists, tuples
    and dicts too; a container is written only as far as `limit` reaches; a repr() that raises is replaced
    by words. The text is not made `safe`: repr() already escapes the control characters of a str.
    """
    text = _repr(value, limit if limit is not None else -1)
    return text if limit is None or len(text) <= limit else text[:max(limit - 3, 0)] + "..."


def _repr(value, room: int) -> str:
    """repr(value), safe for ints of any size; containers stop adding items once past `room` (-1: no limit)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"<{int_text(value)}>" if int_too_long(value) else int_text(value)
    if type(value) in (list, tuple, dict):
        return _repr_items(value, room)
    if isinstance(value, str) and 0 <= room < len(value):
        return repr(value[:room + 1])  # as much as will be shown, and more: the cut still shows
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - a value that cannot be written is shown by its type
        return f"<a {type(value).__name__} that could not be shown>"


def _repr_items(value, room: int) -> str:
    opening, closing = {list: "[]", tuple: "()", dict: "{}"}[type(value)]
    items, used = [], 1
    for item in (dict.items(value) if type(value) is dict else value):
        if 0 <= room < used:
            items.append("...")
            break
        left = room - used if room >= 0 else -1
        text = (f"{_repr(item[0], left)}: {_repr(item[1], left)}" if type(value) is dict
                else _repr(item, left))
        items.append(text)
        used += len(text) + 2
    single = "," if type(value) is tuple and len(value) == 1 else ""
    return opening + ", ".join(items) + single + closing
