"""Where one correct submission's grading time goes: in-process against sandboxed, part by part.

All measured in this run, in one process, on one thread (as a grading job
computes), with the same submission (tests/fixtures/submissions/correct/
plain.py) and the full suite with calibrated limits, and a failing one
(plain.py with tests/fixtures/submissions/buggy/score_missing_scale.py
appended), which costs the grader its shrinking and diagnosis as well, and
the released stub, whose every function raises NotImplementedError: what a
submission costs when its code does nothing (one child, one load, every call):

- in-process: the suite against the file's functions run in this process
  (bench/inprocess.py's peer, one Grader kept across submissions);
- sandboxed: the same through the zygote, split into the grader process's
  processor time and the sandbox's (the zygote and its children, read from
  /proc, so nothing inside the sandbox reports it), with the children's
  page faults;
- the sandbox's fixed parts: a session's open and close around an empty
  file (fork, load, kill, wipe), one round trip of a tiny call, and one
  call of a stream, encoded at each sending and encoded once (as a kept
  plan's calls are sent to each student of an input set).

    python bench/submission_profile.py [--count 60] [--sandbox auto|bwrap|fallback]
"""
from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from dataclasses import astuple, dataclass
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from autograder.authoring.protocol import Call
from autograder.grading.calibration import time_reference
from autograder.grading.course import load_course
from autograder.grading.grader import Grader
from autograder.grading.submission import read_submission
from autograder.grading.suite import load_suite
from autograder.sandbox.inprocess import InProcessSession
from autograder.sandbox.load_report import LoadReport
from autograder.sandbox.protections import probe
from autograder.sandbox.replies import encode_call
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

ROOT = Path(__file__).resolve().parents[1]
PLAIN = ROOT / "tests/fixtures/submissions/correct/plain.py"
FAILING = ROOT / "tests/fixtures/submissions/buggy/score_missing_scale.py"  # fails its score and attention checks
STUB = ROOT / "assignments/w07_attention/attention.py"  # what students are given: every function raises
TICK = os.sysconf("SC_CLK_TCK")
ROUND_TRIPS = 50  # tiny calls per session, to tell one call's cost from the session's


@dataclass(frozen=True)
class Cost:
    """Per-repetition means: wall and processor milliseconds, and the sandbox's children's page faults."""

    wall_ms: float
    grader_cpu_ms: float
    sandbox_cpu_ms: float = 0.0
    child_faults: float = 0.0


def measure(action, count: int, zygote: int = 0) -> Cost:
    """Run `action` `count` times; its mean cost to this process and to the sandbox under `zygote`."""
    sandbox_before = _sandbox_usage(zygote)
    mine_before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    for _ in range(count):
        action()
    wall = time.perf_counter() - started
    mine = resource.getrusage(resource.RUSAGE_SELF)
    sandbox = [after - before for after, before in zip(_sandbox_usage(zygote), sandbox_before)]
    grader_cpu = mine.ru_utime + mine.ru_stime - mine_before.ru_utime - mine_before.ru_stime
    return Cost(wall / count * 1000, grader_cpu / count * 1000, sandbox[0] / count * 1000, sandbox[1] / count)


