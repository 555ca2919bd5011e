"""The untrusted side: a zygote that forks one child per submission.

This file never runs in the grader's process. The grader sends its source
(and `wire`'s) over a pipe to a fresh interpreter inside the sandbox, so the
worker needs no view of the course repository. The zygote imports NumPy and
PyTorch once; each submission runs in a fresh fork of it, so no submission
pays the import and nothing one submission does can reach the next.

A child loads the student's code unit by unit (top-level statements of a
.py file, code cells of a notebook), then answers calls "run function F on
these arrays" until the grader closes its socket. Everything here can be
tampered with by the student's code, which is why the grader validates every
reply and decides nothing on the worker's word.
"""
from __future__ import annotations

import ast
import ctypes
import gc
import importlib
import os
import resource
import shutil
import signal
import socket
import sys
import time
import traceback
import types

import numpy as np

from autograder import wire

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


# ---------------------------------------------------------------- zygote

def zygote_main(config: dict) -> None:
    """Serve spawn requests on the control socket until it closes.

    config: {"control_fd", "preload": [module names], "scratch": dir whose
    contents are wiped between submissions, "as_init": bool}.
    """
    control = socket.socket(fileno=config["control_fd"])
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if not config["as_init"]:
        # Orphans of a submission (double-forked daemons) must stay our
        # descendants so the grader can find and kill them.
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
    for name in config["preload"]:
        importlib.import_module(name)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    gc.collect()
    gc.freeze()  # keeps the children from touching (and copying) the zygote's pages
    wire.send(control, {"event": "ready", "pid": os.getpid()})
    parser = wire.FrameParser(limit=64 << 20)
    while True:
        frame, fds = _receive(control, parser)
        if frame is None:
            os._exit(0)
        header, _ = frame
        if header.get("op") == "spawn":
            child_sock, output = fds
            pid = os.fork()
            if pid == 0:
                control.close()
                _child_main(header, child_sock, output)
            os.close(child_sock)
            os.close(output)
            wire.send(control, {"event": "spawned", "pid": pid})
        elif header.get("op") == "clean":
            if config["as_init"]:
                # PID 1 of the sandbox's namespace: kill(-1) reaches exactly the submission's processes.
                os.kill(-1, signal.SIGKILL)
            exits = _reap_all(wait=True)  # everything is dead or dying: nothing is left to wait for
            _wipe(config["scratch"])
            wire.send(control, {"event": "clean", "exits": exits})


def _receive(sock, parser):
    fds = []
    while True:
        data, new_fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        fds += new_fds
        if not data:
            return None, fds
        frames = parser.feed(data)
        if frames:
            return frames[0], fds


def _reap_all(wait: bool) -> dict[str, list]:
    """Reap finished children (all of them, if `wait`); pid -> ["exit", code] or ["signal", name]."""
    exits = {}
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if wait else os.WNOHANG)
        except ChildProcessError:
            return exits
        if pid == 0:
            return exits
        if os.WIFSIGNALED(status):
            exits[str(pid)] = ["signal", signal.Signals(os.WTERMSIG(status)).name]
        else:
            exits[str(pid)] = ["exit", os.WEXITSTATUS(status)]


def _wipe(directory: str) -> None:
    """Remove everything under `directory` but mount points (a Python environment under /tmp)."""
    for entry in os.scandir(directory):
        try:
            if entry.is_dir(follow_symlinks=False):
                if os.path.ismount(entry.path):
                    continue
                if _holds_mount(entry.path):
                    _wipe(entry.path)
                else:
                    shutil.rmtree(entry.path, onerror=_force_remove)
            else:
                os.unlink(entry.path)
        except OSError:
            pass


def _holds_mount(directory: str) -> bool:
    """Whether a mount point lies below `directory` (read from /proc/self/mountinfo)."""
    prefix = directory.rstrip("/") + "/"
    try:
        with open("/proc/self/mountinfo") as mounts:
            return any(line.split()[4].startswith(prefix) for line in mounts)
    except OSError:
        return False


