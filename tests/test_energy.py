"""The energy model (pimrl.pim.energy), the CPU baseline's energy (pimrl.baselines.energy:
RAPL through a fake sysfs, and the modelled fallback) and the energy in ``pimrl train``'s
report."""
from __future__ import annotations

import json

import pytest

from pimrl.baselines.energy import (
    DEFAULT_PACKAGE_W, Rapl, cpu_energy, cpu_model_name, delta_uj, package_power,
)
from pimrl.cli import main
from pimrl.pim.cost import CATEGORIES, TimeBreakdown
from pimrl.pim.energy import (
    COMPONENTS, ENERGY_SOURCES, ledger_energy, ledger_phases, pim_energy, powered_chips,
)
from pimrl.pim.hardware import get_hardware

HW = get_hardware()                  # upmem-2556: 64 DPUs a rank


# ----------------------------------------------------------------------------- the PIM model
def test_energy_of_given_phase_times_is_the_hand_computed_sum():
    # 100 DPUs power 2 ranks = 128 DPUs = 16 chips: idle 16 x 0.1 = 1.6 W; while the kernel
    # runs 1.6 + 100 x (1.2 - 0.1) / 8 = 15.35 W. A byte moved: 2 accesses x 20 pJ/bit x 8.
    # The host: 2 x 85 W while transferring and aggregating, a quarter of that while waiting.
    seconds = {"cpu_dpu": 0.002, "dpu_kernel": 0.010, "inter_dpu": 0.001, "dpu_cpu": 0.003}
    e = pim_energy(seconds, HW, 100, transfer_bytes={"cpu_dpu": 1e6}, host_aggregation_s=0.004)
    assert e["energy_cpu_dpu_modelled_j"] == pytest.approx(1.6 * 0.002 + 1e6 * 320e-12)
    assert e["energy_dpu_kernel_modelled_j"] == pytest.approx(15.35 * 0.010)
    assert e["energy_inter_dpu_modelled_j"] == pytest.approx(1.6 * 0.001)
    assert e["energy_dpu_cpu_modelled_j"] == pytest.approx(1.6 * 0.003)
    assert e["energy_host_modelled_j"] == pytest.approx(170 * (0.006 + 0.004) + 42.5 * 0.010
                                                        + 1.6 * 0.004)
    assert e["energy_total_modelled_j"] == pytest.approx(
        0.00352 + 0.1535 + 0.0016 + 0.0048 + 2.1314)
    assert list(e) == [f"energy_{c}_modelled_j" for c in COMPONENTS] + ["energy_total_modelled_j"]


def test_zero_time_gives_only_transfer_energy():
    e = pim_energy({c: 0.0 for c in CATEGORIES}, HW, 2000,
                   transfer_bytes={"cpu_dpu": 1000, "dpu_cpu": 500})
    assert e["energy_total_modelled_j"] == pytest.approx(1500 * 320e-12)
    assert e["energy_host_modelled_j"] == 0.0 and e["energy_dpu_kernel_modelled_j"] == 0.0


def test_whole_ranks_are_powered():
    assert powered_chips(HW, 1) == 8            # one rank of 64 DPUs: 8 chips
    assert powered_chips(HW, 64) == 8 and powered_chips(HW, 65) == 16
    assert powered_chips(HW, 2556) == 320       # the PrIM server: 40 ranks


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="unknown time categories"):
        pim_energy({"host": 1.0}, HW, 4)
    with pytest.raises(ValueError):
        pim_energy({"cpu_dpu": -1.0}, HW, 4)


def _ledger():
    led = TimeBreakdown()
    led.add("cpu_dpu", 1.0, "push", bytes_per_dpu=100, dpus=2)
    led.add("dpu_kernel", 2.0, "launch", dpus=2)
    led.add("dpu_cpu", 1.0, "gather", bytes_per_dpu=40, dpus=2)
    return led


def test_ledger_energy_equals_the_energy_of_its_categories_and_bytes():
    e = ledger_energy(_ledger(), HW, 2, host_aggregation_s=0.5)
    assert e == pytest.approx(pim_energy({"cpu_dpu": 1.0, "dpu_kernel": 2.0, "dpu_cpu": 1.0}, HW, 2,
                                         transfer_bytes={"cpu_dpu": 200, "dpu_cpu": 80},
                                         host_aggregation_s=0.5))


