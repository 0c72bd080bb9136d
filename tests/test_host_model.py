"""The host model (pimrl.pim.host): the PrIM host's figures, and the modelled aggregation time
as the larger of a compute bound and a memory-bandwidth bound."""
from __future__ import annotations

import dataclasses

import pytest

from pimrl.pim.host import (
    HOST_SOURCES, PRIM_HOST, HostModel, host_aggregation_bounds, host_aggregation_seconds,
    host_transpose_seconds,
)


def test_prim_host_is_two_xeon_silver_4215():
    h = PRIM_HOST
    assert (h.sockets, h.cores, h.frequency_hz, h.package_tdp_w) == (2, 16, 2.5e9, 85.0)
    assert h.active_power_w == 170.0
    assert h.idle_power_w == pytest.approx(42.5)
    assert h.memory_bandwidth_gbps == pytest.approx(4 * 2400e6 * 8 / 1e9)   # 4 DDR4-2400 channels


def test_every_figure_has_a_source_and_certainty():
    numeric = [f.name for f in dataclasses.fields(HostModel) if f.name != "name"]
    assert sorted(HOST_SOURCES) == sorted(numeric)
    for unit, source, certainty in HOST_SOURCES.values():
        assert unit and source
        assert certainty in ("published", "derived", "uncertain")


def test_compute_bound_known_answer():
    # 10 tables x 100 entries, 1 thread: 1,000 entries at 0.4 ns = 0.4 us; the memory bound is
    # 11 x 100 x 4 B at 76.8 GB/s = 57.3 ns
    b = host_aggregation_bounds(PRIM_HOST, 10, 100, threads=1)
    assert b["compute_s"] == pytest.approx(1000 * 0.4e-9)
    assert b["memory_s"] == pytest.approx(11 * 100 * 4 / 76.8e9)
    assert b["bound"] == "compute"
    assert host_aggregation_seconds(PRIM_HOST, 10, 100, threads=1) == pytest.approx(4e-7)


def test_memory_bound_known_answer():
    # 2,000 Taxi tables (3,000 entries) on all 16 cores: compute 6e6 x 0.4 ns / 16 = 150 us,
    # memory 2,001 x 3,000 x 4 B / 76.8 GB/s = 312.7 us
    b = host_aggregation_bounds(PRIM_HOST, 2000, 3000)
    assert b["compute_s"] == pytest.approx(150e-6)
    assert b["memory_s"] == pytest.approx(2001 * 3000 * 4 / 76.8e9)
    assert b["bound"] == "memory"
    assert host_aggregation_seconds(PRIM_HOST, 2000, 3000) == pytest.approx(b["memory_s"])
    # visit counts beside the tables (weighted) double the bytes
    assert host_aggregation_seconds(PRIM_HOST, 2000, 3000, bytes_per_entry=8) == \
        pytest.approx(2 * b["memory_s"])


def test_threads_split_compute_but_not_bandwidth():
    one = host_aggregation_bounds(PRIM_HOST, 64, 1000, threads=1)
    four = host_aggregation_bounds(PRIM_HOST, 64, 1000, threads=4)
    assert four["compute_s"] == pytest.approx(one["compute_s"] / 4)
    assert four["memory_s"] == one["memory_s"]
    # more threads than cores count as the cores
    assert host_aggregation_seconds(PRIM_HOST, 64, 1000, threads=64) == \
        host_aggregation_seconds(PRIM_HOST, 64, 1000, threads=16)


def test_nothing_to_aggregate_takes_no_time():
    assert host_aggregation_seconds(PRIM_HOST, 0, 3000) == 0.0
    assert host_aggregation_seconds(PRIM_HOST, 2000, 0) == 0.0


def test_transposition_upper_bound_reaches_the_best_push_rate():
    # the best 32-rank push rate, 22.6 GB/s, on all 16 cores: one second for 22.6 GB
    assert host_transpose_seconds(PRIM_HOST, 22.6e9) == pytest.approx(1.0)
    assert host_transpose_seconds(PRIM_HOST, 22.6e9, threads=1) == pytest.approx(16.0)


@pytest.mark.parametrize("bad", [dict(cores=0), dict(sockets=True), dict(package_tdp_w=-1.0),
                                 dict(memory_bandwidth_gbps=0), dict(idle_fraction=1.5),
                                 dict(aggregate_s_per_entry=float("inf"))])
def test_bad_host_figures_are_refused(bad):
    with pytest.raises(ValueError):
        HostModel(**bad)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        host_aggregation_seconds(PRIM_HOST, 10, 10, threads=0)
    with pytest.raises(ValueError):
        host_aggregation_seconds(PRIM_HOST, -1, 10)
    with pytest.raises(ValueError):
        host_transpose_seconds(PRIM_HOST, -1)
