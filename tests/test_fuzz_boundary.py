"""Issue 10: nothing a worker sends can escape the grader's boundary (property-based).

A real submission in the real sandbox takes over its worker: at load it may
write any bytes on its socket, and it answers every call with the raw bytes
the call hands it. Hypothesis generates those bytes: random bytes, truncated
frames, deep nesting, huge or negative sizes, wrong dtypes and shapes,
invalid UTF-8 and lone surrogates, NaN or infinity where integers belong, dicts with
keys that cannot be keys, values over the limits.
Each must end as a per-check result (a reply) or a per-submission result (a
load), stored in a real SQLite file and shown on a terminal, and never as an
exception out of the grader.

The default run tries a few dozen cases; `pytest -m fuzz_long` runs 20,000.
"""
from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.authoring.checks import Check, Trial
from autograder.authoring.seeds import check_rng
from autograder.grading.attempt import attempt
from autograder.grading.grader import Grader
from autograder.grading.results import STATUSES, CheckResult, SubmissionResult
from autograder.grading.store import Store
from autograder.grading.submission import read_submission
from autograder.grading.suite import SuiteCheck
from autograder.outputs.terminal import format_result
from autograder.sandbox.session import Session

from conftest import PLAIN

pytestmark = pytest.mark.slow  # end-to-end: left out of `make check`
SHORT = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
LONG = settings(max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck))

# Appended to plain.py: the worker's replies become whatever bytes the grader's call carries.
TAKEOVER = '''
import sys as _sys


def _take_over(load_bytes):
    worker = _sys._getframe(3).f_globals  # this function, the file's top level, loader.load, then the worker
    real = worker["wire"]

    class _RawWire:
        def __getattr__(self, name):
            return getattr(real, name)

        def send(self, sock, header, buffers=()):
            if "__raw__" in header:
                sock.sendall(header["__raw__"])
            else:
                real.send(sock, header, buffers)

    def raw_call(request, buffers, namespace):
        return {"__raw__": bytes(worker["values"].decode(request["args"][0], buffers))}, []

    worker["wire"] = _RawWire()
    worker["_call"] = raw_call
    if load_bytes:
        _sys._getframe(2).f_locals["sock"].sendall(load_bytes)


_take_over(LOAD_BYTES)
'''


def _frame(header: bytes, buffers: bytes = b"", declared: int | None = None) -> bytes:
    return struct.pack(">I", len(header) if declared is None else declared) + header + buffers


texts = st.text(alphabet=st.characters(blacklist_categories=()), max_size=40)  # lone surrogates included
numbers = st.one_of(st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True, allow_infinity=True), texts,
                    st.none(), st.booleans())
shapes = st.one_of(st.lists(st.integers(-3, 1 << 40), max_size=40), numbers)
dtypes = st.sampled_from(["<f8", "<f4", "|b1", "<i8", "|O", "<U3", "<M8", ">f8", "V8", "", "x"])


def _trees(depth: int = 0):
    leaf = st.one_of(
        st.fixed_dictionaries({"t": st.just("array"), "dtype": dtypes, "shape": shapes, "buf": numbers}),
        st.fixed_dictionaries({"t": st.just("tensor"), "dtype": dtypes, "shape": shapes, "buf": numbers,
                               "grad_fn": texts, "requires_grad": numbers}),
        st.fixed_dictionaries({"t": st.just("scalar"), "value": numbers}),
        st.fixed_dictionaries({"t": st.just("opaque"), "type": texts, "detail": texts}),
        st.fixed_dictionaries({"t": st.sampled_from(["str", "int"]), "buf": numbers}),
        st.fixed_dictionaries({"t": st.sampled_from(["none", "junk", "", "over"]), "limit": numbers}),
        numbers)
    if depth > 3:
        return leaf
    return st.one_of(leaf, st.fixed_dictionaries({"t": st.sampled_from(["tuple", "list"]),
                                                  "items": st.lists(_trees(depth + 1), max_size=4)}),
                     st.fixed_dictionaries({"t": st.just("dict"), "items": st.lists(
                         st.lists(_trees(depth + 1), min_size=1, max_size=3), max_size=4)}))


headers = st.fixed_dictionaries(
    {"event": st.sampled_from(["reply", "unit", "ready", "x"])},
    optional={"id": numbers, "value": _trees(), "raised": st.one_of(numbers, st.fixed_dictionaries(
        {"type": texts, "message": texts, "line": numbers})),
              "grads": st.one_of(numbers, st.lists(_trees(), max_size=4)),
              "grad_error": numbers, "unsendable": numbers,
              "_buffers": st.one_of(numbers, st.lists(numbers, max_size=4)),
              "functions": st.one_of(numbers, st.lists(texts, max_size=5)), "problems": st.lists(numbers, max_size=3),
              "index": numbers, "label": texts})


