"""``pimrl calibrate``, ``pimrl sensitivity`` and ``pimrl cost-doc``."""
from __future__ import annotations

import json


def _hardware(args):
    from pimrl.pim.hardware import get_hardware, parse_overrides

    return get_hardware(args.hardware, parse_overrides(args.hw))


def _add_hw(p):
    from pimrl.pim.hardware import PRESETS, get_hardware

    p.add_argument("--hardware", choices=list(PRESETS), default=get_hardware().name,
                   help="hardware preset (pimrl list)")
    p.add_argument("--hw", action="append", metavar="KEY=VALUE",
                   help="override a hardware parameter (repeatable), e.g. dma_beta=0.6")


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item"):
        return obj.item()
    return obj


def cmd_calibrate_prim(args) -> int:
    import sys

    from pimrl.calibration import prim

    try:
        root = prim.find_prim(None if args.prim == "auto" else args.prim, fetch=not args.no_fetch,
                              log=lambda m: print(m, file=sys.stderr))
    except prim.PrimUnavailable as exc:
        print(f"pimrl calibrate --prim: {exc}", file=sys.stderr)
        return 2
    print(f"pimrl calibrate --prim: PrIM's programs from {root}, built unmodified with pimrl's "
          "bin first on PATH", file=sys.stderr)
    try:
        result = prim.run_suite(root, _hardware(args), quick=args.quick,
                                log=lambda m: print(m, file=sys.stderr))
    except (RuntimeError, ValueError) as exc:
        print(f"pimrl calibrate --prim: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(_jsonable(result), indent=1))
        return 0
    s = result["summary"]
    print("PrIM's microbenchmark programs, unmodified, through pimrl (DPU runtime; host times on "
          "the modelled clock): their own figures, post-processed as PrIM does, beside the "
          "published (measured) figures and pimrl's cost model (modelled)\n")
    from pimrl.calibration.prim import format_rows

    print(format_rows(result["rows"]))
    if result["other"]:
        print("\nWithout a published figure here\n")
        print(format_rows(result["other"]))
    if result["shapes"]:
        print("\nShape checks\n")
        for c in result["shapes"]:
            print(f"{'ok ' if c['ok'] else 'NO '} {c['check']} {c['expected']}: {c['got']}")
    print(f"\n{s['targets_within']}/{s['targets']} certain published figures within 10 % "
          f"(largest {100 * s['max_target_abs_error']:.1f} %); {s['shape_checks_ok']}/"
          f"{s['shape_checks']} shape checks ok")
    return 0 if s["targets_within"] == s["targets"] and s["shape_checks_ok"] == s["shape_checks"] else 1


def cmd_calibrate(args) -> int:
    from pimrl.calibration.calibrate import format_loo, format_shapes, format_table, plot, run_calibration

    if args.prim:
        return cmd_calibrate_prim(args)
    if args.plot:
        from pimrl.io import ensure_folder

        ensure_folder(args.plot, "--plot")     # before the work, not after
    result = run_calibration(_hardware(args))
    if args.plot:
        result["plots"] = plot(result, args.plot)
    if args.json:
        print(json.dumps(_jsonable(result), indent=1))
    else:
        s = result["summary"]
        print(f"pimrl calibrate: hardware {result['hardware']}\n")
        print(format_table(result))
        print("\nShape checks\n")
        print(format_shapes(result))
        print("\n32-rank curve, leave-one-out interpolation error (how far to trust sizes "
              "between measured points)\n")
        print(format_loo(result))
        print(f"\n{s['targets_within']}/{s['targets']} non-uncertain figures within 10 % "
              f"(largest {100 * s['max_target_abs_error']:.1f} %); "
              f"{s['shape_checks_ok']}/{s['shape_checks']} shape checks ok")
        for path in result.get("plots", []):
            print(f"wrote {path}")
    return 0 if result["summary"]["ok"] else 1


def cmd_sensitivity(args) -> int:
    from pimrl.calibration.sensitivity import (
        DPU_COUNTS, base_value, format_baseline, format_sensitivity, run_sensitivity,
    )
    from pimrl.cli import UserError
    from pimrl.data.records import TRANSITION_DTYPE
    from pimrl.limits import check_memory

    hw = _hardware(args)
    for name in args.param or ():               # the names first, then the sizes
        base_value(hw, name)
    if args.transitions < max(DPU_COUNTS):       # before the training, not in its middle
        raise UserError(f"--transitions {args.transitions:,}: the study partitions them over "
                        f"{' and '.join(f'{n:,}' for n in DPU_COUNTS)} DPUs; give at least "
                        f"{max(DPU_COUNTS):,}")
    # the records and their copies on 125 and on 2,000 simulated DPUs
    check_memory(4 * args.transitions * TRANSITION_DTYPE.itemsize, f"--transitions {args.transitions:,}")
    params = {}
    if args.param:
        params["parameters"] = tuple(args.param)
    result = run_sensitivity(args.transitions, args.epochs, args.delta, hw,
                             args.seed, **params)
    if args.json:
        print(json.dumps(_jsonable(result), indent=1))
    else:
        st = result["study"]
        print(f"SwiftRL study: {st['env']}, {st['transitions']:,} transitions, {st['epochs']} "
              f"epoch(s), {st['tasklets']} tasklets, DPUs {st['dpus'][0]} and {st['dpus'][1]}; every "
              f"time below is modelled by pimrl's cost model\n")
        print(format_baseline(result))
        print(f"\nEach parameter x(1 +- {st['delta']:g}): mean change over the "
              f"{st['variants']} variants (largest-magnitude change)\n")
        print(format_sensitivity(result))
    return 0


def cmd_cost_doc(args) -> int:
    from pimrl.calibration.doc import DOC_PATH, update_doc

    path = args.path or DOC_PATH
    fresh = update_doc(path, check=args.check)
    if args.check:
        print(f"{path}: {'up to date' if fresh else 'STALE (run pimrl cost-doc)'}")
        return 0 if fresh else 1
    print(f"{path}: {'already up to date' if fresh else 'regenerated'}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "calibrate", help="run the PrIM-style microbenchmarks through the cost model and "
        "compare with published UPMEM figures",
        description="Run the PrIM-style microbenchmarks (DMA, arithmetic, CPU-DPU and DPU-CPU "
        "transfers) through pimrl's cost model and compare every modelled figure with the "
        "published UPMEM measurement (docs/cost-model.md). Prints the table, the shape checks "
        "and the leave-one-out error of the transfer curve; exit status 1 when a figure is "
        "outside its tolerance.")
    _add_hw(p)
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--plot", metavar="DIR", help="write PNG curves to DIR")
    p.add_argument("--prim", nargs="?", const="auto", metavar="DIR",
                   help="build and run PrIM's own microbenchmark programs (a checkout of "
                   "CMU-SAFARI/prim-benchmarks at DIR, $PIMRL_PRIM_DIR, or fetched into the cache) "
                   "through the DPU runtime and the modelled clock")
    p.add_argument("--no-fetch", action="store_true", help="with --prim: never fetch PrIM's code")
    p.add_argument("--quick", action="store_true", help="with --prim: the certain published "
                   "figures only, no tasklet sweeps")
    p.set_defaults(func=cmd_calibrate)

    p = subparsers.add_parser(
        "sensitivity", help="which hardware parameters move the SwiftRL study's modelled "
        "speedups (each varied by +-20 %%)",
        description="Train the twelve SwiftRL variants on Taxi-v3 once on 125 and once on 2,000 "
        "DPUs, then re-cost the counted work with each hardware parameter varied by +-delta, "
        "and report how much the modelled 125 -> 2,000 DPU speedup and the PIM time move. "
        "Every time printed is modelled.")
    _add_hw(p)
    from pimrl import limits as L

    p.add_argument("--transitions", type=L.TRANSITIONS, default=1_000_000,
                   help="Taxi-v3 transitions (default 1M)")
    p.add_argument("--epochs", type=L.EPOCHS, default=1, help="training epochs (default 1)")
    p.add_argument("--delta", type=L.real(0.0, 1.0, lo_open=True, hi_open=True), default=0.2,
                   help="relative variation (default 0.2)")
    p.add_argument("--seed", type=L.SEED, default=0, help="dataset seed (default 0)")
    p.add_argument("--param", action="append", metavar="NAME",
                   help="vary only these parameters (repeatable)")
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.set_defaults(func=cmd_sensitivity)

    p = subparsers.add_parser(
        "cost-doc", help="regenerate the tables of docs/cost-model.md from the code",
        description="Regenerate the generated tables of docs/cost-model.md (instruction "
        "costs, calibration results) from the code, written atomically; with --check, only "
        "say whether the doc is up to date (exit status 1 when stale).")
    p.add_argument("--check", action="store_true", help="only report whether the doc is stale")
    p.add_argument("--path", help="the doc to rewrite (default docs/cost-model.md)")
    p.set_defaults(func=cmd_cost_doc)
