"""A fuzzer of the `dpu` package's public calls (issue 30, "What to build" 5): allocation,
load, copy, exec, log, symbols and free, driven by hypothesis with type-aware strategies
(huge and negative integers, nan and inf, wrong types, empty and non-UTF-8 names, odd
buffer sizes and offsets, damaged program files).

The property: every call either works or raises the package's documented error, a
:class:`dpu.DpuError` (argument errors are also TypeError or ValueError); never another
exception, a crash of the process or a hang; and a program file that is not byte for byte
the one built is never loaded. The fast subset runs a small, fixed (derandomized) example
budget; the ``slow`` variants raise it and draw new examples every run.
"""
from __future__ import annotations

import io
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HAVE_C
from dpu import ALLOCATE_ALL, DpuError, DpuSet, DpuSymbol

#: 128 DPUs at most, whatever nr_dpus asks (ALLOCATE_ALL included): memory stays bounded.
PROFILE = "hardware=upmem-640,n_ranks=2"
FAST = settings(max_examples=40, deadline=None, derandomize=True, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
SLOW = settings(FAST, max_examples=600, derandomize=False)

OK_C = r"""
#include <stdint.h>
#include <defs.h>
uint64_t out;
uint64_t arg;
__mram_noinit uint8_t table[4096];
int main(void)
{
    if (me() == 0)
        out = arg + 1;
    return 0;
}
"""


def _built_program():
    """A C program built once (None without a compiler): its path and bytes."""
    from pimrl.dpurt import cc

    if not HAVE_C:
        return None
    import tempfile

    global _BUILD_DIR
    _BUILD_DIR = tempfile.TemporaryDirectory(prefix="pimrl-fuzz-dpu-")   # removed at exit
    d = _BUILD_DIR.name
    src = os.path.join(d, "ok.c")
    with open(src, "w") as f:
        f.write(OK_C)
    out = cc.build([src], os.path.join(d, "ok.dpu"), nr_tasklets=4)
    return str(out), out.read_bytes()


_BUILD_DIR = None
PROGRAM = _built_program()

# ------------------------------------------------------------------------------ strategies
huge_ints = st.sampled_from([-1, 0, 1, 7, 8, 9, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32,
                             2 ** 63 - 1, 2 ** 63, 2 ** 64, -2 ** 63, 10 ** 30, ALLOCATE_ALL])
ints = st.one_of(st.integers(-16, 4200), huge_ints, st.integers(-2 ** 80, 2 ** 80))
junk = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(max_size=6), st.binary(max_size=6), st.lists(st.integers(0, 3), max_size=3),
                 st.builds(object), st.just(np.int64(8)), st.just(np.float32(1.5)),
                 st.just(np.uint8(255)), st.complex_numbers(max_magnitude=10))
numberish = st.one_of(ints, junk)
non_utf8 = st.binary(min_size=1, max_size=8).map(lambda b: b.decode("utf-8", "surrogateescape"))
names = st.one_of(st.sampled_from(["buffer", "words", "counter", "fault", "iram_code",
                                   "__sys_used_mram_end", "out", "arg", "table"]),
                  st.text(max_size=12), non_utf8, st.just(""), st.just("a" * 300),
                  st.just("buffer\0"))
symbols = st.one_of(names, st.tuples(names, st.tuples(ints, ints)), junk)


def _numpy(dtype, n):
    return np.zeros(n, dtype)


buffers = st.one_of(
    st.integers(0, 5000).map(bytearray),
    st.binary(max_size=600),
    st.integers(0, 600).map(lambda n: memoryview(bytearray(n))),
    st.builds(_numpy, st.sampled_from([np.uint8, np.int32, np.float64, np.uint64, np.bool_]),
              st.integers(0, 300)),
    st.just(np.zeros(256, np.uint8)[::2]),                     # not contiguous
    st.just(np.zeros((4, 64), np.uint8)),                       # 2-D
    st.just(np.zeros(64, np.uint8)).map(lambda a: (a.setflags(write=False), a)[1]),
    junk,
)
hosts = st.one_of(buffers, st.lists(st.one_of(st.none(), buffers), max_size=5))
streams = st.one_of(st.none(), st.builds(io.StringIO), st.builds(io.BytesIO),
                    st.lists(st.one_of(st.none(), st.builds(io.StringIO)), max_size=4), junk)
timeouts = st.one_of(st.none(), st.sampled_from([0, 0.5, 30, math.inf, -1, math.nan]),
                     st.floats(min_value=0.2, max_value=1e9), junk)


def _mutated(data: bytes, positions, cut):
    out = bytearray(data)
    for p in positions:
        out[p % len(out)] ^= 0xA5
    return bytes(out[:cut]) if cut else bytes(out)


def _binaries():
    options = [st.just("pimrl:diag"), st.just("pimrl:diag?cycles=5"), st.just("pimrl:nope"),
               st.just("pimrl:swiftrl?states=a"), st.just(""), st.just("/"), st.just("/no/such"),
               st.binary(max_size=300), st.binary(max_size=300).map(lambda b: b"\x7fELF" + b),
               names, junk, st.just(b"pimrl:diag")]
    if PROGRAM is not None:
        path, data = PROGRAM
        options += [st.just(path), st.just(data),
                    st.builds(_mutated, st.just(data), st.lists(st.integers(0, len(data)), min_size=1,
                                                                  max_size=4), st.just(0)),
                    st.builds(_mutated, st.just(data), st.just([]), st.integers(1, len(data) - 1))]
    return st.one_of(*options)


