"""A file whose every function ends the worker process (os._exit) is graded as what it is, the student's code,
never as the grader's fault: graded through the real sandbox."""
from __future__ import annotations

import numpy as np
import pytest

from autograder.authoring.protocol import Call
from autograder.grading.statuses import ERROR
from autograder.grading.submission import read_submission
from autograder.sandbox.limits import Limits
from autograder.sandbox.replies import CallFailed
from autograder.sandbox.session import NOT_RELOADED, Session

from conftest import compose

EXITS = '''
import os as _os
for _name in ["score", "additive_score", "causal_mask", "padding_mask", "apply_mask", "softmax", "context",
              "attention", "attention_torch"]:
    globals()[_name] = lambda *a, **k: _os._exit(1)
'''


def test_every_function_ending_the_process_is_the_students_own_error_not_an_internal_one(grade, tmp_path):
    snippet = tmp_path / "exits.py"
    snippet.write_text(EXITS)
    result = grade(compose(tmp_path, "exits_everywhere", snippet))
    assert not result.internal_error and not result.problem, result.internal_error
    assert {t.status for t in result.tests} == {ERROR}
    assert any("your code ended the process" in note and "a plain file's call in the same sandbox was answered"
               in note for note in result.notes), result.notes


def test_a_file_that_cannot_be_loaded_again_in_the_time_left_fails_its_calls_in_words(sandbox, suite, tmp_path):
    """After a call ends the process, the file is loaded again; a load the budget stops is the calls' failure. The
    reloads' time is given back up to RELOADS_GIVEN_BACK load limits (3 s here), then taken from the budget."""
    path = tmp_path / "slow_to_load.py"
    path.write_text("import os, time\ntime.sleep(0.8)\n\ndef f(x):\n    os._exit(1)\n")
    spec = read_submission(path).worker_spec(suite.assignment.module)
    failures = []
    with Session(sandbox, spec, Limits(call_seconds=1.0, load_seconds=1.0), budget=2.0) as session:
        assert not session.open().failure
        for _ in range(12):  # each call ends the child; each reload takes 0.8 s, given back for the first 3 s
            with pytest.raises(CallFailed) as failed:
                session.call(Call("f", (np.zeros(2),)))
            failures.append(str(failed.value))
            if NOT_RELOADED in failures[-1]:
                break
    assert NOT_RELOADED in failures[-1], failures
