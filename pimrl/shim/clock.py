"""The modelled clock of Python host programs: ``PIMRL_MODELLED_CLOCK=1`` for the ``dpu``
package, as ``host/src/dpu_shim.c`` gives it to C host programs.

With the variable set (and not ``0``), the host program's own clock is its measured host
time plus the *modelled* time of each DPU call in place of that call's wall time: a host
script that times ``dpus.exec()`` with ``time.time()`` prints what the cost model gives,
not how long the simulation took. The rules are the C shim's:

- a *simulator call* is each call of the ``dpu`` package (allocation, load, transfer,
  launch, sync, log, free, DPU iteration; :func:`simulator_call` marks them) and the import
  of the package (C: the simulator's start). A call made inside another (``DpuSet(binary=)``
  loads; a symbol attribute reads through ``copy``) is part of it, counted once. ``call``
  is not one: its callback is the host's code, and the calls it makes count one by one;
- its modelled time is what it added to the ledgers of every allocation the package made
  (:func:`modelled_total_s`, the C shim's source too: ``_pimrl_py_modelled_total``);
- the clocks shifted are the realtime and monotonic ones: ``time.time``,
  ``time.perf_counter``, ``time.monotonic``, their ``_ns`` forms and ``time.clock_gettime``
  (``_ns``) of the clock ids the C shim shifts. CPU-time clocks (``process_time``,
  ``thread_time``; C: ``clock()``, ``CLOCK_PROCESS_CPUTIME_ID``) are not: they measure the
  work this process did, the simulation's included, and the cost model has no CPU time of
  the host for a DPU call to put in its place. ``datetime.now()`` (C code reading the
  system clock directly; C: ``time(NULL)``) keeps the real clock;
- only the host program's own code sees the shifted clock. C shifts the calls made from the
  program's executable; here, the calls made from code that is not the standard library,
  not an installed package (``site-packages``, ``dist-packages``) and not pimrl or its
  ``dpu`` package: the script, ``python -c``, the modules beside it. The ``time`` module's
  functions are replaced by wrappers that look at the calling frame's file (one dict look-up
  per file, cached: about 0.2 us a call); pimrl's own timings (``*_measured_s``, the
  trainers' ``simulation_wall``), numba and every library keep the real clock;
- names bound before the clock starts (``from time import perf_counter`` above
  ``import dpu``) are rebound in the host's modules when it starts, at ``import dpu`` (or
  the first DPU call of a copy of the package's driver loaded by path);
- at exit both clocks are reported on stderr, in the C shim's words.

Unset, empty or ``0``: nothing is installed, the package's calls are not wrapped, every
clock is the real one.
"""
from __future__ import annotations

import atexit
import functools
import os
import site
import sys
import sysconfig
import threading
import time
from pathlib import Path

ENV = "PIMRL_MODELLED_CLOCK"

# The real clocks, taken before anything is replaced.
_real = {name: getattr(time, name) for name in (
    "time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
    "clock_gettime", "clock_gettime_ns")}
_mono = time.perf_counter                                   # CLOCK_MONOTONIC on Linux

#: The clock ids the C shim shifts (dpu_shim.c's clock_gettime): realtime, monotonic, raw,
#: boot time and the coarse forms (5 and 6 on Linux; Python names neither).
SHIFTED_CLOCK_IDS = frozenset(
    [getattr(time, n) for n in ("CLOCK_REALTIME", "CLOCK_MONOTONIC", "CLOCK_MONOTONIC_RAW",
                                "CLOCK_BOOTTIME") if hasattr(time, n)]
    + ([5, 6] if sys.platform.startswith("linux") else []))


def requested() -> bool:
    """What the C shim reads: the variable set, not empty and not ``0``."""
    value = os.environ.get(ENV, "")
    return value != "" and value != "0"


def modelled_total_s(allocations) -> float:
    """Modelled seconds booked so far by ``allocations`` (freed ones included): the source of
    both modelled clocks, the C shim's (``_pimrl_py_modelled_total``) and the ``dpu``
    package's."""
    return float(sum(a.ledger.modelled_total_s for a in allocations))


# ----------------------------------------------------------------------------- state
# As in dpu_shim.c: read without the lock by the clock wrappers, written under it.
_installed = False
_lock = threading.RLock()             # C: _pimrl_lock (one simulator call at a time)
_depth = 0                            # inside a simulator call
_offset = 0.0                         # seconds to take off the real clock
_enter_s = 0.0                        # real monotonic seconds at the call's start
_total = 0.0                          # modelled seconds of every allocation, last known
_call_wall = _call_modelled = _start_s = 0.0
_calls = 0
_allocations: list = []               # the package's live allocations
_freed_s = 0.0                        # modelled seconds of its freed ones (they book no more)


def _enter() -> None:
    global _depth, _enter_s
    _lock.acquire()
    if _depth == 0:
        _enter_s = _mono()
    _depth += 1


def _leave() -> None:
    global _depth, _total, _offset, _call_wall, _call_modelled, _calls, _freed_s
    try:
        _depth -= 1
        if _depth:
            return
        total = _freed_s + modelled_total_s(_allocations)
        freed = [a for a in _allocations if a.freed]
        if freed:                                # summed once, not at every later call
            _freed_s += modelled_total_s(freed)
            _allocations[:] = [a for a in _allocations if not a.freed]
        wall = _mono() - _enter_s                # reading the ledgers is the simulator's time
        modelled, _total = total - _total, total
        _offset += wall - modelled
        _call_wall += wall
        _call_modelled += modelled
        _calls += 1
    finally:
        _lock.release()


