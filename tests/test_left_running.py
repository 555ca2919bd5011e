"""Processes a call leaves running are found after every call, through the real sandbox.

After each reply the session first asks three small /proc files whether the child is alone in the
sandbox's PID namespace (processes.alone), and counts every process there only when it is not. Each way a
call can leave a process behind must still be found: a child of its own, an orphan handed to the zygote,
a process forked by a thread that stays, and one forked by a thread that has ended.
"""
from __future__ import annotations

import numpy as np
import pytest

from autograder.authoring.protocol import Call
from autograder.sandbox import processes
from autograder.sandbox.limits import Limits
from autograder.sandbox.replies import Stopped, WorkerDied
from autograder.sandbox.session import Session

from conftest import module_spec

X = np.zeros(2)
FUNCTIONS = '''
import os, threading, time


def _linger():
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)


def plain(x):
    return x


def child_lingers(x):
    _linger()
    return x


def orphan_lingers(x):
    first = os.fork()
    if first == 0:
        _linger()
        os._exit(0)
    os.waitpid(first, 0)
    return x


def thread_forks_and_stays(x):
    forked = threading.Event()

    def run():
        _linger()
        forked.set()
        time.sleep(60)
    threading.Thread(target=run, daemon=True).start()
    forked.wait()
    return x


def thread_forks_and_ends(x):
    helper = threading.Thread(target=_linger)
    helper.start()
    helper.join()
    return x
'''


@pytest.fixture
def spec(tmp_path):
    return module_spec(tmp_path, FUNCTIONS)


def _alone(sandbox, child: int) -> bool:
    """processes.alone on the files as the session reads them, opened afresh."""
    zygote, proc = sandbox.child_proc(1), sandbox.child_proc(child)
    return processes.alone(processes.read_proc(f"{zygote}/task/1/children"), child,
                           processes.read_proc(f"{proc}/stat"),
                           processes.read_proc(f"{proc}/task/{child}/children"))


def test_a_child_alone_is_seen_alone(sandbox, spec):
    if not sandbox.protections.kind.isolation.pid_namespace:
        pytest.skip("the cheap answer needs the sandbox's own PID namespace (bubblewrap)")
    with Session(sandbox, spec, Limits(call_seconds=2.0)) as session:
        assert not session.open().failure
        assert session.call(Call("plain", (X,))).value.tolist() == X.tolist()
        assert _alone(sandbox, session._pid)
        assert session.extra_processes() == 0 == sandbox.submission_processes() - 1


@pytest.mark.parametrize("function", ["child_lingers", "orphan_lingers", "thread_forks_and_stays",
                                      "thread_forks_and_ends"])
def test_a_process_left_running_is_found_however_it_was_started(sandbox, spec, function):
    with Session(sandbox, spec, Limits(call_seconds=2.0)) as session:
        assert not session.open().failure
        session.call(Call("plain", (X,)))
        with pytest.raises(WorkerDied, match="left 1 process running after it returned") as stopped:
            session.call(Call(function, (X,)))
        # Nothing crashed: a TA's summary names it by the processes left, not as a crash (results.flags).
        assert stopped.value.how is Stopped.LEFT_RUNNING
