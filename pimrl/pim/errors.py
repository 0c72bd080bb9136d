"""``dpu_error_t`` as in the UPMEM SDK's ``dpu_error.h`` (same names, same values), and the
exception the simulator raises for each."""
from __future__ import annotations

import enum

_NAMES = (
    "DPU_OK", "DPU_ERR_INTERNAL", "DPU_ERR_SYSTEM", "DPU_ERR_DRIVER", "DPU_ERR_ALLOCATION",
    "DPU_ERR_INVALID_DPU_SET", "DPU_ERR_INVALID_THREAD_ID", "DPU_ERR_INVALID_NOTIFY_ID",
    "DPU_ERR_INVALID_WRAM_ACCESS", "DPU_ERR_INVALID_IRAM_ACCESS", "DPU_ERR_INVALID_MRAM_ACCESS",
    "DPU_ERR_INVALID_SYMBOL_ACCESS", "DPU_ERR_MRAM_BUSY", "DPU_ERR_TRANSFER_ALREADY_SET",
    "DPU_ERR_INVALID_PARALLEL_MEMORY_TRANSFER", "DPU_ERR_WRAM_FIFO_FULL",
    "DPU_ERR_NO_PROGRAM_LOADED", "DPU_ERR_DIFFERENT_DPU_PROGRAMS", "DPU_ERR_CORRUPTED_MEMORY",
    "DPU_ERR_DPU_DISABLED", "DPU_ERR_DPU_ALREADY_RUNNING", "DPU_ERR_INVALID_MEMORY_TRANSFER",
    "DPU_ERR_INVALID_LAUNCH_POLICY", "DPU_ERR_DPU_FAULT", "DPU_ERR_ELF_INVALID_FILE",
    "DPU_ERR_ELF_NO_SUCH_FILE", "DPU_ERR_ELF_NO_SUCH_SECTION", "DPU_ERR_TIMEOUT",
    "DPU_ERR_INVALID_PROFILE", "DPU_ERR_UNKNOWN_SYMBOL", "DPU_ERR_LOG_FORMAT",
    "DPU_ERR_LOG_CONTEXT_MISSING", "DPU_ERR_LOG_BUFFER_TOO_SMALL", "DPU_ERR_VPD_INVALID_FILE",
    "DPU_ERR_VPD_NO_REPAIR", "DPU_ERR_NO_THREAD_PER_RANK", "DPU_ERR_INVALID_BUFFER_SIZE",
    "DPU_ERR_NONBLOCKING_SYNC_CALLBACK", "DPU_ERR_TOO_MANY_TASKLETS", "DPU_ERR_SG_TOO_MANY_BLOCKS",
    "DPU_ERR_SG_LENGTH_MISMATCH", "DPU_ERR_SG_NOT_ACTIVATED", "DPU_ERR_SG_NOT_MRAM_SYMBOL",
)
#: A flag on the errors of queued (asynchronous) jobs, combined with the job's own code.
DPU_ERR_ASYNC_JOBS = 1 << 31

DpuErrorCode = enum.IntEnum("DpuErrorCode", [(n, i) for i, n in enumerate(_NAMES)])
DpuErrorCode.__doc__ = "The SDK's dpu_error_t: values are the C enum's."


class DpuError(Exception):
    """A simulator call that failed as the SDK call would; ``code`` is the dpu_error_t."""

    def __init__(self, code: DpuErrorCode, message: str):
        self.code = DpuErrorCode(code)
        super().__init__(f"{self.code.name}: {message}")


def fail(name: str, message: str) -> DpuError:
    """Build the error for ``DPU_ERR_<name>`` (e.g. ``fail("INVALID_MRAM_ACCESS", ...)``)."""
    return DpuError(DpuErrorCode["DPU_ERR_" + name], message)