def simulator_call(fn):
    """Mark a ``dpu`` package call: with the modelled clock its wall time is replaced by the
    modelled time it books. Without it ``fn`` itself is returned (nothing added)."""
    if not requested():
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not _installed:
            install()
        _enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _leave()
    return call


def track(allocation) -> None:
    """An allocation the ``dpu`` package made: its ledger counts on the modelled clock."""
    if _installed:
        with _lock:
            _allocations.append(allocation)


# ----------------------------------------------------------------------------- whose clock
_PIMRL = Path(__file__).resolve().parents[1]


def _library_roots() -> tuple:
    roots = {str(_PIMRL), str(_PIMRL.parent / "dpu")}      # pimrl and its dpu package
    schemes = [sysconfig.get_paths(),
               sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})]
    for paths in schemes:
        roots.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except (AttributeError, OSError):           # a site module without them (embedded)
        pass
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)


_roots: tuple = ()
_host_files: dict = {}                          # file name -> True when it is the host's


def _is_host_file(name: str) -> bool:
    found = _host_files.get(name)
    if found is None:
        path = os.path.realpath(name)
        parts = path.split(os.sep)
        found = not (path.startswith(_roots) or "site-packages" in parts
                     or "dist-packages" in parts)
        _host_files[name] = found
    return found


def _is_host_code(frame) -> bool:
    """Whether the code running in ``frame`` is the host program's (see the module doc)."""
    name = frame.f_code.co_filename
    found = _host_files.get(name)
    if found is not None:
        return found
    if name.startswith("<"):                    # exec'd text: decided by its module's file
        if name.startswith("<frozen"):
            return False                        # the standard library's frozen modules
        module_file = frame.f_globals.get("__file__")
        return True if not module_file else _is_host_file(module_file)
    return _is_host_file(name)


def _shift(frame) -> float:
    """Seconds to take off a real clock reading made by the code of ``frame``."""
    if not (_depth or _offset) or not _is_host_code(frame):
        return 0.0
    return _offset + (_mono() - _enter_s if _depth else 0.0)


def _seconds_clock(real):
    @functools.wraps(real)
    def clock():
        t = real()
        s = _shift(sys._getframe(1))
        return t - s if s else t
    return clock


def _ns_clock(real):
    @functools.wraps(real)
    def clock_ns():
        t = real()
        s = _shift(sys._getframe(1))
        return t - round(s * 1e9) if s else t
    return clock_ns


@functools.wraps(_real["clock_gettime"])
def _clock_gettime(clk_id):
    t = _real["clock_gettime"](clk_id)
    if clk_id in SHIFTED_CLOCK_IDS:
        s = _shift(sys._getframe(1))
        if s:
            return t - s
    return t


@functools.wraps(_real["clock_gettime_ns"])
def _clock_gettime_ns(clk_id):
    t = _real["clock_gettime_ns"](clk_id)
    if clk_id in SHIFTED_CLOCK_IDS:
        s = _shift(sys._getframe(1))
        if s:
            return t - round(s * 1e9)
    return t


_wrappers = {name: (_ns_clock if name.endswith("_ns") else _seconds_clock)(real)
             for name, real in _real.items() if not name.startswith("clock_gettime")}
_wrappers["clock_gettime"] = _clock_gettime
_wrappers["clock_gettime_ns"] = _clock_gettime_ns


# ----------------------------------------------------------------------------- start, report
def report_line() -> str:
    """Both clocks, in the C shim's words (its mclock_report)."""
    wall = _mono() - _start_s
    return (f"pimrl modelled clock: measured (wall) {wall:.6f} s; modelled clock "
            f"{wall - _offset:.6f} s = host time outside the simulator {wall - _call_wall:.6f} s "
            f"+ modelled time of {_calls} simulator calls {_call_modelled:.6f} s "
            f"(their measured wall time {_call_wall:.6f} s)")


def _report() -> None:
    print(report_line(), file=sys.stderr, flush=True)


def install(started_s: float | None = None) -> bool:
    """Start the modelled clock if :func:`requested` (once; False otherwise): replace the
    ``time`` module's clocks, rebind the host's modules' names for them, report at exit.
    ``started_s`` (real ``perf_counter`` seconds): when the package's import began, which
    then counts as one simulator call of no modelled time, as the C shim counts the
    simulator's start."""
    global _installed, _roots, _start_s, _offset, _call_wall, _calls
    if not requested():
        return False
    with _lock:
        if _installed:
            return True
        _roots = _library_roots()
        now = _mono()
        _start_s = now if started_s is None else started_s
        if started_s is not None:
            _offset += now - started_s
            _call_wall += now - started_s
            _calls += 1
        originals = {id(real): name for name, real in _real.items()}
        for name, wrapper in _wrappers.items():
            setattr(time, name, wrapper)
        for module in list(sys.modules.values()):
            spaces = getattr(module, "__dict__", None)
            where = getattr(module, "__file__", None)
            if spaces is None or (where is None and getattr(module, "__name__", "") != "__main__") \
                    or (where is not None and not _is_host_file(where)):
                continue
            for key, value in list(spaces.items()):
                name = originals.get(id(value))
                if name is not None and value is _real[name]:
                    spaces[key] = _wrappers[name]
        atexit.register(_report)
        _installed = True
    return True


def state() -> dict:
    """The clock's figures so far (tests, diagnostics)."""
    return {"installed": _installed, "calls": _calls, "offset_s": _offset,
            "call_wall_s": _call_wall, "call_modelled_s": _call_modelled,
            "allocations": len(_allocations)}
