/* dpu.h: the UPMEM SDK host API (2025.1), served by pimrl's simulator.
 *
 * Names, values, layouts and prototypes are the SDK's, so a host program written for the
 * SDK compiles here unchanged and the same source compiles against the real SDK. Calls go
 * to pimrl.pim.system through libdpu.so: memories, transfers, launches and modelled costs
 * are the simulator's. docs/real-hardware.md lists what the simulator does differently.
 *
 * Simulator-only extras (modelled times, detailed error messages) live in pimrl_sim.h,
 * which this header never includes; it defines PIMRL_SIMULATOR so that a program can
 * include them under `#ifdef PIMRL_SIMULATOR` (compile with -DPIMRL_SDK_API_ONLY to see the
 * SDK's API alone). `dpu-pkg-config --cflags dpu` is one word, `-I<dir>`, as the SDK's.
 */
#ifndef DPU_H
#define DPU_H

#if !defined(PIMRL_SIMULATOR) && !defined(PIMRL_SDK_API_ONLY)
#define PIMRL_SIMULATOR 1
#endif

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <dpu_checkpoint.h>
#include <dpu_error.h>
#include <dpu_types.h>
#include <dpu_macro_utils.h>
#include <dpu_fifo.h>
#include <dpu_bank_interface_pmc.h>
/* The low-level headers come with dpu.h, so that a program calling dpu_get_rank_id,
   dpu_copy_to_mram or dpulog_read_for_dpu with only dpu.h included compiles. */
#include <dpu_log.h>
#include <dpu_management.h>
#include <dpu_memory.h>
#include <dpu_program.h>
#include <dpu_runner.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ----------------------------------------------------------------------------- enums */

/** How dpu_launch returns. */
typedef enum _dpu_launch_policy_t {
    DPU_ASYNCHRONOUS, /**< at once; dpu_sync waits (the simulator has finished already) */
    DPU_SYNCHRONOUS,  /**< when every DPU of the set has finished */
} dpu_launch_policy_t;

/** Direction of dpu_push_xfer. */
typedef enum _dpu_xfer_t {
    DPU_XFER_TO_DPU,
    DPU_XFER_FROM_DPU,
} dpu_xfer_t;

/** Options of dpu_push_xfer / dpu_broadcast_to. */
typedef enum _dpu_xfer_flags_t {
    DPU_XFER_DEFAULT = 0,        /**< forget the prepared buffers after the transfer */
    DPU_XFER_NO_RESET = 1 << 0,  /**< keep them */
    DPU_XFER_ASYNC = 1 << 1,     /**< queue the transfer (the simulator does it at once) */
    DPU_XFER_PARALLEL = 1 << 2,  /**< WRAM only: do not wait for running DPUs */
} dpu_xfer_flags_t;

/** Options of dpu_push_sg_xfer. */
typedef enum _dpu_sg_xfer_flags_t {
    DPU_SG_XFER_DEFAULT = 0,
    DPU_SG_XFER_ASYNC = 1 << 1,
    /** Allow blocks totalling fewer bytes than `length`; to the DPUs, the rest is zeroed. */
    DPU_SG_XFER_DISABLE_LENGTH_CHECK = 1 << 2,
} dpu_sg_xfer_flags_t;

/** Options of dpu_callback. */
typedef enum _dpu_callback_flags_t {
    DPU_CALLBACK_DEFAULT = 0,           /**< synchronous, once per rank of the set */
    DPU_CALLBACK_ASYNC = 1 << 0,        /**< queued (the simulator calls it at once) */
    DPU_CALLBACK_NONBLOCKING = 1 << 1,  /**< with ASYNC: does not block the ranks */
    DPU_CALLBACK_SINGLE_CALL = 1 << 2,  /**< with ASYNC and NONBLOCKING: once, on the whole set */
    DPU_CALLBACK_PARALLEL = 1 << 3,     /**< may run while the DPUs run */
} dpu_callback_flags_t;

