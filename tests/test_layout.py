"""The layout: the command line is a front end the library never imports."""
from __future__ import annotations

import ast
import json
from pathlib import Path


import pimrl

PKG = Path(pimrl.__file__).resolve().parent


def _imports(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module


def test_only_the_cli_package_imports_the_cli():
    offenders = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] in ("cli", "__main__.py"):
            continue
        offenders += [f"pimrl/{rel.as_posix()}: {m}" for m in _imports(path)
                      if m == "pimrl.cli" or m.startswith("pimrl.cli.")]
    assert not offenders, offenders


def test_every_command_module_lives_in_the_cli_package():
    assert not [p for p in PKG.rglob("cli.py")]


# --------------------------------------------------------------- choices from registries
def _train_parser():
    from test_cli import _parsers

    return dict(_parsers())["pimrl train"]


def test_train_defaults_come_from_learner_params_and_the_trainer():
    import inspect
    from dataclasses import fields

    from pimrl.learners.params import LearnerParams
    from pimrl.cli.train import _params
    from pimrl.learners.variants import DEFAULT_TASKLET_MODE
    from pimrl.swiftrl.trainer import PimTrainer

    args = _train_parser().parse_args(["--env", "Taxi-v3"])
    for f in fields(LearnerParams):
        if f.name == "tasklet_mode":
            # the contract's default is the ring (the oracle's order); a run's is the fastest
            assert f.default == "ring" and args.tasklet_mode is None
            pim = _train_parser().parse_args(["--env", "Taxi-v3", "--backend", "pim"])
            assert _params(pim).tasklet_mode == DEFAULT_TASKLET_MODE
            assert _params(args).tasklet_mode == "ring"
            continue
        assert getattr(args, f.name) == f.default, f.name
    sig = inspect.signature(PimTrainer).parameters
    assert args.tasklets == sig["tasklets"].default and args.kernel == sig["kernel"].default
    assert args.hardware == sig["hardware"].default and args.dpus == str(sig["n_dpus"].default)
    assert args.aggregate == sig["aggregate"].default
    assert args.block_bytes == sig["block_bytes"].default


