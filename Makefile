# Set-up and entry points. Every target creates the virtual environment it needs.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: demo test test-fast study bench host clean clean-cache

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,dask]'
	touch $(STAMP)

## demo: the main job on a default configuration (experiments/demo.toml: the study's three answers on Taxi in about 2 minutes, plots in out/demo)
demo: $(STAMP)
	$(PY) -m pimrl demo --out out/demo

## test: the whole test suite (what CI runs), in TEST_WORKERS processes (pytest-xdist; most of a
## first run is numba compiling kernels, one at a time per process, so two processes on two
## cores take about half the time; the compiled kernels are cached on disk and shared). Each
## test file runs in one process (--dist loadfile): a file's tests share their kernels, which
## two processes would otherwise both compile (a fresh clone: 12:14 against 13:24)
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile tests --durations=30

## test-fast: the day-to-day subset: everything but the tests marked slow
test-fast: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not slow" tests

## study: the full SwiftRL study, 1,332 runs (about 15 minutes on 2 cores: 891 s measured, most kernels compiled on the way), plots in out/swiftrl
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

## clean-cache: drop numba's compiled kernels. Its cache checks only the file that defines a
## kernel: after editing a helper it calls or inlines from another file (pimrl/learners/{arith,
## updates,records,kernels}.py, pimrl/rng.py, pimrl/rlkernel/mram.py), run this or a cached
## kernel keeps the old helper.
clean-cache:
	find pimrl -path '*/__pycache__/*' \( -name '*.nbi' -o -name '*.nbc' \) -delete

clean:
	rm -rf $(VENV) out build *.egg-info