/* ----------------------------------------------------------------------------- checks */

/** Run `statement` (a dpu_error_t expression); on an error print
 *  "file:line(function): DPU Error (description)" to stderr and run `on_error`. */
#define DPU_CHECK(statement, on_error)                                                        \
    do {                                                                                      \
        dpu_error_t __error = (statement);                                                    \
        if (__error != DPU_OK) {                                                              \
            char *__error_string = dpu_error_to_string(__error);                              \
            fprintf(stderr, "%s:%d(%s): DPU Error (%s)\n", __FILE__, __LINE__, __func__,      \
                    __error_string);                                                          \
            free(__error_string);                                                             \
            on_error;                                                                         \
        }                                                                                     \
    } while (0)

/** Run `statement`; on an error, report it and exit(EXIT_FAILURE). */
#define DPU_ASSERT(statement) DPU_CHECK(statement, exit(EXIT_FAILURE))

/* ----------------------------------------------------------------------------- allocation */

/** dpu_alloc / dpu_alloc_ranks: every free DPU (rank). */
#define DPU_ALLOCATE_ALL (UINT_MAX)

/** Allocate whole ranks holding at least `nr_dpus` DPUs (the surplus of the last rank is
 *  disabled). `profile`: comma-separated key=value (backend=simulator, hardware=upmem-640,
 *  any hardware parameter such as frequency_hz=400e6); NULL equals "". */
dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set);
/** Allocate `nr_ranks` whole ranks (DPU_ALLOCATE_ALL: every free rank). */
dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set);
/** Free a set returned by dpu_alloc / dpu_alloc_ranks (any other: DPU_ERR_INVALID_DPU_SET). */
dpu_error_t dpu_free(struct dpu_set_t dpu_set);
dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus);

/* ----------------------------------------------------------------------------- iteration */

/** DPU_RANK_FOREACH(set, rank[, i]): every rank of `set` as a one-rank set (a DPU set is its
 *  own only rank); `i` counts from 0. `set` must be an lvalue. */
#define DPU_RANK_FOREACH(set, ...)                                                            \
    _CONCAT(_DPU_RANK_FOREACH_, _DPU_FOREACH_VARIANT(set, ##__VA_ARGS__))(set, ##__VA_ARGS__)

#define _DPU_RANK_FOREACH_X(set, rank)                                                        \
    for (struct dpu_set_rank_iterator_t __rank_it = dpu_set_rank_iterator_from(&set);        \
         rank = __rank_it.next, __rank_it.has_next; dpu_set_rank_iterator_next(&__rank_it))

#define _DPU_RANK_FOREACH_I(set, rank, i)                                                     \
    for (struct dpu_set_rank_iterator_t __rank_it = dpu_set_rank_iterator_from(&set);        \
         i = __rank_it.count, rank = __rank_it.next, __rank_it.has_next;                      \
         dpu_set_rank_iterator_next(&__rank_it))

/** DPU_FOREACH(set, dpu[, i]): every enabled DPU of `set` as a one-DPU set; `i` counts
 *  from 0. `set` must be an lvalue. */
#define DPU_FOREACH(set, ...)                                                                 \
    _CONCAT(_DPU_FOREACH_, _DPU_FOREACH_VARIANT(set, ##__VA_ARGS__))(set, ##__VA_ARGS__)

#define _DPU_FOREACH_X(set, dpu)                                                              \
    for (struct dpu_set_dpu_iterator_t __dpu_it = dpu_set_dpu_iterator_from(&set);           \
         dpu = __dpu_it.next, __dpu_it.has_next; dpu_set_dpu_iterator_next(&__dpu_it))

#define _DPU_FOREACH_I(set, dpu, i)                                                           \
    for (struct dpu_set_dpu_iterator_t __dpu_it = dpu_set_dpu_iterator_from(&set);           \
         i = __dpu_it.count, dpu = __dpu_it.next, __dpu_it.has_next;                          \
         dpu_set_dpu_iterator_next(&__dpu_it))

/** Iterator state of DPU_RANK_FOREACH. */
struct dpu_set_rank_iterator_t {
    struct dpu_set_t *set;
    uint32_t count;
    uint32_t next_idx;
    bool has_next;
    struct dpu_set_t next;
};

/** Iterator state of DPU_FOREACH. */
struct dpu_set_dpu_iterator_t {
    struct dpu_set_rank_iterator_t rank_iterator;
    uint32_t count;
    uint32_t next_idx;
    bool has_next;
    struct dpu_set_t next;
};

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set);
void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *iterator);
struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set);
void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *iterator);

