"""PrIM's own microbenchmark programs through pimrl (`pimrl calibrate --prim`).

pimrl ships none of PrIM's code. Without a checkout (``PIMRL_PRIM_DIR`` or pimrl's cache;
CI has no network) the tests that need the programs skip, saying so; the core timing
behaviour is tested with the project's own small DPU programs in tests/test_dpurt.py.
"""
from __future__ import annotations

import pytest

from pimrl.calibration import prim
from pimrl.calibration import published as P
from pimrl.cli import main as cli_main


def _root_or_skip():
    try:
        return prim.find_prim(fetch=False)
    except prim.PrimUnavailable as exc:
        pytest.skip(str(exc))


def test_absent_prim_is_a_clear_message(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PIMRL_PRIM_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(prim.PrimUnavailable, match="--prim DIR"):
        prim.find_prim(fetch=False)
    with pytest.raises(prim.PrimUnavailable, match="no PrIM microbenchmarks there"):
        prim.find_prim(tmp_path)
    assert cli_main(["calibrate", "--prim", "--no-fetch"]) == 2
    assert "pass --prim DIR" in capsys.readouterr().err


def test_post_processing_reads_prims_own_lines():
    out = ("NR_TASKLETS\t16\tBL\t10\nDPU cycles  = 6.45e+06 cc\n"
           "CPU-DPU Time (ms): 1.5\tCPU-DPU Bandwidth (GB/s): 6.5\n"
           "DPU-CPU Time (ms): 2.0\tDPU-CPU Bandwidth (GB/s): 4.25\n")
    assert prim.dpu_cycles(out) == 6.45e6
    assert prim.bandwidths(out) == {"to": 6.5, "from": 4.25}
    with pytest.raises(ValueError, match="DPU cycles"):
        prim.dpu_cycles("nothing printed")
    names = [n for n, _ in prim.suite()]
    assert {r.bench for _, r in prim.suite()} == set(prim.BENCHMARKS)
    assert len(names) == len(set(names))


def test_prim_programs_unmodified_match_the_published_figures():
    """Arithmetic throughput, MRAM bandwidth and STREAM COPY-DMA, as PrIM's programs report
    them when run on the DPU runtime: within 10 % of the published measurements."""
    root = _root_or_skip()
    result = prim.run_suite(root, only={"arith-int32-add-16", "mram-read-2048", "stream-copy-16"})
    rows = {r["figure"]: r for r in result["rows"]}
    assert rows["INT32 ADD, 16 tasklets"]["published"] == P.ARITHMETIC_MOPS[("int32", "add")][0]
    assert len(rows) == 3
    for r in rows.values():
        assert r["within_target"], r
        assert r["model"] == pytest.approx(r["published"], rel=P.TARGET_REL_ERROR)


def hardware_latency_cycles(size: int, hw) -> float:
    """The single-tasklet MRAM read latency PrIM's MRAM-Latency gives on hardware: the
    published 2,048-B bandwidth as cycles a transfer, extended to ``size`` with PrIM's
    beta (0.5 cycle/B)."""
    return 2048 * hw.frequency_hz / (P.MRAM_MBPS_2048["read"] * 1e6) - hw.dma_beta * (2048 - size)


def test_mram_latency_program_matches_the_model_at_every_size():
    """PrIM's MRAM-Latency (mram_read, 1 tasklet) at 8, 256 and 2,048 B: the cycles a
    transfer it measures on the DPU runtime equal the cost model's (its timed loop counted
    as :data:`MRAM_LATENCY_TIMED_INSTRUCTIONS`) and are within 10 % of the hardware's."""
    from pimrl.pim.hardware import get_hardware

    root = _root_or_skip()
    hw = get_hardware()
    result = prim.run_suite(root, hw, only={f"mram-read-{s}" for s in (8, 256, 2048)})
    rows = {r["figure"]: r for r in result["rows"] + result["other"]}
    for size in (8, 256, 2048):
        r = rows[f"mram_read {size:,} B, 1 tasklet"]
        assert r["runtime"] == pytest.approx(r["model"], rel=0.02), r
        cycles = size * hw.frequency_hz / (r["runtime"] * 1e6)
        assert cycles == pytest.approx(hardware_latency_cycles(size, hw), rel=P.TARGET_REL_ERROR)
