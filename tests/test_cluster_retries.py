"""Issue 27: when a timeout on a cluster counts (autograder.cluster.retries), with the clock given by hand.

The driver's side of the rule; tests/test_cluster.py grades a hanging submission on real workers.
"""
from __future__ import annotations

from autograder.cluster.retries import IDLE_SECONDS, MAX_RUNS, SETTLE_SECONDS, WAIT_SECONDS, Retries, Run


def _cluster(now: float = 0.0) -> Retries:
    """Two workers on one machine, both answered at `now`, and one on another machine."""
    retries = Retries()
    retries.warmth.saw({"a": "node1", "b": "node1", "c": "node2"}, now)
    for address in ("a", "b", "c"):
        retries.warmth.answer(address, now)
    return retries


def test_a_first_timeout_never_counts_even_on_a_warm_worker():
    retries = _cluster()
    assert not retries.counts(Run(1, 100.0, ()), "a")


def test_a_second_run_on_a_warm_worker_counts():
    retries = _cluster()
    later = SETTLE_SECONDS + 1
    assert retries.place("s1", ["a", "b", "c"], {"a"}, later) == ("b", "c")  # not where it timed out
    assert retries.counts(Run(2, later, ("b", "c")), "b")


def test_no_worker_is_warm_in_its_first_seconds_so_the_retry_waits():
    retries = _cluster()
    assert retries.place("s1", ["a", "b", "c"], {"a"}, SETTLE_SECONDS / 2) is None


def test_a_worker_joining_makes_its_machine_cold_until_it_has_settled():
    retries = _cluster()
    joined = SETTLE_SECONDS + 5
    retries.warmth.saw({"a": "node1", "b": "node1", "c": "node2", "new": "node1"}, joined)
    assert retries.place("s1", ["a", "b", "c", "new"], {"a"}, joined + 1) == ("c",)  # node1 is starting `new`
    retries.warmth.saw({"a": "node1", "b": "node1", "new": "node1"}, joined + 1)  # c left
    assert retries.place("s1", ["a", "b", "new"], {"a"}, joined + 1) is None
    retries.warmth.answer("new", joined + 20)
    assert not retries.warmth.warm("a", joined + 20 + SETTLE_SECONDS / 2)
    assert retries.warmth.warm("new", joined + 20 + SETTLE_SECONDS)


def test_a_run_during_which_a_worker_joined_its_machine_does_not_count():
    retries = _cluster()
    sent = SETTLE_SECONDS + 1
    run = Run(2, sent, ("a", "b"))
    retries.warmth.saw({"a": "node1", "b": "node1", "c": "node2", "new": "node1"}, sent + 0.5)
    assert not retries.counts(run, "a")  # `new` is still starting
    retries.warmth.answer("new", sent + 1)
    assert not retries.counts(run, "a")  # it started while the run ran
    assert not retries.counts(Run(2, sent, ()), "c")  # sent to any worker, when none was warm


def test_a_worker_that_answers_nothing_or_refuses_stops_counting_as_starting():
    retries = _cluster()
    retries.warmth.saw({"a": "node1", "b": "node1", "c": "node2", "idle": "node1", "broken": "node1"}, 0.0)
    retries.warmth.idle.add("broken")
    assert not retries.warmth.warm("a", IDLE_SECONDS - 1)
    assert retries.warmth.warm("a", IDLE_SECONDS)
    retries.warmth.saw({"a": "node1"}, IDLE_SECONDS)  # the others left: forgotten
    assert retries.warmth.calm_since("node1") == SETTLE_SECONDS


def test_a_cluster_that_never_calms_still_finishes():
    retries = _cluster()
    retries.warmth.saw({"a": "node1", "starting": "node1"}, 1.0)
    assert retries.place("s1", ["a"], {"a"}, 1.0) is None
    retries.warmth.saw({"a": "node1", "starting": "node1", "another": "node1"}, WAIT_SECONDS)
    assert retries.place("s1", ["a"], {"a"}, 1.0 + WAIT_SECONDS) == ()  # any worker, once it has waited
    assert not retries.counts(Run(2, 2.0, ()), "a")
    assert retries.counts(Run(MAX_RUNS, 2.0, ()), "a")


def test_the_only_warm_worker_takes_the_retry_even_where_it_timed_out():
    retries = _cluster()
    assert retries.place("s1", ["a"], {"a"}, SETTLE_SECONDS) == ("a",)
