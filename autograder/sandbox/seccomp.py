"""A seccomp filter that keeps a submission's process away from every other process.

Installed by each worker child before it runs student code (see
worker._child_main), and inherited by everything the student's code starts.
The kernel then refuses, with EPERM:
- reading or writing another process's memory or file descriptors: ptrace,
  process_vm_readv/writev, pidfd_getfd, kcmp;
- state that outlives a process and so could reach the next submission:
  System V shared memory, semaphores and message queues, POSIX message
  queues, kernel keyrings, io_uring;
- Linux AIO (io_setup and the calls on its contexts): every context's events
  come from one pool for the whole machine (fs.aio-max-nr), which a load that
  called io_setup in a loop took whole, so every other process on the machine
  got EAGAIN from it until the submission ended; nothing graded uses it;
- sockets of any family but AF_UNIX (socket, socketpair): TCP on the
  sandbox's own loopback draws on one count of buffer memory for the whole
  machine (net.ipv4.tcp_mem), and 90 connections sending unread took 92 % of
  it, past which every TCP socket on the machine fails; AF_VSOCK reaches a
  virtual machine's host. Nothing graded needs one: the grader's channel is
  a socketpair made outside, and a download fails in grading either way;
- changing a socket's buffer sizes (setsockopt SO_SNDBUF, SO_RCVBUF and
  their FORCE forms at SOL_SOCKET): raised to 8 MiB, 29 unread socketpairs
  in each of 4 processes held 1.4 GB that no limit counts, 40 times what
  the default sizes allow (the grader sets its reply socket's size outside);
- signals to the zygote (the child's parent) and to every process at once
  (pid -1), and pidfd_send_signal, which could reach any of them;
- naming a process to be signalled when a file is ready (fcntl F_SETOWN,
  F_SETOWN_EX, F_SETSIG; ioctl FIOSETOWN, SIOCSPGRP): with O_ASYNC, a write
  had the kernel send the zygote SIGINT, which no kill() of the child may;
- changing the zygote's own state, which every later child inherits: its
  resource limits (prlimit64: a lowered hard limit failed each later
  child's own setrlimit, or made its allocations fail as its own bugs), its
  priority, scheduling policy, processors and I/O priority (setpriority,
  sched_setparam, sched_setscheduler, sched_setattr, sched_setaffinity,
  ioprio_set), and its memory's placement (migrate_pages, move_pages); the
  kernel allows these to any process of the same user, however undumpable.
  setpriority and ioprio_set are refused for a whole user, which includes
  the zygote; process_madvise, process_mrelease and perf_event_open always;
- new namespaces (unshare, and clone or clone3 asking for one): a user
  namespace of its own gives the child the kernel's namespace code to attack;
- memory files of its own (memfd_create, memfd_secret): a memfd's pages,
  never mapped, count toward no address-space limit and show in no process's
  resident memory, so 60 of them held about 1 GiB per process beyond the
  submission's memory limit, where the out-of-memory killer could not see
  whose it was (the grader's own memfd for a call's arguments is made
  outside, in the grading process);
- extended attributes (setxattr, lsetxattr, fsetxattr, setxattrat): on the
  scratch tmpfs their values are kernel memory that neither the memory limit
  nor the tmpfs's size counts, and 16 of 64 KiB on each of many files held
  1.4 GiB in one load; no library a submission uses sets them;
- making itself dumpable again (prctl PR_SET_DUMPABLE), or rewriting what
  /proc shows of it (prctl PR_SET_MM): a dumpable process's /proc files are
  its own user's, so it could open /proc/self/mem on the memory it inherited
  from the zygote, and lower its /proc/self/oom_score_adj, which each child
  starts at 1000 so that the kernel ends a submission's processes first when
  memory runs out (kernel.own_setting); PR_SET_MM_MAP rewrote its command
  line in /proc without any privilege. Nothing graded needs either;
- a new action for SIGCHLD (asking for the current one is allowed). Ignoring
  it, or SA_NOCLDWAIT, has the kernel reap the process's children itself: a
  helper's processor time is then counted nowhere and it leaves no trace in
  /proc, which is what the grader reads to see whether a call's work was done
  by other processes (sandbox.waiting, sandbox.call_clock).
Any other architecture's system calls (32-bit calls on x86_64, say) are
refused too, since their numbers differ. The zygote and children are also
not dumpable (worker.zygote_main), which alone stops /proc/<pid>/mem and
ptrace; this filter is the second lock.

This module is shipped to the worker (see sandbox.BOOT): standard library only.
"""
from __future__ import annotations

