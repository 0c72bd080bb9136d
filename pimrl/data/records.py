"""The 16-byte transition record shared by files, host memory and DPU MRAM (docs/design.md)."""
from __future__ import annotations

import numpy as np

#: One transition. Little-endian, no padding: 128 records fill one 2,048-byte DMA.
TRANSITION_DTYPE = np.dtype(
    [
        ("state", "<i4"),
        ("next_state", "<i4"),
        ("reward", "<f4"),
        ("action", "u1"),
        ("next_action", "u1"),
        ("terminated", "u1"),
        ("truncated", "u1"),
    ]
)
assert TRANSITION_DTYPE.itemsize == 16

#: ``next_action`` value meaning "not known" (e.g. the last line of an imported text file).
NO_ACTION = 255
#: Largest number of actions a record can hold.
MAX_ACTIONS = 255
