"""The untrusted side: a zygote that forks one child per submission.

This file never runs in the grader's process. The grader sends its source
(with `text`, `seccomp`, `wire` and `region`) over a pipe to a fresh interpreter
inside the sandbox, so the worker needs no view of the course repository.
The zygote imports NumPy and PyTorch once; each submission runs in a fresh
fork of it, so no submission pays the import.

Nothing one submission does may reach another, so:
- the zygote never holds a submission's code or data: it forks a child,
  and the child then receives the submission over its own socket;
- the zygote and its children are not dumpable and every child runs under a
  seccomp filter (autograder.sandbox.seccomp), so no child can read or write the
  memory of the zygote, from which every later child is forked;
- each child works in a fresh directory with a random 128-bit name, which
  no earlier submission can have made, and between submissions the zygote
  removes everything in the scratch space and says what it could not;
- a child closes every descriptor it inherited but its own socket and
  output before any student code runs, so none can speak for the zygote.

A child loads the student's code unit by unit (top-level statements of a
.py file, code cells of a notebook), then answers calls "run function F on
these arrays" until the grader closes its socket. The arrays of a call live
in shared memory the grader owns, which is how the grader sees whether a
function changed its arguments. Everything here can be tampered with by the
student's code, which is why the grader validates every reply and decides
nothing on the worker's word.
"""
from __future__ import annotations

import _thread
import gc
import os
import resource
import signal
import socket
import sys
import traceback

from autograder.sandbox import kernel, libraries, loader, region, seccomp, stopped_at, tensors, values, wire
from autograder.sandbox.scratch import fresh_directory, readable, wipe

CONTROL_LIMIT = 1 << 20  # bytes of buffers in one message from the grader to the zygote
SOURCE_LIMIT = 256 << 20  # a submission's code (the grader reads at most 50 MB of a file)
CALL_LIMIT = 1 << 30  # a call's buffers travel in shared memory; this caps what comes inline
MAX_FDS = 4  # file descriptors one message may carry
SANDBOX_USER = "student"  # $USER and $LOGNAME of a submission's processes
PENDING_SIGNALS = 256  # RLIMIT_SIGPENDING of every child: queued signals and POSIX timers, per worker uid
# Sessions served before the zygote moves its memory onto huge pages (kernel.collapse_anonymous_memory): the
# move costs 0.17 s and saves a later session about 0.5 ms, which a class of a few hundred never repays.
COLLAPSE_AFTER = 300
# Signals the zygote ignores once loaded, and its children take back: as PID 1 of its namespace the kernel keeps from
# it only the signals it has no handler for, and Python handles SIGINT (KeyboardInterrupt), which a child had sent
# it through O_ASYNC on a pipe; outside a PID namespace, each of these would end it. The grader stops it with
# SIGKILL, which nothing ignores.
IGNORED_BY_THE_ZYGOTE = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
                         signal.SIGIO, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU,
                         signal.SIGXFSZ, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU,
                         *range(signal.SIGRTMIN, signal.SIGRTMAX + 1))


# ---------------------------------------------------------------- zygote