import ctypes
import errno
import platform
import struct

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# BPF opcodes: load a word of seccomp_data, compare the accumulator, return.
_LOAD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_JSET, _JA = 0x45, 0x05  # jump if the accumulator has any of the constant's bits; jump always
# Offsets in struct seccomp_data (little-endian words).
_NR, _ARCH, _ARG0, _ARG1, _ARG1_HIGH, _ARG2 = 0, 4, 16, 24, 28, 32
SIGCHLD = 17  # on every architecture here (x86_64, aarch64)
SETS_OWNER = {"fcntl": (8, 10, 15), "ioctl": (0x8901, 0x8902)}  # F_SETOWN, F_SETSIG, F_SETOWN_EX; FIOSETOWN, SIOCSPGRP
AF_UNIX = 1  # the one socket family a child may make: socket(family, ...) and socketpair(family, ...)
SOL_SOCKET = 1  # asm-generic, as on x86_64 and aarch64
SETS_BUFFER = (7, 8, 32, 33)  # setsockopt(fd, SOL_SOCKET, ...): SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE
PR_SET_DUMPABLE, PR_SET_MM = 4, 35
SETS_PROC = (PR_SET_DUMPABLE, PR_SET_MM)  # prctl(option, ...): options a child may not use
NEW_NAMESPACES = 0x7E020000  # clone's CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET

# (audit architecture, system call numbers) per machine, from the kernel's syscall tables.
_ARCHES = {
    "x86_64": (0xC000003E, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
        "shmget": 29, "semget": 64, "msgget": 68, "mq_open": 240, "add_key": 248, "request_key": 249,
        "keyctl": 250, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "pidfd_send_signal": 424, "unshare": 272, "setns": 308, "rt_sigaction": 13,
        "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        "fcntl": 72, "ioctl": 16, "clone": 56, "clone3": 435, "perf_event_open": 298, "process_madvise": 440,
        "process_mrelease": 448, "prlimit64": 302, "sched_setparam": 142, "sched_setscheduler": 144,
        "sched_setattr": 314, "sched_setaffinity": 203, "migrate_pages": 256, "move_pages": 279,
        "setpriority": 141, "ioprio_set": 251, "memfd_create": 319, "memfd_secret": 447,
        "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "setxattrat": 463,
        "io_setup": 206, "io_destroy": 207, "io_getevents": 208, "io_submit": 209, "io_cancel": 210,
        "io_pgetevents": 333, "socket": 41, "socketpair": 53, "setsockopt": 54, "prctl": 157}),
    "aarch64": (0xC00000B7, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "kcmp": 272,
        "shmget": 194, "semget": 190, "msgget": 186, "mq_open": 180, "add_key": 217, "request_key": 218,
        "keyctl": 219, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "pidfd_send_signal": 424, "unshare": 97, "setns": 268, "rt_sigaction": 134,
        "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
        "fcntl": 25, "ioctl": 29, "clone": 220, "clone3": 435, "perf_event_open": 241, "process_madvise": 440,
        "process_mrelease": 448, "prlimit64": 261, "sched_setparam": 118, "sched_setscheduler": 119,
        "sched_setattr": 274, "sched_setaffinity": 122, "migrate_pages": 238, "move_pages": 239,
        "setpriority": 140, "ioprio_set": 30, "memfd_create": 279, "memfd_secret": 447,
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "setxattrat": 463,
        "io_setup": 0, "io_destroy": 1, "io_submit": 2, "io_cancel": 3, "io_getevents": 4, "io_pgetevents": 292,
        "socket": 198, "socketpair": 199, "setsockopt": 208, "prctl": 167}),
}
_X32_BIT = 0x40000000  # x86_64's x32 ABI: the same calls under other numbers
_SIGNALS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")  # first argument: a pid
# First argument: a pid, 0 for the caller itself.
_PROCESS_STATE = ("prlimit64", "sched_setparam", "sched_setscheduler", "sched_setattr", "sched_setaffinity",
                  "migrate_pages", "move_pages")
