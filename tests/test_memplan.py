"""The memory plan before any work (pimrl/memplan.py): parts that add up, growth with the
records and the DPUs, ``pimrl train --max-memory`` refusing up front, and the plan against
the measured peak resident set of real runs."""
import json
import os
import resource
import subprocess
import sys

import pytest

from conftest import REPO
from pimrl.cli import main
from pimrl.data.format import save_dataset
from pimrl.data.generate import generate_dataset
from pimrl.memplan import GiB, MiB, parse_bytes, plan_memory

S, A = 500, 6        # Taxi


def _plans():
    yield plan_memory(1_000_000, S, A, n_dpus=2000)
    yield plan_memory(64_000_000, S, A, n_dpus=2000)
    yield plan_memory(3_000_000, S, A, n_dpus=[125, 500, 2000])
    yield plan_memory(3_000_000, S, A, n_dpus=64, aggregate="sync:4:weighted")
    yield plan_memory(3_000_000, S, A, n_dpus=64, aggregate="own:4", dtype="int32")
    yield plan_memory(3_000_000, S, A, n_dpus=64, partition="shuffle", tasklet_mode="ring")
    yield plan_memory(3_000_000, S, A, n_dpus=64, source="generated")
    yield plan_memory(3_000_000, S, A, n_dpus=64, device="upmem")
    yield plan_memory(3_000_000, S, A, backend="reference")
    yield plan_memory(3_000_000, S, A, backend="cpu", partitions=2)


def test_parts_add_up_to_the_peak_phase():
    for plan in _plans():
        assert all(v >= 0 for v in plan.parts.values())
        assert sum(plan.parts.values()) == plan.total
        assert plan.total == max(plan.phases.values()) == plan.phases[plan.peak_phase]
        d = plan.as_dict()
        assert d["total_planned_bytes"] == sum(d["parts_planned_bytes"].values())
        json.dumps(d)


def test_plan_grows_with_records_and_dpus():
    # past the mapping's hand-back the peak is the push: the matrix and the MRAM pages,
    # 16 B per record each
    a, b = (plan_memory(n, S, A, n_dpus=2000) for n in (64_000_000, 128_000_000))
    assert a.peak_phase == b.peak_phase == "push"
    assert 32 * 64_000_000 <= b.total - a.total <= 1.01 * 32 * 64_000_000
    for part in ("push_buffer", "mram_pages"):
        assert b.parts[part] == pytest.approx(2 * a.parts[part], rel=0.01)
    assert b.mram_bytes_per_dpu == 16 * 64_000 and a.wram_bytes_per_dpu == b.wram_bytes_per_dpu
    # below it the mapping stays: the push holds three copies
    small = plan_memory(8_000_000, S, A, n_dpus=2000)
    assert small.parts["dataset"] >= 16 * 8_000_000
    # more DPUs: the same records (the push buffer pads a little), more WRAM and tables
    few, many = (plan_memory(4_000_000, S, A, n_dpus=d) for d in (1000, 2000))
    assert many.phases["run"] > few.phases["run"]
    assert many.mram_bytes_per_dpu * 2 == few.mram_bytes_per_dpu
    r_few, r_many = few.as_dict(), many.as_dict()
    assert r_many["phases_planned_bytes"]["prep"] == pytest.approx(
        r_few["phases_planned_bytes"]["prep"], rel=0.02)
    # an aggregator with visit counts gathers more
    assert plan_memory(4_000_000, S, A, n_dpus=2000, aggregate="weighted").phases["run"] > \
        many.phases["run"]
    # generated records are never handed back; shuffling keeps a copy and the mapping
    big = 64_000_000
    assert plan_memory(big, S, A, n_dpus=2000, source="generated").total > \
        plan_memory(big, S, A, n_dpus=2000).total + 0.9 * 16 * big
    assert plan_memory(big, S, A, n_dpus=2000, partition="shuffle").total > \
        plan_memory(big, S, A, n_dpus=2000).total + 16 * big


