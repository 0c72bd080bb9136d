# Set-up and entry points. Every target creates the virtual environment it needs.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: demo test test-fast study bench host clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dask]'
	touch $(STAMP)

## demo: the main job on a default configuration (a reduced SwiftRL study, plots in out/demo)
demo: $(STAMP)
	$(PY) -m pimrl demo --out out/demo

## test: the whole test suite (what CI runs)
test: $(STAMP)
	$(PY) -m pytest -q tests

## test-fast: the day-to-day subset: everything but the tests marked slow
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" tests

## study: the full SwiftRL study (about 2 minutes on 2 cores once numba has cached its kernels, 4-5 the first time), plots in out/swiftrl
study: $(STAMP)
	$(PY) -m pimrl scale experiments/swiftrl.toml --out out/swiftrl && $(PY) -m pimrl plot out/swiftrl

## host: the C host programs against the simulator (SDK API shim), built and checked
host: $(STAMP)
	$(MAKE) -C host check PYTHON=$(abspath $(PY))

## bench: throughput benchmarks (figures printed, never asserted)
bench: $(STAMP)
	$(PY) benchmarks/bench_foundation.py
	$(PY) benchmarks/bench_simulator.py
	$(PY) benchmarks/bench_baselines.py --n 200000 --epochs 2
	$(PY) benchmarks/bench_shim.py
	$(PY) benchmarks/bench_dask.py
	$(PY) benchmarks/bench_pim_limit.py --variants q-fp32-seq,q-int32-seq,q-int32-ran

clean:
	rm -rf $(VENV) out build *.egg-info
