"""One class compared: every student's functions fingerprinted, indexed and scored in pairs.

Parsing and fingerprinting (most of the time) run in `jobs` processes;
they only parse student code, never run it. Indexing and scoring run here.
"""
from __future__ import annotations

import ast
import dataclasses
import itertools
import multiprocessing
import os
import textwrap
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.submission import Submission
from autograder.similarity.code import StudentCode, contract_functions, released_texts, released_tokens, student_code
from autograder.similarity.fingerprint import Fingerprint, fingerprints
from autograder.similarity.index import WHOLE_FLOOR, FunctionIndex, FunctionScore, Pair, build_indexes, score_pairs
from autograder.similarity.wording import Wording, reference_wording

PARALLEL_FROM = 64  # students; below this, starting processes costs more than it saves
CHUNK = 32


@dataclass
class Comparison:
    """The result for one class. prints[f][i]: student i's fingerprints of function f ([] when absent)."""

    assignment: str
    contract: list[str]
    students: list[str]
    codes: list[StudentCode]
    prints: dict[str, list[list[Fingerprint]]]
    indexes: dict[str, FunctionIndex]
    pairs: list[Pair]
    notes: list[str] = field(default_factory=list)
    wording: list[Wording] = field(default_factory=list)  # hand-ins holding the reference solution's own lines


def compare_class(assignment: str, submissions: list[Submission], stub: Path, source_dir: Path,
                  notes: list[str] | None = None, jobs: int = 0, reference: Path | None = None) -> Comparison:
    """Compare every pair of `submissions` function by function (see autograder.similarity.index).

    stub: the assignment's <module>.py, whose functions are the contract; source_dir: what was released
    (its notebooks' non-answer code is down-weighted with the stub's). jobs: processes (0: one per core).
    reference: the reference solution, whose own wording each hand-in is searched for (similarity.wording).
    """
    contract = contract_functions(stub)
    released = {p.hash for tokens in released_tokens(source_dir, stub) for p in fingerprints(tokens)}
    analysed = analyse(sorted(submissions, key=lambda s: s.student), contract, jobs or os.cpu_count() or 1)
    notes = list(notes or []) + [f"{c.student}: {c.note}" for c, _ in analysed if c.note]
    analysed = [(c, p) for c, p in analysed if c.functions]
    codes = [c for c, _ in analysed]
    prints = {f: [p.get(f, []) for _, p in analysed] for f in contract}
    indexes = build_indexes(contract, prints, released)
    students = [c.student for c in codes]
    for number, student in enumerate(students):
        # nothing but what was released: such hand-ins weigh nothing, so they pair with no one; say why
        if not all(p.hash in released for f in contract for p in prints[f][number]):
            continue
        if len(codes[number].functions) == len(contract) and all(
                f.as_released for f in codes[number].functions.values()):
            notes.append(f"{student}: the unchanged stub (every function as released); paired with no one")
        else:  # `pass`, `...`, `raise RuntimeError(...)`: too short to fingerprint, but not the stub
            notes.append(f"{student}: nothing to compare beyond what was released (its functions are left as "
                         "released or too short to compare, such as a lone `pass` or `raise`); paired with no one: "
                         "open the file to see what it holds")
    pairs = score_pairs(students, list(indexes.values()))
    same = identical_groups(codes, prints, contract, released)
    wording = [] if reference is None else reference_wording(
        reference, released_texts(source_dir, stub), {c.student: c.text for c, _ in analysed})
    return Comparison(assignment, contract, students, codes, prints, indexes,
                      with_identical(pairs, same, prints, students, released), notes, wording)


