"""Where work runs: this process, or a Dask cluster (the optional ``pimrl[dask]`` extra).

``--executor local`` runs everything here. ``--executor dask`` starts a ``LocalCluster`` of
worker processes on this machine; ``--executor dask:tcp://host:8786`` joins a running
cluster (its workers need pimrl installed). Each Dask worker runs one task at a time
(``nthreads=1``) and parallelises inside it with numba threads, ``numba_threads`` of them.

Nothing here decides *what* runs: the sweep runner (:mod:`pimrl.experiments.runner`) makes
a task of each row, the distributed DPU set (:mod:`pimrl.pim.distributed`) places whole
ranks of a simulated system on the workers.
"""
from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class ExecutorKind:
    """One way to run work: its name on the command line and what it does."""

    name: str
    description: str
    needs: str | None = None          # the optional extra it needs


#: The executors, by name (``dask`` takes an optional ``:ADDRESS``).
EXECUTORS = {e.name: e for e in (
    ExecutorKind("local", "this process, one task after another"),
    ExecutorKind("dask", "a Dask cluster: dask = a LocalCluster of worker processes on this "
                 "machine, dask:tcp://HOST:PORT = join a running cluster", needs="dask"),
)}


@dataclass(frozen=True)
class ExecutorSpec:
    kind: str                          # a key of EXECUTORS
    address: str | None = None         # dask: the scheduler to join (None: a LocalCluster)

    def __str__(self):
        return self.kind + (f":{self.address}" if self.address else "")


def parse_executor(text: str) -> ExecutorSpec:
    """``local`` | ``dask`` | ``dask:ADDRESS`` -> :class:`ExecutorSpec` (ValueError otherwise)."""
    kind, sep, address = str(text).partition(":")
    if kind not in EXECUTORS:
        raise ValueError(f"--executor {text!r}: unknown executor; use "
                         f"{' | '.join(EXECUTORS)} (dask:ADDRESS joins a cluster)")
    if kind == "local" and sep:
        raise ValueError(f"--executor {text!r}: local takes no address")
    if sep and not address:
        raise ValueError(f"--executor {text!r}: give the scheduler's address after 'dask:', "
                         f"e.g. dask:tcp://127.0.0.1:8786")
    return ExecutorSpec(kind, address or None)


def add_executor_arguments(p, what: str) -> None:
    """--executor, --workers and --threads-per-worker (shared by scale and train)."""
    g = p.add_argument_group("executor")
    g.add_argument("--executor", default="local", metavar="local|dask[:ADDRESS]",
                   help=f"where the work runs ({what}): " + "; ".join(
                       f"{e.name}: {e.description}" for e in EXECUTORS.values())
                   + " (default local; dask needs pip install 'pimrl[dask]')")
    g.add_argument("--workers", type=int, default=None, metavar="N",
                   help="dask without an address: worker processes of the LocalCluster "
                   "(default: this machine's cores / --threads-per-worker)")
    g.add_argument("--threads-per-worker", type=int, default=None, metavar="T",
                   help="dask: numba threads per worker (default: 1 on a LocalCluster; on a "
                   "joined cluster, each worker's NUMBA_NUM_THREADS)")


def check_sizes(spec: ExecutorSpec, workers: int | None, numba_threads: int | None) -> None:
    """--workers / --threads-per-worker against the executor, before anything starts."""
    if spec.kind == "local":
        if workers is not None or numba_threads is not None:
            raise ValueError("--workers and --threads-per-worker apply to --executor dask")
        return
    if spec.address and workers is not None:
        raise ValueError("--workers sizes a LocalCluster; a joined cluster has its own workers")
    if workers is not None and workers < 1:
        raise ValueError(f"--workers must be at least 1, got {workers}")
    if numba_threads is not None and numba_threads < 1:
        raise ValueError(f"--threads-per-worker must be at least 1, got {numba_threads}")
    require_dask()


