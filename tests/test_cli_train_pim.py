"""``pimrl train --backend pim`` on the command line: its JSON and scaling text, hardware and
operation overrides, too many DPUs, tasklet modes."""
import json

import numpy as np
import pytest

from pimrl.cli import main
from pimrl.pim.hardware import get_hardware


def test_train_pim_cli_json_and_scaling_text(capsys, tmp_path):
    q = tmp_path / "q.npy"
    assert main(["train", "--env", "Taxi-v3", "--transitions", "50000", "--backend", "pim",
                 "--dpus", "125", "--tasklets", "11", "--dtype", "int32", "--sampling", "str",
                 "--json", "--save-q", str(q)]) == 0
    out = json.loads(capsys.readouterr().out)
    run = out["runs"][0]
    assert set(run["modelled_s"]) == {"cpu_dpu", "dpu_kernel", "inter_dpu", "dpu_cpu"}
    assert run["modelled_s"]["dpu_kernel"] > 0 and "host_aggregation" in run["measured_s"]
    assert np.load(q).shape == (500, 6)
    assert main(["train", "--env", "Taxi-v3", "--transitions", "50000", "--backend", "pim",
                 "--dpus", "125,250,500"]) == 0
    text = capsys.readouterr().out
    assert "modelled" in text and "measured" in text and "efficiency" in text
    assert "Parallel efficiency of the total" in text
    assert main(["train", "--env", "Taxi-v3", "--transitions", "100", "--backend", "pim",
                 "--dpus", "10", "--hw", "bogus=1"]) == 2
    assert "bogus" in capsys.readouterr().err


def test_operation_overrides_reach_the_kernel_time(capsys):
    """--hw op_<name>=N reaches the DPUs' cost (the what-if of the README's tour): an 8x8
    multiply at two instructions slows the INT32 kernel, and nothing else."""
    args = ["train", "--env", "Taxi-v3", "--transitions", "20000", "--backend", "pim",
            "--dpus", "8", "--dtype", "int32", "--no-eval", "--json"]
    times = []
    for extra in ([], ["--hw", "op_mul8=2"]):
        assert main(args + extra) == 0
        times.append(json.loads(capsys.readouterr().out)["runs"][0]["modelled_s"])
    assert times[1]["dpu_kernel"] > times[0]["dpu_kernel"] * 1.05
    assert times[1]["cpu_dpu"] == times[0]["cpu_dpu"]


@pytest.mark.parametrize("override,message", [
    ("n_ranks=abc", "n_ranks='abc' must be an integer"),
    ("n_ranks=1.5", "must be an integer"),
    ("dma_beta=-1", "dma_beta=-1 must be positive"),
    ("xfer_sizes=3", "xfer_sizes=3 must be a tuple"),
    ("op_int64_mul=x", "op_int64_mul='x' must be a number"),
    ("nonsense=1", "unknown hardware parameter 'nonsense'"),
])
def test_bad_hardware_overrides_are_clear_errors(capsys, override, message):
    assert main(["train", "--env", "Taxi-v3", "--transitions", "200", "--backend", "pim",
                 "--dpus", "2", "--hw", override, "--no-eval"]) == 2
    assert message in capsys.readouterr().err


def test_more_dpus_than_the_machine_has(capsys):
    assert main(["train", "--env", "Taxi-v3", "--transitions", "5000", "--backend", "pim",
                 "--dpus", "3000", "--no-eval"]) == 2
    assert "upmem-2556 has 2556 functional DPUs" in capsys.readouterr().err
    assert get_hardware("upmem-2556", {"n_ranks": 64.0}).n_ranks == 64


def test_tasklet_mode_cli(capsys):
    """--tasklet-mode on pimrl train: its JSON names the mode, the block and, unlocked, the
    conflicts; online refuses the modes it does not run, in one line."""
    base = ["train", "--env", "CliffWalking-v1", "--transitions", "3000", "--backend", "pim",
            "--dpus", "3", "--tasklets", "4", "--epochs", "2", "--json", "--no-eval"]
    for mode in ("rows", "unlocked", None):
        assert main(base + (["--tasklet-mode", mode] if mode else [])) == 0
        run = json.loads(capsys.readouterr().out)["runs"][0]
        assert run["tasklet_mode"] == (mode or "rows") and run["block_bytes"] == 2048
        assert (run["conflicts"] is not None) == (mode == "unlocked")
    assert main(["train", "--env", "CliffWalking-v1", "--online", "--steps", "100", "--dpus",
                 "2", "--tasklet-mode", "rows"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "ring order" in err
    assert main(["train", "--env", "CliffWalking-v1", "--transitions", "1000",
                 "--tasklet-mode", "rows"]) == 2
    assert "--tasklet-mode only applies to --backend gpu or pim" in capsys.readouterr().err