def test_parse_bytes():
    assert parse_bytes("8G") == 8 * GiB and parse_bytes("512M") == 512 * MiB
    assert parse_bytes("1.5GiB") == 3 * GiB // 2 and parse_bytes("4096") == 4096
    assert parse_bytes("2t") == 2 << 40 and parse_bytes("64KB") == 64 << 10
    for bad in ("8Q", "", "G", "-1G", "0"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


@pytest.fixture(scope="module")
def taxi_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("memplan") / "taxi.pimrl"
    save_dataset(path, generate_dataset("Taxi-v3", 20_000, 0), "Taxi-v3", 0, "uniform")
    return path


def test_max_memory_refuses_up_front(capsys, tmp_path):
    """Too small a --max-memory: exit 2, one line naming the largest part and what shrinks
    it, before anything is generated or read."""
    args = ["train", "--env", "Taxi-v3", "--transitions", "100000000", "--backend", "pim",
            "--dpus", "2000", "--save-q", str(tmp_path / "q.npy")]
    assert main(args + ["--max-memory", "2G"]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.strip().splitlines()) == 1
    err = cap.err
    assert "--max-memory 2.00 GiB" in err and "planned" in err
    # the records thrice at the push: generated, in the push buffer, in MRAM
    assert "largest part is simulated MRAM" in err and "fewer --transitions" in err
    assert "more --dpus do not help" in err
    assert "pimrl data generate) would save the generated records'" in err
    assert not (tmp_path / "q.npy").exists()
    # a file: the push buffer or the MRAM pages, which more DPUs do not shrink
    assert main(["train", str(REPO / "nonexistent.pimrl"), "--max-memory", "1M"]) == 2
    assert "nonexistent.pimrl" in capsys.readouterr().err     # the load's own error
    assert main(["train", "--env", "Taxi-v3", "--transitions", "1000", "--max-memory",
                 "8Q"]) == 2
    assert "--max-memory" in capsys.readouterr().err
    assert main(["train", "--online", "--env", "Taxi-v3", "--steps", "1000",
                 "--max-memory", "1G"]) == 2
    assert "--max-memory" in capsys.readouterr().err


def test_max_memory_names_the_part_that_matters(taxi_file, capsys):
    assert main(["train", str(taxi_file), "--backend", "pim", "--dpus", "2000",
                 "--max-memory", "64M"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fewer --dpus" in err, err


def test_train_prints_and_gives_the_plan(taxi_file, capsys):
    args = ["train", str(taxi_file), "--backend", "pim", "--dpus", "8", "--epochs", "1",
            "--no-eval"]
    assert main(args + ["--max-memory", "8G"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("memory plan: ") and "planned" in first
    assert "MiB planned" in out.splitlines()[-1] or "GiB planned" in out.splitlines()[-1]
    assert main(args + ["--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    plan = got["memory_plan"]
    assert plan["total_planned_bytes"] == sum(plan["parts_planned_bytes"].values())
    assert plan["mram_bytes_per_dpu"] == 16 * 2500
    assert got["peak_rss_measured_bytes"] > 0


def test_data_info_gives_the_default_plans(taxi_file, capsys):
    assert main(["data", "info", str(taxi_file)]) == 0
    out = capsys.readouterr().out
    assert "memory plan of pimrl train:" in out and "--backend pim (64 DPUs)" in out
    assert main(["data", "info", str(taxi_file), "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["memory_plan"]
    assert len(plans) == 2 and all(p["total_planned_bytes"] > 0 for p in plans.values())


# --------------------------------------------------------------- the plan against the OS's
def _train(args, limit=None):
    """``pimrl train ARGS --json`` in a fresh process (under RLIMIT_AS ``limit``): its report."""
    env = dict(os.environ, NUMBA_NUM_THREADS="2")

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    p = subprocess.run([sys.executable, "-m", "pimrl", "train", *args, "--json"],
                       capture_output=True, text=True, env=env, cwd=REPO,
                       preexec_fn=cap if limit else None)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


@pytest.fixture(scope="module")
def _compiled_kernels(taxi_file):
    """The plan leaves out numba's compilation (a cold cache adds 20-110 MiB to a run's
    peak: measured 273 MiB against 166 warm): the measured runs' own command, on a file
    (a dataset read from a file compiles its checks, which a generated one skips), runs
    once first and fills the cache."""
    for source in ([str(taxi_file)], ["--env", "Taxi-v3", "--transitions", "20000"]):
        p = subprocess.run([sys.executable, "-m", "pimrl", "train", *source, "--backend",
                            "pim", "--dpus", "64", "--epochs", "1", "--json"],
                           capture_output=True, text=True,
                           env=dict(os.environ, NUMBA_NUM_THREADS="2"), cwd=REPO)
        assert p.returncode == 0, p.stderr[-2000:]


#: Address space (not memory) that a run reserves beyond its resident set: the mapped
#: libraries (llvmlite's LLVM among them), glibc's malloc arenas, the threads' stacks.
#: Measured on this project's VM (2 numba threads): a small run (20,000 Taxi transitions,
#: 64 DPUs, plan 167 MiB) has a VmPeak of 593 MiB, about 430 MiB above its plan (a limit
#: too close fails with "can't start new thread"). Without a limit its VmPeak is 4.7 GiB: the simulated MRAM
#: pool reserves every page of its 64 banks (MAP_NORESERVE), which RLIMIT_AS refuses and
#: the pool then grows as written. Twice the need, so that the test checks the plan's order
#: of size, not the allocator's moods.
VIRTUAL_MARGIN = 768 * MiB
#: How far the resident set of one and the same run moves with the page cache: a shared
#: library counts as far as it is mapped, and a fault maps a whole folio of a file's cached
#: pages. LLVM's libllvmlite.so (170 MiB) measured 68 MiB resident in a run from a venv
#: installed hours before, 102 MiB from one just installed (as CI's is), the run otherwise
#: byte for byte the same (209 against 166 MiB in all; /proc/self/smaps); with the suite in
#: two processes (pytest-xdist) a fresh clone's CI measured 215 MiB. The plan's baseline
#: cannot know it; a small run (167 MiB planned) is held to this, a large one to 20 % (the
#: plan's precision is held by test_plan_matches_the_measured_peak, at 3M transitions).
SHARED_LIBRARY_SLACK = 64 * MiB


def test_small_run_fits_its_plan_under_an_address_space_limit(taxi_file, _compiled_kernels):
    """A run accepted by its plan runs under RLIMIT_AS = plan + the address space numba and
    LLVM reserve (the limit counts virtual memory, so the margin is generous: it checks that
    nothing outside the plan's order of size is touched, not the plan's precision); and the
    measured peak resident set lies within 20 % of the plan, or SHARED_LIBRARY_SLACK."""
    args = [str(taxi_file), "--backend", "pim", "--dpus", "64", "--epochs", "1"]
    plan = plan_memory(20_000, S, A, n_dpus=64)
    got = _train(args, plan.total + VIRTUAL_MARGIN)
    assert got["memory_plan"]["total_planned_bytes"] == plan.total
    assert abs(got["peak_rss_measured_bytes"] - plan.total) <= max(0.2 * plan.total,
                                                                  SHARED_LIBRARY_SLACK), (
        got["peak_rss_measured_bytes"] / MiB, plan.total / MiB)


@pytest.mark.parametrize("n, dpus", [(3_000_000, 2000),
                                     pytest.param(20_000_000, 2000, marks=pytest.mark.slow)])
def test_plan_matches_the_measured_peak(tmp_path, n, dpus, _compiled_kernels):
    """Mid-size runs: the plan within 20 % of the measured peak resident set (3M, about 5 s:
    the mapping kept; 20M, slow: past DROP_MAPPED_BYTES, handed back before the push).
    Measured on this project's VM: 3M 0.324 GiB planned, 0.326 measured; 20M 0.772 and 0.773."""
    path = tmp_path / "taxi.pimrl"
    assert main(["data", "generate", "--env", "Taxi-v3", "--n", str(n), "--seed", "0",
                 "--out", str(path)]) == 0
    got = _train([str(path), "--backend", "pim", "--dpus", str(dpus), "--epochs", "1",
                  "--no-eval"])
    planned = got["memory_plan"]["total_planned_bytes"]
    assert got["peak_rss_measured_bytes"] == pytest.approx(planned, rel=0.2), (
        got["peak_rss_measured_bytes"] / 2**20, planned / 2**20)