def identical_groups(codes: list[StudentCode], prints: dict[str, list[list[Fingerprint]]], contract: list[str],
                     released: set[int]) -> list[list[str]]:
    """Students whose every function is the same code (copies, however renamed, recommented or respaced), two or
    more to a group. Only hand-ins with as much code of their own as a whole file is weighed from (WHOLE_FLOOR
    fingerprints, about six lines, beyond what was released): the stub with `return A @ V` filled in is what two
    honest students write alike. So are the textbook forms of a few short functions, the rest left as released:
    such hand-ins are one code only if written alike, names and strings too (`_as_written`), not just once
    normalised; whole answers, every function written, are one code once normalised."""
    normalised: dict[tuple, list[tuple[StudentCode, bool]]] = {}
    for number, code in enumerate(codes):
        own = [{p.hash for p in prints[f][number]} - released for f in contract]
        if len(set().union(*own)) >= WHOLE_FLOOR:
            key = tuple(tuple(p.hash for p in prints[f][number]) for f in contract)
            normalised.setdefault(key, []).append((code, all(own)))
    groups: dict[tuple, list[str]] = {}
    for key, alike in normalised.items():  # read as written only where two are alike once normalised
        for code, whole in alike if len(alike) > 1 else ():
            groups.setdefault((key, () if whole else _as_written(code, contract)), []).append(code.student)
    return [group for group in groups.values() if len(group) > 1]


def _as_written(code: StudentCode, contract: list[str]) -> tuple:
    """Each contract function's code as parsed, its names, strings and numbers kept, its comments and spacing not."""
    lines = code.text.split("\n")
    written = []
    for function in contract:
        found = code.functions.get(function)
        for first, last in found.spans if found else ():
            text = textwrap.dedent("\n".join(lines[first - 1:last]))
            try:
                written.append(ast.dump(ast.parse(text)))
            except (SyntaxError, ValueError, RecursionError, MemoryError):  # a span cut from a larger statement
                written.append(" ".join(text.split()))
        written.append("")  # where one function ends
    return tuple(written)


def with_identical(pairs: list[Pair], groups: list[list[str]], prints: dict[str, list[list[Fingerprint]]],
                   students: list[str], released: set[int]) -> list[Pair]:
    """`pairs` with each two of a group of identical hand-ins at 1.0, every function they wrote (beyond the
    released code) listed: down-weighting the code a tenth of the class writes alike (similarity.index) had left
    byte-identical copies of common code at 0.08."""
    number = {student: i for i, student in enumerate(students)}
    copies = sorted((a, b) for group in groups for a, b in itertools.combinations(sorted(group), 2))
    ones = []
    for a, b in copies:  # the same in both: they are one code
        functions = [f for f in prints if {p.hash for p in prints[f][number[a]]} - released]
        ones.append(Pair(a, b, 1.0, tuple(FunctionScore(f, 1.0) for f in functions), {f: 1.0 for f in functions},
                         len(prints[functions[0]][number[a]]), 1.0, same_code=True))
    taken = set(copies)
    return ones + [pair for pair in pairs if (pair.a, pair.b) not in taken]


def analyse(submissions: list[Submission], contract: list[str],
            jobs: int) -> list[tuple[StudentCode, dict[str, list[Fingerprint]]]]:
    """Each submission's code (its tokens dropped once used) and fingerprints per function, in order."""
    if jobs < 2 or len(submissions) < PARALLEL_FROM:
        return [_analyse_one(s, contract) for s in submissions]
    chunks = [submissions[i:i + CHUNK] for i in range(0, len(submissions), CHUNK)]
    # spawn: a fresh interpreter, not a fork of this process and whatever threads it holds
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = pool.map(_analyse_chunk, chunks, [contract] * len(chunks))
        return [item for chunk in done for item in chunk]


def _analyse_chunk(submissions: list[Submission], contract: list[str]):
    return [_analyse_one(s, contract) for s in submissions]


def _analyse_one(submission: Submission, contract: list[str]) -> tuple[StudentCode, dict[str, list[Fingerprint]]]:
    code = student_code(submission, contract)
    prints = {name: fingerprints(list(f.tokens)) for name, f in code.functions.items()}
    functions = {name: dataclasses.replace(f, tokens=(), coded=frozenset(t.line for t in f.tokens))
                 for name, f in code.functions.items()}
    return dataclasses.replace(code, functions=functions), prints
