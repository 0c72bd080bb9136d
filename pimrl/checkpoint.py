"""Checkpoints of a PIM training run, and resuming from them bit for bit.

A :class:`Checkpoint` given to :class:`~pimrl.swiftrl.trainer.PimTrainer` or
:class:`~pimrl.online.trainer.OnlineTrainer` (``checkpoint=``; docs/design.md says what
each keeps) is offered the run's state at every round boundary (after the broadcast that ends a round
of ``sync:R``, ``sync:R:weighted`` or ``own:R``; a single-round scheme has only its end)
and writes it every ``every`` rounds, at the end, and at the first boundary after SIGINT
or SIGTERM (then the run stops: :class:`CheckpointStop`, a ``KeyboardInterrupt``).

One file, ``checkpoint.npz`` in the checkpoint folder, written atomically (a temporary file
in the folder, fsynced, renamed over the old one): numpy arrays only (no pickle) and one
JSON document, ``meta``. It holds what a resume needs and nothing it can recompute from the
data and the configuration:

- ``dpu/<symbol>``: the bytes of every global of every DPU's program (WRAM, and MRAM but
  the heap of records): the raw Q-tables ``q_table``, each tasklet lane's ``rng_state``,
  ``visits`` where the aggregator counts them, own:R's ``v_table`` and ``policy_weights``,
  ``params``, the tasklet-mode-rows lanes, and the C kernel's other globals; read with the
  simulator's peek, off the modelled clock, and written back the same way on resume;
- the host's state: the work counters so far (``counters``, ``tasklet_counters``), the
  visit counts of the last gather (``visits_before``, weighted), own:R's broadcast value
  vector ``v`` and owner plan (``own_bounds``, ``own_ranges``: checked against the plan the
  resumed run makes), and after the last round the results (``q``, ``tables``);
- ``meta``: the format, the round index, the modelled ledger so far (each category's sum in
  its order, and every event), the rounds' history (modelled times, quality), the host
  aggregation time measured so far, and the run's configuration (every option that affects
  the results, the dataset's hash or generated spec, the pimrl version) with its hash.

A resume makes the same DPU set and pushes the same data (the records, the random seeds,
the lanes), then puts back the globals and replaces the ledger with the saved one:
the modelled times continue from the saved sums, so the final tables, modelled times and
quality equal an uninterrupted run's bit for bit (measured wall times differ).
"""
from __future__ import annotations

import hashlib
import json
import time
import zipfile
from pathlib import Path

import numpy as np

FILE = "checkpoint.npz"
FORMAT = 1


class CheckpointStop(KeyboardInterrupt):
    """A checkpointed run stopped at a round boundary after SIGINT or SIGTERM (exit 130)."""


class CheckpointMismatch(ValueError):
    """A resume whose configuration differs from the checkpoint's (one line)."""


def _plain(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"cannot store {type(x).__name__} in a checkpoint")


def config_hash(config: dict) -> str:
    text = json.dumps(config, sort_keys=True, default=_plain)
    return hashlib.sha256(text.encode()).hexdigest()


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def describe_difference(saved: dict, mine: dict) -> str | None:
    """One line naming the first setting that differs, or None."""
    for key in sorted(set(saved) | set(mine)):
        a, b = saved.get(key, "(unset)"), mine.get(key, "(unset)")
        if json.dumps(a, sort_keys=True, default=_plain) != json.dumps(b, sort_keys=True,
                                                                      default=_plain):
            return f"{key} was {json.dumps(a, default=_plain)} in the checkpoint, " \
                   f"{json.dumps(b, default=_plain)} now"
    return None


