/* shim_internal.h: libdpu's private structures and the boundary with the Python simulator.
 *
 * Sets are the SDK's: lists of `struct dpu_rank_t *` or one `struct dpu_t *`, both owned
 * by the allocation (struct pimrl_alloc) and kept after dpu_free, marked freed, so that a
 * stale set gives DPU_ERR_INVALID_DPU_SET instead of reading freed memory.
 *
 * Before calling Python the C layer names a set by a `struct pimrl_set_ref` (allocation
 * handle, rank or all ranks, DPU slot). The functions prefixed _pimrl_py_ are implemented
 * in Python (pimrl/shim/runtime.py) and exported by cffi's embedding mode; each returns a
 * dpu_error_t code. pimrl/shim/build.py repeats the types for cffi; keep both in step.
 *
 * Small transfers take a fast path in C (dpu_fast.c) over the memories the simulator
 * publishes in `struct pimrl_mem` after each of its calls; anything the fast path is not
 * sure of (an error to report, a page of MRAM never written, a running rank...) goes to
 * Python, which reports the SDK's error in the SDK's order. Their modelled costs are queued
 * as `struct pimrl_record`s that Python books, in order, before its next call.
 */
#ifndef PIMRL_SHIM_INTERNAL_H
#define PIMRL_SHIM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "dpu.h"
#include "dpu_description.h"
#include "dpu_management.h"
#include "dpu_program.h"
#include "dpu_runner.h"

#define PIMRL_ALL_RANKS UINT32_MAX
#define PIMRL_RANK_MAGIC 0x70696d52u /* "pimR" */

struct pimrl_alloc;

/* What the simulator publishes about an allocation (pointers into its numpy arrays). */
struct pimrl_mem {
    int32_t valid;                 /* 0: the fast path must not touch this allocation */
    int32_t phase;                 /* time category of transfers: -1 default, else index */
    uint8_t *wram;                 /* nr_slots x wram_bytes */
    uint64_t wram_bytes;
    uint64_t mram_bytes;
    int32_t *page_table;           /* nr_slots x pages_per_bank: 0 unmapped, else pool row + 1 */
    uint64_t pages_per_bank;
    uint8_t *pool;                 /* MRAM pages, 4 KiB each */
    int64_t *program_of;           /* per slot: index in `programs`, -1 none */
    uint8_t *running;              /* per rank of the allocation: an asynchronous launch */
    uint32_t nr_programs;
    struct pimrl_program **programs;
};

struct dpu_t {
    struct dpu_rank_t *rank;
    uint32_t slot;                 /* position in the allocation */
    dpu_slice_id_t slice_id;
    dpu_member_id_t dpu_id;
    bool enabled;
};

struct dpu_rank_t {
    uint32_t magic;
    struct pimrl_alloc *alloc;
    uint32_t index;                /* position in the allocation */
    dpu_rank_id_t rank_id;         /* position in the machine */
    uint32_t nr_dpus;              /* DPU slots (enabled or not) */
    struct dpu_t *dpus;
    struct _dpu_description_t description;
    struct _dpu_run_context_t run_context;
    pthread_mutex_t lock;
};

struct pimrl_alloc {
    uint32_t handle;               /* the simulator's number for it */
    uint32_t nr_ranks;
    uint32_t dpus_per_rank;
    uint32_t nr_slots;
    uint32_t nr_enabled;
    uint32_t nr_ranks_enabled;     /* ranks with at least one enabled DPU */
    int32_t freed;
    int32_t sg_enabled;            /* profile sgXferEnable=true */
    struct dpu_rank_t **ranks;     /* what the allocation's set lists */
    struct dpu_rank_t *rank_storage;
    struct dpu_t *dpu_storage;
    void **prepared;               /* per slot: dpu_prepare_xfer's buffer */
    struct pimrl_mem mem;
};

/* A loaded program: the SDK's public structure first, so the two pointers are the same. */
struct pimrl_program {
    struct dpu_program_t sdk;
    uint32_t pimrl_id;
};

/* How the C layer names a set to Python. */
enum pimrl_set_kind { PIMRL_SET_RANKS, PIMRL_SET_DPU };
struct pimrl_set_ref {
    uint32_t kind;
    uint32_t pimrl_handle;
    uint32_t pimrl_rank;           /* PIMRL_ALL_RANKS or a rank of the allocation */
    uint32_t pimrl_dpu;            /* PIMRL_SET_DPU: the slot */
};

/* A transfer done by the fast path, to be costed by Python. */
struct pimrl_record {
    uint32_t handle;
    uint32_t op;                   /* PIMRL_COPY_TO ... PIMRL_PUSH_FROM */
    int32_t phase;
    uint32_t program;              /* index in the allocation's programs */
    uint32_t symbol;               /* index in the program's symbols */
    uint32_t n_dpus;
    uint32_t n_ranks;
    uint32_t pad;
    uint64_t bytes;                /* per DPU */
};

