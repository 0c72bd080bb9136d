"""The executors of a ``pimrl scale`` sweep: ``local`` (tasks run here, one after another)
and ``dask`` (each task on one worker of a Dask cluster, results as they finish). Both take
tasks by :meth:`submit` and give ``(task_id, result, error)`` back from :meth:`results`.
"""
from __future__ import annotations


class LocalTasks:
    """The local executor: tasks run here, in the order submitted, when results are asked for."""

    name = "local"
    numba_threads = None

    def __init__(self):
        self.queue = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cancel()

    def cancel(self):
        """Forget the tasks not yet run (a sweep that stops early leaves none behind)."""
        self.queue.clear()

    def describe(self) -> dict:
        from pimrl.cluster import worker_facts

        return {"executor": "local", "n_workers": 1, "workers": [worker_facts()]}

    def max_threads(self) -> int:
        from pimrl.baselines.cpu import max_threads

        return max_threads()

    def gpu_status(self) -> tuple[bool, str]:
        from pimrl.baselines import gpu as gpu_mod

        return gpu_mod.gpu_status()

    def submit(self, task_id, fn, *args):
        self.queue.append((task_id, fn, args))

    def results(self):
        """(task_id, result, None) or (task_id, None, exception) as tasks finish."""
        while self.queue:
            task_id, fn, args = self.queue.pop(0)
            try:
                result = fn(*args)
            except Exception as exc:          # the row fails on its own: recorded, not fatal
                yield task_id, None, exc
                continue
            yield task_id, result, None

    def work(self) -> str:
        return ""


class DaskTasks:
    """The dask executor: each task on one worker of a Dask cluster; results as they finish.

    A task whose worker dies is run again on another worker by the scheduler (up to
    ``distributed.scheduler.allowed-failures`` times; then it is a failed row)."""

    name = "dask"

    def __init__(self, address: str | None = None, workers: int | None = None,
                 numba_threads: int | None = None):
        # A LocalCluster's workers get 1 numba thread unless told; a joined cluster's keep theirs.
        if address is None and numba_threads is None:
            numba_threads = 1
        self.address, self.workers, self.numba_threads = address, workers, numba_threads
        self.futures = {}
        self._ctx = None
        self.client = None

    def __enter__(self):
        from pimrl.cluster import dask_client

        self._ctx = dask_client(self.address, self.workers, self.numba_threads)
        self.client = self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self.cancel()
        finally:
            self._ctx.__exit__(*exc)

    def cancel(self):
        """Cancel the tasks not yet collected (a sweep that stops early leaves none behind);
        bounded in time, so Ctrl-C stays prompt."""
        from pimrl.cluster import cancel_futures

        try:
            cancel_futures(self.client, self.futures)
        finally:
            self.futures.clear()

    def describe(self) -> dict:
        from pimrl.cluster import describe_cluster

        return describe_cluster(self.client, self.numba_threads)

    def max_threads(self) -> int:
        from pimrl.cluster import worker_facts

        facts = self.client.run(worker_facts, self.numba_threads).values()
        return min(f["numba_threads"] for f in facts)

    def gpu_status(self) -> tuple[bool, str]:
        from pimrl.baselines.gpu import gpu_status

        status = self.client.run(gpu_status)
        reasons = {why for ok, why in status.values()}
        if all(ok for ok, _ in status.values()) or len(reasons) == 1:
            return sorted(status.values())[0]      # the same on every worker
        for addr, (ok, why) in sorted(status.items()):
            if not ok:
                return False, f"worker {addr}: {why}"
        raise AssertionError("unreachable")

    def submit(self, task_id, fn, *args):
        import uuid

        fut = self.client.submit(fn, *args, pure=False,
                                 key=f"pimrl-{task_id[0]}-{uuid.uuid4().hex[:12]}")
        self.futures[fut] = task_id

    def results(self):
        from distributed import as_completed

        for fut in as_completed(list(self.futures)):
            task_id = self.futures.pop(fut)
            try:
                result = fut.result()
            except Exception as exc:          # includes KilledWorker: died too often
                yield task_id, None, exc
                continue
            finally:
                fut.release()
            yield task_id, result, None

    def work(self) -> str:
        try:
            processing = self.client.processing()
        except Exception:                     # the bar must never stop the sweep
            return ""
        busy = sum(1 for keys in processing.values() if keys)
        running = sum(len(keys) for keys in processing.values())
        return (f"{len(processing)} workers, {busy} busy, "
                f"{max(0, len(self.futures) - running)} queued")


def make_executor(spec="local", workers: int | None = None, numba_threads: int | None = None):
    """The executor named by ``spec`` (``local`` | ``dask`` | ``dask:ADDRESS``)."""
    from pimrl.cluster import check_sizes, parse_executor

    s = parse_executor(spec)
    check_sizes(s, workers, numba_threads)
    if s.kind == "local":
        return LocalTasks()
    return DaskTasks(s.address, workers, numba_threads)