def _force_remove(function, path, _):
    try:
        os.chmod(os.path.dirname(path), 0o700)
        os.chmod(path, 0o700)
        function(path)
    except OSError:
        pass


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------- child

def _child_main(spec: dict, sock_fd: int, output_fd: int) -> None:
    """Run one submission: contain it, load it, answer calls. Never returns."""
    try:
        os.setsid()
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGALRM):
            signal.signal(sig, signal.SIG_DFL)
        _redirect_output(output_fd)
        workdir = os.path.join(spec["scratch"], f"work-{os.getpid()}")
        os.mkdir(workdir, 0o700)
        os.chdir(workdir)
        os.environ.clear()
        os.environ.update(HOME=workdir, TMPDIR=workdir, PATH="/usr/bin:/bin")
        _set_limits(spec["limits"])
        sock = socket.socket(fileno=sock_fd)
        for name in [m for m in sys.modules if m == "autograder" or m.startswith("autograder.")]:
            del sys.modules[name]  # the worker keeps its references; `import autograder` must find nothing
        namespace = _load(spec, sock)
        _serve(sock, namespace)
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


def _set_limits(limits: dict) -> None:
    mib = 1 << 20
    wanted = {
        resource.RLIMIT_AS: limits["memory_mib"] * mib,
        resource.RLIMIT_CPU: limits["cpu_seconds"],
        resource.RLIMIT_FSIZE: limits["max_file_mib"] * mib,
        resource.RLIMIT_NOFILE: limits["max_open_files"],
        resource.RLIMIT_CORE: 0,
    }
    if limits.get("max_processes"):
        wanted[resource.RLIMIT_NPROC] = limits["max_processes"]
    for which, value in wanted.items():
        resource.setrlimit(which, (value, value))


def _units(spec: dict):
    """The submission as (label, code or SyntaxError) units, in order."""
    filename = spec["filename"]
    if spec["kind"] == "py":
        try:
            tree = ast.parse(spec["source"], filename)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            return [("the file", error)]
        return [(f"line {node.lineno}", compile(ast.Module([node], []), filename, "exec"))
                for node in tree.body]
    units = []
    for cell in spec["cells"]:
        try:
            units.append((cell["label"], compile(cell["source"], f"{filename} ({cell['label']})", "exec")))
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            units.append((cell["label"], error))
    return units


def _load(spec: dict, sock) -> dict:
    """Execute the submission's top-level code, reporting each unit before it runs.

    A unit that raises is recorded and skipped, as Jupyter would; a unit that
    hangs or kills the process is reported by the grader, which restarts the
    child with that unit in `spec["skip"]`.
    """
    module = types.ModuleType(spec["module"])
    module.__file__ = spec["filename"]
    sys.modules[spec["module"]] = module
    problems = []
    skip = set(spec["skip"])
    me = os.getpid()
    for index, (label, code) in enumerate(_units(spec)):
        if index in skip:
            continue
        if isinstance(code, BaseException):
            problems.append({"unit": label, "error": _describe(code, spec["filename"])})
            continue
        if os.getpid() == me:  # a process the file forked runs the rest of the file silently, as in Python
            wire.send(sock, {"event": "unit", "index": index, "label": label})
        try:
            exec(code, module.__dict__)
        except BaseException as error:  # noqa: BLE001 - SystemExit at import is the student's problem
            problems.append({"unit": label, "error": _describe(error, spec["filename"])})
    _exit_if_forked_copy(me)
    sys.stdout.flush()
    functions = sorted(name for name, value in vars(module).items()
                       if callable(value) and not name.startswith("__"))[:500]
    wire.send(sock, {"event": "ready", "functions": functions, "problems": problems[:50]})
    return module.__dict__


