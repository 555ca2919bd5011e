"""The wire: frames over a real socket arrive whole; values come back as sent, within limits, forged ones refused."""
from __future__ import annotations

import json
import math
import re
import socket
import struct
import threading
from collections import Counter, OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.authoring.protocol import Call, Opaque
from autograder.grading.submission import read_submission
from autograder.sandbox import values, wire
from autograder.sandbox.replies import ReplyRejected, read_reply
from autograder.sandbox.session import Session

from conftest import PLAIN

buffers = st.lists(st.binary(max_size=3000), max_size=700)  # more chunks than one gathered write takes


@settings(max_examples=40, deadline=None)
@given(chunks=buffers, big=st.integers(0, 3 << 20))
def test_a_frame_arrives_whole_over_a_socketpair(chunks, big):
    payload = [*chunks, bytes(range(256)) * (big // 256)]  # one buffer larger than the socket's buffer
    ours, theirs = socket.socketpair()
    received = []

    def read():
        parser = wire.FrameParser(1 << 30)
        while not received:
            received.extend(parser.receive(theirs))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        wire.send(ours, {"event": "reply", "id": 7}, payload)
        reader.join(timeout=30)
    finally:
        ours.close()
        theirs.close()
    [(header, got)] = received
    assert header["id"] == 7
    assert [bytes(b) for b in got] == [bytes(b) for b in payload]


@given(sizes=st.lists(st.integers(0, 50), max_size=20), data=st.data())
def test_after_drops_exactly_the_bytes_written(sizes, data):
    views = wire.views_of([bytes([i % 256]) * size for i, size in enumerate(sizes)])
    whole = b"".join(bytes(v) for v in views)
    sent = data.draw(st.integers(0, len(whole)))
    assert b"".join(bytes(v) for v in wire.after(views, sent)) == whole[sent:]


# ---------------------------------------------------------------- values

def _through_a_frame(value):
    """`value` encoded, framed, parsed from the bytes and decoded, as the grader reads a reply."""
    buffers: list = []
    header = {"value": values.encode(value, buffers)}
    [(received, parts)] = wire.FrameParser(1 << 30).feed(b"".join(bytes(c) for c in wire.pack(header, buffers)))
    return values.decode(received["value"], parts)


def _same(got, sent) -> bool:
    """Equal and of the same type all the way down; arrays by dtype, shape and bytes; NaN matches NaN."""
    if isinstance(sent, (np.ndarray, np.generic)):
        sent = np.asarray(sent)
        return (type(got) is np.ndarray and got.dtype == sent.dtype.newbyteorder("=") and got.shape == sent.shape
                and got.tobytes() == sent.astype(got.dtype).tobytes())
    if type(got) is not type(sent) and not (isinstance(sent, str) and type(got) is str):
        return False
    if isinstance(sent, (list, tuple)):
        return len(got) == len(sent) and all(_same(a, b) for a, b in zip(got, sent))
    if isinstance(sent, dict):
        return list(got) == list(sent) and all(_same(got[k], sent[k]) for k in sent)
    if isinstance(sent, float) and math.isnan(sent):
        return math.isnan(got)
    return got == sent and (not isinstance(sent, float) or math.copysign(1, got) == math.copysign(1, sent))


texts = st.text(alphabet=st.characters(blacklist_categories=()), max_size=30)  # lone surrogates included
keys = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), texts),
                    lambda inner: st.tuples(inner, inner), max_leaves=4)
arrays = st.sampled_from(sorted(values.DTYPES)).flatmap(
    lambda dtype: hnp.arrays(np.dtype(dtype), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=1 << 63) | st.integers(
    max_value=-(1 << 63) - 1), st.floats(), texts, arrays,
    arrays.map(lambda a: a.astype(a.dtype.newbyteorder(">"))))  # the other byte order comes back native
plain = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.lists(inner, max_size=5).map(tuple),
    st.dictionaries(keys, inner, max_size=5)), max_leaves=30)


@settings(max_examples=120, deadline=None)
@given(value=plain)
def test_every_plain_value_comes_back_as_it_was_sent(value):
    assert _same(_through_a_frame(value), value)


def test_dict_subclasses_travel_as_dicts_and_other_objects_as_their_type_name():
    assert _through_a_frame(Counter("abca")) == {"a": 2, "b": 1, "c": 1}
    assert type(_through_a_frame(OrderedDict(x=1))) is dict
    assert _through_a_frame(np.str_("np")) == "np"
    assert _through_a_frame(3 + 4j) == Opaque("builtins.complex", "")
    assert _through_a_frame({frozenset(): 1}).detail.startswith("a key that is not")
    assert _through_a_frame(np.array(["a"])) == Opaque("numpy.ndarray", "dtype=<U1")


LONG_NAMED = type("Named" * 50, (), {})  # its type name is most of what its opaque description takes


def test_a_value_at_the_limits_travels_and_one_past_them_is_too_large():
    assert len(_through_a_frame([0] * (values.MAX_ITEMS - 1))) == values.MAX_ITEMS - 1  # the list itself counts
    deep = nested = []
    for _ in range(values.MAX_DEPTH):
        nested.append([])
        nested = nested[0]
    assert _same(_through_a_frame(deep), deep)
    loop: list = []
    loop.append(loop)
    for value, limit in (([0] * values.MAX_ITEMS, "items"), ({i: i for i in range(values.MAX_ITEMS)}, "items"),
                         ([deep], "depth"), (loop, "depth"), ([LONG_NAMED()] * 3000, "size")):
        buffers: list = []
        assert values.encode(value, buffers) == {"t": "over", "limit": limit} and buffers == []
        with pytest.raises(values.ValueTooLarge, match=values.LIMITS[limit].split(" (")[0]):
            _through_a_frame(value)


