"""A seccomp filter that stops sandboxed commands from making setuid or setgid files.

Inside the sandbox a command is uid 0 mapped to the caller; when the caller is root, what
it creates in the work dir is owned by root on the host, and an owner may set the setuid
bit. The bit is inert inside (bubblewrap mounts ``nosuid``) but would work on the host.
The filter refuses (``EPERM``) every call that could set the bit: ``chmod``, ``fchmod``,
``fchmodat``, ``fchmodat2``, and the creating calls ``open``, ``creat``, ``openat``,
``mknod``, ``mknodat`` with 0o6000 in their mode; ``openat2`` (whose mode sits behind a
pointer the filter cannot read) answers ``ENOSYS`` so libraries fall back to ``openat``.
Other architectures' system call numbers differ: the filter is built for x86-64 only and
refuses calls made through another ABI (i386, x32) inside it.
"""

from __future__ import annotations

import functools
import os
import platform
import struct

__all__ = ["seccomp_pipe", "setuid_filter"]

_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_EPERM = 0x00050000 | 1
_ENOSYS = 0x00050000 | 38
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_SPECIAL_BITS = 0o6000
# x86-64 system call numbers, by the argument that holds the mode.
_MODE_ARG = {
    90: 1,  # chmod(path, mode)
    91: 1,  # fchmod(fd, mode)
    85: 1,  # creat(path, mode)
    133: 1,  # mknod(path, mode, dev)
    268: 2,  # fchmodat(dirfd, path, mode)
    452: 2,  # fchmodat2(dirfd, path, mode, flags)
    2: 2,  # open(path, flags, mode)
    259: 2,  # mknodat(dirfd, path, mode, dev)
    257: 3,  # openat(dirfd, path, flags, mode)
}
_OPENAT2 = 437


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def setuid_filter() -> bytes | None:
    """The compiled filter (``struct sock_filter`` array), or ``None`` off x86-64."""
    if platform.machine() != "x86_64":
        return None
    # Layout: arch check, number load, x32 check, openat2, one JEQ per call, allow, then per
    # mode argument [load it, test the bits], then deny and allow.
    program = [
        _op(_LD_ABS, 4),
        _op(_JEQ, _AUDIT_ARCH_X86_64, 1, 0),
        _op(_RET, _EPERM),
        _op(_LD_ABS, 0),
    ]
    args = sorted(set(_MODE_ARG.values()))
    first_block = 7 + len(_MODE_ARG) + 1
    block = {arg: first_block + 2 * n for n, arg in enumerate(args)}
    deny = first_block + 2 * len(args)
    program.append(_op(_JSET, _X32_BIT, deny - 5, 0))  # index 4
    program.append(_op(_JEQ, _OPENAT2, 0, 1))  # index 5
    program.append(_op(_RET, _ENOSYS))  # index 6
    for index, (number, arg) in enumerate(_MODE_ARG.items(), start=7):
        program.append(_op(_JEQ, number, block[arg] - index - 1, 0))
    program.append(_op(_RET, _ALLOW))
    for arg in args:  # the low 32 bits of args[arg] (little-endian)
        test = len(program) + 1
        program.append(_op(_LD_ABS, 16 + 8 * arg))
        program.append(_op(_JSET, _SPECIAL_BITS, deny - test - 1, deny - test))
    program.append(_op(_RET, _EPERM))
    program.append(_op(_RET, _ALLOW))
    return b"".join(program)


def seccomp_pipe() -> int | None:
    """A pipe's read end holding the filter for ``bwrap --seccomp`` (caller closes it)."""
    program = setuid_filter()
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: never blocks on a fresh pipe
    finally:
        os.close(write)
    return read
