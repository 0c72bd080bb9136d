"""Where work runs: this process, or a Dask cluster (the optional ``pimrl[dask]`` extra).

``--executor local`` runs everything here. ``--executor dask`` starts a ``LocalCluster`` of
worker processes on this machine; ``--executor dask:tcp://host:8786`` joins a running
cluster (its workers need pimrl installed). Each Dask worker runs one task at a time
(``nthreads=1``) and parallelises inside it with numba threads, ``numba_threads`` of them.
``dask:tls://host:8786`` joins a scheduler that requires TLS, with Dask's own TLS settings.
Ctrl-C, or an error, shuts down within a second and quietly (see :func:`dask_client`).

Nothing here decides *what* runs: the sweep runner (:mod:`pimrl.experiments.runner`) makes
a task of each row, the distributed DPU set (:mod:`pimrl.pim.distributed`) places whole
ranks of a simulated system on the workers.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from dataclasses import dataclass

from pimrl.registry import Registry


@dataclass(frozen=True)
class ExecutorKind:
    """One way to run work: its name on the command line and what it does."""

    name: str
    description: str
    needs: str | None = None          # the optional extra it needs


#: The executors, by name (``dask`` takes an optional ``:ADDRESS``).
EXECUTORS = Registry("executors")
for _kind in (
    ExecutorKind("local", "this process, one task after another"),
    ExecutorKind("dask", "a Dask cluster: dask = a LocalCluster of worker processes on this "
                 "machine, dask:tcp://HOST:PORT = join a running cluster", needs="dask"),
):
    EXECUTORS.add(_kind.name, _kind, _kind.description, needs=_kind.needs)


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


#: Seconds each step of shutting a cluster down after Ctrl-C or an error may take at most
#: (cancel the futures, close the client, kill the workers, close the LocalCluster); each
#: takes milliseconds when the cluster answers.
ABORT_STEP_S = 0.4

#: Dask's settings for a TLS client, as config keys and as environment variables.
TLS_HINT = ("distributed.comm.tls.ca-file, distributed.comm.tls.client.cert and "
            "distributed.comm.tls.client.key in the Dask config (or the environment variables "
            "DASK_DISTRIBUTED__COMM__TLS__CA_FILE, DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT "
            "and DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY)")


@contextlib.contextmanager
def dask_client(address: str | None = None, workers: int | None = None,
                numba_threads: int | None = None, connect_timeout_s: float = 5.0,
                security=None):
    """A ``distributed.Client``: on a new ``LocalCluster`` of ``workers`` processes (each one
    task at a time, ``numba_threads`` numba threads, default 1), or on the scheduler at
    ``address`` (whose workers' numba threads are theirs unless tasks are told otherwise).

    ``security`` (a ``distributed.security.Security``) is the client's TLS setup; ``None``
    takes Dask's own configuration, as ``Client`` does: ``distributed.comm.tls.*`` (files
    or ``DASK_DISTRIBUTED__COMM__TLS__...`` variables) and any
    ``distributed.client.security-loader``. A ``tls://`` address needs it.

    Ctrl-C (or any error) inside the block shuts down within a second and quietly: the
    futures are cancelled and the client closed, and a LocalCluster started here has its
    worker processes killed (they ignore Ctrl-C themselves, so only this process answers
    it) and is closed. A joined cluster's scheduler and workers are never shut down."""
    require_dask()
    import logging

    from distributed import Client, LocalCluster

    if numba_threads is not None and numba_threads < 1:
        raise ValueError(f"--threads-per-worker must be at least 1, got {numba_threads}")
    if address:
        client = _connect(Client, address, connect_timeout_s, security)
        try:
            yield client
            client.close()
        except BaseException:
            _abort(client)
            raise
        return
    numba_threads = numba_threads or 1
    n = _default_workers(numba_threads) if workers is None else workers
    if n < 1:
        raise ValueError(f"--workers must be at least 1, got {n}")
    import dask

    # Each worker also runs this module's dask_setup (after any preload of the config).
    preload = dask.config.get("distributed.worker.preload", None) or []
    preload = ([preload] if isinstance(preload, str) else list(preload)) + [__name__]
    known = {id(c) for c in _clusters()}
    cluster = client = None
    try:
        # NUMBA_NUM_THREADS must be set before a worker imports numba: the nanny's environment.
        cluster = LocalCluster(n_workers=0, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR,
                               security=security, preload=preload,
                               memory_limit=_memory_limit(n),
                               env={"NUMBA_NUM_THREADS": str(numba_threads),
                                    "OMP_NUM_THREADS": "1"})
        from distributed.utils import sync

        # The worker processes start with SIGINT ignored, inherited from this process for
        # the moment they are spawned (dask_setup keeps it so for a restarted worker).
        with _sigint_ignored():
            starting = sync(cluster.loop, _scale, cluster, n)
            _wait_until_spawned(cluster, n, starting)
        sync(cluster.loop, lambda: starting)     # all up, or the error of one that failed
        client = Client(cluster)
        yield client
        client.close()
        cluster.close()
    except BaseException:
        if cluster is None:                 # Ctrl-C while it started: find it all the same
            cluster = next((c for c in _clusters() if id(c) not in known), None)
        _abort(client, cluster)
        raise


