"""Scoring pairs of students function by function, through an inverted index of fingerprints.

For each function of the contract, an index maps each fingerprint to the
students whose version holds it. A fingerprint's weight falls with the
number of students holding it (document frequency), and is zero for what
the class was given (stub, released notebook) and for idioms shared by
more than COMMON_SHARE of the class: what many write alike is no evidence.
Only students who share a fingerprint are ever paired, so the work grows
with the shared fingerprints, not with the square of the class.

Except for a group: when GROUP_BLOCK or more such common fingerprints are
held by exactly the same students and by no one else, those students share
a block of code (a solution posted online, copied by many) and independent
work does not explain it: students who write an idiom alike are each a
different set of students for each idiom, and an idiom is a few
fingerprints. A group's block keeps the weight of code just under
COMMON_SHARE, so however large the group, its members pair with each other.

A function's score for a pair is the weight they share over the mean
weight of their two versions (a weighted Dice coefficient), the mean never
taken below FLOOR, so that a few lines in common cannot score like a copied
page: FLOOR is about three lines of distinctive code, more than the textbook
form of a short function (a padding mask, an additive score) that two or
three students of a class write alike. The whole file is scored the same way,
the weight the pair shares function by function over the weight of their
whole versions: a copy of the file shares something in every function, each
perhaps too short to stand out alone. A pair's score is the higher of its
best function's and its whole file's: a copy of one substantial function
scores as high as a copy of the whole file.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from autograder.similarity.fingerprint import Fingerprint

COMMON_SHARE = 0.1  # a fingerprint in more than this share of the class (and more than MIN_COMMON students) ...
MIN_COMMON = 4  # ... is a common idiom, weight 0
FLOOR = 16.0  # the least weight a version is counted as having for the pair's score: about three lines
ALIKE_FLOOR = 8.0  # the same, for how alike two versions of one function are (what the report lists)
GROUP_BLOCK = 40  # common fingerprints held by exactly the same students: about eight lines of code
RING_MOST = 16  # students: the largest ring of differently disguised copies looked for (see _rings)
RING_SHARE = 2 / 3  # of the contract's functions, in each of which two of a ring hold RING_EVIDENCE fingerprints alike
RING_EVIDENCE = 3
WHOLE_FLOOR = 32.0
CONTAINED_FLOOR = 16.0  # the least weight of a version found whole inside a longer one (see dice)
MATCHING = 0.5  # a function scoring this or more is listed among the pair's matching functions


@dataclass(frozen=True)
class FunctionScore:
    function: str
    score: float


@dataclass(frozen=True)
class Pair:
    """Two students (a < b) and how alike their code is; `functions` score MATCHING or more, best first.

    score: the higher of their best function's score and `whole`, their whole file's.
    functions, by_function: how alike each function's two versions are, which for a short function
    (weighed from ALIKE_FLOOR) may be more than the pair's score (weighed from FLOOR): two identical
    lines are alike, and little evidence.
    shared: the fingerprints of some weight the two share in their most alike function, `best` (a few for a
    short function: a high score may rest on little code).
    """

    a: str
    b: str
    score: float
    functions: tuple[FunctionScore, ...]
    by_function: dict[str, float]  # every function they share weight in, best first
    shared: int
    whole: float = 0.0
    same_code: bool = False  # the same code throughout (similarity.compare.identical_groups): 1.0 whatever is common

    @property
    def best(self) -> str:
        """Their most alike function."""
        return next(iter(self.by_function))


@dataclass
class FunctionIndex:
    """One function's fingerprints across the class: hash -> weight, and each student's hashes."""

    function: str
    weights: dict[int, float]
    hashes: list[frozenset[int]]  # by student number; empty when the student does not define the function

    def weight(self, student: int) -> float:
        return sum(self.weights[h] for h in self.hashes[student])


def build_indexes(functions: list[str], prints: dict[str, list[list[Fingerprint]]],
                  released: set[int]) -> dict[str, FunctionIndex]:
    """Each function's index: `prints[f][i]` is student i's fingerprints of function f ([] if absent)."""
    hashes = {f: [frozenset(p.hash for p in student) for student in prints[f]] for f in functions}
    n = len(next(iter(hashes.values()), []))
    common = max(MIN_COMMON, COMMON_SHARE * n)
    holders: dict[str, dict[int, list[int]]] = {}
    blocks: dict[tuple[int, ...], int] = {}  # students -> common fingerprints held by exactly them, any function
    for f in functions:
        holders[f] = {}
        for student, held in enumerate(hashes[f]):
            for h in held:
                holders[f].setdefault(h, []).append(student)
        for h, students in holders[f].items():
            if len(students) > common and h not in released:
                blocks[tuple(students)] = blocks.get(tuple(students), 0) + 1
    groups = {students for students, size in blocks.items() if size >= GROUP_BLOCK}
    ring_of = _rings(holders, common, released)
    indexes = {}
    for f in functions:
        weights = {}
        for h, students in holders[f].items():
            if h in released:
                weights[h] = 0.0
            elif len(students) <= common:
                weights[h] = idf(len(students), n)
            elif tuple(students) in groups or _within_one(students, ring_of):
                weights[h] = idf(common, n)
            else:
                weights[h] = 0.0
        indexes[f] = FunctionIndex(f, weights, hashes[f])
    return indexes


def _rings(holders: dict[str, dict[int, list[int]]], common: float, released: set[int]) -> dict[int, int]:
    """Students who copied one source, each disguising it otherwise: student -> ring number.

    Each disguise breaks other fingerprints, so no block of them is held by exactly the same students (a group),
    and where the copies are more than `common`, the fingerprints all of them kept would weigh nothing. But any
    two of them still hold many such fingerprints in common, spread over most of the contract's functions (a ring
    of five copies in 36: 64 to 123, in six to eight functions of nine), where students who write some functions
    the same common way share them in a few functions only (at most four, in a class of 60 written from eight ways
    per function). So two students are linked where they hold GROUP_BLOCK or more such fingerprints, RING_EVIDENCE
    or more in each of RING_SHARE of the functions; and linked students are a ring only where every two of them
    are linked, at most RING_MOST of them: a chain of pairs, each alike in other code, had made one "ring" of 52
    students of 60 and weighed the idioms they share. Only fingerprints held by at most RING_MOST (and twice
    `common`) students count: the pairs within each are counted, and a larger ring in a class where it is also
    over COMMON_SHARE is not told from an idiom."""
    most = min(2 * common, RING_MOST)
    together: dict[tuple[int, int], dict[str, int]] = {}
    for function, by_hash in holders.items():
        for h, students in by_hash.items():
            if common < len(students) <= most and h not in released:
                for pair in itertools.combinations(students, 2):
                    counts = together.setdefault(pair, {})
                    counts[function] = counts.get(function, 0) + 1
    spread = math.ceil(RING_SHARE * len(holders))
    linked = {pair for pair, counts in together.items() if sum(counts.values()) >= GROUP_BLOCK
              and sum(count >= RING_EVIDENCE for count in counts.values()) >= spread}
    ring_of: dict[int, int] = {}
    for a, b in sorted(linked):
        ring_a, ring_b = ring_of.setdefault(a, a), ring_of.setdefault(b, b)
        if ring_a != ring_b:  # one ring now: relabel b's
            ring_of.update({s: ring_a for s, r in ring_of.items() if r == ring_b})
    members: dict[int, list[int]] = {}
    for student, ring in ring_of.items():
        members.setdefault(ring, []).append(student)
    rings = [sorted(m) for m in members.values()
             if len(m) <= RING_MOST and all(pair in linked for pair in itertools.combinations(sorted(m), 2))]
    return {student: ring[0] for ring in rings for student in ring}


def _within_one(students: list[int], ring_of: dict[int, int]) -> bool:
    """Whether every one of `students` is of the same ring."""
    rings = {ring_of.get(s, -1 - s) for s in students}
    return len(rings) == 1


def idf(df: int, n: int) -> float:
    """The weight of a fingerprint held by `df` of `n` students: 1 for one student, falling to 0 for all."""
    return math.log((n + 1) / df) / math.log(n + 1)


def shared_weights(index: FunctionIndex) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, weight shared, fingerprints shared) for every pair of students a < b sharing a weighted fingerprint
    of this function."""
    postings: dict[int, list[int]] = {}
    for student, hashes in enumerate(index.hashes):
        for h in hashes:
            if index.weights[h] > 0:
                postings.setdefault(h, []).append(student)
    keys, values = [], []
    n = len(index.hashes)
    for h in sorted(postings):  # sorted: the sums below add in the same order on every run
        students = np.array(postings[h], dtype=np.int64)
        if len(students) < 2:
            continue
        first, second = np.triu_indices(len(students), 1)
        keys.append(students[first] * n + students[second])
        values.append(np.full(len(first), index.weights[h]))
    if not keys:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), empty
    pairs, where = np.unique(np.concatenate(keys), return_inverse=True)
    shared = np.bincount(where, weights=np.concatenate(values))
    return pairs // n, pairs % n, shared, np.bincount(where)