def require_dask():
    """Import ``distributed`` or say how to install it."""
    try:
        import distributed
    except ImportError:
        raise ValueError("the dask executor needs Dask distributed: pip install 'pimrl[dask]'") from None
    return distributed


def _set_numba_threads(n: int) -> int:
    import numba

    n = max(1, min(int(n), int(numba.config.NUMBA_NUM_THREADS)))
    numba.set_num_threads(n)
    return n


def worker_facts(numba_threads: int | None = None) -> dict:
    """Who runs this task: dask worker address (or ``local``), host, pid, numba threads."""
    import numba

    if numba_threads:
        _set_numba_threads(numba_threads)
    address, name = "local", "local"
    try:
        from distributed import get_worker

        w = get_worker()
        address, name = w.address, str(w.name)
    except (ImportError, ValueError):
        pass
    import pimrl

    return {"address": address, "name": name, "host": socket.gethostname(), "pid": os.getpid(),
            "pimrl": pimrl.__version__,
            "numba_threads": int(numba.get_num_threads()),
            "numba_max_threads": int(numba.config.NUMBA_NUM_THREADS)}


def _default_workers(numba_threads: int) -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cpus or 1) // max(1, numba_threads))


@contextlib.contextmanager
def dask_client(address: str | None = None, workers: int | None = None,
                numba_threads: int | None = None, connect_timeout_s: float = 5.0):
    """A ``distributed.Client``: on a new ``LocalCluster`` of ``workers`` processes (each one
    task at a time, ``numba_threads`` numba threads, default 1), or on the scheduler at
    ``address`` (whose workers' numba threads are theirs unless tasks are told otherwise)."""
    require_dask()
    import logging

    from distributed import Client, LocalCluster

    if numba_threads is not None and numba_threads < 1:
        raise ValueError(f"--threads-per-worker must be at least 1, got {numba_threads}")
    if address:
        try:
            client = Client(address, timeout=f"{connect_timeout_s}s")
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"dask:{address}: cannot reach the scheduler ({exc})") from None
        try:
            yield client
        finally:
            client.close()
        return
    numba_threads = numba_threads or 1
    n = _default_workers(numba_threads) if workers is None else workers
    if n < 1:
        raise ValueError(f"--workers must be at least 1, got {n}")
    # NUMBA_NUM_THREADS must be set before a worker imports numba: the nanny's environment.
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.ERROR,
                           env={"NUMBA_NUM_THREADS": str(numba_threads),
                                "OMP_NUM_THREADS": "1"})
    try:
        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def describe_cluster(client, numba_threads: int | None = None) -> dict:
    """What meta.json records of a cluster: scheduler, and per worker its address, host,
    pid, Dask threads and numba threads."""
    import pimrl

    info = client.scheduler_info()
    try:
        facts = client.run(worker_facts, numba_threads)
    except Exception as exc:          # e.g. a worker without pimrl cannot load worker_facts
        raise ValueError(f"the workers of {info.get('address')} cannot run pimrl "
                         f"({type(exc).__name__}: {exc}); install pimrl {pimrl.__version__} "
                         f"on every worker") from None
    other = {a: f["pimrl"] for a, f in facts.items() if f["pimrl"] != pimrl.__version__}
    if other:
        addr, version = sorted(other.items())[0]
        raise ValueError(f"worker {addr} runs pimrl {version}, this process pimrl "
                         f"{pimrl.__version__}: install the same pimrl on every worker")
    workers = []
    for addr, w in sorted(info.get("workers", {}).items()):
        f = facts.get(addr, {})
        workers.append({"address": addr, "name": str(w.get("name")), "host": f.get("host", w.get("host")),
                        "pid": f.get("pid"), "dask_threads": w.get("nthreads"),
                        "numba_threads": f.get("numba_threads"),
                        "memory_limit_bytes": w.get("memory_limit")})
    return {"executor": "dask", "scheduler": info.get("address"), "n_workers": len(workers),
            "workers": workers}