def test_a_value_too_large_is_rejected_with_a_message_naming_the_function():
    with pytest.raises(ReplyRejected, match=r"^count returned a value too large to grade: more than 10000 items"):
        read_reply({"value": {"t": "over", "limit": "items"}}, [], Call("count"))


FORGED = [  # (tree, buffers): what a hostile worker may claim a value is
    ({"t": "list", "items": [{"t": "none"}] * (values.MAX_ITEMS + 1)}, []),
    ({"t": "over", "limit": "anything"}, []),
    (json.loads('{"t": "list", "items": [' * 40 + "]}" * 40), []),
]
MALFORMED = [
    ({"t": "list", "items": [{"t": "str", "buf": 0}, {"t": "str", "buf": 0}]}, [b"x" * 100]),  # read twice
    ({"t": "dict", "items": [[{"t": "scalar", "value": 1}, {"t": "none"}]] * 2}, []),  # the same key twice
    ({"t": "dict", "items": [[{"t": "list", "items": []}, {"t": "none"}]]}, []),  # a key that is not hashable
    ({"t": "dict", "items": [[{"t": "none"}]]}, []),
    ({"t": "int", "buf": 0}, [b"1_0"]), ({"t": "int", "buf": 0}, [b" 10"]), ({"t": "int", "buf": 0}, [b""]),
    ({"t": "str", "buf": 0}, [b"\xff"]), ({"t": "str", "buf": 1}, [b""]), ({"t": "str", "buf": True}, [b""]),
    ({"t": "scalar", "value": [1]}, []), ({"t": "array", "dtype": "|O", "shape": [1], "buf": 0}, [b"12345678"]),
    ({"t": "array", "dtype": "<f8", "shape": [1 << 62, 1 << 62], "buf": 0}, [b""]), (7, []), ({"t": "?"}, []),
]


@pytest.mark.parametrize("tree, buffers", FORGED)
def test_a_forged_value_over_the_limits_is_too_large(tree, buffers):
    with pytest.raises(values.ValueTooLarge):
        values.decode(tree, buffers)


@pytest.mark.parametrize("tree, buffers", MALFORMED)
def test_a_malformed_value_is_refused(tree, buffers):
    with pytest.raises(wire.WireError) as refused:
        values.decode(tree, buffers)
    assert not isinstance(refused.value, values.ValueTooLarge)


def test_one_budget_reads_each_buffer_of_a_message_once():
    budget, buffers = values.Budget(), [b"x" * 10]
    assert values.decode({"t": "str", "buf": 0}, buffers, budget) == "x" * 10
    with pytest.raises(wire.WireError, match="already read"):
        values.decode({"t": "str", "buf": 0}, buffers, budget)


forged_trees = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), texts,
              st.fixed_dictionaries({"t": st.sampled_from(["none", "scalar", "int", "str", "array", "tensor",
                                                           "opaque", "over", "junk"])},
                                    optional={"value": st.one_of(st.floats(), texts, st.integers()),
                                              "buf": st.integers(-2, 3), "limit": texts,
                                              "dtype": st.sampled_from(sorted(values.DTYPES) + ["|O", "x"]),
                                              "shape": st.lists(st.integers(-1, 1 << 40), max_size=3),
                                              "type": texts, "detail": texts})),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"t": st.sampled_from(["list", "tuple", "dict"]),
                               "items": st.lists(st.one_of(inner, st.lists(inner, max_size=3)), max_size=4)}),
        st.lists(inner, max_size=3)), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(tree=forged_trees, buffers=st.lists(st.binary(max_size=16), max_size=4))
def test_whatever_a_worker_claims_decodes_or_is_refused_as_a_wire_error(tree, buffers):
    try:
        values.decode(tree, buffers)
    except wire.WireError:
        pass


RETURNING = '''

def mixed():
    return {"a": [1, "x\\u00e9", None, 2.5], (1, "k"): (True, 10 ** 30), "f16": np.ones(2, np.float16)}


def many():
    return list(range(10 ** 6))


def deep():
    value = []
    for _ in range(100):
        value = [value]
    return value
'''


def test_a_real_worker_sends_plain_values_and_past_the_limits_they_are_too_large(sandbox, suite, tmp_path):
    path = tmp_path / "returning.py"
    path.write_text(PLAIN.read_text() + RETURNING)
    with Session(sandbox, read_submission(path).worker_spec("attention"), suite.assignment.limits) as session:
        assert not session.open().failure
        got = session.call(Call("mixed")).value
        assert got["a"] == [1, "x\u00e9", None, 2.5] and got[(1, "k")] == (True, 10 ** 30)
        assert got["f16"].dtype == np.float16
        for function, limit in (("many", "items"), ("deep", "depth")):
            with pytest.raises(ReplyRejected, match=f"^{function} returned a value too large to grade: "
                                                    f"{re.escape(values.LIMITS[limit])}"):
                session.call(Call(function))


def test_a_malformed_frame_after_good_ones_comes_after_them():
    """Frames read in one go before a malformed one are returned first; the error comes with the next read:
    in a stream they are earlier calls' replies, and the malformed one must not take them with it."""
    parser = wire.FrameParser(1 << 20)
    good = b"".join(bytes(c) for c in wire.pack({"event": "reply", "id": 1}, [b"abc"]))
    bad = struct.pack(">I", 3) + b"[[["
    frames = parser.feed(good + bad)
    assert [header["id"] for header, _ in frames] == [1] and bytes(frames[0][1][0]) == b"abc"
    with pytest.raises(wire.WireError):
        parser.feed(b"")
