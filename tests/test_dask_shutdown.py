"""Dask shutdown and security, on real clusters (no mocks).

- Ctrl-C under ``--executor dask``: the terminal's SIGINT (sent to the whole process group,
  worker processes included) ends ``pimrl`` with status 130 and one line on stderr, promptly,
  with no worker traceback or Dask log line and no worker process left behind; the same
  while the workers are still starting.
- ``dask_client``: an interrupt in the block kills a LocalCluster's workers at once and
  quietly, and leaves a joined cluster running.
- TLS: ``dask:tls://ADDRESS`` joins a scheduler that requires TLS with the certificates of
  Dask's own configuration (here set through ``DASK_DISTRIBUTED__COMM__TLS__...``
  environment variables, certificates made by the test); without them, one line says what
  to set.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")          # a dependency of distributed

from pimrl.cluster import dask_client  # noqa: E402

#: Clusters started and interrupted: left out of ``make test-fast``.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

#: Ctrl-C to the "interrupted" line: pimrl's own shutdown (cancel, close, kill the workers).
LINE_S = 1.0
#: Ctrl-C to the exit: that, plus the interpreter's own teardown (0.3-0.8 s on this project's
#: busy 2-core machine, most of it unloading numba and distributed), with slack for CI.
EXIT_S = 2.0

SLOW_CONFIG = """
[study]
name = "slow"
seed = 1

[learner]
epochs = 400

[baselines]
cpu = false
gpu = false

[[sweep]]
name = "s"
envs = ["Taxi-v3"]
transitions = 1000000
dpus = [4, 8, 16, 32]
variants = ["q-fp32-seq", "q-int32-seq"]
tasklets = [4]
aggregators = ["mean"]
"""

TINY_CONFIG = """
[study]
name = "tiny"
seed = 1

[learner]
epochs = 1

[baselines]
cpu = false
gpu = false

[[sweep]]
name = "s"
envs = ["FrozenLake-v1"]
transitions = 1000
dpus = [1]
variants = ["q-fp32-seq"]
tasklets = [1]
"""


def _env(**extra):
    """This environment without any Dask TLS settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_DISTRIBUTED__COMM__")}
    env.update(extra)
    return env