@st.composite
def replies(draw) -> bytes:
    """Bytes a hostile worker might send back."""
    kind = draw(st.sampled_from(["raw", "frame", "nested", "truncated", "lying", "bad_utf8"]))
    if kind == "raw":
        return draw(st.binary(max_size=300))
    header = draw(headers)
    if header.get("event") == "reply":
        header["id"] = draw(st.sampled_from([1, header.get("id", 1)]))  # often the id the grader waits for
    body = json.dumps(header, allow_nan=True).encode()
    payload = draw(st.binary(max_size=200))
    if kind == "nested":
        return _frame(b"[" * draw(st.integers(1, 600_000)))
    if kind == "truncated":
        whole = _frame(body, payload)
        return whole[:draw(st.integers(0, len(whole)))]
    if kind == "lying":
        return _frame(body, payload, declared=draw(st.sampled_from([0, 3, len(body) + 5, (1 << 32) - 1])))
    if kind == "bad_utf8":
        cut = draw(st.integers(0, len(body)))
        return _frame(body[:cut] + draw(st.binary(min_size=1, max_size=8)) + body[cut:], payload)
    return _frame(body, payload)


def _softmax_check(payload: np.ndarray) -> SuiteCheck:
    def fuzzed(t):
        """softmax's reply, whatever it is, judged as an answer."""
        from autograder.authoring.compare import expect_close
        expect_close(t.returned("softmax", payload), np.zeros(3), t.tol(np.float64), "softmax(S)")
    return SuiteCheck(Check("softmax.fuzzed", fuzzed), "hidden", 1.0, None)


def _takeover_file(folder: Path, load_bytes: bytes) -> Path:
    path = folder / "fuzzed.py"
    path.write_text(PLAIN.read_text() + f"\n\nLOAD_BYTES = {load_bytes!r}\n" + TAKEOVER)
    return path


def _shown_and_stored(results, store: Store) -> None:
    """What every result must survive: a real SQLite store and a terminal."""
    for result in results:
        store.save(result)
        shown = format_result(result)
        assert all(ch in "\n\t" or ord(ch) >= 32 for ch in shown if not 0x7f <= ord(ch) <= 0x9f)


def _call_reply(grader, folder: Path, data: bytes, store: Store) -> None:
    submission = read_submission(_takeover_file(folder, b""))
    payload = np.frombuffer(data, dtype=np.uint8).copy()
    entry = _softmax_check(payload)
    with Session(grader.sandbox, submission.worker_spec("attention"), grader.suite.assignment.limits) as session:
        assert not session.open().failure
        trial = Trial(name=entry.name, rng=check_rng(0, entry.name), ref=None, call_function=session.call,
                      tolerance=grader.suite.assignment.tolerance)
        tried = attempt(entry, trial)
    assert tried.status in STATUSES
    check = CheckResult(name=entry.name, function="softmax", visibility="hidden", status=tried.status, score=0.0,
                        max_score=1.0, message=tried.message, hint=tried.hint)
    _shown_and_stored([SubmissionResult(student="fuzz", assignment="w07_attention", file="fuzzed.py", sha256="",
                                        suite_version="", seed=0, sandbox="", tests=(check,))], store)


def _load_case(grader, folder: Path, data: bytes, store: Store) -> None:
    result = grader.grade(read_submission(_takeover_file(folder, data)))
    assert result.tests and all(t.status in STATUSES for t in result.tests)
    assert not result.internal_error, result.internal_error
    _shown_and_stored([result], store)


@pytest.fixture(scope="module")
def quick(course, suite, sandbox):
    """The real grader, with one check and short time limits.

    The fuzzed bytes reach the grader at load or in one reply; the rest of the suite would only repeat the
    same fixed reply for every other check. A truncated frame is a hang, and a hang costs its limit, most of
    the long run's time: the worker sends its bytes at once, so 0.2 s is ample for them to arrive.
    """
    limits = dataclasses.replace(suite.assignment.limits, call_seconds=0.2, load_seconds=0.4)
    return Grader(course, dataclasses.replace(suite, checks=suite.checks[:1],
                                              assignment=dataclasses.replace(suite.assignment, limits=limits)),
                  sandbox)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("fuzz") / "fuzz.db") as opened:
        yield opened


@SHORT
@given(data=replies())
def test_any_reply_becomes_a_check_result(quick, tmp_path_factory, store, data):
    _call_reply(quick, tmp_path_factory.mktemp("reply"), data, store)


@SHORT
@given(data=replies())
def test_any_bytes_at_load_become_a_submission_result(quick, tmp_path_factory, store, data):
    _load_case(quick, tmp_path_factory.mktemp("load"), data, store)


@pytest.mark.fuzz_long
@LONG
@given(data=replies())
def test_long_run_any_reply_becomes_a_check_result(quick, tmp_path_factory, store, data):
    _call_reply(quick, tmp_path_factory.mktemp("reply"), data, store)


@pytest.mark.fuzz_long
@LONG
@given(data=replies())
def test_long_run_any_bytes_at_load_become_a_submission_result(quick, tmp_path_factory, store, data):
    _load_case(quick, tmp_path_factory.mktemp("load"), data, store)


def test_the_generator_reaches_every_kind_of_malformation():
    """The strategy reaches NaN, surrogates, deep nesting and lying lengths (so the tests above can fail)."""
    seen = set()

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(data=replies())
    def look(data):
        if b"NaN" in data or b"Infinity" in data:
            seen.add("nan")
        if b"\\ud8" in data or b"\\udc" in data:
            seen.add("surrogate")
        if b"[[[[[[[[" in data:
            seen.add("nested")
        if len(data) >= 4 and struct.unpack(">I", data[:4])[0] != len(data) - 4:
            seen.add("lying or truncated")
    look()
    assert seen == {"nan", "surrogate", "nested", "lying or truncated"}, seen
