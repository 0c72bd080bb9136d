"""Calibration and validation of the cost model against published UPMEM measurements:
``pimrl calibrate`` (microbenchmarks through the simulator), ``pimrl sensitivity`` (which
hardware parameters move the SwiftRL conclusions) and ``pimrl cost-doc`` (regenerates the
tables of docs/cost-model.md)."""