def _memory_limit(n: int):
    """Each of ``n`` workers' share of this machine's memory, as ``LocalCluster(n_workers=n)``
    gives it."""
    import logging

    try:
        from distributed.worker_memory import parse_memory_limit

        return parse_memory_limit("auto", 1, n, logger=logging.getLogger("distributed.deploy"))
    except Exception:                               # pragma: no cover - another distributed
        return "auto"


#: Seconds at most that SIGINT stays ignored while a LocalCluster's worker processes are
#: spawned (typically 30-60 ms here; their start, seconds, comes after and Ctrl-C is
#: answered then). A worker spawned later only ignores SIGINT once it runs dask_setup.
SPAWN_WAIT_S = 1.0


async def _scale(cluster, n: int):
    """``cluster.scale(n)``, and the task that starts the workers (which ``scale`` starts
    too, but does not return)."""
    import asyncio

    cluster.scale(n)
    return asyncio.ensure_future(cluster._correct_state())


def _wait_until_spawned(cluster, n: int, starting) -> None:
    """Until the ``n`` worker processes of ``cluster`` exist (or ``starting`` ended)."""
    import time

    from distributed.utils import sync

    deadline = time.monotonic() + SPAWN_WAIT_S
    while time.monotonic() < deadline:
        if starting.done() or sync(cluster.loop, _spawned, cluster, n):
            return
        time.sleep(0.005)