def test_a_prefix_of_the_ledger_is_pro_rated_event_by_event():
    seconds, nbytes, kind = ledger_phases(_ledger(), until_s=2.0)
    assert kind == "modelled"
    assert seconds == {"cpu_dpu": 1.0, "dpu_kernel": 1.0, "inter_dpu": 0.0, "dpu_cpu": 0.0}
    assert nbytes["cpu_dpu"] == 200 and nbytes["dpu_cpu"] == 0
    seconds, nbytes, _ = ledger_phases(_ledger(), until_s=3.5)
    assert seconds["dpu_cpu"] == pytest.approx(0.5) and nbytes["dpu_cpu"] == pytest.approx(40)
    # the whole run, and past its end, is the whole ledger
    whole = ledger_energy(_ledger(), HW, 2)
    assert ledger_energy(_ledger(), HW, 2, until_s=4.0) == pytest.approx(whole)
    assert ledger_energy(_ledger(), HW, 2, until_s=99.0) == pytest.approx(whole)
    # energy grows with the prefix
    totals = [ledger_energy(_ledger(), HW, 2, until_s=t)["energy_total_modelled_j"]
              for t in (0.0, 0.5, 1.0, 2.5, 4.0)]
    assert totals == sorted(totals) and totals[0] == 0.0


def test_a_measured_ledger_prices_its_measured_phases():
    led = TimeBreakdown(modelled_s={}, measured_s={"cpu_dpu": 1.0, "dpu_kernel": 2.0,
                                                   "host_aggregation": 9.0})
    seconds, nbytes, kind = ledger_phases(led)
    assert kind == "measured" and seconds["dpu_kernel"] == 2.0 and seconds["dpu_cpu"] == 0.0
    assert not any(nbytes.values())
    with pytest.raises(ValueError):
        ledger_phases(led, until_s=1.0)


def test_every_energy_figure_has_a_source_and_the_doc_table_is_current():
    from pimrl.calibration.doc import DOC_PATH, energy_table, render

    for name, (value, unit, source, certainty) in ENERGY_SOURCES.items():
        assert value > 0 and unit and source
        assert certainty in ("published", "derived", "uncertain")
    text = DOC_PATH.read_text()
    assert render(text, {"energy": energy_table()}) == text, \
        "docs/cost-model.md's energy table is stale: run `pimrl cost-doc`"


# ----------------------------------------------------------------------------- RAPL
def _zone(root, name, uj, max_uj=262143328850):
    d = root / name
    d.mkdir()
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d


def test_rapl_delta_handles_wrap_around():
    assert delta_uj(100, 250, 1000) == 150
    assert delta_uj(900, 50, 1000) == 150          # wrapped once at 1000
    assert delta_uj(7, 7, 1000) == 0


def test_rapl_reads_packages_of_a_fake_sysfs_and_handles_wrap(tmp_path):
    p0 = _zone(tmp_path, "intel-rapl:0", 262143328850 - 1_000_000)
    p1 = _zone(tmp_path, "intel-rapl:1", 5_000_000)
    _zone(tmp_path, "intel-rapl:0:0", 123)          # a subzone (core): not a package
    (tmp_path / "dtpm").mkdir()                      # not RAPL
    rapl = Rapl(tmp_path)
    assert rapl.available and sorted(rapl.zones) == ["intel-rapl:0", "intel-rapl:1"]
    before = rapl.read()
    (p0 / "energy_uj").write_text("2000000\n")       # wrapped: 1 J before the wrap, 2 J after
    (p1 / "energy_uj").write_text("5500000\n")       # 0.5 J
    assert rapl.joules(before, rapl.read()) == pytest.approx(3.5)


def test_rapl_without_powercap_or_permission_is_unavailable(tmp_path):
    assert not Rapl(tmp_path / "nothing").available
    d = tmp_path / "intel-rapl:0"
    d.mkdir()
    (d / "max_energy_range_uj").write_text("1000\n")  # energy_uj unreadable (absent)
    assert not Rapl(tmp_path).available