class Checkpoint:
    """Where and how often a run checkpoints, and (``resume=True``) the state it resumes.

    ``config``: the run's settings that affect its results (a JSON-able dict); a resume
    with other settings raises :class:`CheckpointMismatch`. ``every``: rounds between
    checkpoints; ``every_s`` (instead): seconds of the run's wall clock between checkpoints
    (the first boundary after they pass). ``at_end``: write the last boundary too (a caller
    that keeps the results itself, such as ``pimrl scale``, need not). ``interrupted``: set
    (to the signal's name) by a signal handler; the next boundary then writes and raises
    :class:`CheckpointStop`."""

    def __init__(self, folder, every: int = 1, config: dict | None = None,
                 resume: bool = False, every_s: float | None = None, at_end: bool = True):
        if every < 1:
            raise ValueError(f"--checkpoint-every must be at least 1; got {every}")
        if every_s is not None and not every_s > 0:
            raise ValueError(f"--checkpoint-every: seconds must be positive; got {every_s}")
        self.folder = Path(folder)
        self.path = self.folder / FILE
        self.every = int(every)
        self.every_s = every_s
        self.at_end = at_end
        self.config = dict(config or {})
        self.interrupted = None
        self.written_round = None
        self._last_write = time.monotonic()
        self.state = self.load() if resume else None

    # ------------------------------------------------------------------ reading
    def load(self) -> dict:
        """The saved state: {"meta": dict, "arrays": {name: array}}; checks the config."""
        if not self.path.is_file():
            raise FileNotFoundError(2, f"--resume {self.folder}: no checkpoint there "
                                    f"({FILE} is missing)")
        try:
            with np.load(self.path, allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
            meta = json.loads(bytes(arrays.pop("meta")).decode("utf-8"))
            if not isinstance(meta, dict) or "config" not in meta:
                raise ValueError("no configuration")
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise CheckpointMismatch(f"--resume {self.folder}: {FILE} is not a pimrl "
                                     f"checkpoint ({exc})") from None
        if meta.get("format") != FORMAT:
            raise CheckpointMismatch(f"--resume {self.folder}: checkpoint format "
                                     f"{meta.get('format')}, this pimrl reads {FORMAT}")
        diff = describe_difference(meta["config"], self.config)
        if diff is not None:
            raise CheckpointMismatch(f"--resume {self.folder}: the run differs from the "
                                     f"checkpoint's: {diff}")
        return {"meta": meta, "arrays": arrays}

    # ------------------------------------------------------------------ writing
    def due(self, round_done: int, n_rounds: int) -> bool:
        if self.interrupted is not None:
            return True
        if round_done == n_rounds:
            return self.at_end
        if self.every_s is not None:
            return time.monotonic() - self._last_write >= self.every_s
        return round_done % self.every == 0

    def boundary(self, round_done: int, n_rounds: int, snapshot) -> None:
        """A round boundary: write ``snapshot()`` (meta, arrays) when due; stop when a
        signal asked to."""
        if self.due(round_done, n_rounds):
            meta, arrays = snapshot()
            self.write(round_done, n_rounds, meta, arrays)
        if self.interrupted is not None and round_done < n_rounds:
            raise CheckpointStop(f"{self.interrupted}: checkpoint of round {round_done} of "
                                 f"{n_rounds} written to {self.folder}; resume with --resume "
                                 f"{self.folder}")

    def write(self, round_done: int, n_rounds: int, meta: dict, arrays: dict) -> None:
        from pimrl import __version__
        from pimrl.io import atomic_writer, ensure_folder

        ensure_folder(self.folder, "--checkpoint")
        meta = dict(meta, format=FORMAT, round=int(round_done), rounds=int(n_rounds),
                    complete=round_done == n_rounds, config=self.config,
                    config_hash=config_hash(self.config), pimrl_version=__version__)
        text = json.dumps(meta, default=_plain).encode("utf-8")   # key order kept
        payload = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
        payload["meta"] = np.frombuffer(text, np.uint8)
        with atomic_writer(self.path) as f:
            np.savez(f, **payload)
        self.written_round = round_done
        self._last_write = time.monotonic()


# ---------------------------------------------------------------------- the DPUs' side
def _system_set(dpus):
    """The simulator's DPU set (:class:`pimrl.pim.system.DpuSet`) behind ``dpus``: the
    trainers' :class:`~pimrl.dpuset.DpuPackageSet`."""
    return dpus._sim.system_set(dpus.set) if hasattr(dpus, "_sim") else dpus


def dpu_symbols(dpus) -> dict:
    """{name: Symbol} of a simulated set's program's globals: every WRAM symbol and every
    MRAM one but the heap (the records, pushed again on resume)."""
    from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME

    inner = _system_set(dpus)
    return {name: sym for name, sym in inner.program().symbols.items()
            if sym.space in ("wram", "mram") and sym.size > 0
            and name != DPU_MRAM_HEAP_POINTER_NAME}


def peek_dpus(dpus, heap_ranges: dict | None = None) -> dict:
    """{"dpu/<name>": (n_dpus, size) uint8} of every global, off the modelled clock; and
    ``heap_ranges`` {name: (offset, size)} of the MRAM heap as ``"heap/<name>"`` (online
    runs keep tables there)."""
    from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME

    inner = _system_set(dpus)
    out = {f"dpu/{name}": inner._read(inner.slots, sym, 0, sym.size)
           for name, sym in dpu_symbols(dpus).items()}
    heap = inner.get_symbol(DPU_MRAM_HEAP_POINTER_NAME) if heap_ranges else None
    for name, (offset, size) in (heap_ranges or {}).items():
        out[f"heap/{name}"] = inner._read(inner.slots, heap, offset, size)
    return out


def round_arrays(dpus, heap_ranges: dict | None = None, **host) -> dict:
    """A round boundary's arrays: every global of the DPUs (:func:`peek_dpus`) and the
    host's state ``host``, less what a scheme does not hold there (None; a scalar, such as
    the visit counts before any gather)."""
    out = peek_dpus(dpus, heap_ranges)
    out.update((k, v) for k, v in host.items() if v is not None and not np.isscalar(v))
    return out


def poke_dpus(dpus, arrays: dict, heap_ranges: dict | None = None) -> None:
    """Write back what :func:`peek_dpus` read, off the modelled clock."""
    from pimrl.pim.system import DPU_MRAM_HEAP_POINTER_NAME

    inner = _system_set(dpus)
    n_dpus = len(inner.slots)
    symbols = dpu_symbols(dpus)
    saved = {k[len("dpu/"):]: v for k, v in arrays.items() if k.startswith("dpu/")}
    if set(saved) != set(symbols):
        raise CheckpointMismatch("the checkpoint's DPU symbols differ from the program's "
                                 f"({', '.join(sorted(set(saved) ^ set(symbols)))})")
    for name, sym in symbols.items():
        data = np.ascontiguousarray(saved[name], dtype=np.uint8)
        if data.shape != (n_dpus, sym.size):
            raise CheckpointMismatch(f"the checkpoint's {name} is {data.shape}, the DPUs' "
                                     f"({n_dpus}, {sym.size})")
        inner._write(inner.slots, sym, 0, data)
    heap = inner.get_symbol(DPU_MRAM_HEAP_POINTER_NAME) if heap_ranges else None
    for name, (offset, size) in (heap_ranges or {}).items():
        data = arrays.get(f"heap/{name}")
        if data is None or data.shape != (n_dpus, size):
            raise CheckpointMismatch(f"the checkpoint has no heap/{name} of ({n_dpus}, {size})")
        inner._write(inner.slots, heap, offset, np.ascontiguousarray(data, dtype=np.uint8))


def ledger_meta(ledger) -> dict:
    return {"modelled_s": [[k, float(v)] for k, v in ledger.modelled_s.items()],
            "events": json.loads(json.dumps(ledger.events, default=_plain))}


def restore_ledger(ledger, meta: dict) -> None:
    """Replace the ledger's sums and events with the saved ones (in place: the DPU set
    books on into the same object)."""
    ledger.modelled_s.clear()
    ledger.modelled_s.update((k, float(v)) for k, v in meta["ledger"]["modelled_s"])
    ledger.events[:] = meta["ledger"]["events"]


def check_scheme(meta: dict, scheme: str, n_rounds: int) -> None:
    """The checkpoint was made by the same scheme with as many rounds (the CLI's config
    check says which option differs; this guards the Python API)."""
    if meta.get("scheme") != scheme or int(meta.get("rounds", -1)) != n_rounds:
        raise CheckpointMismatch(f"--resume: the checkpoint is of {meta.get('scheme')} with "
                                 f"{meta.get('rounds')} rounds; this run is {scheme} with "
                                 f"{n_rounds}")


def resume_dpus(dpus, state: dict, scheme: str, n_rounds: int):
    """What every scheme's resume does first: check the scheme, write the DPUs' memories
    back, restore the ledger; returns (the round to start at, the launches' summed counters,
    the tasklets' counters or None)."""
    meta, arrays = state["meta"], state["arrays"]
    check_scheme(meta, scheme, n_rounds)
    poke_dpus(dpus, arrays)
    restore_ledger(dpus.ledger(), meta)
    tasklet = arrays["tasklet_counters"].copy() if "tasklet_counters" in arrays else None
    return int(meta["round"]), arrays["counters"].copy(), tasklet