/* ----------------------------------------------------------------------------- programs */

/** Load a program held in memory (the bytes of a program file). */
dpu_error_t dpu_load_from_memory(struct dpu_set_t dpu_set, uint8_t *buffer, size_t buffer_size,
                                 struct dpu_program_t **program);
/** Load a program embedded with DPU_INCBIN. */
dpu_error_t dpu_load_from_incbin(struct dpu_set_t dpu_set, struct dpu_incbin_t *incbin,
                                 struct dpu_program_t **program);
/** Load a program file on every DPU of the set (WRAM globals are initialised now, not at
 *  each launch). In the simulator the path may also name a built-in program, e.g.
 *  "pimrl:diag" (docs/real-hardware.md). A missing file: DPU_ERR_ELF_NO_SUCH_FILE; a file
 *  damaged or truncated since dpu-upmem-dpurte-clang built (and sealed) it:
 *  DPU_ERR_ELF_INVALID_FILE. A built program is native host code: load only your own. */
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program);
/** The address and size of a host-visible symbol, or DPU_ERR_UNKNOWN_SYMBOL. */
dpu_error_t dpu_get_symbol(struct dpu_program_t *program, const char *symbol_name, struct dpu_symbol_t *symbol);

/* ----------------------------------------------------------------------------- execution */

/** Run the loaded program on every DPU of the set. In the simulator a launch of a C DPU
 *  program stops at its time limit (PIMRL_DPU_TIMEOUT seconds of wall-clock time, or the
 *  profile's "timeout=SECONDS"; default one hour): its DPUs then fault (DPU_ERR_DPU_FAULT,
 *  the message naming the tasklet and the function it was in). SIGINT is the host's own:
 *  with no handler installed, Ctrl-C ends the process, during a launch too. */
dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault);
dpu_error_t dpu_sync(struct dpu_set_t dpu_set);

/* ----------------------------------------------------------------------------- transfers */

/** The same `length` bytes to every DPU of the set. */
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                        size_t length);
/** From a single DPU (a larger set: DPU_ERR_INVALID_DPU_SET). */
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, void *dst,
                          size_t length);
dpu_error_t dpu_copy_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                               const void *src, size_t length);
dpu_error_t dpu_copy_from_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                 void *dst, size_t length);

/** Attach `buffer` to every DPU of the set (usually one DPU, inside DPU_FOREACH) for the
 *  next dpu_push_xfer; it is read (or written) when the transfer is pushed, not now. */
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer);

/** Where the blocks of one DPU's share of a scatter/gather transfer are. */
struct sg_block_info {
    uint8_t *addr;   /**< first byte of the block */
    uint32_t length; /**< bytes in the block */
};

/** Fill `out` with block `block_index` of DPU `dpu_index` (its index in the set); false
 *  when the DPU has no more blocks. */
typedef bool (*get_block_func_t)(struct sg_block_info *out, uint32_t dpu_index, uint32_t block_index, void *args);

/** The block function of dpu_push_sg_xfer and its arguments (copied when the transfer is
 *  queued: args_size bytes). */
typedef struct get_block_t {
    get_block_func_t f;
    void *args;
    size_t args_size;
} get_block_t;

/** One transfer of `length` bytes per DPU gathered from (or scattered to) the blocks
 *  get_block_info names; MRAM symbols only. */