# ----------------------------------------------------------------------------- CPU baseline
def test_package_power_by_model_name(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Silver 4215 CPU @ 2.50GHz\n")
    assert cpu_model_name(info) == "Intel(R) Xeon(R) Silver 4215 CPU @ 2.50GHz"
    assert package_power(cpu_model_name(info)) == (85.0, "Xeon Silver 4215")
    assert package_power("AMD EPYC 7763 64-Core Processor")[0] == 280.0
    watts, name = package_power("AMD EPYC")        # a VM's model name: the stated default
    assert watts == DEFAULT_PACKAGE_W and "default" in name
    assert package_power(None)[0] == DEFAULT_PACKAGE_W
    assert cpu_model_name(tmp_path / "absent") is None


def test_cpu_energy_modelled_and_measured():
    energy, basis = cpu_energy(2.0, 0.5, model_name="AMD EPYC 7742 64-Core Processor")
    assert energy == {"energy_train_modelled_j": 450.0, "energy_aggregate_modelled_j": 112.5,
                      "energy_total_modelled_j": 562.5}
    assert basis.startswith("modelled: 225 W package power (EPYC 7742)")
    energy, basis = cpu_energy(2.0, 0.5, measured_j={"train": 10.0, "aggregate": 1.0})
    assert energy["energy_total_measured_j"] == 11.0 and basis.startswith("measured: RAPL")
    assert all(k.endswith("_measured_j") for k in energy)


def test_cpu_baseline_reads_rapl_where_it_can(tmp_path, monkeypatch):
    import numpy as np

    import pimrl.baselines.cpu as cpu
    from pimrl.data import generate_dataset
    from pimrl.envs import make
    from pimrl.learners.params import LearnerParams

    zone = _zone(tmp_path, "intel-rapl:0", 1000)

    class CountingRapl(Rapl):          # every reading a joule on from the last
        def read(self):
            value = int((zone / "energy_uj").read_text()) + 1_000_000
            (zone / "energy_uj").write_text(str(value))
            return super().read()

    monkeypatch.setattr(cpu, "Rapl", lambda: CountingRapl(tmp_path))
    env = make("FrozenLake-v1")
    recs = generate_dataset(env, 200, 0)
    res = cpu.cpu_baseline(recs, env.n_states, env.n_actions, LearnerParams(epochs=1), threads=1)
    assert res.energy_measured_j == {"train": pytest.approx(1.0), "aggregate": pytest.approx(1.0)}
    assert np.isfinite(res.seconds)


# ----------------------------------------------------------------------------- pimrl train
@pytest.mark.parametrize("aggregate", ["sync:8", "own:8"])
def test_pimrl_train_json_has_the_energy_of_each_pim_run(capsys, aggregate):
    # non-slippery FrozenLake reaches the optimum within the 8 rounds (round 5, 6 today)
    assert main(["train", "--env", "FrozenLake-v1:slippery=0", "--transitions", "4000",
                 "--backend", "pim", "--dpus", "2", "--aggregate", aggregate, "--epochs", "8",
                 "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    energy = run["energy"]
    assert set(energy) == {f"energy_{c}_modelled_j" for c in COMPONENTS} | {"energy_total_modelled_j"}
    assert energy["energy_total_modelled_j"] == pytest.approx(
        sum(v for k, v in energy.items() if k != "energy_total_modelled_j"))
    assert energy["energy_dpu_kernel_modelled_j"] > 0
    # own:R's merges, like the averaging, are modelled (pimrl.pim.host.host_owned_seconds)
    assert run["host_aggregation_modelled_s"] > 0
    assert run["energy_host_aggregation_time"].startswith("modelled")
    assert run["host_threads"] == 16
    assert run["quality_round"] is not None and run["quality_round"] < len(run["rounds"])
    assert 0 < run["energy_to_quality_modelled_j"] < energy["energy_total_modelled_j"]


def test_pimrl_train_prints_one_energy_line(capsys):
    assert main(["train", "--env", "FrozenLake-v1", "--transitions", "2000", "--backend", "pim",
                 "--dpus", "4", "--no-eval"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("energy")]
    assert len(lines) == 1 and "mJ modelled" in lines[0]


def test_pimrl_train_cpu_has_energy(capsys):
    assert main(["train", "--env", "FrozenLake-v1", "--transitions", "2000", "--backend", "cpu",
                 "--threads", "1", "--no-eval", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    kind = "measured" if out["energy_basis"].startswith("measured") else "modelled"
    assert set(out["energy"]) == {f"energy_{p}_{kind}_j" for p in ("train", "aggregate", "total")}
    assert out["energy"][f"energy_total_{kind}_j"] >= 0
    assert main(["train", "--env", "FrozenLake-v1", "--transitions", "2000", "--backend", "cpu",
                 "--threads", "1", "--no-eval"]) == 0
    text = capsys.readouterr().out
    assert any(ln.strip().startswith("energy") and kind in ln for ln in text.splitlines())


# ----------------------------------------------------------------------------- NVML
#: A stand-in for the driver's libnvidia-ml.so.1: the entry points pimrl calls, with their
#: signatures; one board whose counter advances 250 mJ a reading, or "Not Supported" where
#: FAKE_NVML_OLD is set (a board before Volta).
FAKE_NVML = r"""
#include <stdlib.h>
#include <string.h>
static unsigned long long counter = 1000;
static int up;
const char *nvmlErrorString(int rc) { return rc == 3 ? "Not Supported" : "Unknown Error"; }
int nvmlInit_v2(void) { up = 1; return 0; }
int nvmlShutdown(void) { up = 0; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) { *h = (void *)&counter; return i ? 2 : 0; }
int nvmlDeviceGetHandleByUUID(const char *uuid, void **h) {
    *h = (void *)&counter; return strcmp(uuid, "GPU-fake") ? 6 : 0; }
int nvmlDeviceGetName(void *h, char *name, unsigned n) { strncpy(name, "Fake H200", n); return 0; }
int nvmlDeviceGetTotalEnergyConsumption(void *h, unsigned long long *mj) {
    if (!up || h != &counter) return 999;
    if (getenv("FAKE_NVML_OLD")) return 3;
    *mj = counter; counter += 250; return 0; }
"""


@pytest.fixture(scope="module")
def fake_nvml(tmp_path_factory):
    import shutil
    import subprocess

    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build the NVML stand-in")
    d = tmp_path_factory.mktemp("nvml")
    (d / "nvml.c").write_text(FAKE_NVML)
    lib = d / "libnvidia-ml.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(d / "nvml.c")], check=True)
    return str(lib)


def test_nvml_meter_reads_the_board_counter_by_uuid(fake_nvml):
    from pimrl.baselines.nvml import NvmlMeter, energy_per_run

    with NvmlMeter("GPU-fake", library=fake_nvml) as meter:
        assert meter.available and meter.name == "Fake H200", meter.reason
        ticks = iter([0.0, 0.4, 0.8, 1.2, 1.2])     # a clock: 3 runs fill the 1 s window
        runs = []
        joules, n, seconds = energy_per_run(lambda: runs.append(1), meter, 1.0,
                                            clock=lambda: next(ticks))
        # read before (r), then after 3 runs (r + 250 mJ): 0.25 J over 3 runs
        assert (n, len(runs), seconds) == (3, 3, 1.2)
        assert joules == pytest.approx(0.25 / 3)


def test_nvml_meter_says_why_it_cannot_read(fake_nvml, monkeypatch, tmp_path):
    from pimrl.baselines.nvml import NvmlMeter

    missing = NvmlMeter(library=str(tmp_path / "libnvidia-ml.so.1"))
    assert not missing.available and "NVML not found" in missing.reason
    other = NvmlMeter("GPU-other", library=fake_nvml)
    assert not other.available and "the board GPU-other" in other.reason
    monkeypatch.setenv("FAKE_NVML_OLD", "1")
    old = NvmlMeter(library=fake_nvml)
    assert not old.available and "Not Supported (NVML code 3)" in old.reason
    monkeypatch.setenv("PIMRL_NVML_LIB", str(tmp_path / "nowhere.so"))
    assert "nowhere.so" in NvmlMeter().reason