binaries = _binaries()
ops = st.one_of(
    st.tuples(st.just("copy_to"), symbols, hosts, st.one_of(st.none(), numberish), numberish),
    st.tuples(st.just("copy_from"), symbols, hosts, st.one_of(st.none(), numberish), numberish),
    st.tuples(st.just("exec"), streams, timeouts),
    st.tuples(st.just("load"), binaries),
    st.tuples(st.just("get_symbol"), st.one_of(names, junk)),
    st.tuples(st.just("set_attr"), names, hosts),
    st.tuples(st.just("get_attr"), names),
    st.tuples(st.just("log"), streams),
    st.tuples(st.just("members"), st.integers(0, 3)),
    st.just(("sync",)),
    st.just(("free",)),
)


# ------------------------------------------------------------------------------ the property
def _documented(call, *args, **kwargs):
    """Run a public call: it works or raises DpuError; anything else fails the test."""
    try:
        return call(*args, **kwargs), None
    except DpuError as exc:
        return None, exc


def _host(value):
    return list(value) if isinstance(value, list) else value


def _symbol(spec):
    if isinstance(spec, tuple):
        return DpuSymbol(spec[0], spec[1])
    return spec


def _run(dpus: DpuSet, op) -> None:
    kind = op[0]
    if kind in ("copy_to", "copy_from"):
        _, sym, host, size, offset = op

        def copy():
            device = _symbol(sym)
            if kind == "copy_to":
                dpus.copy(device, _host(host), size=size, offset=offset)
            else:
                dpus.copy(_host(host), device, size=size, offset=offset)
        _documented(copy)
    elif kind == "exec":
        _documented(dpus.exec, log=op[1], timeout=op[2])
    elif kind == "load":
        binary = op[1]
        program, err = _documented(dpus.load, binary=binary)
        if program is not None and PROGRAM is not None and isinstance(binary, bytes) \
                and binary[:4] == b"\x7fELF":
            assert binary == PROGRAM[1], "a damaged program file was loaded"
    elif kind == "get_symbol":
        program, _ = _documented(dpus.load, binary="pimrl:diag")
        if program is not None:
            _documented(program.get_symbol, op[1])
    elif kind == "set_attr":
        if op[1] in dpus._symbols:                      # a symbol attribute: a copy
            _documented(setattr, dpus, op[1], _host(op[2]))
    elif kind == "get_attr":
        if op[1] in dpus._symbols:
            _documented(getattr, dpus, op[1])
    elif kind == "log":
        _documented(dpus.log, op[1])
    elif kind == "members":
        members, _ = _documented(dpus.dpus)
        if members:
            sub = members[op[1] % len(members)]
            _documented(sub.copy, "words", bytearray(8))
            _documented(sub.exec)
    elif kind == "sync":
        _documented(dpus.sync)
    elif kind == "free":
        _documented(dpus.free)


def _session(sequence, nr_dpus=3):
    dpus, err = _documented(DpuSet, nr_dpus=nr_dpus, profile=PROFILE, binary="pimrl:diag")
    assert err is None, err
    try:
        for op in sequence:
            _run(dpus, op)
    finally:
        _documented(dpus.free)


def _allocate(nr_dpus, nr_ranks, profile, binary, log):
    kwargs = {}
    if nr_dpus is not None:
        kwargs["nr_dpus"] = nr_dpus
    if nr_ranks is not None:
        kwargs["nr_ranks"] = nr_ranks
    if profile is None or (isinstance(profile, str) and "=" not in profile):
        profile = PROFILE + "," + profile if profile else PROFILE   # at most 128 DPUs
    dpus, err = _documented(DpuSet, profile=profile, binary=binary, log=log, **kwargs)
    if dpus is not None:
        try:
            assert len(dpus) <= 128
            _documented(dpus.exec)
        finally:
            _documented(dpus.free)


profiles = st.one_of(st.just(PROFILE), st.text(max_size=10).filter(lambda t: "=" not in t),
                     non_utf8.filter(lambda t: "=" not in t),
                     st.sampled_from([PROFILE + ",timeout=5", PROFILE + ",timeout=-1",
                                      PROFILE + ",timeout=nan", PROFILE + ",frequency_hz=nan",
                                      PROFILE + ",nrThreadPerPool=8", "backend=hardware"]),
                     junk)
alloc_args = (st.one_of(st.none(), numberish), st.one_of(st.none(), numberish), profiles,
              st.one_of(st.none(), binaries), streams)


# ------------------------------------------------------------------------------ the tests
@FAST
@given(st.lists(ops, min_size=1, max_size=8))
def test_fuzz_calls_on_a_set(sequence):
    _session(sequence)


@FAST
@given(*alloc_args)
def test_fuzz_the_constructor(nr_dpus, nr_ranks, profile, binary, log):
    _allocate(nr_dpus, nr_ranks, profile, binary, log)


@pytest.mark.slow
@SLOW
@given(st.lists(ops, min_size=1, max_size=20))
def test_fuzz_calls_on_a_set_longer(sequence):
    _session(sequence)


@pytest.mark.slow
@SLOW
@given(*alloc_args)
def test_fuzz_the_constructor_longer(nr_dpus, nr_ranks, profile, binary, log):
    _allocate(nr_dpus, nr_ranks, profile, binary, log)
