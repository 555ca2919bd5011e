"""Starting the untrusted workers, in the kind of sandbox `protections.probe` chose.

A `Sandbox` is one zygote process serving one grading job, started as its
kind says (`Kind.launch`). Inside bubblewrap it has no network, its own PID
namespace (it is PID 1 there), a private /tmp, a read-only view of the system
and of the Python installation — and no view of the course repository,
solutions/, the results database, other submissions or home directories. In
the fallback the zygote is a plain process with resource limits, an empty
environment and a temporary working directory, and every result says so.

The grader keeps its end of every channel: a control socket to the zygote and, per submission,
two sockets and an output pipe whose far ends it hands to the zygote over SCM_RIGHTS.
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from autograder.sandbox import kernel, processes, wire
from autograder.sandbox.boot import BOOT, worker_sources
from autograder.sandbox.channel import call_pair, stamp_pair
from autograder.sandbox.protections import WORKER_PYTHON, MissingProtections, Protections, SandboxError
from autograder.sandbox.scratch import WIPE_SECONDS, wipe
from autograder.sandbox.uids import UidLease, lease_uid
from autograder.text import safe

START_SECONDS = 120.0


class Sandbox:
    """One zygote process and the submissions it forks, for one grading job.

    preload: modules the zygote imports once (e.g. ("numpy", "torch")).
    warmup: Python statements the zygote runs once after the preload, before
        any submission (course.yaml `warmup`): what those libraries load lazily.
    class_imports: modules it imports too, each if it can (grading.class_imports); dropped if one starts a thread.
    slot: the job's index: where the lease of its worker uid starts when the grader is root (sandbox.uids).
    fresh: start a new zygote for every submission (the slow baseline the zygote is measured against).
    """

    def __init__(self, protections: Protections, preload=("numpy",), slot: int = 0,
                 tmp_mib: int = 256, fresh: bool = False, warmup=(), class_imports=()):
        self.protections = protections
        self.preload, self.class_imports, self.warmup = tuple(preload), tuple(class_imports), tuple(warmup)
        self.slot, self.uid = slot, None  # uid: the worker uid, leased at launch when the grader is root
        self._lease: UidLease | None = None
        self.tmp_mib = tmp_mib
        self.fresh = fresh
        self._process: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._parser: wire.FrameParser | None = None
        self._zygote_pid = 0
        self._scratch: tempfile.TemporaryDirectory | None = None
        self._log = None
        self._started = False  # the zygote said it is ready (launched is `_process is not None`)
        self.processor: int | None = None  # the one processor its zygotes keep to (keep_to), None: any

    # -------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Launch the zygote and wait until it has imported its modules (nothing to do if it runs already)."""
        self.launch()
        if not self._started:
            self._finish_start()

    def launch(self) -> None:
        """Start the zygote without waiting for it: its imports run while this process does other work.

        `start` (or anything that needs the zygote) then waits for it. Call it from a thread that outlives
        the sandbox: the zygote dies with that thread (bubblewrap's --die-with-parent, the zygote's own
        parent-death signal).
        """
        if self._process is not None:
            return
        kind = self.protections.kind
        self._lease = self._lease or (lease_uid(self.slot) if self.protections.separate_user else None)
        self.uid = self._lease.uid if self._lease else None
        if os.geteuid() == 0 and self.uid is None:  # whatever the kind: student code never runs as root
            raise SandboxError(
                f"the {kind.label} sandbox would run student code as root: no other user can run the workers' Python "
                f"({self.protections.python.path}; every folder above it needs o+x, and /root has not). Make "
                f"bubblewrap work here (`autograder doctor` says why it does not), or set ${WORKER_PYTHON} to "
                "the python of an environment other users can read, e.g. one made with /usr/bin/python3 -m venv")
        ours, theirs = socket.socketpair()
        self._log = tempfile.TemporaryFile()
        launch = kind.launch(self.uid, self.tmp_mib, self.protections.python)
        self._scratch = launch.host_folder
        # -s -P, as -I but reading launch.env (all of the zygote's environment): its PYTHON variables count.
        command = launch.command + [self.protections.python.path, "-s", "-P", "-c", BOOT]
        config = {"control_fd": theirs.fileno(), "preload": list(self.preload), "warmup": list(self.warmup),
                  "class_imports": list(self.class_imports), "scratch": launch.scratch, "sweep": launch.sweep,
                  "as_init": self.in_namespace}
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._log,
            env=launch.env, cwd=launch.cwd, start_new_session=True, pass_fds=(theirs.fileno(),), **launch.user)
        theirs.close()
        self._control, self._parser = ours, wire.FrameParser(limit=1 << 20)
        try:
            self._process.stdin.write(json.dumps({"modules": worker_sources(), "config": config}).encode())
            self._process.stdin.close()
        except OSError as error:
            self._failed_start(error)

    def settle(self, seconds: float = START_SECONDS) -> bool:
        """Wait up to `seconds` until a launched zygote has finished starting (or failed to), without taking
        its answer (`start` still reads it); whether it has. True at once for a sandbox not launched.

        For a process that hands the sandbox on (`hand_over`): it may work meanwhile, or want the machine
        quiet first.
        """
        if self._control is None or self._started:
            return True
        with selectors.DefaultSelector() as selector:
            selector.register(self._control, selectors.EVENT_READ)
            return bool(selector.select(seconds))

    def hand_over(self) -> None:
        """In the process that launched this sandbox, once a forked process has taken it over: let go of it.

        This process's ends of the zygote's channels are closed, so the zygote ends when its new owner
        does, however that ends; its process (a child of this one) stays to be reaped by `close`.
        """
        for end in (self._control, self._log):
            if end is not None:
                end.close()
        self._control = self._log = None
        self._release_uid()  # the new owner holds the lock's descriptor too, as long as it lives
        # The pid is the new owner's to kill: once the zygote has gone it may name another process.
        self._zygote_pid = 0

    def keep_to(self, processor: int) -> None:
        """Keep the zygote, and so every child it forks, on `processor` from now on, a zygote started again
        too (grading.batch says why). A placement, not a protection: a child may move itself, and where
        the kernel will not let this process place the zygote, nothing moves."""
        self.processor = processor
        self._place()

    def _place(self) -> None:
        if self.processor is not None and self._started:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(self._zygote_pid, {self.processor})

    def _finish_start(self) -> None:
        try:
            ready = self._expect("ready", START_SECONDS)
        except (OSError, SandboxError) as error:
            self._failed_start(error)
        if ready.get("missing"):
            self.close()
            raise MissingProtections.of(self.protections.kind, ready["missing"])
        if ready.get("warmup_error"):
            self.close()
            raise SandboxError(f"the assignment's warm-up failed in the worker: {safe(ready['warmup_error'], 600)}. "
                               "Fix or remove that statement under the assignment's `warmup` in course.yaml, "
                               "then run again. Nothing was graded.")
        if ready.get("threaded") and self.class_imports:  # forked, a child would lack the thread (worker.py)
            self.close()
            self.class_imports = ()
            return self.start()
        self._zygote_pid = self._find_zygote()
        # Again from outside, before any child: written by root, it is also a floor every child inherits (kernel).
        kernel.kill_order(self._zygote_pid)
        self._started = True
        self._place()

    def _failed_start(self, error: Exception):
        message = self._startup_log()
        self.close()
        raise SandboxError(f"the worker process did not start: {message or error}. "
                           "Run `autograder doctor` to see what this machine supports.") from None

    def close(self) -> None:
        """Kill the zygote and everything under it."""
        if self._process is not None:
            if self._zygote_pid:
                processes.kill_descendants(self._zygote_pid)
            if self._process.returncode is None:
                # Not Popen.kill: in a process this sandbox was handed over to (`hand_over`), Popen cannot wait for
                # it and so takes it for gone. Its pid is still safe to signal: not reaped, it names no other process.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self._process.pid, signal.SIGKILL)
            self._process.wait()
        for end in (self._control, self._log):
            if end is not None:
                end.close()
        if self._scratch is not None:
            # What a submission left may be nested deeper than a recursive delete can go.
            wipe(self._scratch.name)
            self._scratch.cleanup()
        self._release_uid()
        self._process = self._control = self._scratch = self._log = None
        self._zygote_pid = 0
        self._started = False

    def __enter__(self):
        self.start()  # a sandbox that cannot start fails here, before any submission is taken
        return self

    def __exit__(self, *_):
        self.close()

    # -------------------------------------------------------------- per submission

    def spawn(self, limits: dict) -> tuple[socket.socket, int, socket.socket, int]:
        """Fork a fresh child for one submission, under `limits` (see worker._set_limits).

        Returns the grader's ends — a socket for the submission and its calls,
        the read end of the child's stdout/stderr pipe, and the socket the
        child marks the end of each call on (channel.stamp_pair) — and the
        child's pid as the zygote knows it. The submission itself goes over
        the first socket, never through the zygote.
        """
        for attempt in (1, 2):
            self.start()
            (ours, theirs), (stamps, their_stamps) = call_pair(), stamp_pair()
            out_read, out_write = os.pipe()
            try:
                frame = wire.pack({"op": "spawn", "limits": limits}, [])
                socket.send_fds(self._control, [b"".join(frame)], [theirs.fileno(), out_write, their_stamps.fileno()])
                spawned = self._expect("spawned", 30.0)
                if type(spawned.get("pid")) is not int:
                    raise SandboxError("the worker gave no pid for the new child")
                return ours, out_read, stamps, spawned["pid"]
            except (OSError, SandboxError):
                for end in (ours, stamps):
                    end.close()
                os.close(out_read)
                self.close()  # the zygote died (perhaps killed by a submission): start afresh
                if attempt == 2:
                    raise
            finally:
                for end in (theirs, their_stamps):
                    end.close()
                os.close(out_write)
        raise AssertionError("unreachable")

    def stop_others(self, child: int) -> int:
        """Kill every process of the submission except its child `child` (a pid as the zygote knows it).

        For processes the submission's top-level code left running: they are
        the load's doing, and must not be charged to the first function called.
        Returns how many were killed.
        """
        if self._process is None or self.submission_processes() <= 1:
            return 0
        keep = self.host_pid(child)
        return processes.kill_descendants(self._zygote_pid, keep={keep} if keep else set())

    def clean(self, child: int = 0) -> processes.Cleaned:
        """Kill every process the last submission left, reap them, wipe the scratch space.

        child: the submission's own child (its pid as the zygote knows it), which `killed` does not count: it is
        the process the grader started, and one that has just exited by itself is still running for a moment
        (tearing down its memory) after its socket closed. Only the processes found besides it, from outside the
        sandbox, count as left behind. When the scratch space cannot be emptied the sandbox is closed, so the next
        submission starts in a new one; `restarted` says so. `exits` is empty where the zygote did not answer.
        """
        if self._process is None:
            return processes.Cleaned()
        if self.in_namespace and self._zygote_pid:
            # Everything but the zygote (PID 1 of the namespace, which kills the rest) and the child.
            inside = processes.live_pids(f"/proc/{self._zygote_pid}/root/proc")
            killed = sum(pid not in (1, child) for pid in inside)
        else:
            inside = None
            killed = processes.kill_descendants(self._zygote_pid, uncounted={child})
        reply = self._ask_zygote_to_clean()
        exits = _exits(reply)
        if self._process is not None and inside is not None and self.process_count() != 1:
            # The zygote lives inside the sandbox too, so its work is checked from outside. The child's end is in
            # the first reply (it was reaped then): a missing one would read as the sandbox's death (replies).
            processes.kill_descendants(self._zygote_pid)
            reply = self._ask_zygote_to_clean()
            exits |= _exits(reply)
        left = reply.get("left")
        restarted = ""
        if self._process is not None and left != []:
            shown = ", ".join(safe(name, 60) for name in left) if isinstance(left, list) else "unknown files"
            restarted = (f"files this submission left in the scratch space could not be removed ({shown}); the "
                         "sandbox was restarted so that the next submission starts clean")
            self.close()
        if self.fresh:
            self.close()
        return processes.Cleaned(killed, exits, restarted)

    def _ask_zygote_to_clean(self) -> dict:
        try:
            wire.send(self._control, {"op": "clean"})
            return self._expect("clean", 30.0 + WIPE_SECONDS)
        except (OSError, SandboxError):
            self.close()
            return {}

    def readable(self, paths: list[Path]) -> list[str]:
        """Which of `paths` (files and directories, not searched below) a worker of this sandbox could read.

        Asked of the zygote before any submission has run in it, so the answer is the sandbox's own, from the
        worker's uid and view of the file system."""
        self.start()
        wire.send(self._control, {"op": "probe", "paths": [str(p) for p in paths]})
        found = self._expect("probed", 60.0).get("readable")
        return [safe(p) for p in found] if isinstance(found, list) else ["(the worker's answer was not readable)"]

    def process_count(self, known_alive: int = 0) -> int | None:
        """Live processes in the sandbox's PID namespace, zygote included; None outside bubblewrap.

        Read from outside through the zygote's root, so nothing the
        submission does inside can change the answer; cheap enough to ask
        after every call. known_alive: see processes.live_count.
        """
        if not self.in_namespace or not self._zygote_pid:
            return None
        return processes.live_count(f"/proc/{self._zygote_pid}/root/proc", known_alive)

    def child_proc(self, pid: int) -> str | None:
        """The /proc directory, read from outside, of the zygote's child `pid` (as the zygote knows it)."""
        if not self._zygote_pid or not pid:
            return None
        return f"/proc/{self._zygote_pid}/root/proc/{pid}" if self.in_namespace else f"/proc/{pid}"

    def zygote_pid(self) -> int:
        """The zygote's pid as this process sees it (0 before start), for measuring it from /proc."""
        return self._zygote_pid

    def submission_processes(self) -> int:
        """Live processes the current submission is running (its child and anything it started)."""
        if self._process is None:
            return 0
        # The zygote and one child: the child is all the submission runs, even if it has just exited.
        inside = self.process_count(known_alive=2)
        if inside is not None:
            return inside - 1  # the zygote
        return processes.live_descendants(self._zygote_pid)

    # -------------------------------------------------------------- internals

    def _release_uid(self) -> None:
        if self._lease is not None:
            self._lease, lease = None, self._lease
            lease.release()

    @property
    def in_namespace(self) -> bool:
        """Whether the zygote is PID 1 of a PID namespace of its own (its kind's `isolation.pid_namespace`)."""
        return self.protections.kind.isolation.pid_namespace

    def host_pid(self, pid: int) -> int | None:
        """The pid, as this process sees it, of the zygote's child `pid` (a pid in the sandbox's namespace)."""
        if not self.in_namespace:
            return pid
        for host in processes.descendants(self._zygote_pid):
            if processes.namespace_pid(host) == pid:
                return host
        return None

    def _expect(self, event: str, seconds: float) -> dict:
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as selector:
            selector.register(self._control, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise SandboxError(f"the worker did not answer within {seconds:.0f} s")
                data = self._control.recv(1 << 16)
                if not data:
                    raise SandboxError("the worker process exited")
                for header, _ in self._parser.feed(data):
                    if header.get("event") == event:
                        return header

    def _find_zygote(self) -> int:
        """Global pid of the zygote: the process started, or (in a PID namespace) that wrapper's single child.

        A process cannot enter a new PID namespace itself, only its children can: a kind that gives one
        starts a wrapper (bwrap) that forks the zygote."""
        if not self.in_namespace:
            return self._process.pid
        child = processes.only_child(self._process.pid, 10.0)
        if child is None:
            raise SandboxError("could not find the worker process inside bubblewrap")
        return child

    def _startup_log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        lines = self._log.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""


def _exits(reply: dict) -> dict:
    return reply["exits"] if isinstance(reply.get("exits"), dict) else {}