def zygote_main(config: dict) -> None:
    """Serve spawn, clean and probe requests on the control socket until it closes.

    config: {"control_fd", "preload": [module names], "class_imports": [modules imported if they can be
    (sandbox.libraries)], "warmup": [statements run after the preload],
    "scratch": dir whose contents are wiped between submissions, "sweep": world-writable dirs (the
    fallback's /tmp) from which everything our uid owns is wiped too, "as_init": bool}.
    """
    control = socket.socket(fileno=config["control_fd"])
    # Not dumpable: no process of our uid can open /proc/<pid>/mem or ptrace us. Children inherit it.
    controls = [(kernel.PR_SET_PDEATHSIG, signal.SIGKILL), (kernel.PR_SET_DUMPABLE, 0)]
    if not config["as_init"]:
        # Orphans of a submission (double-forked daemons) must stay our
        # descendants so the grader can find and kill them.
        controls.append((kernel.PR_SET_CHILD_SUBREAPER, 1))
    own_score = kernel.own_setting()  # first: once not dumpable, this process's /proc files are root's
    kernel.set_own(own_score, kernel.KILLED_NEXT)
    missing = kernel.set_controls(controls)
    if missing:
        # Each stands for a protection every submission is promised, so none may run here: the grader
        # refuses this sandbox and says what to do (protections.MissingProtections). Told before the preload,
        # while nothing but our own code has run, so the report is ours.
        wire.send(control, {"event": "ready", "pid": os.getpid(), "missing": missing})
        os._exit(1)
    # What the preload and the warm-up make lives as long as the zygote: a collection meanwhile walks all of it
    # (PyTorch: 0.2 s a time) and frees nothing. Frozen below, once loaded.
    gc.disable()
    libraries.import_preload(config["preload"])
    threads = libraries.thread_count()
    libraries.import_if_possible(config.get("class_imports", []))
    # A thread that one of them started would be missing from every child, and any lock it held, held for good.
    threaded = libraries.thread_count() > threads
    if "torch" in sys.modules:
        libraries.keep_threads(sys.modules["torch"], tensors.THREADS)
    warmup_error = libraries.warm_up(config.get("warmup", []))
    libraries.seed_random()
    # Listed once here: a child that walked sys.modules (~2,000 entries with torch) would write to every
    # name's reference count, and so copy every page that holds one.
    own_modules = tuple(name for name in sys.modules if name == "autograder" or name.startswith("autograder."))
    child_filter = seccomp.Filter(seccomp.program(os.getpid())) if seccomp.supported() else None
    for sig in IGNORED_BY_THE_ZYGOTE:
        signal.signal(sig, signal.SIG_IGN)
    gc.freeze()  # keeps the children from touching (and copying) the zygote's pages
    gc.enable()
    wire.send(control, {"event": "ready", "pid": os.getpid(), "warmup_error": warmup_error, "threaded": threaded})
    inbox, cleaned = _Inbox(control, CONTROL_LIMIT), 0
    while True:
        frame, fds = inbox.next()
        if frame is None:
            os._exit(0)
        header, _ = frame
        op = header.get("op")
        if op == "spawn" and len(fds) == 3:
            kernel.set_own(own_score, kernel.KILLED_FIRST)  # what the child starts at: ended before the zygote
            child = _spawn(header, fds, config["scratch"], own_modules, child_filter)
            kernel.set_own(own_score, kernel.KILLED_NEXT)
            wire.send(control, {"event": "spawned", "pid": child})
        elif op == "clean":
            if config["as_init"]:
                # PID 1 of the sandbox's namespace: kill(-1) reaches exactly the submission's processes.
                os.kill(-1, signal.SIGKILL)
            exits = _reap_all()  # everything is dead or dying: nothing is left to wait for
            left = wipe(config["scratch"])
            for shared in config.get("sweep", []):
                left += wipe(shared, owner=os.getuid())
            wire.send(control, {"event": "clean", "exits": exits, "left": left[:5]})
            cleaned += 1
            if cleaned == COLLAPSE_AFTER:  # between submissions: no child of ours runs, or is timed
                kernel.collapse_anonymous_memory()
        elif op == "probe":
            wire.send(control, {"event": "probed", "readable": readable(header.get("paths", []))[:20]})
        for fd in fds if op != "spawn" else ():
            os.close(fd)


def _spawn(header: dict, fds: list, scratch: str, own_modules: tuple, child_filter: seccomp.Filter | None) -> int:
    """Fork the child for one submission; it gets the grader's sockets (calls, stamps) and output pipe, nothing
    else."""
    child_sock, output, stamps = fds
    pid = os.fork()
    if pid == 0:
        _child_main(header.get("limits", {}), (child_sock, stamps), output, scratch, own_modules, child_filter)
    for fd in fds:
        os.close(fd)
    return pid


class _Inbox:
    """Frames and the file descriptors that came with them, read from a blocking socket."""

    def __init__(self, sock: socket.socket, limit: int):
        self.sock = sock
        self.parser = wire.FrameParser(limit)
        self.frames: list = []
        self.fds: list[int] = []

    def next(self):
        """The next frame and the descriptors received with it; (None, []) when the socket closes."""
        while not self.frames:
            data, fds, _, _ = socket.recv_fds(self.sock, 1 << 16, MAX_FDS)
            self.fds += fds
            if not data:
                return None, self.fds
            self.frames += self.parser.feed(data)
        # Descriptors go to the next frame taken out; the grader says in each call which region it uses.
        fds, self.fds = self.fds, []
        return self.frames.pop(0), fds


def _reap_all() -> dict[str, list]:
    """Reap every child; pid -> ["exit", code] or ["signal", name]."""
    exits = {}
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return exits
        if os.WIFSIGNALED(status):
            exits[str(pid)] = ["signal", signal.Signals(os.WTERMSIG(status)).name]
        else:
            exits[str(pid)] = ["exit", os.WEXITSTATUS(status)]


# ---------------------------------------------------------------- child

