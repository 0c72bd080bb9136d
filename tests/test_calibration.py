"""The cost model against the published UPMEM figures (issue 7)."""
import json

import numpy as np
import pytest

from pimrl.calibration import bench
from pimrl.calibration.fit import fit_dma_alphas
from pimrl.cli import main
from pimrl.pim import cost
from pimrl.rlkernel import costs as kcost
from pimrl.pim.hardware import Hardware, get_hardware


@pytest.fixture(scope="module")
def calibration():
    """The whole calibration (`pimrl calibrate --json`): the tests that take it are slow."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["calibrate", "--json"])
    return rc, json.loads(out.getvalue())


@pytest.mark.slow
def test_calibrate_json_every_certain_figure_within_ten_percent(calibration):
    rc, result = calibration
    targets = [r for r in result["rows"] if not r["uncertain"]]
    assert len(targets) >= 30
    misses = [(r["figure"], r["rel_error"]) for r in targets if abs(r["rel_error"]) > 0.10]
    assert not misses, misses
    assert rc == 0 and result["summary"]["ok"]
    for r in result["rows"]:
        assert r["basis"] in ("fitted", "predicted")


@pytest.mark.slow
def test_arithmetic_saturates_at_eleven_tasklets(calibration):
    _, result = calibration
    curves = result["curves"]["arithmetic_mops"]
    for name, series in curves["series"].items():
        s = np.array(series)
        assert s[10] == pytest.approx(s.max()), name          # 11 tasklets reach the peak
        assert s[9] < 0.95 * s.max(), name                    # 10 do not
        assert np.all(np.diff(s[:11]) > 0), name


@pytest.mark.slow
def test_shape_checks_hold(calibration):
    _, result = calibration
    bad = [s for s in result["shapes"] if not s["ok"]]
    assert not bad, bad


@pytest.mark.slow
def test_transfer_curve_ordering_and_shape(calibration):
    _, result = calibration
    rd = result["curves"]["rank_vs_dpus"]["series"]
    for i, n in enumerate(result["curves"]["rank_vs_dpus"]["dpus"]):
        if n > 1:
            assert rd["serial_to"][i] < rd["parallel_to"][i] < rd["broadcast"][i]
            assert rd["serial_from"][i] < rd["parallel_from"][i]
    for direction, series in result["curves"]["xfer_32r"]["series"].items():
        peak = int(np.argmax(series))
        assert 0 < peak < len(series) - 1                      # rises, peaks, then falls
        assert np.all(np.diff(series[:peak + 1]) > 0)
    mram = result["curves"]["mram_mbps"]["series"]
    assert all(np.all(np.diff(v) > 0) for v in mram.values())


def test_dma_alphas_are_the_fit():
    hw = get_hardware()
    a, w, err = fit_dma_alphas(hw)
    assert (hw.dma_alpha_read, hw.dma_alpha_write) == (a, w)
    assert err < 0.05


def test_dpu_cycles_bounds():
    hw = Hardware()
    assert cost.dpu_cycles(hw, 100, 50, 1) == 50 + 11 * 100          # no overlap
    assert cost.dpu_cycles(hw, 1100, 0, 11) == 1100                  # saturated pipeline
    assert cost.dpu_cycles(hw, 1100, 0, 24) == 1100
    assert cost.dpu_cycles(hw, 10, 5000, 16) == 5000                 # DMA bound
    counts = np.zeros((2, len(kcost.COUNTERS)), dtype=np.int64)
    counts[:, kcost.C["updates"]] = 100
    counts[:, kcost.C["dma_reads"]] = 3
    counts[:, kcost.C["dma_read_bytes"]] = 3 * 2048
    costs = {k: 1.0 for k in ("updates", "non_terminal", "scanned_entries", "rng_draws",
                              "below_draws", "dma_reads")}
    one = kcost.kernel_cycles(hw, counts, costs, 1)
    instr = 100 + 100 + 3
    assert one[0] == pytest.approx(11 * instr + 3 * (hw.dma_alpha_read + 0.5 * 2048))
    dma = 3 * (hw.dma_alpha_read + 0.5 * 2048)
    # unlocked: the ring's equal lanes at once, the pipeline's three bounds
    assert kcost.kernel_cycles(hw, counts, costs, 16, "unlocked")[0] == pytest.approx(
        max(instr, dma, (dma + 11 * instr) / 16))


def test_revolving_pipeline_of_unequal_shares():
    """Tasklets at once on unequal shares (tasklet mode rows): while m run, each issues every
    max(11, m) cycles; a lone long share runs at 11 cycles an instruction; never below the
    pipeline's total, a tasklet's own chain or the DMA engine's total."""
    hw = Hardware()
    equal = np.full((1, 16), 100.0)
    assert kcost.revolving_cycles(hw, equal, np.zeros((1, 16)))[0] == 1600      # saturated
    assert kcost.revolving_cycles(hw, np.full((1, 4), 100.0), np.zeros((1, 4)))[0] == 1100
    shares = np.array([[100.0] * 15 + [400.0]])
    # 16 run the first 100 at 16 cycles each, then one runs 300 more at 11
    assert kcost.revolving_cycles(hw, shares, np.zeros((1, 16)))[0] == 16 * 100 + 11 * 300
    dma = np.zeros((1, 16))
    dma[0, -1] = 10_000.0                          # one tasklet waits for its transfers
    assert kcost.revolving_cycles(hw, shares, dma)[0] == 11 * 400 + 10_000
    counts = np.zeros((1, 4, len(kcost.COUNTERS)), np.int64)
    counts[0, :, kcost.C["updates"]] = [10, 10, 10, 40]
    counts[0, :, kcost.C["snapshot_rows"]] = [5, 0, 0, 0]
    counts[0, :, kcost.C["lane_epochs"]] = 1
    costs = {"updates": 10.0, "snapshot_rows": 20.0, "lane_epochs": 2.0}
    # the snapshot phase, then the updates, each at the revolving pipeline's pace
    snap = 11 * (5 * 20 + 2)
    upd = 11 * 400
    assert kcost.kernel_cycles(hw, counts.sum(1), costs, 4, "rows", counts)[0] == snap + upd