dpu_error_t dpu_push_sg_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name,
                             uint32_t symbol_offset, size_t length, get_block_t *get_block_info,
                             dpu_sg_xfer_flags_t flags);
dpu_error_t dpu_push_sg_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol,
                                    uint32_t symbol_offset, size_t length, get_block_t *get_block_info,
                                    dpu_sg_xfer_flags_t flags);

/** One transfer of `length` bytes per DPU between the prepared buffers and the symbol;
 *  DPUs without a prepared buffer are skipped. */
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_push_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol,
                                 uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);

/** The same bytes to every DPU of the set. */
dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                             const void *src, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_broadcast_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                    const void *src, size_t length, dpu_xfer_flags_t flags);

/** WRAM FIFO transfers (dpu_fifo.h); the simulator has no FIFOs: DPU_ERR_SYSTEM. */
dpu_error_t dpu_fifo_prepare_xfer(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *fifo_link, void *buffer);
dpu_error_t dpu_fifo_push_xfer(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *fifo_link, dpu_xfer_flags_t flags);

/* ----------------------------------------------------------------------------- callbacks */

/** Call `callback(set, index, args)` once per rank of the set (index: the rank's position),
 *  or once on the whole set with DPU_CALLBACK_ASYNC | DPU_CALLBACK_NONBLOCKING |
 *  DPU_CALLBACK_SINGLE_CALL; the first error it returns is the call's. SINGLE_CALL or
 *  NONBLOCKING without ASYNC: DPU_ERR_NONBLOCKING_SYNC_CALLBACK. */
dpu_error_t dpu_callback(struct dpu_set_t dpu_set, dpu_error_t (*callback)(struct dpu_set_t, uint32_t, void *),
                         void *args, dpu_callback_flags_t flags);

/* ----------------------------------------------------------------------------- embedding */

/** DPU_INCBIN(name, "file"): embed a program file in the host executable as
 *  `struct dpu_incbin_t name` (load it with dpu_load_from_incbin). File scope only. */
#define DPU_INCBIN(name, file)                                                                \
    __asm__(".pushsection .rodata.dpu_incbin\n"                                               \
            ".global dpu_incbin_" _STR(name) "\n"                                             \
            ".type dpu_incbin_" _STR(name) ", @object\n"                                      \
            "dpu_incbin_" _STR(name) ":\n"                                                    \
            ".incbin \"" file "\"\n"                                                          \
            ".size dpu_incbin_" _STR(name) ", .-dpu_incbin_" _STR(name) "\n"                  \
            ".global dpu_incbin_" _STR(name) "_size\n"                                        \
            "dpu_incbin_" _STR(name) "_size = . - dpu_incbin_" _STR(name) "\n"                \
            ".popsection\n");                                                                 \
    extern const void *dpu_incbin_##name;                                                     \
    extern const void *dpu_incbin_##name##_size;                                              \
    struct dpu_incbin_t name = { .buffer = (uint8_t *)&dpu_incbin_##name,                     \
                                 .size = (size_t)&dpu_incbin_##name##_size,                   \
                                 .path = file };

/* ----------------------------------------------------------------------------- log */

/** Write "=== DPU#0x<id> ===" and the output of the DPU's last run to `stream`; a set of
 *  several DPUs: DPU_ERR_INVALID_DPU_SET. */
dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream);

/* ----------------------------------------------------------------------------- modelled clock */
#if defined(PIMRL_MODELLED_CLOCK) && PIMRL_MODELLED_CLOCK
/* Built with `dpu-pkg-config --cflags --modelled-clock dpu` (pimrl only): the program's own
 * host clock is the modelled clock, as with PIMRL_MODELLED_CLOCK=1 in the environment (which,
 * when set, decides). Weak: every source including this header may define it. */
__attribute__((weak, used)) int pimrl_modelled_clock_built = 1;
#endif

#ifdef __cplusplus
}
#endif

#endif /* DPU_H */
