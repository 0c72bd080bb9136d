/* dpu.h: the UPMEM SDK host API, served by pimrl's Python simulator.
 *
 * Names, signatures, enum values and error semantics follow the SDK's dpu.h, so a host
 * program written for the SDK compiles here unchanged and the same source compiles against
 * the real SDK. Every call goes to pimrl.pim.system through libdpu.so (cffi embedding):
 * memories, transfers, launches and modelled costs are the simulator's.
 *
 * Simulator-only extras (modelled times, detailed error messages) live in pimrl_sim.h,
 * which this header never includes; `dpu-pkg-config --cflags dpu` defines PIMRL_SIMULATOR
 * so that a program can include it under `#ifdef PIMRL_SIMULATOR`.
 */
#ifndef DPU_H
#define DPU_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dpu_error.h"
#include "dpu_log.h"
#include "dpu_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------- enums */

/** How dpu_launch returns. */
typedef enum _dpu_launch_policy_t {
    DPU_ASYNCHRONOUS, /**< return at once; dpu_sync waits */
    DPU_SYNCHRONOUS,  /**< return when every DPU of the set has finished */
} dpu_launch_policy_t;

/** Direction of dpu_push_xfer. */
typedef enum _dpu_xfer_t {
    DPU_XFER_TO_DPU,
    DPU_XFER_FROM_DPU,
} dpu_xfer_t;

/** Options of dpu_push_xfer / dpu_broadcast_to. */
typedef enum _dpu_xfer_flags_t {
    DPU_XFER_DEFAULT = 0,        /**< clear the prepared buffers after the transfer */
    DPU_XFER_NO_RESET = 1 << 0,  /**< keep them */
    DPU_XFER_ASYNC = 1 << 1,     /**< queue the transfer (the simulator runs it at once) */
} dpu_xfer_flags_t;

/* ----------------------------------------------------------------------------- constants */

/** dpu_alloc / dpu_alloc_ranks: take every free DPU (rank). */
#define DPU_ALLOCATE_ALL (UINT_MAX)

/** The symbol whose address is the first free byte of MRAM; its size is the rest of MRAM. */
#define DPU_MRAM_HEAP_POINTER_NAME "__sys_used_mram_end"

/* ----------------------------------------------------------------------------- checks */

/** Internal: prints "file:line(function): DPU Error (description)" to stderr, as the SDK
 *  does, then the simulator's detailed message when there is one. */
void _pimrl_dpu_check_failed(const char *file, int line, const char *function, dpu_error_t error);

/** Run `statement` (a dpu_error_t expression); on an error, report it and run `on_error`. */
#define DPU_CHECK(statement, on_error)                                                        \
    do {                                                                                      \
        dpu_error_t __error = (statement);                                                    \
        if (__error != DPU_OK) {                                                              \
            _pimrl_dpu_check_failed(__FILE__, __LINE__, __func__, __error);                   \
            on_error;                                                                         \
        }                                                                                     \
    } while (0)

/** Run `statement`; on an error, report file, line and message and exit(EXIT_FAILURE). */
#define DPU_ASSERT(statement) DPU_CHECK(statement, exit(EXIT_FAILURE))

/* ----------------------------------------------------------------------------- allocation */

/** Allocate whole ranks holding at least `nr_dpus` DPUs (the surplus of the last rank is
 *  disabled). `profile`: comma-separated key=value (backend=simulator, hardware=upmem-640,
 *  any hardware parameter such as frequency_hz=400e6); NULL equals "". */
dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set);

/** Allocate `nr_ranks` whole ranks (DPU_ALLOCATE_ALL: every free rank). */
dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set);

/** Free a set returned by dpu_alloc / dpu_alloc_ranks (any other set: INVALID_DPU_SET). */
dpu_error_t dpu_free(struct dpu_set_t dpu_set);

dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus);

/* ----------------------------------------------------------------------------- iteration */

/** Internal iterator state of DPU_FOREACH / DPU_RANK_FOREACH. */
struct dpu_set_rank_iterator_t {
    struct dpu_set_t set;
    uint32_t count;
    bool has_next;
    struct dpu_set_t next;
};

struct dpu_set_dpu_iterator_t {
    struct dpu_set_t set;
    uint32_t count;
    bool has_next;
    struct dpu_set_t next;
};

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set);
void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *iterator);
struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set);
void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *iterator);

#define _PIMRL_FOREACH_PICK(_1, _2, _3, NAME, ...) NAME

