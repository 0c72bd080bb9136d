"""``pimrl advise``: which PIM configuration reaches a quality target soonest (or most
cheaply), found by running the simulator, not by guessing.

What is searched. A grid of PIM configurations of one dataset and one learner (algorithm,
dtype, alpha, gamma, seed fixed; sampling fixed or a list):

- DPU counts (default 250, 500, 1,000, 2,000, 2,556, at most ``max_dpus`` and the
  hardware's functional DPUs, at most one DPU per transition);
- tasklets: 16 and the most that fit WRAM (at most the hardware's ``max_tasklets``);
- tasklet modes ``rows`` and ``ring``;
- aggregators ``mean`` and ``weighted`` with ``epochs`` passes (default 1, 4, 16), and
  ``sync:R`` and ``own:R`` for a few R (default 8, 16, 32) with R x ``epochs_per_round``
  passes (default 1 pass a round).

How. Every candidate that is evaluated is *run*: :class:`~pimrl.swiftrl.trainer.PimTrainer`
with the same per-round exact evaluation as ``pimrl train`` (its ``on_round``), on the same
data, so its modelled time to target is the one ``pimrl train`` reports for the same flags.
Each (aggregator, R, epochs) is its own candidate: round r of a ``sync:R`` run is not a
``sync:r`` run (the broadcast after round r is in the former's time and not the latter's),
so rounds are never extrapolated across candidates. Two things shorten the search:

1. Stages (a heuristic, said as such): stage 1 runs every DPU count x aggregator x epochs
   with 16 tasklets in mode ``rows``; when an R-round run first reaches the target at round
   r < R, the candidate with r rounds (same passes a round) is added and run too (its time
   can differ; it is measured, not assumed); stage 2 runs the other tasklet counts and
   modes only for the configurations on stage 1's Pareto front (the tasklet count and mode
   of a point off that front are not tried). ``exhaustive`` runs every combination in
   stage 1 instead.
2. Pruning that is exact under the cost model: every run first pushes its records (at least
   ceil(N / DPUs) records to each DPU), so the cost model's time of that push (the lowest
   over every rank count the DPUs could span) and its energy are lower bounds on any
   candidate's time and energy to target. A candidate whose lower bounds are both matched
   or beaten by a point already found cannot enter the Pareto front, and is not run.

What comes out: for every run, the modelled time to target (the round's modelled time, as
:mod:`pimrl.experiments.quality` defines it) and the modelled energy to target
(:func:`pimrl.energy.pim_run_energy`, as ``pimrl train`` computes it); the Pareto front of
the two; and the recommended point (least time, or least energy). Nothing here is measured
except the search's own wall clock, and every figure is deterministic: the same flags give
the same numbers. The energy to target is ``pimrl train``'s ``energy_to_quality_modelled_j``
exactly, for every aggregator (own:R's host work included, modelled:
:func:`pimrl.pim.host.host_owned_seconds`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

DEFAULT_DPUS = (250, 500, 1000, 2000, 2556)
DEFAULT_ROUNDS = (8, 16, 32)
DEFAULT_EPOCHS = (1, 4, 16)
DEFAULT_EPOCHS_PER_ROUND = (1,)
DEFAULT_AGGREGATORS = ("mean", "weighted", "sync", "own")
DEFAULT_MODES = ("rows", "ring")
BASE_TASKLETS = 16
BASE_MODE = "rows"


@dataclass(frozen=True)
class Target:
    """``optimum`` (pimrl.experiments.quality's tolerance) or ``success`` >= a rate."""

    kind: str
    value: float | None = None

    @property
    def text(self) -> str:
        return "optimum" if self.kind == "optimum" else f"success={self.value:g}"

    def describe(self) -> str:
        if self.kind == "optimum":
            from pimrl.experiments.quality import TOLERANCE_TEXT

            return f"the optimum under exact evaluation ({TOLERANCE_TEXT})"
        return f"an exact success rate of at least {self.value:g}"


def parse_target(text: str) -> Target:
    text = str(text).strip()
    if text == "optimum":
        return Target("optimum")
    if text.startswith("success="):
        from pimrl.limits import PROBABILITY

        value = PROBABILITY.parse(text.split("=", 1)[1], "--target success")
        return Target("success", float(value))
    raise ValueError(f"--target {text!r}: use optimum or success=RATE (e.g. success=0.9)")


@dataclass(frozen=True)
class Candidate:
    dpus: int
    tasklets: int
    tasklet_mode: str
    aggregate: str
    epochs: int
    sampling: str

    @property
    def key(self):
        return (self.dpus, self.tasklets, self.tasklet_mode, self.aggregate, self.epochs,
                self.sampling)

    @property
    def rounds(self) -> int:
        parts = self.aggregate.split(":")
        return int(parts[1]) if len(parts) > 1 else 1


@dataclass
class Outcome:
    candidate: Candidate
    stage: str
    status: str                     # reached | not reached | pruned | refused
    time_s: float | None = None     # modelled time to target
    energy_j: float | None = None   # modelled energy to target
    round: int | None = None
    total_s: float | None = None    # the run's whole modelled time
    detail: str = ""
    bound_s: float | None = None
    bound_j: float | None = None
    cpu_dpu_s: float | None = None  # the run's modelled CPU-DPU time (checks the bound)

    def as_dict(self) -> dict:
        c = self.candidate
        return {"dpus": c.dpus, "tasklets": c.tasklets, "tasklet_mode": c.tasklet_mode,
                "aggregate": c.aggregate, "epochs": c.epochs, "sampling": c.sampling,
                "stage": self.stage, "status": self.status,
                "time_to_target_modelled_s": self.time_s,
                "energy_to_target_modelled_j": self.energy_j, "target_round": self.round,
                "run_total_modelled_s": self.total_s, "detail": self.detail}


@dataclass
class Problem:
    """What stays fixed: data, environment, learner, hardware, target, and how the data
    is named on a ``pimrl train`` command line."""

    records: np.ndarray
    env: object
    params: object                  # LearnerParams: epochs, sampling, tasklet_mode replaced
    hw: object
    hardware_name: str
    target: Target
    data_args: list                 # ["--env", "Taxi-v3", "--transitions", "N", ...] or [FILE]
    evaluator: object = None
    lower_bounds: dict = field(default_factory=dict)


def most_tasklets(problem: Problem, mode: str, sampling: str) -> int:
    """The most tasklets (at most the hardware's) whose kernel fits WRAM with some DMA
    block, for the averaging kernel (``own:R`` is checked by its own run)."""
    from pimrl.learners.variants import Variant
    from pimrl.partition import SPLIT
    from pimrl.rlkernel.layout import fitting_block, wram_needed

    p, hw, env = problem.params, problem.hw, problem.env
    top = min(hw.max_tasklets, SPLIT - 1 if mode == "rows" else hw.max_tasklets)
    variant = Variant(p.algo, p.dtype, sampling, bootstrap="table", tasklet_mode=mode)
    for t in range(top, 0, -1):
        try:
            block = fitting_block(env.n_states, env.n_actions, t, variant, True, hw)
            if wram_needed(env.n_states, env.n_actions, t, variant, True, block,
                           hw.stack_bytes_per_tasklet) <= hw.wram_bytes:
                return t
        except ValueError:
            continue
    return 1


def aggregator_grid(aggregators, rounds, epochs, epochs_per_round):
    """(aggregate, epochs) pairs: mean/weighted x epochs; sync/own x R (R x e passes)."""
    out = []
    for a in aggregators:
        if a in ("mean", "weighted"):
            out += [(a, e) for e in epochs]
        elif a in ("sync", "sync:weighted", "own"):
            for r in rounds:
                name = f"sync:{r}:weighted" if a == "sync:weighted" else f"{a}:{r}"
                out += [(name, r * k) for k in epochs_per_round]
        else:
            raise ValueError(f"--aggregators: unknown {a!r}; use mean, weighted, sync, "
                             "sync:weighted, own")
    return out


def lower_bound(problem: Problem, n: int):
    """(seconds, joules): the cost model's time and energy of pushing ceil(N / n) records
    to each of n DPUs, the least over every rank count they could span. Every candidate
    on n DPUs pushes at least that before its first launch."""
    if n in problem.lower_bounds:
        return problem.lower_bounds[n]
    from pimrl.pim.cost import parallel_transfer_seconds
    from pimrl.pim.energy import pim_energy
    from pimrl.rlkernel.layout import RECORD_BYTES

    hw = problem.hw
    per = math.ceil(len(problem.records) / n) * RECORD_BYTES
    lo_ranks = max(1, math.ceil(n / hw.dpus_per_rank))
    hi_ranks = max(lo_ranks, min(hw.n_ranks, n))
    t = min(parallel_transfer_seconds(hw, per, n, r, True) for r in range(lo_ranks, hi_ranks + 1))
    e = pim_energy({"cpu_dpu": t}, hw, n, transfer_bytes={"cpu_dpu": per * n})
    problem.lower_bounds[n] = (t, e["energy_total_modelled_j"])
    return problem.lower_bounds[n]


def _evaluator(problem: Problem):
    """``pimrl train``'s round evaluator (the optimum judged once), plus ``reached_target``."""
    if problem.evaluator is None:
        from pimrl.experiments.quality import round_evaluator

        base = round_evaluator(problem.env, problem.params.gamma)
        target = problem.target

        def evaluate(round_, q, ledger=None):
            out = base(round_, q, ledger)
            out["reached_target"] = (out["reached"] if target.kind == "optimum"
                                     else out["success_rate"] >= target.value)
            return out

        problem.evaluator = evaluate
    return problem.evaluator


def run_candidate(problem: Problem, c: Candidate, stage: str) -> Outcome:
    """One simulated run of ``c``, evaluated every round as ``pimrl train`` does."""
    from pimrl.energy import pim_run_energy
    from pimrl.swiftrl.trainer import PimTrainer

    try:
        params = replace(problem.params, epochs=c.epochs, sampling=c.sampling,
                         tasklet_mode=c.tasklet_mode)
        tr = PimTrainer(params, n_dpus=c.dpus, tasklets=c.tasklets, aggregate=c.aggregate,
                        hardware=problem.hw, on_round=_evaluator(problem))
        tr.fit(problem.records, problem.env.n_states, problem.env.n_actions)
    except ValueError as exc:           # does not fit WRAM, MRAM, R > epochs, ...
        return Outcome(c, stage, "refused", detail=str(exc).splitlines()[0])
    first = next((e for e in tr.rounds_ if e.get("reached_target")), None)
    out = Outcome(c, stage, "not reached", total_s=tr.timings_.modelled_total_s,
                  cpu_dpu_s=float(tr.timings_.modelled_s.get("cpu_dpu", 0.0)))
    last = tr.rounds_[-1]
    out.detail = (f"after {len(tr.rounds_)} round(s): success {last['success_rate']:.3f}, "
                  f"return {last['mean_return']:.2f}")
    if first is None:
        return out
    # the energy as pimrl train computes it (pimrl/energy.py), at this target's round
    run = {"dpus": c.dpus, "time_to_quality_modelled_s": first["modelled_s"],
           "quality_round": first["round"]}
    out.energy_j = float(pim_run_energy(tr, problem.hw, run, c.aggregate)
                         ["energy_to_quality_modelled_j"])
    out.status = "reached"
    out.round = first["round"]
    out.time_s = float(first["modelled_s"])
    return out


def pareto_front(outcomes):
    """The reached outcomes no other reached one matches or beats in both modelled time and
    energy (ties: the first found stays), by time."""
    pts = [o for o in outcomes if o.status == "reached"]
    front = []
    for i, o in enumerate(pts):
        dominated = False
        for j, p in enumerate(pts):
            if j == i:
                continue
            if p.time_s <= o.time_s and p.energy_j <= o.energy_j and (
                    p.time_s < o.time_s or p.energy_j < o.energy_j or j < i):
                dominated = True
                break
        if not dominated:
            front.append(o)
    return sorted(front, key=lambda o: (o.time_s, o.energy_j))


def _dominated_bound(found, t, e) -> bool:
    return any(o.time_s <= t and o.energy_j <= e for o in found)


def search(problem: Problem, dpus, tasklets, modes, samplings, agg_grid, exhaustive=False,
           progress=None) -> dict:
    """Run the search (module docstring). ``tasklets``: counts, or "max" for the most that
    fit. ``progress(done, total, text)`` is told after every candidate."""
    t0 = time.perf_counter()

    def tasklet_counts(mode, sampling):
        out = []
        for t in tasklets:
            v = most_tasklets(problem, mode, sampling) if t == "max" else int(t)
            if v not in out:
                out.append(v)
        return out

    def combos():
        for s in samplings:
            for m in modes:
                for t in tasklet_counts(m, s):
                    yield s, m, t

    seen, outcomes = set(), []
    queue = []
    base_t = BASE_TASKLETS if BASE_TASKLETS in tasklet_counts(BASE_MODE, samplings[0]) else None

    def add(c, stage):
        if c.key not in seen:
            seen.add(c.key)
            queue.append((c, stage))

    for s, m, t in combos():
        stage1 = exhaustive or (m == (BASE_MODE if BASE_MODE in modes else modes[0])
                                and t == (base_t or tasklet_counts(m, s)[0]))
        if not stage1:
            continue
        for n in dpus:
            for agg, ep in agg_grid:
                add(Candidate(n, t, m, agg, ep, s), "1")
    total = [len(queue)]

    def process(queue):
        while queue:
            c, stage = queue.pop(0)
            bt, be = lower_bound(problem, c.dpus)
            found = [o for o in outcomes if o.status == "reached"]
            if _dominated_bound(found, bt, be):
                o = Outcome(c, stage, "pruned", bound_s=bt, bound_j=be,
                            detail=f"push alone takes {bt * 1e3:.3f} ms, {be * 1e3:.3f} mJ "
                            "modelled: dominated by a point found")
            else:
                o = run_candidate(problem, c, stage)
                o.bound_s, o.bound_j = bt, be
            outcomes.append(o)
            if progress:
                progress(len(outcomes), total[0], o)
            # round read-off: the same scheme with the rounds it needed (its own run)
            if o.status == "reached" and o.round < c.rounds and c.aggregate.split(":")[0] in (
                    "sync", "own"):
                per = c.epochs // c.rounds
                parts = c.aggregate.split(":")
                parts[1] = str(o.round)
                before = len(seen)
                add(replace(c, aggregate=":".join(parts), epochs=o.round * per), stage + "r")
                total[0] += len(seen) - before

    process(queue)
    if not exhaustive:                  # stage 2: other tasklets and modes for the reachers
        reachers = {(o.candidate.dpus, o.candidate.aggregate, o.candidate.epochs,
                     o.candidate.sampling) for o in pareto_front(outcomes)}
        for n, agg, ep, s in sorted(reachers):
            for s2, m, t in combos():
                if s2 == s:
                    add(Candidate(n, t, m, agg, ep, s), "2")
        total[0] = len(outcomes) + len(queue)
        process(queue)
    front = pareto_front(outcomes)
    violations = [o for o in outcomes if o.cpu_dpu_s is not None and o.bound_s is not None
                  and o.cpu_dpu_s < o.bound_s * (1 - 1e-9)]
    return {"outcomes": outcomes, "front": front, "elapsed_s": time.perf_counter() - t0,
            "bound_violations": len(violations)}


def recommend(front, objective: str):
    if not front:
        return None
    if objective == "energy":
        return min(front, key=lambda o: (o.energy_j, o.time_s))
    return min(front, key=lambda o: (o.time_s, o.energy_j))


def train_command(problem: Problem, c: Candidate) -> list:
    """``pimrl train`` argv (after ``pimrl``) reproducing ``c``'s run, every flag that
    matters spelled out."""
    p = problem.params
    argv = ["train", *problem.data_args, "--backend", "pim", "--hardware", problem.hardware_name,
            "--dpus", str(c.dpus), "--tasklets", str(c.tasklets), "--tasklet-mode",
            c.tasklet_mode, "--aggregate", c.aggregate, "--epochs", str(c.epochs), "--algo",
            p.algo, "--dtype", p.dtype, "--sampling", c.sampling, "--alpha", repr(p.alpha),
            "--gamma", repr(p.gamma), "--seed", str(p.seed)]
    if p.dtype == "int32":
        argv += ["--frac-bits", str(p.frac_bits)]
    if c.sampling == "str":
        argv += ["--stride", str(p.stride)]
    if p.algo == "sarsa":
        argv += ["--epsilon", repr(p.epsilon), "--next-action", p.next_action]
    return argv