class _Run:
    """``python -m pimrl ARGS`` in its own process group (a terminal's foreground job), its
    stderr lines timestamped as they come."""

    def __init__(self, args, env=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "pimrl", *args], cwd=ROOT,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True, env=env or _env())
        self.ps = psutil.Process(self.proc.pid)
        self.lines = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in iter(self.proc.stderr.readline, b""):
            self.lines.append((time.monotonic(), line.decode(errors="replace").rstrip("\n")))

    def workers(self):
        """The worker processes (children spawned by multiprocessing)."""
        try:
            kids = self.ps.children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        out = []
        for k in kids:
            try:
                if "spawn_main" in " ".join(k.cmdline()):
                    out.append(k)
            except psutil.Error:
                pass
        return out

    def wait_for(self, cond, timeout, what):
        deadline = time.monotonic() + timeout
        while not cond():
            if self.proc.poll() is not None:
                pytest.fail(f"pimrl ended (status {self.proc.returncode}) before {what}: "
                            + "\n".join(l for _, l in self.lines))
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"no {what} within {timeout} s")
            time.sleep(0.02)

    def ctrl_c(self):
        """SIGINT to the whole process group, as the terminal sends it; then wait for the
        end. Returns (status, seconds to the first line after it, seconds to the exit,
        the lines after it, the processes that were the group's before it)."""
        procs = [self.ps] + self.ps.children(recursive=True)
        n_before = len(self.lines)
        t0 = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("pimrl still running 30 s after Ctrl-C")
        exit_s = time.monotonic() - t0
        self._reader.join(5)
        after = self.lines[n_before:]
        first_s = after[0][0] - t0 if after else None
        return self.proc.returncode, first_s, exit_s, [l for _, l in after], procs

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def _gone(procs, timeout=3.0) -> list:
    """Those of ``procs`` still alive after ``timeout`` (a zombie is gone)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def _ignores_sigint(pid) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        pytest.skip("needs /proc")
    mask = int(status.split("SigIgn:")[1].split()[0], 16)
    return bool(mask & (1 << (signal.SIGINT - 1)))


def _check_one_quiet_line(status, first_s, exit_s, after, run, procs, label):
    everything = "\n".join(l for _, l in run.lines)
    print(f"\n{label}: Ctrl-C -> line {first_s and round(first_s, 3)} s, "
          f"exit {exit_s:.3f} s, status {status}")
    assert status == 130, everything
    assert [l for l in after if l.strip()] and len([l for l in after if l.strip()]) == 1, after
    assert "interrupted" in [l for l in after if l.strip()][0]
    for bad in ("Traceback", "distributed.", "ERROR", "KeyboardInterrupt", "Exception"):
        assert bad not in everything, everything
    assert first_s is not None and first_s < LINE_S, (first_s, after)
    assert exit_s < EXIT_S, exit_s
    left = _gone(procs)
    assert not left, f"left running: {[(p.pid, p.name()) for p in left]}"


@pytest.fixture
def slow_config(tmp_path):
    p = tmp_path / "slow.toml"
    p.write_text(SLOW_CONFIG)
    return p


def test_ctrl_c_during_a_dask_sweep_is_one_line_and_prompt(slow_config, tmp_path):
    out = tmp_path / "out"
    run = _Run(["scale", str(slow_config), "--out", str(out), "--executor", "dask",
                "--workers", "2", "--threads-per-worker", "1", "--no-progress"])
    # meta.json is written just before the rows are submitted; then the workers are busy.
    run.wait_for(lambda: (out / "meta.json").exists(), 120, "meta.json")
    run.wait_for(lambda: len(run.workers()) == 2, 30, "two workers")
    time.sleep(1.0)
    status, first_s, exit_s, after, procs = run.ctrl_c()
    _check_one_quiet_line(status, first_s, exit_s, after, run, procs, "scale --executor dask")
    assert len(procs) >= 3                      # pimrl and its two workers, all gone
    meta = json.loads((out / "meta.json").read_text())
    assert meta["sessions"][-1]["cluster"]["n_workers"] == 2


def test_ctrl_c_while_the_workers_start(slow_config, tmp_path):
    """The workers ignore SIGINT from their first instruction: a Ctrl-C while they are
    still importing prints no traceback of theirs either."""
    run = _Run(["scale", str(slow_config), "--out", str(tmp_path / "out"), "--executor",
                "dask", "--workers", "2", "--no-progress"])
    # pimrl ignores SIGINT itself for the few milliseconds it takes to spawn the workers
    # (they inherit that); a Ctrl-C then would be lost, so it comes just after.
    run.wait_for(lambda: len(run.workers()) == 2 and not _ignores_sigint(run.proc.pid), 120,
                 "two worker processes")
    status, first_s, exit_s, after, procs = run.ctrl_c()
    _check_one_quiet_line(status, first_s, exit_s, after, run, procs, "workers starting")


def test_ctrl_c_during_a_simulation_on_dask_workers(tmp_path):
    """pimrl train --executor dask: one simulated system spread over the workers."""
    run = _Run(["train", "--env", "Taxi-v3", "--transitions", "400000", "--backend", "pim",
                "--hardware", "upmem-2560", "--hw", "n_ranks=157", "--dpus", "10000",
                "--epochs", "40", "--aggregate", "sync:40", "--executor", "dask", "--workers", "2"])
    run.wait_for(lambda: len(run.workers()) == 2, 120, "two workers")

    def busy():      # both workers past their start (about a second of CPU each)
        try:
            return all(w.cpu_times().user + w.cpu_times().system > 2.5 for w in run.workers())
        except psutil.Error:
            return False
    run.wait_for(busy, 120, "busy workers")
    status, first_s, exit_s, after, procs = run.ctrl_c()
    _check_one_quiet_line(status, first_s, exit_s, after, run, procs, "train --executor dask")


# ------------------------------------------------------------------- dask_client in-process
def _spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return seconds


def _sigint_disposition():
    handler = signal.getsignal(signal.SIGINT)
    return int(handler) if isinstance(handler, int) else repr(handler)


def _wait_until(cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_an_interrupt_kills_the_local_workers_at_once_and_quietly(capfd):
    import logging

    levels = {n: logging.getLogger(n).level for n in ("distributed", "distributed.nanny")}
    with pytest.raises(KeyboardInterrupt):
        with dask_client(workers=2, numba_threads=1) as c:
            # The workers ignore Ctrl-C: only this process answers it.
            assert set(c.run(_sigint_disposition).values()) == {int(signal.SIG_IGN)}
            # A worker started again by its nanny too (it runs pimrl.cluster.dask_setup).
            first = c.run(os.getpid)
            os.kill(next(iter(first.values())), signal.SIGKILL)

            def restarted():
                try:
                    return len(set(c.run(os.getpid).values()) - set(first.values())) == 1
                except Exception:       # the dead worker, not yet removed
                    return False
            _wait_until(restarted)
            assert set(c.run(_sigint_disposition).values()) == {int(signal.SIG_IGN)}
            # Each worker has its share of the memory, as LocalCluster(n_workers=2) gives.
            from pimrl.cluster import _memory_limit

            assert {w["memory_limit"] for w in c.scheduler_info()["workers"].values()} == {
                _memory_limit(2)}
            pids = list(c.run(os.getpid).values())
            futures = [c.submit(_spin, 60, pure=False) for _ in range(3)]  # noqa: F841
            _wait_until(lambda: all(c.processing().values()))      # both workers busy
            capfd.readouterr()                  # (the killed worker's news: not the test's)
            t0 = time.monotonic()
            raise KeyboardInterrupt
    elapsed = time.monotonic() - t0
    print(f"\ndask_client: interrupt -> workers killed and closed in {elapsed:.3f} s")
    assert elapsed < LINE_S
    assert not _gone([psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout=2)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "distributed." not in err, err
    # Dask's loggers are as they were.
    assert {n: logging.getLogger(n).level for n in levels} == levels
    # This process still answers Ctrl-C as before.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupt_on_a_joined_cluster_leaves_it_running(capfd):
    with dask_client(workers=1, numba_threads=1) as outer:
        address = outer.scheduler.address
        with pytest.raises(KeyboardInterrupt):
            with dask_client(address) as c:
                running = c.submit(_spin, 2, pure=False, key="pimrl-joined-spin")  # noqa: F841
                _wait_until(lambda: any(outer.processing().values()))
                raise KeyboardInterrupt
        # The scheduler forgot the task of the closed client, and still runs work.
        _wait_until(lambda: outer.run_on_scheduler(
            lambda dask_scheduler: "pimrl-joined-spin" not in dask_scheduler.tasks), 10)
        assert outer.submit(_spin, 0.01, pure=False).result() == 0.01
    assert "Traceback" not in capfd.readouterr().err


# ------------------------------------------------------------------------------------ TLS
def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA and a certificate it signed (for the scheduler, the worker and the client), and
    another CA's self-signed certificate, as files: with the openssl tool, or with the
    cryptography package (through Dask's ``Security.temporary``); skipped with neither."""
    d = tmp_path_factory.mktemp("tls")
    if shutil.which("openssl"):
        subj = ["-subj"]
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
                 "ca.pem", "-days", "2", *subj, "/CN=pimrl-test-ca", cwd=d)
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out",
                 "node.csr", *subj, "/CN=localhost", cwd=d)
        (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", "node.pem", "-days", "2", "-sha256",
                 "-extfile", "ext.cnf", cwd=d)
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key",
                 "-out", "other.pem", "-days", "2", *subj, "/CN=another-ca", cwd=d)
    else:
        pytest.importorskip("cryptography", reason="neither openssl nor cryptography")
        from distributed.security import Security

        for name, sec in (("node", Security.temporary()), ("other", Security.temporary())):
            # One self-signed certificate, its own CA.
            (d / f"{name}.pem").write_text(sec.tls_client_cert)
            (d / f"{name}.key").write_text(sec.tls_client_key)
        shutil.copy(d / "node.pem", d / "ca.pem")
    return {"ca": str(d / "ca.pem"), "node": str(d / "node.pem"), "key": str(d / "node.key"),
            "other": str(d / "other.pem"), "other_key": str(d / "other.key")}


