"""Every hardware preset runs, and each differs from the default only where its parameters
say (upmem-v1b: 400 MHz, 63,488 B of WRAM, at most 16 tasklets)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pimrl.cli import main
from pimrl.pim.hardware import PRESETS, get_hardware


def _train(capsys, tmp_path, hardware, *extra):
    q = tmp_path / f"{hardware}.npy"
    rc = main(["train", "--env", "FrozenLake-v1", "--transitions", "5000", "--backend", "pim",
               "--dpus", "8", "--hardware", hardware, "--no-eval", "--json", "--save-q", str(q),
               *extra])
    assert rc == 0
    return json.loads(capsys.readouterr().out)["runs"][0], np.load(q)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_trains_the_same_table(name, tmp_path, capsys):
    run, q = _train(capsys, tmp_path, name)
    base_run, base_q = _train(capsys, tmp_path, "upmem-2556")
    assert run["hardware"] == name
    assert np.array_equal(q, base_q)                  # hardware changes times, never results
    hw, base = get_hardware(name), get_hardware()
    # Same counted cycles: the kernel's modelled time, less a launch's fixed latencies (one
    # launch here), scales with the clock alone.
    def cycles_s(r, h):
        return r["modelled_s"]["dpu_kernel"] - h.launch_latency_s - h.sync_latency_s

    assert cycles_s(run, hw) == pytest.approx(
        cycles_s(base_run, base) * base.frequency_hz / hw.frequency_hz, rel=1e-9)


def test_upmem_v1b_limits(tmp_path, capsys):
    assert main(["train", "--env", "FrozenLake-v1", "--transitions", "500", "--backend", "pim",
                 "--dpus", "2", "--hardware", "upmem-v1b", "--tasklets", "24"]) == 2
    assert "upmem-v1b runs at most 16 tasklets; got 24" in capsys.readouterr().err
    # 841 x 4 table and visit counts: fit the default's 64 KiB WRAM beside 16 tasklets' 2 KiB
    # buffers, not v1b's. With that block asked for, the error names the need; left to
    # itself, the trainer picks a block that fits.
    base = ["train", "--env", "FrozenLake-v1:size=29,seed=1", "--transitions", "2000",
            "--backend", "pim", "--dpus", "2", "--no-eval", "--tasklet-mode", "ring",
            "--aggregate", "weighted"]
    args = base + ["--block-bytes", "2048", "--hardware"]
    assert main(args + ["upmem-2556"]) == 0
    capsys.readouterr()
    assert main(args + ["upmem-v1b"]) == 2
    err = capsys.readouterr().err
    assert "WRAM overflow" in err and "need 64168 B; WRAM holds 63488 B" in err
    assert main(base + ["--hardware", "upmem-v1b", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["block_bytes"] < 2048
