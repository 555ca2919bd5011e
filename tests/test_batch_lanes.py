"""Issue 24: the jobs of `grade` take whole input sets, so that each set is planned by one job.

Every student of an input set is sent the calls planned for the set, and each grading process plans a set
the first time it grades one of its students (grading.plan.KeptPlans). grading.batch.Lanes gives each job
whole sets; a job whose own are done takes from the back of the longest lane. Measured in
docs/performance.md (the twenty-sixth pass).
"""
from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from autograder.grading.batch import Lanes
from autograder.grading.found import Found


def _class(sets: list[int]) -> list[Found]:
    return [Found(f"s{number:04d}", Path(f"s{number:04d}.py")) for number in range(len(sets))]


def _set_of(sets: list[int]):
    return lambda item: sets[int(item.student[1:])]


@given(st.lists(st.integers(0, 15), max_size=80), st.integers(1, 4), st.lists(st.integers(0, 3), max_size=200))
def test_every_submission_is_given_once_and_a_job_keeps_to_its_own_sets_while_it_has_any(sets, slots, turns):
    todo = _class(sets)
    lanes = Lanes.of(todo, slots, _set_of(sets))
    own = {item.student: slot for slot, lane in enumerate(lanes.lanes) for item, _ in lane}
    given_out = []
    for turn in [t % slots for t in turns] + [0] * len(todo):  # jobs free in any order, then one takes the rest
        had_own = bool(lanes.lanes[turn])
        work = lanes.take(turn)
        if work is None:
            break
        assert own[work[0].student] == turn or not had_own  # another's only once its own lane is empty
        given_out.append(work[0].student)
    assert sorted(given_out) == [item.student for item in todo]
    assert lanes.take(0) is None


@given(st.lists(st.integers(0, 15), min_size=1, max_size=120), st.integers(2, 4))
def test_the_lanes_hold_whole_sets_in_about_equal_shares(sets, slots):
    lanes = Lanes.of(_class(sets), slots, _set_of(sets))
    lane_of_set: dict[int, set[int]] = {}
    for slot, lane in enumerate(lanes.lanes):
        for item, causes in lane:
            assert causes == []
            lane_of_set.setdefault(sets[int(item.student[1:])], set()).add(slot)
    assert all(len(slots_of_set) == 1 for slots_of_set in lane_of_set.values())
    sizes = [len(lane) for lane in lanes.lanes]
    assert max(sizes) - min(sizes) <= max(sets.count(number) for number in set(sets))


def test_one_job_grades_in_the_order_found_and_work_to_try_again_goes_first():
    sets = [3, 1, 3, 2]
    lanes = Lanes.of(_class(sets), 1, _set_of(sets))
    first = lanes.take(0)
    lanes.again.append((first[0], ["its process died"]))
    assert lanes.take(0) == (first[0], ["its process died"])
    assert [lanes.take(0)[0].student for _ in range(3)] == ["s0001", "s0002", "s0003"]
