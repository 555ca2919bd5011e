"""The seeds of a check's inputs: a student's input set, the class's shared cases, and each check's own stream.

Derived from the course's salt, so a student's inputs are stable across gradings and unpredictable without it.
"""
from __future__ import annotations

import hashlib

import numpy as np

# Sets of randomized inputs per assignment when course.yaml names none: a class of 200 graded with two jobs
# plans each set's checks against the reference once per job, not once per student (README, Grading).
INPUT_SETS = 16


def student_seed(salt: str, assignment: str, student: str, sets: int) -> int:
    """The seed of a student's randomized inputs: that of one of the assignment's `sets` input sets.

    Which set is fixed by the salted id: stable for a student, unpredictable without the salt, and spread
    evenly over the class. Students of one set get the same inputs, so the grader plans (and the reference
    answers) each set's calls once instead of once per student; more sets than students give nearly every
    student inputs of their own.
    """
    picked = _seed(f"{salt}\0{assignment}\0{student}") % sets
    return _seed(f"{salt}\0{assignment}\0\0input set {picked} of {sets}")  # no student id holds a NUL


def class_seed(salt: str, assignment: str) -> int:
    """The seed of the cases every student gets (`Trial.shared`) and of the reference's timing."""
    return _seed(f"{salt}\0{assignment}\0")


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1  # fits SQLite's signed integers


def check_rng(seed: int, check_name: str) -> np.random.Generator:
    """Each check draws from its own stream, so adding a check changes no other input."""
    name_key = int.from_bytes(hashlib.sha256(check_name.encode()).digest()[:4], "big")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(name_key,)))
