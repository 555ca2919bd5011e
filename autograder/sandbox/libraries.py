"""What a zygote imports and runs before its first submission, so that no child pays for it.

Runs in the zygote (sandbox.worker), before any submission exists: the
assignment's preload, which must import; the modules the class's hand-ins
import (grading.class_imports), each tried within a time limit and skipped
when it fails, since a hand-in named it; then the assignment's warm-up.
"""
from __future__ import annotations

import importlib
import os
import random
import signal
import sys
import threading
import time

EACH_IMPORT_SECONDS = 20.0  # one of the class's imports; the longest library imports take a few seconds
# All of them: well within the time the grader waits for a zygote to start (sandbox.zygote.START_SECONDS).
ALL_IMPORTS_SECONDS = 40.0


def import_preload(names: list) -> None:
    """Import the assignment's preload; a failure ends the zygote's start, and the grader says why."""
    for name in names:
        importlib.import_module(name)


def import_if_possible(names: list, seconds: float = EACH_IMPORT_SECONDS,
                       in_all: float = ALL_IMPORTS_SECONDS) -> list[str]:
    """Import each of `names` that imports within `seconds`, and all within `in_all`; the names that did
    not, which are skipped.

    A hand-in named them, so an import may fail, hang or exit: none of that stops the zygote or keeps
    it from starting in time, and a child then imports the module itself (or fails to) as it would have
    without this.
    """
    skipped = []
    previous = signal.getsignal(signal.SIGALRM)
    until = time.monotonic() + in_all
    try:
        for name in names:
            left = min(seconds, until - time.monotonic())
            try:
                if left <= 0:
                    raise TimeoutError("no time left for the class's imports")
                _import_within(name, left)
            except BaseException:  # noqa: BLE001 - whatever the import does, the zygote goes on
                skipped.append(name)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return skipped


def thread_count() -> int:
    """This process's threads, as the kernel counts them (native ones too)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def warm_up(statements: list) -> str:
    """Run the assignment's warm-up (course.yaml `warmup`); "" or what failed.

    What the libraries load on a first call is then in every child. Its namespace (constants) is dropped."""
    namespace: dict = {}
    for number, statement in enumerate(statements):
        try:
            exec(compile(statement, f"warmup[{number}]", "exec"), namespace)
        except BaseException as error:  # noqa: BLE001 - reported to the grader, which says what to fix
            return f"warmup[{number}] ({statement[:200]!r}) raised {type(error).__name__}: {str(error)[:300]}"
    return ""


# Any fixed value: what matters is that every run starts the same.
RANDOM_SEED = 0


def seed_random() -> None:
    """Seed the random generators a submission may draw from without seeding them: Python's, NumPy's global one
    and PyTorch's, in the zygote (Python's in each child too), so that every child starts from the same state in
    every run. String hashes, and so a set's order, are fixed by the zygote's environment (kind.worker_environment).

    A submission that leaves dropout or noise in an answer then gets the same answers, and the same grade, each
    time it is graded: from the zygote's import-time entropy it would differ from run to run, and from job to job.
    Generators the submission makes itself without a seed (`np.random.default_rng()`) still draw from the system.
    """
    random.seed(RANDOM_SEED)
    # Python's own generator is seeded from the system again in every forked child (random.py registers that at
    # import); seeded after it, each child's starts alike too.
    os.register_at_fork(after_in_child=_seed_python)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(RANDOM_SEED)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(RANDOM_SEED)


def keep_threads(torch, threads: int) -> None:
    """Run PyTorch on `threads` threads in every child, whatever a submission asks: the jobs already fill the
    cores, and threads count against the sandbox's process limit, so a call's own torch.set_num_threads(64) had
    started threads past it and timed out, told to look for a loop. PyTorch's own setter stays torch._C's."""
    torch.set_num_threads(threads)
    torch.set_num_threads = _threads_kept


def _threads_kept(count: int) -> None:
    """torch.set_num_threads as graded code sees it: the grader keeps the count (keep_threads)."""


def _seed_python() -> None:
    random.seed(RANDOM_SEED)


def _import_within(name: str, seconds: float) -> None:
    signal.signal(signal.SIGALRM, _too_long)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        importlib.import_module(name)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        # An alarm that came as the import ended is handled here, inside the caller's try (signal.signal
        # runs pending handlers first); from then on one is ignored. None can escape the caller.
        signal.signal(signal.SIGALRM, signal.SIG_IGN)


def _too_long(*_) -> None:
    raise TimeoutError("the import took too long")