# (which, who, ...): which names who's kind, and one kind is a whole user (PRIO_USER, IOPRIO_WHO_USER).
WHOLE_USER = {"setpriority": 2, "ioprio_set": 3}
_SOCKETS = ("socket", "socketpair")  # first argument: the family
_BY_ARGUMENT = (*_SIGNALS, *_PROCESS_STATE, *WHOLE_USER, *_SOCKETS, "rt_sigaction", "fcntl", "ioctl", "clone",
                "clone3", "setsockopt", "prctl")  # denied for some arguments only


def supported() -> bool:
    """Whether this machine's architecture has a filter here."""
    return platform.machine() in _ARCHES


def program(parent: int, machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter as BPF instructions (code, jump if true, jump if false, constant).

    parent: the pid signals may not reach (the zygote, as this process sees it).
    """
    arch, numbers = _ARCHES[machine or platform.machine()]
    deny = (_RET, 0, 0, RET_ERRNO | errno.EPERM)
    code = [(_LOAD, 0, 0, _ARCH), (_JEQ, 1, 0, arch), deny, (_LOAD, 0, 0, _NR)]
    if arch == _ARCHES["x86_64"][0]:
        code += [(_JGE, 0, 1, _X32_BIT), deny]
    for name, number in numbers.items():
        if name not in _BY_ARGUMENT:
            code += [(_JEQ, 0, 1, number), deny]
    # clone3 passes its flags in memory, where a filter cannot look: ENOSYS has the C library use clone.
    code += [(_JEQ, 0, 1, numbers["clone3"]), (_RET, 0, 0, RET_ERRNO | errno.ENOSYS)]
    # clone(flags, ...) asking for a new namespace (flags are its first argument on x86_64 and aarch64).
    code += [(_JEQ, 0, 3, numbers["clone"]), (_LOAD, 0, 0, _ARG0), (_JSET, 0, 1, NEW_NAMESPACES), deny,
             (_LOAD, 0, 0, _NR)]
    for name, commands in SETS_OWNER.items():  # fcntl(fd, F_SETOWN, ...), ioctl(fd, FIOSETOWN, ...)
        code += _deny_values(numbers[name], _ARG1, commands, deny)
    code += _deny_values(numbers["prctl"], _ARG0, SETS_PROC, deny)  # prctl(PR_SET_DUMPABLE, ...), prctl(PR_SET_MM, ...)
    # rt_sigaction(SIGCHLD, act, ...) with an action (a pointer whose two words are not both 0): denied.
    code += [(_LOAD, 0, 0, _NR), (_JEQ, 0, 7, numbers["rt_sigaction"]), (_LOAD, 0, 0, _ARG0),
             (_JEQ, 0, 5, SIGCHLD), (_LOAD, 0, 0, _ARG1), (_JEQ, 0, 2, 0), (_LOAD, 0, 0, _ARG1_HIGH),
             (_JEQ, 1, 0, 0), deny]
    for name in _SIGNALS:
        # Not this call: skip its five instructions. Else deny when arg 0 is the parent, -1 or -parent.
        code += [(_LOAD, 0, 0, _NR), (_JEQ, 0, 5, numbers[name]), (_LOAD, 0, 0, _ARG0),
                 (_JEQ, 2, 0, parent & 0xFFFFFFFF), (_JEQ, 1, 0, 0xFFFFFFFF), (_JEQ, 0, 1, -parent & 0xFFFFFFFF),
                 deny]
    for name in _PROCESS_STATE:  # not this call: skip its three instructions; else deny when arg 0 is the parent
        code += [(_LOAD, 0, 0, _NR), (_JEQ, 0, 3, numbers[name]), (_LOAD, 0, 0, _ARG0),
                 (_JEQ, 0, 1, parent & 0xFFFFFFFF), deny]
    for name, user in WHOLE_USER.items():  # deny when arg 0 is a whole user or arg 1 the parent
        code += [(_LOAD, 0, 0, _NR), (_JEQ, 0, 5, numbers[name]), (_LOAD, 0, 0, _ARG0), (_JEQ, 2, 0, user),
                 (_LOAD, 0, 0, _ARG1), (_JEQ, 0, 1, parent & 0xFFFFFFFF), deny]
    for name in _SOCKETS:  # not this call: skip its three instructions; else deny any family but AF_UNIX
        code += [(_LOAD, 0, 0, _NR), (_JEQ, 0, 3, numbers[name]), (_LOAD, 0, 0, _ARG0), (_JEQ, 1, 0, AF_UNIX), deny]
    # setsockopt(fd, SOL_SOCKET, SO_SNDBUF, ...) and its kin: not this call or level, skip to the end; an option, deny.
    n = len(SETS_BUFFER)
    code += [(_LOAD, 0, 0, _NR), (_JEQ, 0, n + 5, numbers["setsockopt"]), (_LOAD, 0, 0, _ARG1),
             (_JEQ, 0, n + 3, SOL_SOCKET), (_LOAD, 0, 0, _ARG2)]
    code += [(_JEQ, n - i, 0, option) for i, option in enumerate(SETS_BUFFER)] + [(_JA, 0, 0, 1), deny]
    return code + [(_RET, 0, 0, RET_ALLOW)]


def _deny_values(number: int, argument: int, values: tuple[int, ...], deny: tuple) -> list[tuple[int, int, int, int]]:
    """Instructions that deny system call `number` when its argument at offset `argument` is one of `values`."""
    n = len(values)  # not this call: skip its load, n tests, jump and deny; a value: on to the deny
    code = [(_LOAD, 0, 0, _NR), (_JEQ, 0, n + 3, number), (_LOAD, 0, 0, argument)]
    return code + [(_JEQ, n - i, 0, value) for i, value in enumerate(values)] + [(_JA, 0, 0, 1), deny]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class Filter:
    """A BPF program (as `program` gives one), ready to load into the process that calls `load`.

    The zygote builds its children's filter once, before any submission exists: building it (the
    program, its ctypes structure, libc's handle) costs a freshly forked child about 0.9 ms, mostly
    in copying the pages it touches; loading a built one, about 0.3 ms.
    """

    def __init__(self, code: list[tuple[int, int, int, int]]):
        self._buffer = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in code))
        self._program = _Program(len(code), ctypes.addressof(self._buffer))
        self._libc = ctypes.CDLL(None, use_errno=True)

    def load(self) -> None:
        """Load the filter into this process and everything it starts; raises OSError if the kernel refuses."""
        calls = ((PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
                 (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(self._program), 0, 0))
        for args in calls:
            if self._libc.prctl(*(ctypes.c_ulong(a) for a in args)) != 0:
                number = ctypes.get_errno()
                raise OSError(number, f"prctl({args[0]}) failed: {errno.errorcode.get(number, number)}")


def load(code: list[tuple[int, int, int, int]]) -> None:
    """Load a BPF program (as `program` gives one) into this process and everything it starts."""
    Filter(code).load()
