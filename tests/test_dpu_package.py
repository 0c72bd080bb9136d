"""The `dpu` package (the SDK's Python API) against the simulator it runs on: the same
transfers through ``DpuSet.copy`` and through :mod:`pimrl.pim.system` leave the same bytes
and book the same modelled events, which is what lets pimrl's trainer drive DPUs through
the package; and the package's own contracts (errors, logs, attributes)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import dpu
from dpu import DpuError, DpuSet, simulator
from pimrl.pim import system
from pimrl.pim.programs import DiagProgram, load_program

PROFILE = "hardware=upmem-640"


def _system_twin(n):
    twin = system.dpu_alloc(n, PROFILE)
    twin.load(load_program("pimrl:diag", twin.alloc.hw))
    return twin


def test_package_is_pimrls():
    assert dpu.PIMRL_SIMULATOR is True and dpu.ALLOCATE_ALL == 0xFFFFFFFF


def test_lists_of_rows_match_scatter_and_gather_bit_for_bit():
    n = 70                                              # two ranks
    rows = np.random.default_rng(5).integers(0, 256, size=(n, 512), dtype=np.uint8)
    with DpuSet(nr_dpus=n, profile=PROFILE, binary="pimrl:diag") as dpus:
        twin = _system_twin(n)
        try:
            dpus.copy("buffer", list(rows))              # numpy rows: buffer protocol
            twin.scatter_to("buffer", 0, rows)
            with simulator.phase(dpus, "inter_dpu"), twin.phase("inter_dpu"):
                dpus.copy("words", bytes(range(256)))    # one buffer: a broadcast
                twin.broadcast_to("words", 0, np.arange(256, dtype=np.uint8))
            dpus.exec()
            twin.launch()
            back = [bytearray(512) for _ in dpus]
            dpus.copy(back, "buffer")
            assert np.array_equal(np.frombuffer(b"".join(back), np.uint8).reshape(n, 512),
                                  twin.gather_from("buffer", 0, 512))
            ours, theirs = simulator.ledger(dpus), twin.alloc.ledger
            assert ours.modelled_s == theirs.modelled_s
            assert [(e["category"], e["modelled_s"], e.get("dpus")) for e in ours.events] == \
                [(e["category"], e["modelled_s"], e.get("dpus")) for e in theirs.events]
            assert simulator.last_launch(dpus).cycles.shape == (n,)
        finally:
            twin.free()


def test_errors_logs_and_attributes():
    with DpuSet(nr_dpus=3, profile=PROFILE, binary="pimrl:diag") as dpus:
        with pytest.raises(DpuError) as err:
            dpus.copy("buffer", b"123")
        assert err.value.code == "DPU_ERR_INVALID_MRAM_ACCESS" and "multiples of 8" in str(err.value)
        with pytest.raises(DpuError, match="read-only"):
            dpus.copy([b"12345678"] * 3, "counter")
        with pytest.raises(DpuError, match="too small"):
            dpus.copy("words", b"1234", size=8)
        dpus.fault = bytearray(b"\x01\x00\x00\x00")     # symbol attribute write: the next run faults
        with pytest.raises(DpuError) as err:
            dpus.exec()
        assert err.value.code == "DPU_ERR_DPU_FAULT"
        dpus.fault = bytearray(4)
        logs = {d: io.StringIO() for d in dpus}
        dpus.exec(log=logs)
        assert [s.getvalue().splitlines()[0] for s in logs.values()] == \
            ["=== DPU#0x0 ===", "=== DPU#0x1 ===", "=== DPU#0x2 ==="]
        assert dpus.counter.uint64() == [2, 2, 2]
        assert isinstance(dpus.dpus()[1].counter.uint64(), int)
        sub = dpus.dpus()[0]
        sub.load(binary="pimrl:diag")                    # one DPU's program may differ now
        assert "counter" in sub._symbols and not dpus._symbols
        with pytest.raises(AttributeError):
            dpus.counter


def test_allocation_errors_are_dpu_errors():
    with pytest.raises(DpuError) as err:
        DpuSet(nr_dpus=10**6, profile=PROFILE)
    assert err.value.code == "DPU_ERR_ALLOCATION"
    with pytest.raises(DpuError):
        DpuSet(nr_dpus=1, profile="hardware=no-such-machine")
    with DpuSet(nr_dpus=1, profile=PROFILE + ",sgXferEnable=true,nrThreadsPerRank=4") as one:
        assert len(one) == 1 and isinstance(simulator.system_set(one), system.DpuSet)
    assert DiagProgram.WORDS == 64


def test_none_in_a_list_skips_that_dpu():
    with DpuSet(nr_dpus=4, profile=PROFILE, binary="pimrl:diag") as dpus:
        dpus.copy("buffer", bytes(range(16)))                    # every DPU
        dpus.copy("buffer", [b"\xff" * 16, None, bytearray(b"\xee" * 16), None])
        back = [bytearray(16) for _ in dpus]
        dpus.copy(back, "buffer")
        assert back == [b"\xff" * 16, bytes(range(16)), b"\xee" * 16, bytes(range(16))]
        partial = [None, bytearray(16), None, None]
        dpus.copy(partial, "buffer")
        assert partial[1] == bytes(range(16)) and partial[0] is None


def test_profile_selects_the_same_hardware():
    from pimrl.pim.hardware import get_hardware

    for hw in (get_hardware("upmem-640"),
               get_hardware("upmem-640", {"frequency_hz": 512.5e6, "n_ranks": 3}),
               get_hardware("upmem-v1b", {"dma_beta": 0.3, "serial_to_dpu_gbps": 1 / 3}),
               get_hardware("upmem-640", {"op_mul8": 2, "frequency_hz": 500e6})):
        text = simulator.profile(hw)
        assert system.machine_for_profile(text).hw == hw, text
        with DpuSet(nr_dpus=1, profile=text) as one:
            assert simulator.system_set(one).alloc.hw == hw


def test_rows_of_one_array_in_any_order_or_spacing():
    """Rows of one numpy array move in one copy; reordered, padded or mixed rows still land
    on their own DPU (each buffer is DPU i's, whatever array it belongs to)."""
    n = 6
    data = np.random.default_rng(9).integers(0, 256, size=(n, 24), dtype=np.uint8)
    with DpuSet(nr_dpus=n, profile=PROFILE, binary="pimrl:diag") as dpus:
        for rows in (list(data), list(data[::-1]), [r[:16] for r in data],
                     [data[i] if i % 2 else data[i].copy() for i in range(n)]):
            dpus.copy("buffer", rows, size=16)
            padded = np.zeros((n, 24), np.uint8)           # rows 24 apart, 16 bytes each
            for back in ([r[:16] for r in padded], [r[:16] for r in padded][::-1]):
                dpus.copy(back, "buffer")
                assert np.array_equal(np.stack(back), np.stack([r[:16] for r in rows]))
            contiguous = np.zeros((n, 16), np.uint8)
            dpus.copy(list(contiguous), "buffer")           # straight into the rows
            assert np.array_equal(contiguous, np.stack([r[:16] for r in rows]))


def test_host_rows_move_as_their_array_or_as_the_list_they_became():
    """``simulator.rows(matrix)`` is ``list(matrix)`` that the simulator moves in one copy;
    a list changed after it was made is read buffer by buffer, so what lands is what the
    list holds."""
    n = 6
    data = np.random.default_rng(4).integers(0, 256, size=(n, 16), dtype=np.uint8)
    with DpuSet(nr_dpus=n, profile=PROFILE, binary="pimrl:diag") as dpus:
        rows = simulator.rows(data)
        assert isinstance(rows, list) and len(rows) == n
        dpus.copy("buffer", rows)
        back = simulator.rows(np.zeros((n, 16), np.uint8))
        dpus.copy(back, "buffer")
        assert np.array_equal(back.matrix, data)
        other = np.full(16, 7, np.uint8)
        rows[2] = other                                  # the list no longer is the array
        dpus.copy("buffer", rows, size=8)
        dpus.copy(back, "buffer")
        expected = data.copy()
        expected[2, :8] = 7
        assert np.array_equal(back.matrix, expected)
        read_only = np.zeros((n, 16), np.uint8)
        read_only.flags.writeable = False
        with pytest.raises(DpuError, match="read-only"):
            dpus.copy(simulator.rows(read_only), "buffer")
