"""Issue 19: the grader judges what a worker cannot predict, and what a worker is asked never depends on a verdict.

- The T = 512 checks compare the whole answer: a file that computes only
  the entries a fixed-seed sample used to compare, or a strided subset,
  earns nothing there and keeps every other point.
- A submission's graded session gets the same calls whether its answers
  are right or wrong (the file itself records what it was asked), so code
  that changes its answers when it sees a re-run or a shrunk call earns
  exactly what the same code without the trick earns.
- `replay` re-creates what the check saw (the calls of the checks before
  it), shows the stored verdict beside the new one, and flags a difference.
"""
from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from collections.abc import Callable

import numpy as np
import pytest

from autograder.authoring.protocol import Call, Reply
from autograder.grading.plan import Sent, UnplannedCall, recorded
from autograder.grading.reference_cache import CachedReference
from autograder.grading.results import CheckResult
from autograder.grading.submission import read_submission
from autograder.outputs.replay import format_replay

from conftest import PLAIN, SUBMISSIONS, run_cli

ORDER = SUBMISSIONS / "order"
SCALE_CHECKS = {"score.long_sequence", "attention.long_sequence"}


def _file(directory, name: str, *snippets: str):
    """plain.py with the named snippets (tests/fixtures/submissions/...) appended in order."""
    text = PLAIN.read_text() + "".join("\n\n" + (SUBMISSIONS / snippet).read_text() for snippet in snippets)
    path = directory / f"{name}.py"
    path.write_text(text)
    return path


def _points(result) -> dict[str, float]:
    return {test.name: test.score for test in result.tests}


@pytest.mark.parametrize("attack", ["predict_sample", "strided_subset"])
def test_answers_right_only_where_a_sample_might_look_earn_nothing_at_scale(grade, tmp_path, attack):
    result = grade(_file(tmp_path, attack, f"attacks/{attack}.py"))
    by_name = {test.name: test for test in result.tests}
    for name in SCALE_CHECKS:
        assert by_name[name].score == 0 and by_name[name].status == "failed", (name, by_name[name].message)
        assert re.search(r"differs from the expected values at \d+ of \d+ positions", by_name[name].message)
    others = [(t.name, t.message) for t in result.tests if t.name not in SCALE_CHECKS and t.status != "passed"]
    assert others == []  # small inputs are computed whole: only the T = 512 checks are attacked


def test_an_honest_file_keeps_the_scale_checks(grade_once):
    by_name = {test.name: test for test in grade_once(PLAIN).tests}
    assert all(by_name[name].status == "passed" for name in SCALE_CHECKS)


def _calls_seen(result) -> list[str]:
    return [line for line in result.printed.splitlines() if line.startswith("CALL ")]


def test_the_calls_a_session_sees_do_not_depend_on_the_verdicts(grade, tmp_path):
    # One student id for both files: the same seed, so the same inputs.
    right = grade(_file(tmp_path, "right", "order/record_calls.py"), "s0001")
    wrong = grade(_file(tmp_path, "wrong", "order/wrong_softmax.py", "order/record_calls.py"), "s0001")
    assert right.score == right.max_score
    failed = [t for t in wrong.tests if t.status == "failed"]
    assert len(failed) >= 5 and any(t.example and "shrunk_from" in t.example for t in failed)  # it was shrunk...
    seen = _calls_seen(right)
    assert len(seen) >= 50 and "[..." not in right.printed  # every call recorded, nothing cut
    assert _calls_seen(wrong) == seen  # ...but not in the graded session, which got exactly the right file's calls


def test_noticing_a_rerun_earns_nothing(grade_once, tmp_path):
    plain_wrong = grade_once(_file(tmp_path, "wrong", "order/wrong_softmax.py"))
    tricky = grade_once(_file(tmp_path, "tricky", "order/wrong_softmax.py", "order/notice_reruns.py"))
    assert plain_wrong.score < plain_wrong.max_score
    assert _points(tricky) == _points(plain_wrong)
    # Shrinking runs after the points are fixed, in the graded child, where noticing could change an example
    # at most. This trick knows an input by its first three values; the re-runs' smaller inputs begin with
    # other values (the seeded draws fill other shapes), so it takes none of them for a re-run: the example
    # is the plain file's.
    def shrunk(result):
        return {t.name: json.loads(t.example)["sizes"] for t in result.tests
                if t.function == "softmax" and "shrunk_from" in t.example}
    assert shrunk(plain_wrong) and shrunk(tricky) == shrunk(plain_wrong)


