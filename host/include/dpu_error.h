/* dpu_error.h: the status codes of the UPMEM host API (pimrl's libdpu).
 *
 * Names and values are the SDK's (2025.1). pimrl/pim/errors.py keeps the same list for the
 * Python side; a test checks that the two agree.
 */
#ifndef DPU_ERROR_H
#define DPU_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/** What an API call reports: DPU_OK, or the first check it failed. */
typedef enum dpu_error_t {
    DPU_OK,
    DPU_ERR_INTERNAL,
    DPU_ERR_SYSTEM,
    DPU_ERR_DRIVER,
    DPU_ERR_ALLOCATION,
    DPU_ERR_INVALID_DPU_SET,
    DPU_ERR_INVALID_THREAD_ID,
    DPU_ERR_INVALID_NOTIFY_ID,
    DPU_ERR_INVALID_WRAM_ACCESS,
    DPU_ERR_INVALID_IRAM_ACCESS,
    DPU_ERR_INVALID_MRAM_ACCESS,
    DPU_ERR_INVALID_SYMBOL_ACCESS,
    DPU_ERR_MRAM_BUSY,
    DPU_ERR_TRANSFER_ALREADY_SET,
    DPU_ERR_INVALID_PARALLEL_MEMORY_TRANSFER,
    DPU_ERR_WRAM_FIFO_FULL,
    DPU_ERR_NO_PROGRAM_LOADED,
    DPU_ERR_DIFFERENT_DPU_PROGRAMS,
    DPU_ERR_CORRUPTED_MEMORY,
    DPU_ERR_DPU_DISABLED,
    DPU_ERR_DPU_ALREADY_RUNNING,
    DPU_ERR_INVALID_MEMORY_TRANSFER,
    DPU_ERR_INVALID_LAUNCH_POLICY,
    DPU_ERR_DPU_FAULT,
    DPU_ERR_ELF_INVALID_FILE,
    DPU_ERR_ELF_NO_SUCH_FILE,
    DPU_ERR_ELF_NO_SUCH_SECTION,
    DPU_ERR_TIMEOUT,
    DPU_ERR_INVALID_PROFILE,
    DPU_ERR_UNKNOWN_SYMBOL,
    DPU_ERR_LOG_FORMAT,
    DPU_ERR_LOG_CONTEXT_MISSING,
    DPU_ERR_LOG_BUFFER_TOO_SMALL,
    DPU_ERR_VPD_INVALID_FILE,
    DPU_ERR_VPD_NO_REPAIR,
    DPU_ERR_NO_THREAD_PER_RANK,
    DPU_ERR_INVALID_BUFFER_SIZE,
    DPU_ERR_NONBLOCKING_SYNC_CALLBACK,
    DPU_ERR_TOO_MANY_TASKLETS,
    DPU_ERR_SG_TOO_MANY_BLOCKS,
    DPU_ERR_SG_LENGTH_MISMATCH,
    DPU_ERR_SG_NOT_ACTIVATED,
    DPU_ERR_SG_NOT_MRAM_SYMBOL,
    /* A flag, not a code: set on errors of queued (asynchronous) jobs, combined with the
       job type (bits 16 and up) and the job's own code (low bits). */
    DPU_ERR_ASYNC_JOBS = (int)(1U << 31),
} dpu_error_t;

/** The description of `status` in a string newly allocated with malloc: the caller owns it
 *  and must free() it. NULL if memory ran out. */
char *dpu_error_to_string(dpu_error_t status);

/** Where the job type sits in a DPU_ERR_ASYNC_JOBS status. */
#define DPU_ERROR_ASYNC_JOB_TYPE_SHIFT (16)

#ifdef __cplusplus
}
#endif

#endif /* DPU_ERROR_H */
