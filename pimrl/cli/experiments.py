"""``pimrl scale | plot | demo``: the study, its figures, and the demo (experiments/demo.toml)
in one go."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pimrl.resources import EXPERIMENTS

#: The demo config shipped with pimrl (experiments/demo.toml).
DEMO_CONFIG = EXPERIMENTS / "demo.toml"


def _scale(config, out, as_json: bool, progress: bool = True, executor: str = "local",
           workers: int | None = None, threads_per_worker: int | None = None) -> int:
    from pimrl.cli import UserError
    from pimrl.experiments.config import ConfigError
    from pimrl.experiments.runner import SweepInterrupted, run_scale

    if not Path(config).exists():
        raise UserError(f"{config}: no such config file")
    try:
        report = run_scale(config, out, progress=progress, executor=executor, workers=workers,
                           threads_per_worker=threads_per_worker)
    except ConfigError as exc:
        raise UserError(str(exc)) from None
    except (SweepInterrupted, KeyboardInterrupt) as exc:
        print(f"\npimrl scale: interrupted ({str(exc) or 'Ctrl-C'}); finished rows are saved in "
              f"{Path(out) / 'results.csv'}. Run the same command again to resume.",
              file=sys.stderr)
        return 130
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(f"{report.total_rows} rows in {report.files['results']} ({report.computed_rows} "
              f"computed, {report.reused_rows} resumed, {len(report.failed_rows)} failed) in "
              f"{report.wall_s:.1f} s on the {report.executor} executor; meta: {report.files['meta']}")
        print(f"GPU: {report.gpu_status}")
    if report.failed_rows:
        print(f"pimrl scale: {len(report.failed_rows)} row(s) failed (listed in "
              f"{report.files['meta']}); the others are saved. Run the same command again to "
              f"retry them.", file=sys.stderr)
        return 1
    return 0


def _cmd_scale(args) -> int:
    return _scale(args.config, args.out, args.json, progress=not args.no_progress,
                  executor=args.executor, workers=args.workers,
                  threads_per_worker=args.threads_per_worker)


def _cmd_plot(args) -> int:
    from pimrl.experiments.plots import plot_results

    written = plot_results(args.dir)
    if args.json:
        print(json.dumps({"files": written}, indent=2))
    else:
        print(f"wrote {len(written)} files under {Path(args.dir) / 'figures'}:")
        for p in written:
            print(f"  {p}")
    return 0


def _cmd_demo(args) -> int:
    from pimrl.cli import UserError
    from pimrl.experiments.plots import plot_results

    config = Path(args.config) if args.config else DEMO_CONFIG
    if not config.exists():
        raise UserError(f"{config}: demo config not found (run from a pimrl checkout, or pass "
                        f"--config experiments/demo.toml)")
    t0 = time.perf_counter()
    rc = _scale(str(config), args.out, False)
    if rc:
        return rc
    written = plot_results(args.out)
    pngs = [p for p in written if p.endswith(".png")]
    tables = [Path(p) for p in written if p.endswith(".md")]
    for p in tables:                       # the answers first, then where the figures are
        print(f"\n{p}:\n{p.read_text()}")
    print(f"demo done in {time.perf_counter() - t0:.0f} s. Figures (PNG; SVG beside them):")
    for p in pngs:
        print(f"  {p}")
    # The demo's data fits this machine's caches; the shipped study goes past them.
    for name, what in (("scale_data.md", "64 Ki to 256 Mi transitions, 1 MiB to 4 GiB of "
                        "records"),
                       ("scale_tables.md", "Q-tables of 12 KB to 36 MB, 16 Mi transitions")):
        shipped = EXPERIMENTS / "scale" / name
        if shipped.exists():
            text = shipped.read_text()
            cross = text[text.find("Crossover"):] if "Crossover" in text else text
            print(f"\nBeyond the caches ({what}: the shipped scale study, {shipped}; figures "
                  f"in {shipped.parent / 'figures'}; rerun with pimrl scale "
                  f"experiments/scale.toml):\n{cross}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "scale", help="run a study's strong/weak scaling sweeps (PIM, CPU and GPU baselines)",
        description="Run the sweeps of a study config (TOML; see experiments/swiftrl.toml) into "
        "DIR/results.csv (one row a run) and DIR/meta.json. Rows are written atomically as they "
        "finish; rerunning the same command resumes, computing only missing or invalid rows. PIM "
        "times are modelled, CPU/GPU times measured (column names say which). With --executor "
        "dask the rows run on a Dask cluster; only this process writes the results.")
    p.add_argument("config", help="study config, TOML")
    p.add_argument("--out", required=True, help="results directory")
    p.add_argument("--json", action="store_true", help="print a JSON report on stdout")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    from pimrl.cli import add_executor_options

    add_executor_options(p, "each row a task")
    p.set_defaults(func=_cmd_scale)

    p = subparsers.add_parser(
        "plot", help="draw the figures and summary table of a `pimrl scale` results directory",
        description="Write DIR/figures/*.png and *.svg (scaling, time breakdown, PIM vs CPU/GPU, "
        "policy quality) and DIR/summary.md from DIR/results.csv.")
    p.add_argument("dir", help="results directory of pimrl scale")
    p.add_argument("--json", action="store_true", help="print the written files as JSON")
    p.set_defaults(func=_cmd_plot)

    p = subparsers.add_parser(
        "demo", help="run the demo (experiments/demo.toml) and plot it",
        description="pimrl scale experiments/demo.toml --out OUT, then pimrl plot OUT: Taxi, "
        "SwiftRL's averaging against state-owned learning, the tasklets one at a time against "
        "all at once, PIM against the CPU. Prints the tables and where the figures are. About "
        "2 minutes on 2 cores with numba's cache empty.")
    p.add_argument("--out", default="out/demo", help="results directory (default out/demo)")
    p.add_argument("--config", default=None, help=f"study config (default {DEMO_CONFIG})")
    p.set_defaults(func=_cmd_demo)