def score_pairs(students: list[str], indexes: list[FunctionIndex]) -> list[Pair]:
    """Every pair of students sharing weighted code, highest score first (ties by student ids)."""
    n = len(students)
    keys, functions, scores = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    counts, shares, alike = [np.zeros(0, dtype=np.int64)], [np.zeros(0)], [np.zeros(0)]
    whole_totals = np.zeros(n)
    for number, index in enumerate(indexes):
        first, second, shared, count = shared_weights(index)
        total = np.array([index.weight(i) for i in range(n)])
        whole_totals += total
        keys.append(first * n + second)
        counts.append(count)
        shares.append(shared)
        functions.append(np.full(len(first), number))
        scores.append(dice(shared, total[first], total[second]))
        alike.append(dice(shared, total[first], total[second], ALIKE_FLOOR))
    keys, functions, scores = np.concatenate(keys), np.concatenate(functions), np.concatenate(scores)
    counts, alike = np.concatenate(counts), np.concatenate(alike)
    # The whole file: what each pair shares in all its functions, over the weight of both whole versions.
    wholes, where = np.unique(keys, return_inverse=True)
    whole_scores = dice(np.bincount(where, weights=np.concatenate(shares), minlength=len(wholes)),
                        whole_totals[wholes // n], whole_totals[wholes % n], WHOLE_FLOOR)
    whole = dict(zip(wholes.tolist(), whole_scores.tolist()))
    # by pair, then its most alike function first (ties: the one sharing more fingerprints, then contract order)
    order = np.lexsort((functions, -counts, -alike, keys))
    keys, functions, scores = keys[order].tolist(), functions[order].tolist(), scores[order].tolist()
    counts, alike = counts[order].tolist(), alike[order].tolist()
    names = [index.function for index in indexes]
    pairs = []
    start = 0
    while start < len(keys):
        end = start
        while end < len(keys) and keys[end] == keys[start]:
            end += 1
        a, b = divmod(keys[start], n)
        by_function = {names[functions[i]]: alike[i] for i in range(start, end)}
        matching = tuple(FunctionScore(names[functions[i]], alike[i]) for i in range(start, end)
                         if alike[i] >= MATCHING)
        file_score = whole[keys[start]]
        pairs.append(Pair(*sorted((students[a], students[b])), max(*scores[start:end], file_score), matching,
                          by_function, counts[start], file_score))
        start = end
    return sorted(pairs, key=lambda p: (-p.score, p.a, p.b))


def dice(shared: np.ndarray, total_a: np.ndarray, total_b: np.ndarray, floor: float = FLOOR) -> np.ndarray:
    """Scores in [0, 1] (4 decimals) of pairs sharing `shared` weight of versions weighing total_a and total_b:
    over their mean weight (at least FLOOR), or over the smaller one's when that is at least CONTAINED_FLOOR, so
    that junk added to a copy does not dilute it."""
    mean = np.maximum((total_a + total_b) / 2, floor)
    smaller = np.maximum(np.minimum(total_a, total_b), max(floor, CONTAINED_FLOOR))
    return np.minimum(np.round(shared / np.minimum(mean, smaller), 4), 1.0)