/* transfer operations (records and _pimrl_py_copy) */
#define PIMRL_COPY_TO 0
#define PIMRL_COPY_FROM 1
#define PIMRL_BROADCAST 2
#define PIMRL_PUSH_TO 3
#define PIMRL_PUSH_FROM 4

/* what _pimrl_py_describe writes in its `hw` array */
enum { PIMRL_HW_MRAM, PIMRL_HW_WRAM, PIMRL_HW_IRAM, PIMRL_HW_FREQ_MHZ, PIMRL_HW_THREADS, PIMRL_HW_DPUS_PER_RANK, PIMRL_HW_COUNT };

/* dpu_shim.c */
extern pthread_mutex_t _pimrl_lock;
/* Evaluate `call` (a simulator or fast-path call) holding _pimrl_lock, on the modelled clock. */
#define PIMRL_LOCKED(call)                                                                     \
    __extension__({                                                                            \
        pthread_mutex_lock(&_pimrl_lock);                                                      \
        _pimrl_mclock_enter();                                                                 \
        __typeof__(call) __pimrl_result = (call);                                              \
        _pimrl_mclock_leave();                                                                 \
        pthread_mutex_unlock(&_pimrl_lock);                                                    \
        __pimrl_result;                                                                        \
    })

int _pimrl_ready(void);
/* PIMRL_MODELLED_CLOCK: a simulator call's wall time is replaced by its modelled time. */
void _pimrl_mclock_enter(void);
void _pimrl_mclock_leave(void);
void _pimrl_set_message(const char *message);
void _pimrl_set_error(int code, const char *message);
void _pimrl_mark_ready(void);
dpu_error_t _pimrl_resolve(const struct dpu_set_t *set, struct pimrl_set_ref *ref, struct pimrl_alloc **alloc);
size_t _pimrl_take_records(struct pimrl_record **records);

/* dpu_lowlevel.c: a rank description from _pimrl_py_describe's numbers */
void _pimrl_hw_description(struct _dpu_description_t *description, const uint64_t *hw);

/* dpu_fast.c: DPU_OK when done, DPU_ERR_INTERNAL when Python must do it */
dpu_error_t _pimrl_fast_copy(struct pimrl_alloc *a, const struct pimrl_set_ref *ref, int op, const char *name,
                             const struct dpu_symbol_t *symbol, uint32_t offset, void *buffer, size_t length,
                             int flags);
dpu_error_t _pimrl_fast_push(struct pimrl_alloc *a, const struct pimrl_set_ref *ref, int xfer, const char *name,
                             const struct dpu_symbol_t *symbol, uint32_t offset, size_t length, int flags);
void _pimrl_record(const struct pimrl_record *record);

/* Implemented by the Python side (cffi embedding API); pimrl/shim/build.py reads this
   block, from this line to the next empty line, as the embedding API. */
int _pimrl_py_start(void);
int _pimrl_py_alloc(uint32_t count, const char *profile, int by_ranks, struct pimrl_alloc *alloc);
int _pimrl_py_describe(struct pimrl_alloc *alloc, uint32_t *rank_ids, uint8_t *enabled, uint64_t *hw);
int _pimrl_py_profile_description(const char *profile, uint64_t *hw);
int _pimrl_py_free(const struct pimrl_set_ref *set);
int _pimrl_py_load(const struct pimrl_set_ref *set, const char *path, const uint8_t *buffer, size_t size, struct dpu_program_t **program);
int _pimrl_py_get_symbol(struct dpu_program_t *program, const char *name, struct dpu_symbol_t *symbol);
int _pimrl_py_launch(const struct pimrl_set_ref *set, int policy);
int _pimrl_py_status(const struct pimrl_set_ref *set, int *done, int *fault);
int _pimrl_py_sync(const struct pimrl_set_ref *set);
int _pimrl_py_copy(const struct pimrl_set_ref *set, int op, const char *name, const struct dpu_symbol_t *symbol, uint32_t offset, void *buffer, size_t length, int flags);
int _pimrl_py_raw(const struct pimrl_set_ref *set, int to_dpu, int memory, uint32_t offset, void *buffer, size_t length);
int _pimrl_py_push(const struct pimrl_set_ref *set, int xfer, const char *name, const struct dpu_symbol_t *symbol, uint32_t offset, size_t length, int flags, void **prepared);
int _pimrl_py_check_symbol(const struct pimrl_set_ref *set, const char *name, const struct dpu_symbol_t *symbol, uint32_t offset, size_t length, int sg, struct dpu_symbol_t *out);
int _pimrl_py_log(const struct pimrl_set_ref *set, char **text, size_t *length);
int _pimrl_py_phase(const struct pimrl_set_ref *set, const char *category);
int _pimrl_py_modelled(const struct pimrl_set_ref *set, const char *category, double *seconds);
int _pimrl_py_flush(void);
int _pimrl_py_modelled_total(double *seconds);

#endif /* PIMRL_SHIM_INTERNAL_H */