def _child_main(limits: dict, sockets: tuple[int, int], output_fd: int, scratch: str, own_modules: tuple,
                child_filter: seccomp.Filter | None) -> None:
    """Run one submission: contain it, receive it, load it, answer calls. Never returns.

    sockets: its socket for the submission and calls, and the one it marks when each call ended on
    (wire.STAMP). child_filter: the seccomp filter that keeps it from the zygote, built by the zygote
    (None where this machine has none)."""
    try:
        os.setsid()
        why = kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL)
        if why:  # the zygote set it at its start, so this is unexpected: the child could outlive the zygote
            raise OSError(f"PR_SET_PDEATHSIG could not be set in the submission's process ({why}); it was not run. "
                          "Run `autograder doctor` to see which protections this machine lacks.")
        for sig in (*IGNORED_BY_THE_ZYGOTE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        _redirect_output(output_fd)
        _close_inherited(sockets)
        workdir = fresh_directory(scratch)
        os.chdir(workdir)
        os.environ.clear()
        # A user name, since the sandbox's uid has none in /etc/passwd: getpass.getuser() at a file's top level
        # (`AUTHOR = getpass.getuser()`) raised KeyError, and a correct file did not load.
        os.environ.update(HOME=workdir, TMPDIR=workdir, PATH="/usr/bin:/bin", USER=SANDBOX_USER, LOGNAME=SANDBOX_USER)
        _set_limits(limits)
        if child_filter is not None:
            child_filter.load()
        sock, stamps = (socket.socket(fileno=fd) for fd in sockets)
        for name in own_modules:
            sys.modules.pop(name, None)  # the worker keeps its references; `import autograder` must find nothing
        inbox = _Inbox(sock, SOURCE_LIMIT)
        (spec, sources), _ = inbox.next()
        inbox.parser.limit = CALL_LIMIT
        namespace, switches = loader.load(spec, [bytes(s).decode("utf-8", "replace") for s in sources], sock,
                                          tensors.LibraryState)
        # What the load made is never collected as garbage: the first collections after it (in whichever calls
        # allocated next) walked all of it, a top-level table of 19 million numbers in 0.1 s each time, charged to
        # a call of some other function. Freezing costs microseconds, as for the zygote's own objects above.
        gc.freeze()
        _serve(inbox, stamps, namespace, switches)
    except BaseException:  # noqa: BLE001 - the child must never fall back into the zygote loop
        # Shown to the grader as the child's output: a worker fault, not the student's.
        traceback.print_exc()
        sys.stderr.flush()
    os._exit(0)


def _redirect_output(output_fd: int) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(devnull)
    os.close(output_fd)
    sys.stdout = open(1, "w", buffering=1, errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, errors="replace", closefd=False)


def _close_inherited(keep: tuple[int, ...]) -> None:
    """Close every descriptor but stdio and the child's own sockets (`keep`), before any student code runs.

    A fork inherits all of the zygote's: its control socket above all, on
    which a submission could forge the zygote's answers to the grader (how
    its children ended, what was left in the scratch space) or read the
    grader's requests.
    """
    highest = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    start = 3
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, highest if highest != resource.RLIM_INFINITY else 1 << 20)


def _set_limits(limits: dict) -> None:
    """Apply course.yaml's limits to this child; `memory_mib` is counted on top of what it has mapped already.

    The child is a fork of the zygote, which imported the preload, so its address space starts at whatever
    that build of the libraries maps: ~0.6 GiB for PyTorch's CPU build, ~3.1 GiB for the default CUDA build
    (its libraries are mapped at import, GPU or not). An absolute RLIMIT_AS would fit one build and break every
    child of the other. Resident memory cannot be limited instead: Linux ignores RLIMIT_RSS, and a memory
    cgroup needs a delegated hierarchy that neither bubblewrap nor the fallback has everywhere. The size is
    read here, before the child receives any student code, so no submission can change it.
    """
    mib = 1 << 20
    wanted = {
        resource.RLIMIT_AS: mapped_bytes() + limits["memory_mib"] * mib,
        resource.RLIMIT_CPU: limits["cpu_seconds"],
        resource.RLIMIT_FSIZE: limits["max_file_mib"] * mib,
        resource.RLIMIT_NOFILE: limits["max_open_files"],
        resource.RLIMIT_CORE: 0,
        # Each POSIX timer holds a signal queued in advance, counted here: without this, one load made 80,000
        # (about 430 B of kernel memory each, which no other limit counts). Nothing graded queues signals of
        # its own, and the kernel delivers ordinary signals past the limit all the same.
        resource.RLIMIT_SIGPENDING: PENDING_SIGNALS,
    }
    if limits.get("max_processes"):
        wanted[resource.RLIMIT_NPROC] = limits["max_processes"]
    for which, value in wanted.items():
        resource.setrlimit(which, (value, value))