def _exit_if_forked_copy(me: int) -> None:
    """A process the student forked that returned into this code must not speak on our socket."""
    if os.getpid() != me:
        os._exit(0)


def _serve(sock, namespace: dict) -> None:
    me = os.getpid()
    parser = wire.FrameParser(limit=1 << 30)
    while True:
        try:
            frames = parser.receive(sock)
        except EOFError:
            return
        for header, buffers in frames:
            reply, reply_buffers = _call(header, buffers, namespace)
            _exit_if_forked_copy(me)
            sys.stdout.flush()
            wire.send(sock, reply, reply_buffers)


def _call(request: dict, buffers: list, namespace: dict):
    args = [_writable(wire.decode(tree, buffers)) for tree in request["args"]]
    kwargs = {name: _writable(wire.decode(tree, buffers)) for name, tree in request["kwargs"].items()}
    if request.get("as_tensors"):
        args = [_to_tensor(a, request.get("backward") is not None) for a in args]
        kwargs = {name: _to_tensor(a, False) for name, a in kwargs.items()}
    reply = {"event": "reply", "id": request["id"]}
    out = []
    start = time.perf_counter()
    try:
        result = namespace[request["function"]](*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - report every failure, including SystemExit
        reply.update(seconds=time.perf_counter() - start, raised=_describe(error, namespace.get("__file__")))
        return reply, out
    reply["seconds"] = time.perf_counter() - start
    try:
        reply["value"] = wire.encode(result, out, sample=request.get("sample"))
        if request.get("return_inputs"):
            reply["inputs"] = [wire.encode(a, out) for a in args]
        if request.get("backward") is not None:
            reply.update(_backward(result, args, request["backward"], buffers, out))
    except BaseException as error:  # noqa: BLE001
        out.clear()
        reply.pop("value", None)
        reply["unsendable"] = _describe(error, namespace.get("__file__"))
    return reply, out


def _backward(result, args, upstream_trees, buffers, out) -> dict:
    """Backpropagate the grader's upstream gradients; return d(output)/d(each input)."""
    torch = sys.modules["torch"]
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    pairs = []
    for output, tree in zip(outputs, upstream_trees):
        upstream = _writable(wire.decode(tree, buffers))
        if upstream is None:
            continue
        if not isinstance(output, torch.Tensor) or output.grad_fn is None:
            return {"grad_error": "the output is not connected to the autograd graph "
                                  "(no grad_fn): it was detached, or computed outside PyTorch"}
        pairs.append((output, torch.from_numpy(upstream).to(output.dtype)))
    try:
        # sum(output * upstream) has the same gradients as backward(output, upstream), and a scalar
        # backward skips torch's lazy import of sympy (~1 s per fresh child).
        total = sum((output * upstream).sum() for output, upstream in pairs)
        total.backward()
    except (RuntimeError, AttributeError) as error:
        return {"grad_error": f"backward failed: {str(error)[:wire.MAX_TEXT]}"}
    return {"grads": [wire.encode(a.grad, out) if isinstance(a, torch.Tensor) else {"t": "none"}
                      for a in args]}


def _writable(value):
    return np.array(value) if isinstance(value, np.ndarray) else value


def _to_tensor(value, requires_grad: bool):
    torch = sys.modules["torch"]
    if not isinstance(value, np.ndarray):
        return value
    tensor = torch.from_numpy(value)
    if requires_grad and tensor.is_floating_point():
        tensor.requires_grad_(True)
    return tensor


def _describe(error: BaseException, filename) -> dict:
    """Exception type, message and the student's line where it was raised."""
    try:
        message = str(error)[:wire.MAX_TEXT]
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "(the exception's message could not be read)"
    line = getattr(error, "lineno", None) if isinstance(error, SyntaxError) else None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename.startswith(str(filename)):
            line = trace.tb_lineno
        trace = trace.tb_next
    return {"type": type(error).__name__[:80], "message": message, "line": line}
