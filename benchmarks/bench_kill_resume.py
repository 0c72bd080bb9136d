"""SIGKILL a long training mid-run, resume it, and compare with a run never killed.

    python benchmarks/bench_kill_resume.py [--dpus 2000] [--transitions 1000000]
        [--rounds 20] [--kill-after 7] [--schemes sync,own,online] [--json]

For each scheme (``sync``: SwiftRL's averaging, ``sync:R``; ``own``: state-owned
``own:R``; ``online``: online shared agents, ``sync:R``; Taxi-v3, ``--dpus`` DPUs):

1. ``pimrl train ... --save-q full.npy`` runs to its end;
2. the same command with ``--checkpoint DIR`` runs in a child process until its checkpoint
   records ``--kill-after`` rounds, and is then killed with SIGKILL (nothing of it survives
   but the files it wrote: the checkpoint is written atomically, so it is the last complete
   one);
3. ``--resume DIR --save-q resumed.npy`` finishes the run.

It prints the round the kill came after, each run's wall time (measured) and whether the
resumed table equals the uninterrupted one byte for byte, with the modelled times of both
reports. Exit status 1 if any differs.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def command(scheme: str, args) -> list:
    base = [sys.executable, "-m", "pimrl", "train", "--env", "Taxi-v3", "--dpus",
            str(args.dpus), "--json", "--no-eval"]
    if scheme == "online":
        return base + ["--online", "--steps", str(args.online_steps),
                       "--aggregate", f"sync:{args.rounds}"]
    aggregate = f"sync:{args.rounds}" if scheme == "sync" else f"own:{args.rounds}"
    return base + ["--backend", "pim", "--transitions", str(args.transitions),
                   "--epochs", str(args.rounds), "--aggregate", aggregate]


def saved_round(folder: Path) -> int:
    """The round of the checkpoint in ``folder`` (0 while there is none)."""
    path = folder / "checkpoint.npz"
    try:
        import numpy as np

        with np.load(path, allow_pickle=False) as z:
            return int(json.loads(bytes(z["meta"]).decode())["round"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return 0


def run(cmd) -> tuple[dict, float]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[2:])}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return json.loads(p.stdout), time.perf_counter() - t0


def one(scheme: str, args, work: Path) -> dict:
    import numpy as np

    cmd = command(scheme, args)
    full, full_s = run(cmd + ["--save-q", str(work / f"{scheme}-full.npy")])
    folder = work / f"{scheme}-ck"
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd + ["--checkpoint", str(folder)], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    killed_at = 0
    while child.poll() is None:
        killed_at = saved_round(folder)
        if killed_at >= args.kill_after:
            child.send_signal(signal.SIGKILL)
            break
        time.sleep(0.02)
    child.wait()
    killed_s = time.perf_counter() - t0
    if child.returncode != -signal.SIGKILL:
        raise SystemExit(f"{scheme}: the run ended (exit {child.returncode}) before round "
                         f"{args.kill_after}'s checkpoint; give a smaller --kill-after")
    killed_at = saved_round(folder)            # the last complete checkpoint
    resumed, resumed_s = run(cmd + ["--resume", str(folder),
                                    "--save-q", str(work / f"{scheme}-resumed.npy")])
    a = np.load(work / f"{scheme}-full.npy")
    b = np.load(work / f"{scheme}-resumed.npy")

    def modelled(report):
        return (report if scheme == "online" else report["runs"][0])["modelled_total_s"]
    return {"scheme": scheme, "command": " ".join(cmd[2:]), "killed_after_round": killed_at,
            "rounds": args.rounds, "full_measured_s": full_s, "killed_measured_s": killed_s,
            "resume_measured_s": resumed_s, "q_equal_bytes": a.tobytes() == b.tobytes(),
            "full_modelled_s": modelled(full), "resumed_modelled_s": modelled(resumed)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dpus", type=int, default=2000)
    ap.add_argument("--transitions", type=int, default=1_000_000)
    ap.add_argument("--online-steps", type=int, default=2000, help="online: steps per DPU")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--kill-after", type=int, default=7, help="kill once this round is saved")
    ap.add_argument("--schemes", default="sync,own,online")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not 1 <= args.kill_after < args.rounds:
        ap.error("--kill-after must be at least 1 and below --rounds")
    rows = []
    with tempfile.TemporaryDirectory(prefix="pimrl-kill-") as tmp:
        for scheme in args.schemes.split(","):
            rows.append(one(scheme.strip(), args, Path(tmp)))
            if not args.json:
                r = rows[-1]
                print(f"{r['scheme']:>7}: killed (SIGKILL) after round {r['killed_after_round']} "
                      f"of {r['rounds']}; full {r['full_measured_s']:.1f} s, killed run "
                      f"{r['killed_measured_s']:.1f} s, resume {r['resume_measured_s']:.1f} s "
                      f"(measured); Q-table equal byte for byte: {r['q_equal_bytes']}; "
                      f"modelled total {r['full_modelled_s'] * 1e3:.3f} / "
                      f"{r['resumed_modelled_s'] * 1e3:.3f} ms", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    ok = all(r["q_equal_bytes"] and r["full_modelled_s"] == r["resumed_modelled_s"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 1))
    sys.exit(main())