async def _spawned(cluster, n: int) -> bool:
    from distributed import Nanny

    nannies = [w for w in list(getattr(cluster, "_created", ())) if isinstance(w, Nanny)]
    return len(nannies) >= n and all(w.pid or w.status.name in ("failed", "closed", "closing")
                                     for w in nannies)


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored by this process for the block (exactly restored after it, C handler
    and flags: ``sigaction``, not Python's handler table). Processes spawned meanwhile
    inherit the ignored SIGINT, and Python keeps it so; a Ctrl-C in the block, a few
    milliseconds, is lost."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        sigaction = libc.sigaction
    except (OSError, AttributeError):               # pragma: no cover - not POSIX
        yield
        return
    sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    # struct sigaction starts with the handler on Linux and the BSDs; 512 bytes hold it all.
    ignore, saved = ctypes.create_string_buffer(512), ctypes.create_string_buffer(512)
    ctypes.c_void_p.from_buffer(ignore).value = int(signal.SIG_IGN)
    if sigaction(signal.SIGINT, ignore, saved) != 0:
        yield
        return
    try:
        yield
    finally:
        sigaction(signal.SIGINT, saved, None)


def dask_setup(worker) -> None:  # pragma: no cover - runs in a LocalCluster's worker process
    """Run by each worker of a LocalCluster started by :func:`dask_client` (its preload):
    the worker ignores SIGINT. The terminal sends Ctrl-C to the whole process group, workers
    included; only pimrl's own process answers it, and it shuts the workers down itself, so
    they print no tracebacks of their own."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _clusters() -> list:
    """The SpecClusters alive in this process (a LocalCluster is one)."""
    try:
        from distributed.deploy.spec import SpecCluster

        return list(SpecCluster._instances)
    except Exception:
        return []


def _connect(Client, address: str, connect_timeout_s: float, security):
    """``Client(address)`` with Dask's security settings, or one line saying what is wrong."""
    where = f"dask:{address}"
    tls = address.startswith("tls://")
    try:
        return Client(address, timeout=f"{connect_timeout_s}s", security=security)
    except TypeError as exc:
        if "ssl_context" not in str(exc):         # distributed found no TLS setup
            raise
        problem = _tls_problem(security) or "no TLS setup for a tls:// address"
        raise ValueError(f"{where}: {problem}; set {TLS_HINT}") from None
    except (OSError, TimeoutError) as exc:
        problem = _tls_problem(security) if tls else None
        if problem:
            raise ValueError(f"{where}: {problem}") from None
        hint = ""
        if tls:
            hint = (" (is the scheduler's certificate signed by the CA in "
                    "distributed.comm.tls.ca-file, and this client's accepted by the scheduler?)")
        elif "reset by peer" in str(exc) or "closed" in str(exc):
            hint = " (if the scheduler uses TLS, give its tls:// address)"
        raise ValueError(f"{where}: cannot reach the scheduler ({_one_line(exc)}){hint}") from None


def _tls_problem(security) -> str | None:
    """What is missing from this client's TLS setup (Dask's config, or ``security``)."""
    try:
        from distributed.security import Security

        sec = security if isinstance(security, Security) else Security()
        tls = sec.get_tls_config_for_role("client")
    except Exception as exc:                     # e.g. a bad distributed.comm.tls.min-version
        return f"Dask's TLS settings are invalid ({_one_line(exc)})"
    names = {"ca_file": "distributed.comm.tls.ca-file", "cert": "distributed.comm.tls.client.cert",
             "key": "distributed.comm.tls.client.key"}
    missing = [names[k] for k in ("ca_file", "cert") if not tls.get(k)]
    if missing:
        return (f"a tls:// scheduler needs a CA and a client certificate, and "
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set")
    for k in ("ca_file", "cert", "key"):
        value = tls.get(k)
        if value and "\n" not in value and not os.path.isfile(value):  # a path, not PEM text
            return f"{names[k]} = {value}: no such file"
    return None


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def _abort(client, cluster=None) -> None:
    """Shut down after Ctrl-C or an error, quietly and in bounded time: close the client
    (the scheduler forgets its futures), kill a LocalCluster's worker processes (a task in
    compiled code would not stop for a polite request) and close it. Every step is bounded
    by ABORT_STEP_S and none raises (a second Ctrl-C skips only the step it lands in)."""
    with quiet_distributed():
        if client is not None:
            _quietly(client.close, timeout=ABORT_STEP_S)
        if cluster is not None:
            _quietly(_kill_workers, cluster)
            _quietly(cluster.close, timeout=ABORT_STEP_S)
            _quietly(_kill_workers, cluster)       # any that started while it closed
        # The event loop's thread ends once its users have stopped (a close that timed
        # out did not stop its own).
        for user in (client, cluster):
            if getattr(user, "_loop_runner", None) is not None:
                _quietly(user._loop_runner.stop, timeout=ABORT_STEP_S)


def _quietly(fn, *args, **kwargs) -> None:
    try:
        fn(*args, **kwargs)
    except (Exception, KeyboardInterrupt):
        pass


def _kill_workers(cluster) -> None:
    """SIGKILL the worker processes of a LocalCluster, telling their nannies first not to
    start new ones (on the cluster's loop, which owns them)."""
    from distributed.utils import sync

    sync(cluster.loop, _kill_workers_now, cluster, callback_timeout=ABORT_STEP_S)


async def _kill_workers_now(cluster) -> None:
    from distributed import Nanny

    nannies = set(cluster.workers.values()) | set(getattr(cluster, "_created", ()))
    for nanny in nannies:
        if not isinstance(nanny, Nanny):
            continue
        if str(getattr(nanny.status, "name", "")) not in ("closing", "closed", "failed"):
            nanny.close_gracefully(reason="pimrl-interrupted")    # do not restart it
        pid = nanny.pid
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def quiet_distributed():
    """Dask's loggers (and asyncio's and tornado's) silent for the block: a shutdown after
    Ctrl-C prints only pimrl's one line."""
    import logging

    roots = ("distributed", "tornado", "asyncio")
    names = set(roots) | {name for name in list(logging.root.manager.loggerDict)
                          if name.startswith(tuple(r + "." for r in roots))}
    saved = {}
    for name in names:
        logger = logging.getLogger(name)
        saved[name] = logger.level
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def cancel_futures(client, futures, timeout_s: float = ABORT_STEP_S) -> None:
    """``client.cancel(futures)``, waiting at most ``timeout_s`` for the scheduler (a
    closing client releases them anyway)."""
    if not futures:
        return
    from distributed.utils import sync

    futures = list(futures)
    with quiet_distributed():
        try:
            sync(client.loop, lambda: client.cancel(futures, asynchronous=True),
                 callback_timeout=timeout_s)
        except Exception:
            pass


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
