"""The balance (experiments/balance.py) and the host's modelled time in ``pimrl train``:
``--host-threads``, own:R's modelled merges, and the crossover of host and kernel time."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from pimrl.cli import main
from pimrl.pim.host import PRIM_HOST, host_owned_seconds

ROOT = Path(__file__).resolve().parents[1]


def _balance():
    spec = importlib.util.spec_from_file_location("balance", ROOT / "experiments" / "balance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train(capsys, *extra):
    assert main(["train", "--env", "FrozenLake-v1", "--transitions", "2000", "--backend", "pim",
                 "--dpus", "4", "--no-eval", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)["runs"][0]


# ----------------------------------------------------------------------------- --host-threads
@pytest.mark.parametrize("threads, expected", [
    # mean of 4 tables of 16 x 4 = 64 entries, once. Compute: 4 * 64 entries * 0.4 ns (one
    # cycle at 2.5 GHz) / threads; memory: 5 * 64 * 4 B / 76.8 GB/s = 16.67 ns.
    (1, 4 * 64 * 0.4e-9),               # 102.4 ns, compute bound
    (4, 4 * 64 * 0.4e-9 / 4),           # 25.6 ns, compute bound
    (16, 5 * 64 * 4 / 76.8e9),          # 6.4 ns of compute: the memory bound, 16.67 ns
])
def test_host_threads_set_the_modelled_aggregation_as_the_host_model_says(capsys, threads,
                                                                           expected):
    run = _train(capsys, "--host-threads", str(threads))
    assert run["host_threads"] == threads
    assert run["host_aggregation_modelled_s"] == pytest.approx(expected, rel=1e-12)
    assert run["energy_host_aggregation_time"] == (
        f"modelled ({PRIM_HOST.name}, {threads} thread{'s' * (threads > 1)})")


def test_host_threads_enter_the_energy(capsys):
    one, four = _train(capsys, "--host-threads", "1"), _train(capsys, "--host-threads", "4")
    dt = one["host_aggregation_modelled_s"] - four["host_aggregation_modelled_s"]
    assert dt == pytest.approx(4 * 64 * 0.4e-9 * 0.75)
    # the host at full power and the 4 DPUs' rank (8 chips) idle while it aggregates
    de = one["energy"]["energy_host_modelled_j"] - four["energy"]["energy_host_modelled_j"]
    assert de == pytest.approx(dt * (PRIM_HOST.active_power_w + 8 * 0.1))
    assert one["energy"]["energy_dpu_kernel_modelled_j"] == four["energy"]["energy_dpu_kernel_modelled_j"]


def test_host_threads_default_is_the_hosts_cores(capsys):
    assert _train(capsys)["host_threads"] == PRIM_HOST.cores


def test_host_threads_apply_to_the_pim_backend_only(capsys):
    assert main(["train", "--env", "FrozenLake-v1", "--transitions", "200", "--no-eval",
                 "--host-threads", "2"]) == 2
    assert "--host-threads" in capsys.readouterr().err


# ----------------------------------------------------------------------------- own:R
def test_host_owned_seconds_known_answer():
    # 4 DPUs, 16 states x 4 actions, 13 words of v_out a DPU, 3 rounds, 1 thread:
    # a merge handles 4 * 13 + 16 = 68 entries (27.2 ns; memory 68 * 4 B / 76.8 GB/s = 3.5 ns),
    # the assembly 64 (25.6 ns; memory 64 * 12 B / 76.8 GB/s = 10 ns).
    t = host_owned_seconds(PRIM_HOST, 4, 16, 4, 13, 3, threads=1)
    assert t["merge_s"] == pytest.approx(68 * 0.4e-9)
    assert t["assembly_s"] == pytest.approx(64 * 0.4e-9)
    assert t["total_s"] == pytest.approx(2 * 68 * 0.4e-9 + 64 * 0.4e-9)
    # 4 threads: the merges' compute falls to 6.8 ns, the assembly meets its memory bound
    assert host_owned_seconds(PRIM_HOST, 4, 16, 4, 13, 3, threads=4)["total_s"] == \
        pytest.approx(2 * 68 * 0.4e-9 / 4 + 64 * 12 / 76.8e9)


def test_own_energy_is_modelled_and_repeatable(capsys):
    runs = [_train(capsys, "--aggregate", "own:4", "--epochs", "4") for _ in range(2)]
    a, b = runs
    assert a["energy"] == b["energy"]                   # nothing measured in it
    assert a["host_aggregation_modelled_s"] == b["host_aggregation_modelled_s"] > 0
    assert a["energy_host_aggregation_time"].startswith("modelled")
    one = _train(capsys, "--aggregate", "own:4", "--epochs", "4", "--host-threads", "1")
    assert one["host_aggregation_modelled_s"] > a["host_aggregation_modelled_s"]


# ----------------------------------------------------------------------------- the study
def test_crossover_is_the_first_dpu_count_where_the_host_exceeds_the_kernel():
    balance = _balance()
    dpus = [64, 128, 256, 512, 1024]
    kernel = [8.0, 4.0, 4.0, 2.0, 1.0]
    host = [1.0, 2.0, 4.0, 8.0, 16.0]        # equal at 256: not yet past it
    assert balance.crossover(dpus, host, kernel) == 512
    assert balance.crossover(dpus, [0.1] * 5, kernel) is None
    assert balance.crossover(dpus, [9.0] * 5, kernel) == 64


def test_extrapolated_crossover_meets_power_laws():
    balance = _balance()
    dpus = [256, 512]
    host = [n * 1e-6 for n in dpus]             # ~ N
    kernel = [1.0 / n for n in dpus]            # ~ 1/N: they meet at N = 1000
    assert balance.extrapolated_crossover(dpus, host, kernel) == pytest.approx(1000)
    assert balance.extrapolated_crossover(dpus, kernel, host) is None


def test_full_run_scales_the_tiny_run():
    balance = _balance()
    ph = {"kernel_per_unit_s": 2.0, "latency_per_launch_s": 0.5, "first_push_s": 1.0,
          "exchange_s": 3.0, "last_gather_s": 4.0, "out_words": 10}
    mean = balance.full_run("mean", ph, 64, 1000, 20)
    assert (mean["kernel_s"], mean["transfers_s"], mean["rounds"]) == (40.5, 5.0, 1)
    own = balance.full_run("own", ph, 64, 1000, 20)
    assert (own["kernel_s"], own["transfers_s"], own["rounds"]) == (50.0, 62.0, 20)
    online = balance.full_run("online", ph, 64, 1000, 20)      # ceil(20,000 / 64) = 313 steps
    assert online["kernel_s"] == 313 * 2.0 + 20 * 0.5