ALL_MASKED = {"softmax.all_masked_raises", "softmax.all_masked_anywhere", "attention.all_masked_raises"}


def test_raising_by_the_order_of_calls_earns_no_all_masked_point(grade, grade_once, tmp_path):
    # softmax leaves an all-masked row NaN and raises on a call one entry from the call before it, attention
    # likewise: in a fixed order (the valid neighbour first) that had all five points. The order is each input
    # set's own draw now, so for some students such code raises on the valid neighbour or returns on the
    # all-masked input, and loses the check; and each function's matches_reference asks, right after a masked
    # call, the same call with one more key visible, where such code raises and loses that check for every
    # student. So it scores below the plain NaN softmax, which loses the five points, for every student.
    _assert_below_the_nan_baseline(grade, grade_once, tmp_path, "order/all_masked_by_call_order.py")


def test_raising_on_one_more_hidden_key_earns_no_all_masked_point(grade, grade_once, tmp_path):
    # The same, in one direction only: softmax raises when its input is the previous call's with one entry newly
    # −∞, attention when its mask is the previous call's with one more False (or hides every key). The decoys of
    # one more key visible never raise it, and it kept about half of the error-path points (95 to 99 against the
    # NaN softmax's 95). Each matches_reference now also asks, right after a masked call, the same call with one
    # more key hidden, where it raises and loses that check for every student.
    _assert_below_the_nan_baseline(grade, grade_once, tmp_path, "order/all_masked_by_direction.py")


def test_raising_on_the_error_paths_values_and_dtype_earns_no_all_masked_point(grade, grade_once, tmp_path):
    # softmax raises when its input is the previous call's with one entry that was 0.5 (an error path's neighbour's
    # value) now −∞, attention for float64 inputs whose mask gains one False: the decoys had hidden a random score,
    # and hidden attention's key in float32 only, so it never raised on one and had 96 to 100 for ten students. The
    # decoys are now asked as the error paths ask (0.5, float64, the mask by name and no scale).
    _assert_below_the_nan_baseline(grade, grade_once, tmp_path, "order/all_masked_by_value_and_dtype.py")


def test_raising_where_the_error_paths_change_an_entry_earns_no_all_masked_point(grade, grade_once, tmp_path):
    # softmax raises on a call one entry newly −∞ from the one before it in the row the error path masks whole
    # (n // 2 of every leading axis), attention on a mask with one more False in the first query: the decoys had
    # changed the last visible key of the last row, and it had 95 to 99 for ten students. Their key is now where the
    # error paths put theirs, drawn as they draw it.
    _assert_below_the_nan_baseline(grade, grade_once, tmp_path, "order/all_masked_by_position.py")


def _assert_below_the_nan_baseline(grade, grade_once, tmp_path, snippet: str) -> None:
    """The NaN softmax (buggy/all_masked_nan.py) with `snippet` appended scores below the NaN softmax alone for
    each of six students, loses both decoy checks every time, no check but those and the all-masked ones, and
    each all-masked check for some student."""
    path = _file(tmp_path, "gaming", "buggy/all_masked_nan.py", snippet)
    honest = _file(tmp_path, "nan", "buggy/all_masked_nan.py")
    decoys = {"softmax.matches_reference", "attention.matches_reference"}
    lost = set()
    for student in ("s0001", "s0002", "s0003", "s0004", "s0005", "s0006"):
        result, baseline = grade(path, student), grade_once(honest, student)
        assert [t.name for t in result.tests if t.status != "passed" and t.name not in ALL_MASKED | decoys] == []
        assert {t.name for t in result.tests if t.name in decoys and t.score == 0} == decoys, student
        assert result.score < baseline.score, (student, result.score, baseline.score)
        lost |= {t.name for t in result.tests if t.name in ALL_MASKED and t.score == 0}
    assert lost == ALL_MASKED