def test_a_new_registry_entry_reaches_list_and_help(monkeypatch, capsys):
    from pimrl.cli import main
    from pimrl.learners import aggregate
    from pimrl.pim import hardware
    from pimrl.swiftrl import trainer

    monkeypatch.setitem(hardware.PRESETS, "upmem-test",
                        hardware.Hardware(name="upmem-test", n_ranks=2, frequency_hz=123e6))
    kernels, aggregators = trainer.KERNELS.copy(), aggregate.AGGREGATORS.copy()
    kernels.add("testkernel", trainer.KERNELS["numba"], "a kernel registered by a test")
    aggregators.add("median", aggregate.mean_tables, "an aggregator registered by a test")
    monkeypatch.setattr(trainer, "KERNELS", kernels)
    monkeypatch.setattr(aggregate, "AGGREGATORS", aggregators)
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("upmem-test", "123 MHz", "testkernel", "median", "FrozenLake-v1",
                 "CliffWalking-v1", "epsilon-greedy", "sarsa-int32-ran"):
        assert name in out, name
    text = _train_parser().format_help()
    assert "upmem-test" in text and "testkernel" in text and "median" in text
    assert main(["list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert "upmem-test" in listing["hardware presets"]["entries"]
    assert set(listing) >= {"environments", "training backends", "hardware presets", "aggregators", "DPU programs",
                            "learner choices", "behaviour policies", "kernel variants"}
    for section in listing.values():
        assert all(text for text in section["entries"].values())     # every entry described


def test_unknown_choice_is_refused_by_the_parser(capsys):
    from pimrl.cli import main

    assert main(["train", "--env", "Taxi-v3", "--backend", "pim", "--hardware",
                 "upmem-9999"]) == 2
    assert "upmem-9999" in capsys.readouterr().err


# ------------------------------------------------------------------------- import graph
def _node(parts: list) -> str | None:
    """The graph's node of a module: ``pimrl.X`` (a sub-package or top-level module), or the
    ``dpu`` package as a whole (pimrl's SDK-compatible host API, which drives pimrl)."""
    if parts[0] == "dpu":
        return "dpu"
    if parts[0] == "pimrl" and len(parts) >= 2:
        return ".".join(parts[:2])
    return None


def _import_graph() -> dict:
    """Edges between pimrl's sub-packages, its top-level modules (``pimrl.X``) and the
    ``dpu`` package, counting every import statement, at module level or inside a function
    (a lazy import hides a cycle, it does not remove it)."""
    edges = {}
    for path in [*PKG.rglob("*.py"), *(PKG.parent / "dpu").rglob("*.py")]:
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        src = _node(parts)
        if src is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = parts if rel.name == "__init__" else parts[:-1]
                    base = pkg[: len(pkg) - node.level + 1]
                    targets = [".".join(base + ([node.module] if node.module else []))]
                else:
                    targets = [node.module or ""]
            else:
                continue
            for t in targets:
                dst = _node(t.split("."))
                if dst is not None and dst != src:
                    edges.setdefault(src, set()).add(dst)
    return edges


def _cycles(edges: dict) -> list:
    """Strongly connected groups of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(frozenset(group))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


#: The rooms that hold an application (its DPU programs, its host side, its learners) or
#: drive one: the simulator's layers below them import none of them.
APPLICATIONS = {"pimrl.swiftrl", "pimrl.rlkernel", "pimrl.online", "pimrl.learners",
                "pimrl.baselines", "pimrl.experiments", "pimrl.calibration", "pimrl.cli",
                "pimrl.envs", "pimrl.data", "pimrl.backends"}
#: The simulator's layers: the generic simulator (pimrl.pim), the DPU runtime (pimrl.dpurt),
#: the C host shim (pimrl.shim) and the ``dpu`` package.
SIMULATOR = ("pimrl.pim", "pimrl.dpurt", "pimrl.shim", "dpu")


def test_no_import_cycle():
    """The layers form a DAG over ``pimrl/`` and ``dpu/`` together: the simulator's layers
    know nothing of the RL applications on top (``dpu_load`` finds an application's
    built-in program by a dotted name, imported on its first load); the SwiftRL DPU program
    (pimrl.rlkernel) knows nothing of its host side (pimrl.swiftrl), which reaches its DPUs
    through the ``dpu`` package."""
    graph = _import_graph()
    assert "dpu" in graph and "pimrl.shim" in graph["dpu"]
    assert _cycles(graph) == []
    for low in SIMULATOR:
        assert not graph.get(low, set()) & APPLICATIONS, (low, graph[low] & APPLICATIONS)
    assert not graph.get("pimrl.rlkernel", set()) & {"dpu", "pimrl.shim", "pimrl.swiftrl"}
    assert not graph.get("pimrl.online", set()) & {"pimrl.swiftrl", "pimrl.rlkernel"}


def test_the_simulator_imports_no_application():
    """``import dpu``, the C shim's runtime and the ``dpu_load`` resolver bring in no
    application module (checked in a fresh interpreter); the dotted names the resolver holds
    name functions that exist."""
    import subprocess
    import sys

    from pimrl.pim import programs

    code = ("import sys, dpu, pimrl.shim.runtime, pimrl.pim.programs; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('pimrl.'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=PKG.parent, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out and not [m for m in out if ".".join(m.split(".")[:2]) in APPLICATIONS], out
    names = [f for f in [*programs.BUILTINS.values(), *programs.FILE_LOADERS,
                         programs.DPURT_DATA_LOADER] if isinstance(f, str)]
    assert len(names) >= 3
    assert all(callable(programs.resolve(name)) for name in names)


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_registry_is_one_registry_type():
    """Kernels of both kinds, aggregators, devices, executors, hardware presets,
    environments and built-in programs: one type, chosen by name, each entry described."""
    from pimrl.cluster import EXECUTORS
    from pimrl.envs.registry import REGISTRY
    from pimrl.learners.aggregate import AGGREGATORS
    from pimrl.online.trainer import ONLINE_KERNELS
    from pimrl.pim.hardware import PRESETS
    from pimrl.pim.programs import BUILTINS
    from pimrl.registry import Registry
    from pimrl.devices import DEVICES
    from pimrl.swiftrl.trainer import KERNELS

    for reg in (EXECUTORS, REGISTRY, AGGREGATORS, ONLINE_KERNELS, PRESETS, BUILTINS, DEVICES,
                KERNELS):
        assert isinstance(reg, Registry), reg
        assert list(reg) and all(desc for _, desc in reg.describe()), reg.title


#: The most lines a module of ``pimrl/`` or ``dpu/`` may have: past it, a room holds more than
#: one concept and is split (docs/extending.md).
MAX_MODULE_LINES = 500


def test_no_module_is_over_500_lines():
    roots = (PKG, PKG.parent / "dpu")
    long = {str(p.relative_to(PKG.parent)): n for root in roots for p in root.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split these modules: {long}"