@pytest.fixture(scope="module")
def tls_scheduler(certs):
    """A scheduler and a worker that speak only TLS, each with a certificate of the CA."""
    import logging

    from distributed import LocalCluster
    from distributed.security import Security

    sec = Security(tls_ca_file=certs["ca"], require_encryption=True,
                   tls_scheduler_cert=certs["node"], tls_scheduler_key=certs["key"],
                   tls_worker_cert=certs["node"], tls_worker_key=certs["key"],
                   tls_client_cert=certs["node"], tls_client_key=certs["key"])
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, security=sec,
                      protocol="tls://", host="127.0.0.1", dashboard_address=None,
                      silence_logs=logging.CRITICAL) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        yield cluster.scheduler_address


def _tls_env(certs, **over):
    env = {"DASK_DISTRIBUTED__COMM__TLS__CA_FILE": certs["ca"],
           "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": certs["node"],
           "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": certs["key"]}
    env.update(over)
    return _env(**env)


def _pimrl(args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "pimrl", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_sweep_joins_a_tls_cluster_with_dasks_own_settings(certs, tls_scheduler, tmp_path):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_CONFIG)
    out = tmp_path / "out"
    r = _pimrl(["scale", str(config), "--out", str(out), "--executor", f"dask:{tls_scheduler}",
                "--no-progress"], _tls_env(certs))
    assert r.returncode == 0, r.stderr
    session = json.loads((out / "meta.json").read_text())["sessions"][-1]
    assert session["cluster"]["scheduler"] == tls_scheduler
    assert all(w["address"].startswith("tls://") for w in session["cluster"]["workers"])
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("case", ["none", "no client certificate", "another CA",
                                  "missing file", "plain tcp"])