def test_transfers_really_go_through_the_ledger():
    hw = get_hardware()
    gbps, real = bench.transfer_gbps(hw, "parallel_to", 4096, 64)
    assert real
    expected = 4096 * 64 / cost.parallel_transfer_seconds(hw, 4096, 64, 1, True) / 1e9
    assert gbps == pytest.approx(expected)


@pytest.mark.slow
def test_cost_doc_is_not_stale():
    """Every region that needs no training run is current, and so are the sensitivity
    baseline rows of two variants (trained alone: the whole study's 24 runs are what
    `pimrl cost-doc --check` does). A change to the cost model or the kernels moves these
    rows; the study's parameter means follow from the same runs."""
    from pimrl.calibration.doc import DOC_PATH, calibration_regions, update_doc
    from pimrl.calibration.sensitivity import format_baseline, run_sensitivity

    assert update_doc(check=True, regions=calibration_regions()), \
        "docs/cost-model.md is stale: run `pimrl cost-doc`"
    sample = run_sensitivity(parameters=(), variants=[("q", "fp32", "ran"),
                                                      ("sarsa", "int32", "seq")])
    rows = format_baseline(sample, markdown=True).splitlines()[2:]
    text = DOC_PATH.read_text()
    assert len(rows) == 2
    for row in rows:
        assert row in text, f"docs/cost-model.md is stale ({row}): run `pimrl cost-doc`"


@pytest.mark.slow
def test_sensitivity_command_runs(capsys):
    rc = main(["sensitivity", "--transitions", "20000", "--param", "frequency_hz",
               "--param", "xfer_from_dpu_gbps_32r", "--json"])
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["baseline"]) == 12
    assert {p["parameter"] for p in result["parameters"]} == {"frequency_hz", "xfer_from_dpu_gbps_32r"}
    freq = next(p for p in result["parameters"] if p["parameter"] == "frequency_hz")
    assert freq["plus"]["vs_cpu_mean"] > 0 > freq["minus"]["vs_cpu_mean"]


def test_recosting_reproduces_the_trainer():
    from pimrl.calibration.sensitivity import record_runs, recost, varied
    from pimrl.data import generate_dataset
    from pimrl.learners.params import LearnerParams
    from pimrl.learners.variants import DEFAULT_TASKLET_MODE
    from pimrl.swiftrl.trainer import PimTrainer

    hw = get_hardware()
    records = generate_dataset("Taxi-v3", 20000, 1)
    runs = record_runs(records, 500, 6, hw, variants=[("q", "int32", "ran")], dpu_counts=(125,))
    assert sum(recost(runs[0], hw).values()) == pytest.approx(runs[0].modelled_s, rel=1e-12)
    hw2, _ = varied(hw, "frequency_hz", 1.2)
    direct = PimTrainer(LearnerParams(dtype="int32", sampling="ran",
                                      tasklet_mode=DEFAULT_TASKLET_MODE),
                        n_dpus=125, tasklets=16, hardware=hw2).fit(records, 500, 6)
    assert sum(recost(runs[0], hw2).values()) == pytest.approx(direct.timings_.modelled_total_s, rel=1e-12)
