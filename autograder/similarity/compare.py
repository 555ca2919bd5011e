"""One class compared: every student's functions fingerprinted, indexed and scored in pairs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.submission import Submission
from autograder.similarity.code import StudentCode, contract_functions, released_tokens, student_code
from autograder.similarity.fingerprint import Fingerprint, fingerprints
from autograder.similarity.index import FunctionIndex, Pair, build_index, score_pairs


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


def compare_class(assignment: str, submissions: list[Submission], stub: Path, source_dir: Path,
                  notes: list[str] | None = None) -> Comparison:
    """Compare every pair of `submissions` function by function (see autograder.similarity.index).

    stub: the assignment's <module>.py, whose functions are the contract; source_dir: what was released
    (its notebooks' non-answer code is down-weighted with the stub's).
    """
    contract = contract_functions(stub)
    released = {p.hash for tokens in released_tokens(source_dir, stub) for p in fingerprints(tokens)}
    codes = [student_code(s, contract) for s in sorted(submissions, key=lambda s: s.student)]
    notes = list(notes or []) + [f"{c.student}: {c.note}" for c in codes if c.note]
    codes = [c for c in codes if c.functions]
    prints = {f: [fingerprints(list(c.functions[f].tokens)) if f in c.functions else [] for c in codes]
              for f in contract}
    indexes = {f: build_index(f, prints[f], released) for f in contract}
    students = [c.student for c in codes]
    pairs = score_pairs(students, list(indexes.values()))
    return Comparison(assignment, contract, students, codes, prints, indexes, pairs, notes)
