"""Ctrl-C that stops a command within a second, even inside compiled loops.

Python only raises ``KeyboardInterrupt`` between bytecodes, and a numba (or C) loop holds the
interpreter for as long as it runs: a long ``pimrl train`` would ignore Ctrl-C. While a
command runs, the ``pimrl`` command installs a C-level SIGINT handler (a numba ``cfunc``)
that does what Python's own does (``PyErr_SetInterruptEx``: ``KeyboardInterrupt`` at the
next bytecode) and arms a half-second timer. As soon as Python code runs again, its SIGINT
handler cancels the timer and raises ``KeyboardInterrupt``; the command then cleans up in
its own time (atomic writers remove their temporary files, a sweep records where it
stopped). If the interpreter is stuck in compiled code, the timer's handler prints one line and ends the
process with status 130. Compiled code writes no output files (every file is written by
Python through ``pimrl.io.atomic_writer``), so every output is then complete or absent.
"""
from __future__ import annotations

import ctypes
import signal
import threading

import numpy as np
from numba import cfunc, types

#: Seconds Python code gets to answer Ctrl-C before the process is ended.
GRACE_S = 0.5
EXIT_STATUS = 130                   # 128 + SIGINT, what a shell reports for Ctrl-C

_MESSAGE = np.frombuffer(b"\npimrl: interrupted (Ctrl-C)\n", dtype=np.uint8).copy()

# libc and CPython functions, bound by name when the handlers are compiled (so cacheable).
_set_interrupt = types.ExternalFunction("PyErr_SetInterruptEx", types.int32(types.int32))
_ualarm = types.ExternalFunction("ualarm", types.uint32(types.uint32, types.uint32))
_write = types.ExternalFunction("write", types.intp(types.int32, types.voidptr, types.uintp))
_exit_now = types.ExternalFunction("_exit", types.void(types.int32))


@cfunc(types.void(types.int32), cache=True)
def _on_sigint(signum):  # pragma: no cover - runs as a signal handler
    _set_interrupt(signum)
    _ualarm(np.uint32(GRACE_S * 1e6), np.uint32(0))


@cfunc(types.void(types.int32), cache=True)
def _on_grace_expired(signum):  # pragma: no cover - runs as a signal handler
    _write(np.int32(2), _MESSAGE.ctypes.data, _MESSAGE.size)
    _exit_now(np.int32(EXIT_STATUS))


_libc = ctypes.CDLL(None, use_errno=True)
_libc.signal.restype = ctypes.c_void_p
_libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]


class prompt_interrupts:
    """``with prompt_interrupts(): ...``: Ctrl-C ends the block within ``GRACE_S`` seconds.

    Python code inside sees ``KeyboardInterrupt`` as usual, once the interpreter runs again
    (which cancels the timer). Does nothing outside the main thread, or where SIGINT is not Python's default handler
    (ignored by a shell for a background job, or handled by the embedding program)."""

    def __enter__(self):
        self._saved = None
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            # Python's handler first (it also installs CPython's C handler), then ours over
            # the C one: the interrupt reaches Python through PyErr_SetInterruptEx.
            signal.signal(signal.SIGINT, _answer_and_raise)
            self._saved = (_libc.signal(signal.SIGALRM, _on_grace_expired.address),
                           _libc.signal(signal.SIGINT, _on_sigint.address))
        return self

    def __exit__(self, *exc):
        answered()
        if self._saved is not None:
            _libc.signal(signal.SIGINT, self._saved[1])
            _libc.signal(signal.SIGALRM, self._saved[0])
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return False


def answered() -> None:
    """Python code has answered Ctrl-C: cancel the timer that would end the process."""
    signal.setitimer(signal.ITIMER_REAL, 0)


def _answer_and_raise(signum, frame):
    """Python's SIGINT handler while a command runs: Python is running again, so the timer
    is cancelled; then ``KeyboardInterrupt`` as usual, for the command's own clean-up."""
    answered()
    raise KeyboardInterrupt


class deferred_interrupts:
    """``with deferred_interrupts(on_signal): ...``: SIGINT and SIGTERM call
    ``on_signal(name)`` instead of stopping the process, so that a checkpointed run
    (``pimrl train --checkpoint``) can finish its round, write a checkpoint at the boundary
    and exit 130. A second SIGINT raises ``KeyboardInterrupt`` at once (the last checkpoint
    written stays). The previous handlers, :class:`prompt_interrupts`' included, come back
    on exit. Does nothing outside the main thread."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, on_signal):
        self.on_signal = on_signal
        self.received = None
        self._saved = {}

    def _note(self, signum, frame):
        if self.received is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.received = signal.Signals(signum).name
        self.on_signal(self.received)

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        answered()
        for sig in self.SIGNALS:
            previous = signal.getsignal(sig)
            if previous is None or previous is signal.SIG_IGN:   # left alone, as it was
                continue
            self._saved[sig] = previous
            signal.signal(sig, self._note)    # CPython's C handler: no grace timer
        return self

    def __exit__(self, *exc):
        for sig, previous in self._saved.items():
            signal.signal(sig, previous)
            if sig == signal.SIGINT and previous is _answer_and_raise:
                _libc.signal(signal.SIGINT, _on_sigint.address)     # prompt_interrupts' again
        self._saved = {}
        return False
