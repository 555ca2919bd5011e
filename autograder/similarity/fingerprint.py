"""Fingerprints of a token sequence: winnowed k-gram hashes (Schleimer, Wilkerson and Aiken, 2003; MOSS).

Every run of K consecutive tokens is hashed; of each WINDOW consecutive
hashes the smallest is kept (the rightmost on a tie). Any match of at least
K + WINDOW - 1 tokens shares a fingerprint, and a document keeps about
2 / (WINDOW + 1) of its hashes.

Why by hand: copydetect's winnowing hashes with Python's `hash()`, which is
salted per process, so its fingerprints (and so the report) change from run
to run unless PYTHONHASHSEED is fixed. blake2b is stable across processes
and machines, and the whole algorithm is a dozen lines.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from autograder.similarity.normalise import Token

K = 7  # tokens per k-gram: about one short statement of the pre-order tree
WINDOW = 2


@dataclass(frozen=True)
class Fingerprint:
    hash: int
    first_line: int  # the student's source lines the k-gram spans
    last_line: int


def fingerprints(tokens: list[Token], k: int = K, window: int = WINDOW) -> list[Fingerprint]:
    """The winnowed fingerprints of `tokens`, in order; a sequence shorter than `k` gives one, of all of it."""
    if not tokens:
        return []
    if len(tokens) < k:
        return [Fingerprint(_hash([t.text for t in tokens]), tokens[0].line, tokens[-1].line)]
    texts = [t.text for t in tokens]
    hashes = [_hash(texts[i:i + k]) for i in range(len(tokens) - k + 1)]
    kept: list[Fingerprint] = []
    last = -1
    for start in range(max(1, len(hashes) - window + 1)):
        chunk = hashes[start:start + window]
        smallest = min(chunk)
        position = start + max(i for i, h in enumerate(chunk) if h == smallest)
        if position != last:
            lines = [t.line for t in tokens[position:position + k]]
            kept.append(Fingerprint(smallest, min(lines), max(lines)))
            last = position
    return kept


def _hash(texts: list[str]) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(texts).encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest(), "big")