def _stored(db, student: str, check: str) -> tuple[str, str]:
    with sqlite3.connect(db) as connection:
        return connection.execute(
            # The instructor's reading (a hidden check's message in full, `withheld`), which `replay` prints.
            "SELECT c.status, COALESCE(NULLIF(c.withheld, ''), c.message) FROM checks c "
            "JOIN submissions s ON s.id = c.submission_id "
            "WHERE s.student = ? AND c.name = ?", (student, check)).fetchone()


def _replayed_here(grade_once, grader, path, check: str) -> tuple[CheckResult, Callable]:
    """The stored result of `check` and `text(stored, full=False)`: `autograder replay`'s text made in this
    process, from the session's grader (Grader.replay) and outputs.replay, for the file graded once."""
    graded = grade_once(path)
    stored = next(test for test in graded.tests if test.name == check)
    replayed = grader.replay(read_submission(path), check)
    return stored, lambda shown, full=False: format_replay(graded.student, check, graded.seed, replayed, shown,
                                                           full=full)


def _assert_the_same_verdict(text: str, student: str, check: str, output: str) -> None:
    lines = text.splitlines()
    assert lines[0].startswith(f"replay of {check} for {student} (seed ") and lines[0].endswith("): failed")
    assert lines[1] == f"verdict: {output}"  # the verdict first, then the stored one
    assert lines[2].startswith("stored: failed, the same verdict: the replay (after the ")
    assert "DIFFERENT" not in text
    assert "expected:" in lines and "got:" in lines and lines.index("expected:") > lines.index("call 1: softmax(arg 0)")


def _assert_flagged(text: str) -> None:
    """A grade the replay does not reproduce (as state kept elsewhere, the clock or chance would give) is flagged."""
    lines = text.splitlines()
    assert lines[2] == "stored: passed"
    assert lines[3].startswith("DIFFERENT FROM THE STORED VERDICT. The replay sent the same calls")


def _assert_fits_a_screen(short: str, full: str) -> None:
    assert len(short.splitlines()) <= 51
    assert short.rstrip().endswith("--full shows every call and every entry)")
    assert short.splitlines()[1].startswith("verdict: ")
    assert len(full.splitlines()) > 3 * len(short.splitlines())
    assert "..." not in full and "call 1: softmax(arg 0)" in full.splitlines()


# One call: in a session of its own softmax.input_unchanged is softmax's first, and right.
WEARS_OUT = "softmax.input_unchanged"
BATCHED = "softmax.matches_reference"  # batched inputs of 210 entries: more than a screen in full


def test_a_replay_reproduces_a_verdict_that_depends_on_the_calls_before_it(grade_once, grader, tmp_path):
    stored, text = _replayed_here(grade_once, grader, _file(tmp_path, "wearing", "order/softmax_wears_out.py"),
                                  WEARS_OUT)
    assert stored.status == "failed"
    # `replay` is the instructor's: a hidden check's message in full (`withheld`)
    _assert_the_same_verdict(text(stored), "wearing", WEARS_OUT, stored.withheld or stored.message)
    _assert_flagged(text(dataclasses.replace(stored, status="passed", message="", withheld="")))


def test_a_replay_fits_a_screen_unless_asked_for_everything(grade_once, grader, tmp_path):
    stored, text = _replayed_here(grade_once, grader, _file(tmp_path, "wrong", "order/wrong_softmax.py"), BATCHED)
    _assert_fits_a_screen(text(stored), text(stored, full=True))


@pytest.mark.slow  # the command line's round trip of the test above (the grade and two replays)
def test_replay_reproduces_a_verdict_that_depends_on_the_calls_before_it(tmp_path):
    path = _file(tmp_path, "wearing", "order/softmax_wears_out.py")
    db = tmp_path / "g.db"
    done = run_cli("grade", "w07_attention", path, "--db", db, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    status, output = _stored(db, "wearing", WEARS_OUT)
    assert status == "failed"

    replay = run_cli("replay", "wearing", WEARS_OUT, "--db", db)
    assert replay.returncode == 0, replay.stderr
    _assert_the_same_verdict(replay.stdout, "wearing", WEARS_OUT, output)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE checks SET status = 'passed', message = '', withheld = '' WHERE name = ?",
                           (WEARS_OUT,))
    _assert_flagged(run_cli("replay", "wearing", WEARS_OUT, "--db", db).stdout)