def mapped_bytes() -> int:
    """This process's address space (VmSize), in bytes."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


class _ImportWatch:
    """Tells the grader, once per call, that the call has begun importing a module: a one-time cost.

    First on sys.meta_path, it is asked only for modules not imported yet, and finds nothing itself.
    If the call is still importing at its limit, the grader runs it again warm, in a fresh child
    (sandbox.grace): another run, never a verdict.
    """

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.call_id = None  # the call under way, until it has said so
        self._pid, self._thread = os.getpid(), _thread.get_ident()

    def find_spec(self, name, path=None, target=None):
        # Only the calling thread of this process: a forked copy or a thread must not write to the socket.
        if self.call_id is not None and os.getpid() == self._pid and _thread.get_ident() == self._thread:
            call_id, self.call_id = self.call_id, None
            wire.send(self.sock, {"event": "importing", "id": call_id})


def _serve(inbox: _Inbox, stamps: socket.socket, namespace: dict, switches: dict) -> None:
    """Answer calls in the order they come, each with a reply, until the grader closes the socket.

    The grader may send many calls before the first reply (a stream). Each new
    region of shared memory comes as a descriptor; a call names the region its
    arrays are in by number, so a descriptor read together with earlier calls'
    bytes is never taken for theirs. switches: as loader.load returns them.
    """
    watch = _ImportWatch(inbox.sock)
    sys.meta_path.insert(0, watch)  # after loading: imports at the top of the file are no call's
    stopped_at.install(inbox.sock, lambda: watch.call_id, str(namespace.get("__file__")))
    me = os.getpid()
    mappings = []  # of the grader's shared memory regions, in the order they were sent (map_region closes each)
    while True:
        frame, fds = inbox.next()
        if frame is None:
            return
        header, buffers = frame
        mappings += [region.map_region(fd) for fd in fds]
        if header.get("shared") is not None:
            buffers = region.shared_buffers(_mapping(mappings, header.get("region")), header["shared"])
        watch.call_id = header.get("id")
        started = switches.get(header.get("function"), switches[None]).restore()
        reply, reply_buffers = _call(header, buffers, namespace, started)
        watch.call_id = None
        loader.exit_if_forked_copy(me)
        sys.stdout.flush()
        wire.send_reply(inbox.sock, stamps, header.get("id"), reply, reply_buffers)


def _disarm_timers() -> None:
    """Stop the interval timers the call armed (signal.alarm, signal.setitimer) as it returns: one left running
    fired in a later call of another function, or in this worker between calls, and cost checks the function that
    set it had passed."""
    for timer in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
        signal.setitimer(timer, 0)


def _mapping(mappings: list, number) -> memoryview | None:
    """The region a call's header names by number; None (no room at all) for a number never sent."""
    return mappings[number] if type(number) is int and 0 <= number < len(mappings) else None


def _call(request: dict, buffers: list, namespace: dict, started: str = "the code run before the call"):
    """Run one call on arrays decoded from `buffers`, in place; started: LibraryState.restore's word."""
    args = [values.decode(tree, buffers) for tree in request["args"]]
    kwargs = {name: values.decode(tree, buffers) for name, tree in request["kwargs"].items()}
    if request.get("as_tensors"):
        args = [tensors.to_tensor(a, request.get("backward") is not None) for a in args]
        kwargs = {name: tensors.to_tensor(a, False) for name, a in kwargs.items()}
    reply = {"event": "reply", "id": request["id"]}
    out = []
    function = namespace[request["function"]]
    # Autograd off when the call begins: what the call started from (`started`) switched it off.
    off_by = "" if request.get("backward") is None or sys.modules["torch"].is_grad_enabled() else started
    try:
        result = function(*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - report every failure, including SystemExit
        reply["raised"] = loader.describe(error, namespace.get("__file__"))
        if isinstance(error, TypeError):
            reply["raised"].update(loader.unfit(function, args, kwargs))
        return reply, out
    finally:
        _disarm_timers()
    try:
        reply["value"] = values.encode(result, out)
        if request.get("backward") is not None:
            reply.update(tensors.backward(result, args, request["backward"], buffers, out, off_by))
        if request.get("mark_returned"):
            out[:] = [bytes(buffer) for buffer in out]  # the answer as returned: the marks must not reach the reply
            values.mark_returned(result, request, buffers)
    except BaseException as error:  # noqa: BLE001
        out.clear()
        reply.pop("value", None)
        reply["unsendable"] = loader.describe(error, namespace.get("__file__"))
    return reply, out
