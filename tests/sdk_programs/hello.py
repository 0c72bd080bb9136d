"""hello.c from Python, as the SDK's documentation writes it (the DPU program is built from
its C source by the DpuSet), with the log checked."""
import io
import sys

from dpu import DpuSet

log = io.StringIO()
with DpuSet(nr_dpus=2, c_source="hello.c", log=log) as dpus:
    dpus.exec()
    dpus.exec(log=sys.stdout)
text = log.getvalue()
assert text.count("Hello World from DPU!\n") == 2, text
assert text.startswith("=== DPU#0x0 ===\n"), text
print("OK")