@pytest.mark.slow  # the command line's round trip of the test above (the grade and two replays)
def test_replay_fits_a_screen_unless_asked_for_everything(tmp_path):
    path = _file(tmp_path, "wrong", "order/wrong_softmax.py")
    db = tmp_path / "g.db"
    assert run_cli("grade", "w07_attention", path, "--db", db, "--jobs", "1").returncode == 0
    short = run_cli("replay", "wrong", BATCHED, "--db", db)
    full = run_cli("replay", "wrong", BATCHED, "--db", db, "--full")
    assert short.returncode == full.returncode == 0, short.stderr + full.stderr
    _assert_fits_a_screen(short.stdout, full.stdout)


def test_a_check_that_asks_outside_its_plan_is_a_fault_of_the_suite():
    S = np.zeros((2, 2))
    planned, sent = [Call("softmax", (S,))], Sent([Reply(value=np.full((2, 2), 0.5))])
    answer = recorded("softmax.branching", planned, sent)
    assert answer(Call("softmax", (S.copy(),))).value[0, 0] == 0.5  # equal arguments: the planned call
    with pytest.raises(UnplannedCall, match="not the call planned for it"):
        answer(Call("softmax", (S,)))  # a second call, which the plan does not hold
    for other in (Call("softmax", (np.ones((2, 2)),)), Call("softmax", (S.astype(np.float32),)),
                  Call("context", (S,)), Call("softmax", (S,), return_inputs=True)):
        with pytest.raises(UnplannedCall):
            recorded("softmax.branching", planned, sent)(other)


def test_the_reference_computes_each_input_once_and_keeps_its_results_safe(suite):
    ref = CachedReference(suite.reference)
    S = np.random.default_rng(0).normal(size=(3, 4))
    first = ref.softmax(S)
    first[:] = 0  # a caller changing what it got
    again = ref.softmax(S.copy())  # another array, the same values
    assert (ref.misses, ref.hits) == (1, 1) and np.allclose(again.sum(axis=-1), 1.0)
    ref.softmax(S.astype(np.float32))
    ref.score(S, S, scale=-0.0)
    ref.score(S, S, scale=0.0)
    assert ref.misses == 4  # another dtype, another function or another argument is another input


def test_the_reference_cache_keys_dicts_by_content_and_counts_the_arrays_they_hold():
    """Issue 23: a reference that takes or returns dicts is cached like one of arrays, within its byte budget."""
    import types

    def totals(counts):
        return {"all": np.full(1000, float(sum(counts.values())))}  # 8 kB

    ref = CachedReference(types.SimpleNamespace(totals=totals), max_bytes=20_000)
    ref.totals({"a": 1, "b": 2})
    ref.totals({"a": 1, "b": 2})
    ref.totals({"b": 2, "a": 1})  # another order is another argument
    assert (ref.misses, ref.hits) == (2, 1)
    for n in range(5):
        ref.totals({"a": n})
    assert sum(size for _, size in ref._kept.values()) <= 20_000



def test_a_replayed_timeout_is_the_same_verdict_whatever_seconds_its_message_counts():
    """A timeout's message counts this run's seconds: replaying one had always said DIFFERENT FROM THE STORED
    VERDICT, and sent the TA looking for global state in an honest slow file. Other messages must still match."""
    from autograder.outputs.replay import _compared

    def differs(now, stored) -> bool:
        return any(line.startswith("DIFFERENT FROM THE STORED VERDICT") for line in _compared(now, stored, True, 3))
    stored = CheckResult("score.long_sequence", "score", "hidden", "timeout", 0.0, 2,
                         "score was stopped: counted 0.10 s of processor time, extended by the 0.03 s it waited")
    later = dataclasses.replace(stored, message=stored.message.replace("0.10", "0.09").replace("0.03", "0.26"))
    assert not differs(later, stored)
    failed = dataclasses.replace(stored, status="failed", message="differs at 3 of 4 positions")
    assert differs(failed, stored)
    assert differs(dataclasses.replace(failed, message="differs at 2 of 4 positions"), failed)
    assert not differs(failed, failed)
