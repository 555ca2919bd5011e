"""The assignment's warm-up (course.yaml `warmup`): what it adds to a zygote's start, what it saves a first call.

Both sandboxes are started in this run, on this machine, with the assignment's preload: one without
the warm-up (the peer), one with it. For each, the zygote's start-up time, then in fresh children the
first call of library functions known to be slow the first time in a process (timed inside the
child, so only the library call is measured), median of `--children` children each.

    python bench/warmup.py [--rounds 3] [--children 5] [--sandbox auto|bwrap|fallback]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from autograder.authoring.protocol import Call
from autograder.grading.course import load_course
from autograder.grading.submission import read_submission
from autograder.sandbox.protections import REQUESTS, probe
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

ROOT = Path(__file__).resolve().parents[1]
FIRST_CALLS = {
    "torch.broadcast_shapes": "torch.broadcast_shapes((2, 1), (1, 3))",
    "torch.einsum": "torch.einsum('bij,bkj->bik', torch.ones(2, 3, 4), torch.ones(2, 3, 4))",
    "Tensor.masked_fill": "torch.ones(3, 3).masked_fill(torch.eye(3, dtype=torch.bool), float('-inf'))",
    "np.random.default_rng": "np.random.default_rng(0).standard_normal(2)",  # NumPy 2 imports numpy.random here
}
SOURCE = "import time\nimport numpy as np\nimport torch\n" + "".join(
    f"\ndef call_{n}(x):\n    started = time.perf_counter()\n    {code}\n"
    "    return np.array(time.perf_counter() - started)\n" for n, code in enumerate(FIRST_CALLS.values()))


def first_calls(sandbox: Sandbox, spec: dict, limits, children: int) -> list[float]:
    """Median over fresh children of each function's first call, in seconds."""
    times = [[] for _ in FIRST_CALLS]
    for _ in range(children):
        with Session(sandbox, spec, limits) as session:
            session.open()
            for n in range(len(FIRST_CALLS)):
                times[n].append(float(session.call(Call(f"call_{n}", (np.zeros(1),))).value))
    return [statistics.median(t) for t in times]


def resident_mib(pid: int) -> float:
    """VmRSS of a process, from /proc (readable although the zygote is not dumpable)."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="zygote starts of each kind, alternating")
    parser.add_argument("--children", type=int, default=5)
    parser.add_argument("--sandbox", default="auto", choices=REQUESTS)
    args = parser.parse_args()
    assignment = load_course(ROOT / "course.yaml").assignment("w07_attention")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "attention.py"
        path.write_text(SOURCE)
        spec = read_submission(path).worker_spec(assignment.module)
    protections = probe(args.sandbox)
    print(f"sandbox: {protections.mode}; preload: {', '.join(assignment.preload)}; "
          f"warm-up: {len(assignment.warmup)} statements")
    starts = {"none": [], "warm-up": []}
    calls, memory = {}, {}
    for _ in range(args.rounds):
        for kind, warmup in (("none", ()), ("warm-up", assignment.warmup)):
            sandbox = Sandbox(protections, assignment.preload, warmup=warmup)
            started = time.perf_counter()
            sandbox.start()
            starts[kind].append(time.perf_counter() - started)
            memory[kind] = resident_mib(sandbox.zygote_pid())
            try:
                calls[kind] = first_calls(sandbox, spec, assignment.limits, args.children)
            finally:
                sandbox.close()
    none, warm = (statistics.median(starts[k]) for k in ("none", "warm-up"))
    print(f"zygote start-up (median of {args.rounds}): without the warm-up {none:.2f} s, with it {warm:.2f} s: "
          f"+{warm - none:.2f} s once per grading job ({warm / none:.2f}x)")
    print(f"zygote resident memory: without {memory['none']:.0f} MiB, with {memory['warm-up']:.0f} MiB "
          "(shared with every child it forks)")
    print(f"first call in a fresh child (median of {args.children}, last round):")
    for n, name in enumerate(FIRST_CALLS):
        cold, warmed = calls["none"][n], calls["warm-up"][n]
        print(f"  {name:<24} without {cold * 1000:8.2f} ms   with {warmed * 1000:8.3f} ms   "
              f"ratio {cold / max(warmed, 1e-9):8.0f}x")


if __name__ == "__main__":
    main()
