"""One schema for a result: each field of a result class, its resolved type and what it holds.

A field is declared once, on CheckResult or SubmissionResult (grading.results), with `described`.
The plain JSON (`to_plain`, `from_plain`), the store's columns (grading.store), grades.csv and
results.json (outputs) are all made from `fields_of`, so a new field is one edit and reaches each
of them. Types come from the annotations, resolved (`typing.get_type_hints`), never from their text:
str, int, float, bool, an optional one of these, a tuple of text, and a tuple of results (checks).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from dataclasses import MISSING, dataclass

from autograder.text import valid_utf8

SCALARS = (str, int, float, bool)


def described(doc: str, default=MISSING, *, was: str = ""):
    """A result's field: `doc` says what it holds; `was`, its earlier name, still read from older data."""
    return dataclasses.field(default=default, metadata={"doc": doc, "was": was})


@dataclass(frozen=True)
class Field:
    """One field of a result, as every format sees it."""

    name: str
    doc: str
    type: type  # one of SCALARS, or tuple
    items: type | None  # a tuple's items: str, or a result class (its fields are a table/list of their own)
    optional: bool  # None is a value too
    default: object  # MISSING when the field must be given
    was: str  # the field's earlier name, or ""

    @property
    def nested(self) -> bool:
        """Whether this field holds results of their own (a submission's checks)."""
        return self.items is not None and dataclasses.is_dataclass(self.items)


@functools.cache  # a class's schema never changes, and resolving its annotations costs ~0.5 ms: once per class
def fields_of(kind: type) -> tuple[Field, ...]:
    """The schema of the result class `kind` (or of a subclass with more fields), in declaration order.

    Made once per class: reading a class's stored results asks it for every result and every check.
    """
    hints = typing.get_type_hints(kind)
    return tuple(_field(kind, f, hints[f.name]) for f in dataclasses.fields(kind))


def _field(kind: type, f: dataclasses.Field, hint) -> Field:
    args = typing.get_args(hint)
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args
    if optional:
        rest = [a for a in args if a is not type(None)]
        hint = rest[0] if len(rest) == 1 else hint
    items = None
    if typing.get_origin(hint) is tuple and len(typing.get_args(hint)) == 2 and typing.get_args(hint)[1] is ...:
        hint, items = tuple, typing.get_args(hint)[0]
    if hint not in (*SCALARS, tuple) or items not in (None, str) and not dataclasses.is_dataclass(items):
        raise TypeError(f"{kind.__name__}.{f.name}: the result schema cannot hold {hint!r}; use str, int, float, "
                        "bool, one of them or None, tuple[str, ...] or a tuple of results")
    if "doc" not in f.metadata:
        raise TypeError(f"{kind.__name__}.{f.name} has no description; declare it with schema.described(...)")
    return Field(f.name, f.metadata["doc"], hint, items, optional, f.default, f.metadata.get("was", ""))


def to_plain(result, without: tuple[str, ...] = ()) -> dict:
    """Every field of `result` (but those named in `without`) as JSON-ready plain data, losslessly."""
    data = {}
    for field in fields_of(type(result)):
        if field.name in without:
            continue
        value = getattr(result, field.name)
        if field.nested:
            inner = fields_of(field.items)  # once per tuple, not once per check
            value = [{f.name: _plain(getattr(item, f.name)) for f in inner} for item in value]
        data[field.name] = _plain(value)
    return data


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def from_plain(kind: type, data, where: str = "result"):
    """The `kind` that `to_plain` gave, from data that crossed a process or machine boundary.

    Every field is checked against its type, so whatever arrives is a well-formed result or a
    ValueError naming the first field that is not. A field under its earlier name (`was`) is read;
    a field the data lacks takes its default, or is an error when it has none.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping")
    values = {}
    for field in fields_of(kind):
        name = field.was if field.name not in data and field.was in data else field.name
        if name in data:
            values[field.name] = checked(field, data[name], f"{where}.{field.name}")
        elif field.default is MISSING:
            raise ValueError(f"{where}.{field.name}: missing")
    return kind(**values)


def checked(field: Field, value, where: str):
    """`value` as `field` holds it (tuples from lists), or a ValueError saying what `where` should be."""
    if value is None and field.optional:
        return None
    if field.type is tuple:
        if not isinstance(value, list):
            raise ValueError(f"{where}: expected a list, got {type(value).__name__}")
        if field.nested:
            return tuple(from_plain(field.items, item, f"{where}[{i}]") for i, item in enumerate(value))
        if not all(isinstance(item, field.items) for item in value):
            raise ValueError(f"{where}: expected a list of {field.items.__name__}")
        return tuple(value)
    wanted = (int, float) if field.type is float else field.type
    if isinstance(value, bool) != (field.type is bool) or not isinstance(value, wanted):  # bool is no number here
        raise ValueError(f"{where}: expected {field.type.__name__}{' or None' if field.optional else ''}, "
                         f"got {type(value).__name__}")
    return float(value) if field.type is float else value


# The store's columns (grading.store): one a field, its SQL type from the field's type.
SQL_TYPES = {str: "TEXT", int: "INTEGER", bool: "INTEGER", float: "REAL", tuple: "TEXT"}  # tuple: a JSON list


def column_definition(field: Field) -> str:
    """The column that holds `field`; every one has a default, so a column added to an old table fills its rows."""
    column = f"{field.name} {SQL_TYPES[field.type]}"
    if field.optional:
        return column  # NULL is its default
    default = field.default if field.default is not MISSING else field.type()
    return f"{column} NOT NULL DEFAULT {sql_literal(default)}"


def sql_literal(value) -> str:
    """A default in SQL: the values a field's declaration holds (never anything a student wrote)."""
    if isinstance(value, tuple):
        value = json.dumps(list(value))
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(int(value)) if isinstance(value, bool) else repr(value)


def to_column(field: Field, value):
    value = storable(value)
    return json.dumps(list(value)) if field.type is tuple else value


def from_columns(fields: tuple[Field, ...] | list[Field], values) -> dict:
    """The fields' values from their columns: a JSON list back to a tuple, 0/1 back to a bool."""
    found = {}
    for field, value in zip(fields, values):
        if value is not None and field.type is tuple:
            value = tuple(json.loads(value))
        elif value is not None and field.type is bool:
            value = bool(value)
        found[field.name] = value
    return found


def storable(value):
    """`value` with every string valid UTF-8, which SQLite requires; student text was made so already."""
    if isinstance(value, str):
        return valid_utf8(value)
    if isinstance(value, dict):
        return {key: storable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(storable(item) for item in value)
    return value