#define _DPU_FOREACH_X(set, dpu)                                                              \
    for (struct dpu_set_dpu_iterator_t __dpu_it = dpu_set_dpu_iterator_from(&(set));         \
         (dpu) = __dpu_it.next, __dpu_it.has_next; dpu_set_dpu_iterator_next(&__dpu_it))

#define _DPU_FOREACH_I(set, dpu, i)                                                           \
    for (struct dpu_set_dpu_iterator_t __dpu_it = dpu_set_dpu_iterator_from(&(set));         \
         (i) = __dpu_it.count, (dpu) = __dpu_it.next, __dpu_it.has_next;                      \
         dpu_set_dpu_iterator_next(&__dpu_it))

#define _DPU_RANK_FOREACH_X(set, rank)                                                        \
    for (struct dpu_set_rank_iterator_t __rank_it = dpu_set_rank_iterator_from(&(set));      \
         (rank) = __rank_it.next, __rank_it.has_next; dpu_set_rank_iterator_next(&__rank_it))

#define _DPU_RANK_FOREACH_I(set, rank, i)                                                     \
    for (struct dpu_set_rank_iterator_t __rank_it = dpu_set_rank_iterator_from(&(set));      \
         (i) = __rank_it.count, (rank) = __rank_it.next, __rank_it.has_next;                  \
         dpu_set_rank_iterator_next(&__rank_it))

/** DPU_FOREACH(set, dpu) or DPU_FOREACH(set, dpu, i): every enabled DPU of `set` as a
 *  single-DPU set, `i` counting from 0. */
#define DPU_FOREACH(...)                                                                      \
    _PIMRL_FOREACH_PICK(__VA_ARGS__, _DPU_FOREACH_I, _DPU_FOREACH_X,                          \
                        _DPU_FOREACH_needs_2_or_3_arguments)(__VA_ARGS__)

/** DPU_RANK_FOREACH(set, rank) or DPU_RANK_FOREACH(set, rank, i): every rank of `set`. */
#define DPU_RANK_FOREACH(...)                                                                 \
    _PIMRL_FOREACH_PICK(__VA_ARGS__, _DPU_RANK_FOREACH_I, _DPU_RANK_FOREACH_X,                \
                        _DPU_RANK_FOREACH_needs_2_or_3_arguments)(__VA_ARGS__)

/* ----------------------------------------------------------------------------- programs */

/** Load a program on every DPU of the set (WRAM globals are initialised now, not at each
 *  launch). `binary_path` is a DPU program file or, in the simulator, a built-in program
 *  name such as "pimrl:swiftrl?states=16&actions=4&tasklets=16&algo=q&dtype=fp32&sampling=seq"
 *  (see docs/real-hardware.md). A missing file gives DPU_ERR_ELF_NO_SUCH_FILE. */
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path,
                     struct dpu_program_t **program);

/** The address and size of a host-visible symbol, or DPU_ERR_UNKNOWN_SYMBOL. */
dpu_error_t dpu_get_symbol(struct dpu_program_t *program, const char *symbol_name,
                           struct dpu_symbol_t *symbol);

/* ----------------------------------------------------------------------------- execution */

dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault);
dpu_error_t dpu_sync(struct dpu_set_t dpu_set);

/* ----------------------------------------------------------------------------- transfers */

/** The same `length` bytes to every DPU of the set. */
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                        const void *src, size_t length);

/** From a single DPU (a larger set: DPU_ERR_INVALID_DPU_SET). */
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name,
                          uint32_t symbol_offset, void *dst, size_t length);

dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name,
                             uint32_t symbol_offset, const void *src, size_t length,
                             dpu_xfer_flags_t flags);

dpu_error_t dpu_copy_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol,
                               uint32_t symbol_offset, const void *src, size_t length);
dpu_error_t dpu_copy_from_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol,
                                 uint32_t symbol_offset, void *dst, size_t length);
dpu_error_t dpu_broadcast_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol,
                                    uint32_t symbol_offset, const void *src, size_t length,
                                    dpu_xfer_flags_t flags);

/** Attach `buffer` to every DPU of the set (usually one DPU, inside DPU_FOREACH) for the
 *  next dpu_push_xfer. A DPU that already has one: DPU_ERR_TRANSFER_ALREADY_SET. The buffer
 *  is read (or written) when the transfer is pushed, not now. */
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer);

/** One transfer of `length` bytes per DPU between the prepared buffers and the symbol;
 *  DPUs without a prepared buffer are skipped. */
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name,
                          uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_push_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer,
                                 struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                 size_t length, dpu_xfer_flags_t flags);

#ifdef __cplusplus
}
#endif

#endif /* DPU_H */
