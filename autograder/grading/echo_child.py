"""A child that imports the assignment's preload and answers one call: is the sandbox able to run calls?

The environment probe's second step (grading.probe), and the control a result is checked against before a
worker that died on every check the same way is blamed on the environment (grading.grader_faults): if such
a child answers now, the sandbox runs calls, and the deaths were the file's own.
"""
from __future__ import annotations

import numpy as np

from autograder.authoring.protocol import Call, unmarked
from autograder.grading.suite import Suite
from autograder.sandbox.session import Session
from autograder.sandbox.zygote import Sandbox

PROBE_MODULE = "autograder_probe"


def _probe_source(preload: tuple) -> str:
    imports = "".join(f"import {name}\n" for name in preload)
    return (f"import os\n{imports}"
            "def echo(values):\n"
            "    with open('/proc/self/statm') as statm:\n"
            "        pages = int(statm.read().split()[0])\n"
            "    return values, values.dtype.type(pages * os.sysconf('SC_PAGE_SIZE') / 2**20)\n")


def preload_in_child(suite: Suite, sandbox: Sandbox) -> tuple[float | None, str]:
    """(the child's address space in MiB, or None; what went wrong, or "")."""
    limits = suite.assignment.limits
    spec = {"module": PROBE_MODULE, "filename": f"{PROBE_MODULE}.py", "kind": "py", "labels": ["the file"],
            "sources": [_probe_source(suite.assignment.preload)]}
    values = np.arange(4096, dtype=np.float64)
    with Session(sandbox, spec, limits, limits.submission_seconds) as session:
        load = session.open()
        trouble = load.failure or "; ".join(f"{unit}: {unmarked(raised.describe())}" for unit, raised in load.problems)
        if trouble:
            return None, with_output(f"a worker child could not import the preload under the limits ({trouble})",
                                     session)
        try:
            reply = session.call(Call("echo", (values,), seconds=limits.call_seconds))
        except Exception as error:  # noqa: BLE001 - every way this fails is the finding
            return None, with_output(f"a worker child under the limits could not answer a call ({error})", session)
    value = reply.value
    if not (isinstance(value, tuple) and len(value) == 2 and np.array_equal(np.asarray(value[0]), values)):
        return None, "a worker child answered a call wrongly (it did not return the array it was given)"
    return round(float(np.asarray(value[1])), 1), ""


def with_output(problem: str, session: Session) -> str:
    last = last_line(session.output.text())
    return problem + (f"; the worker printed: {last}" if last else "")


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