def test_a_tls_cluster_without_the_right_settings_is_one_clear_line(case, certs, tls_scheduler,
                                                                     tmp_path):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_CONFIG)
    address, env = tls_scheduler, _tls_env(certs)
    if case == "none":
        env = _env()
    elif case == "no client certificate":
        env = _env(DASK_DISTRIBUTED__COMM__TLS__CA_FILE=certs["ca"])
    elif case == "another CA":
        env = _tls_env(certs, DASK_DISTRIBUTED__COMM__TLS__CA_FILE=certs["other"])
    elif case == "missing file":
        env = _tls_env(certs, DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(tmp_path / "nope.pem"))
    else:
        address = tls_scheduler.replace("tls://", "tcp://")
    r = _pimrl(["scale", str(config), "--out", str(tmp_path / "out"), "--executor",
                f"dask:{address}", "--no-progress"], env, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"pimrl scale: error: dask:{address}: ")
    expected = {
        "none": "distributed.comm.tls.ca-file and distributed.comm.tls.client.cert are not set",
        "no client certificate": "distributed.comm.tls.client.cert is not set",
        "another CA": "cannot reach the scheduler",
        "missing file": f"distributed.comm.tls.ca-file = {tmp_path / 'nope.pem'}: no such file",
        "plain tcp": "give its tls:// address",
    }[case]
    assert expected in lines[0]
    if case in ("none", "no client certificate"):
        assert "DASK_DISTRIBUTED__COMM__TLS__CA_FILE" in lines[0]
    assert not (tmp_path / "out" / "results.csv").exists()


def test_dask_client_takes_dask_config_or_a_security_object(certs, tls_scheduler):
    import dask
    from distributed.security import Security

    with dask.config.set({"distributed.comm.tls.ca-file": certs["ca"],
                          "distributed.comm.tls.client.cert": certs["node"],
                          "distributed.comm.tls.client.key": certs["key"]}):
        with dask_client(tls_scheduler) as c:
            assert c.scheduler_info()["address"] == tls_scheduler
    sec = Security(tls_ca_file=certs["ca"], tls_client_cert=certs["node"],
                   tls_client_key=certs["key"], require_encryption=True)
    with dask_client(tls_scheduler, security=sec) as c:
        assert len(c.scheduler_info()["workers"]) == 1
    with pytest.raises(ValueError, match="distributed.comm.tls.client.cert is not set"):
        with dask_client(tls_scheduler, security=Security(tls_ca_file=certs["ca"])):
            pass

