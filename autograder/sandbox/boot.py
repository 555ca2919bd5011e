"""What a fresh interpreter runs to become a zygote: the worker's own modules, and nothing else of the grader.

Every module listed here is shipped to the worker as source text (`worker_sources`), so each imports
only the standard library, NumPy and the modules before it in `WORKER_MODULES`.
"""
from __future__ import annotations

from pathlib import Path

# The modules the worker runs, in import order (each imports only the ones before it).
WORKER_MODULES = ("text", "authoring.protocol", "sandbox.kernel", "sandbox.seccomp", "sandbox.scratch", "sandbox.wire",
                  "sandbox.values", "sandbox.region", "sandbox.notebook_modules", "sandbox.kept_state",
                  "sandbox.kept_names",
                  "sandbox.loader", "sandbox.libraries", "sandbox.stopped_at", "sandbox.tensors", "sandbox.worker")

# Runs in a fresh interpreter: read the worker's modules from stdin (their packages empty, so nothing
# else of the grader can be imported there) and start the zygote.
BOOT = """\
import json, sys, types
blob = json.loads(sys.stdin.buffer.read())
for name, source in blob["modules"]:
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        here = ".".join(parts[:depth])
        if here not in sys.modules:
            sys.modules[here] = types.ModuleType(here)
            sys.modules[here].__path__ = []
            if depth > 1:
                setattr(sys.modules[".".join(parts[:depth - 1])], parts[depth - 1], sys.modules[here])
    exec(compile(source, name, "exec"), sys.modules[name].__dict__)
sys.modules["autograder.sandbox.worker"].zygote_main(blob["config"])
"""


def worker_sources() -> list[tuple[str, str]]:
    """(module name, its source) of every module in WORKER_MODULES, in order."""
    package = Path(__file__).resolve().parents[1]
    return [(f"autograder.{name}", (package / f"{name.replace('.', '/')}.py").read_text()) for name in WORKER_MODULES]