def _sandbox_usage(zygote: int) -> tuple[float, int]:
    """Processor seconds of the zygote and its reaped children, and the children's minor page faults."""
    if not zygote:
        return 0.0, 0
    with open(f"/proc/{zygote}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # Fields after the command: minflt=7, cminflt=8, utime=11, stime=12, cutime=13, cstime=14 (0-based here).
    return sum(int(f) for f in fields[11:15]) / TICK, int(fields[8])


def _failing_submission():
    """plain.py with the failing snippet appended (a later def overrides), as the tests compose it."""
    folder = Path(tempfile.mkdtemp(prefix="profile-"))
    path = folder / "failing.py"
    path.write_text(PLAIN.read_text() + "\n\n" + FAILING.read_text())
    return read_submission(path)


def _score_calls() -> dict[str, list]:
    """ROUND_TRIPS calls of score on two small arrays, as a Call encoded at each sending and as a Request
    encoded once, which is how a kept plan sends its calls to each student of an input set."""
    pair = (np.ones((4, 8)), np.ones((6, 8)))
    once = encode_call(Call("score", pair))
    return {"encoded at each sending": [Call("score", pair)] * ROUND_TRIPS, "encoded once": [once] * ROUND_TRIPS}


def _streaming(sandbox: Sandbox, spec: dict, suite, calls: list) -> None:
    """One session that streams `calls`, as a submission's planned calls go."""
    with Session(sandbox, spec, suite.assignment.limits) as session:
        session.open()
        session.stream(calls)


def _per_call(with_calls: Cost, lifecycle: Cost) -> Cost:
    """One call's cost: sessions making ROUND_TRIPS calls less the same sessions making none, per call."""
    return Cost(*((a - b) / ROUND_TRIPS for a, b in zip(astuple(with_calls), astuple(lifecycle))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "fallback"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    threadpool_limits(limits=1)
    course = load_course(ROOT / "course.yaml")
    suite = load_suite(course, "w07_attention")
    reference = time_reference(course, suite)
    submission = read_submission(PLAIN)
    spec = submission.worker_spec(suite.assignment.module)

    namespace: dict = {}
    exec(compile(PLAIN.read_text(), str(PLAIN), "exec"), namespace)
    defined = LoadReport(frozenset(name for name, value in namespace.items() if callable(value)))
    local = Grader(course, suite, None, reference)
    local.run_checks(InProcessSession(namespace, suite.assignment.limits), defined, 1)  # warm the shared cases
    inprocess = measure(lambda: local.run_checks(InProcessSession(namespace, suite.assignment.limits), defined, 1),
                        args.count)

    protections = probe(args.sandbox)
    with Sandbox(protections, suite.assignment.preload, warmup=suite.assignment.warmup) as sandbox:
        grader = Grader(course, suite, sandbox, reference)
        grader.grade(submission)  # the zygote's start and the shared cases are not per-submission costs
        zygote = sandbox.zygote_pid()
        sandboxed = measure(lambda: grader.grade(submission), args.count, zygote)
        failing = _failing_submission()
        grader.grade(failing)
        failed = measure(lambda: grader.grade(failing), args.count, zygote)
        stub = read_submission(STUB)
        grader.grade(stub)
        stubbed = measure(lambda: grader.grade(stub), args.count, zygote)

        def session_making(calls: int):
            with Session(sandbox, spec, suite.assignment.limits) as session:
                session.open()
                for _ in range(calls):
                    session.call(Call("causal_mask", (4,)))
        lifecycle = measure(lambda: session_making(0), args.count, zygote)
        with_calls = measure(lambda: session_making(ROUND_TRIPS), args.count, zygote)
        round_trip = _per_call(with_calls, lifecycle)
        streamed = {name: _per_call(measure(lambda calls=calls: _streaming(sandbox, spec, suite, calls), args.count,
                                            zygote), lifecycle)
                    for name, calls in _score_calls().items()}

    calls = sum(max(1, t.calls) for t in reference.values())
    print(f"one correct submission ({PLAIN.name}, {len(suite.checks)} checks, about {calls} calls), "
          f"mean of {args.count}; sandbox: {protections.mode}; milliseconds")
    print(f"in-process:  {inprocess.wall_ms:6.1f} wall")
    print(f"sandboxed:   {sandboxed.wall_ms:6.1f} wall = {sandboxed.wall_ms / inprocess.wall_ms:.2f}x in-process; "
          f"processor: grader {sandboxed.grader_cpu_ms:.1f}, sandbox {sandboxed.sandbox_cpu_ms:.1f} "
          f"(children's page faults: {sandboxed.child_faults:.0f})")
    print(f"a failing submission ({FAILING.name}): {failed.wall_ms:6.1f} wall; processor: grader "
          f"{failed.grader_cpu_ms:.1f}, sandbox {failed.sandbox_cpu_ms:.1f}")
    print(f"the released stub (every function raises): {stubbed.wall_ms:6.1f} wall; processor: grader "
          f"{stubbed.grader_cpu_ms:.1f}, sandbox {stubbed.sandbox_cpu_ms:.1f}")
    print(f"  a session's open + close (fork, load this file, kill, wipe): {lifecycle.wall_ms:5.1f} wall; processor: "
          f"grader {lifecycle.grader_cpu_ms:.1f}, sandbox {lifecycle.sandbox_cpu_ms:.1f} "
          f"(children's page faults {lifecycle.child_faults:.0f})")
    print(f"  one round trip of a tiny call: {round_trip.wall_ms:5.2f} wall; processor: grader "
          f"{round_trip.grader_cpu_ms:.2f}, sandbox {round_trip.sandbox_cpu_ms:.2f}")
    for name, cost in streamed.items():
        print(f"  one streamed call of score on two small arrays, {name}: {cost.wall_ms:5.3f} wall; processor: "
              f"grader {cost.grader_cpu_ms:.3f}, sandbox {cost.sandbox_cpu_ms:.3f}")


if __name__ == "__main__":
    main()
