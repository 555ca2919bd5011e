"""The words a check's status can be (CheckResult.status), each with one meaning.

The store keeps these words as they are, so a word is never renamed or given a second meaning:
a new meaning gets a new word. How the sandbox stopped a call is another field
(CheckResult.stopped, the words of sandbox.replies.Stopped); who is to blame is in the meanings.
"""
from __future__ import annotations

PASSED = "passed"
FAILED = "failed"
ERROR = "error"
TIMEOUT = "timeout"
UNGRADED = "ungraded"

MEANINGS = {
    PASSED: "the check passed: its points are earned",
    FAILED: "the file did not pass the check: a wrong answer, or the function it checks is missing or did not load",
    ERROR: "the student's code gave no answer: a call raised an exception, stopped the worker or sent a reply that "
           "could not be trusted",
    TIMEOUT: "a call was stopped at its time limit, or when the submission's time budget ran out",
    UNGRADED: "the check was not run, through no fault the file shows: the grader failed on it, or its worker could "
              "not be started or could not load it (the submission's problem says which); it scores 0 until the "
              "cause is fixed and it is graded again",
}
STATUSES = tuple(MEANINGS)
