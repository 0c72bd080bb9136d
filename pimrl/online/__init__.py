"""Online RL in memory: environments stepped on the DPUs (no dataset pushed), and many
independent agents at once. The contract (tables, lanes, order of updates) is
docs/design.md's "Online learning"; :mod:`.reference` is its plain-Python statement,
:mod:`.kernels` the compiled loops (CPU baseline and the simulator's DPU program),
``kernels/online.c`` the UPMEM C kernel."""
