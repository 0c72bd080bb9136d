/* shim_internal.h: the boundary between libdpu's C layer and the Python simulator.
 *
 * The functions prefixed _pimrl_py_ are implemented in Python (pimrl/shim/runtime.py) and
 * exported by cffi's embedding mode; each returns a dpu_error_t code. The C layer (dpu_shim.c)
 * only forwards the SDK calls to them and keeps the few things that belong to C: the error
 * strings, the iterators, the probe clock and FILE* output. pimrl/shim/build.py repeats these
 * declarations for cffi; keep both in step.
 */
#ifndef PIMRL_SHIM_INTERNAL_H
#define PIMRL_SHIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dpu.h"

/* The simulator's handle behind a `struct dpu_program_t *`. */
struct dpu_program_t {
    uint32_t pimrl_id;
};

#define PIMRL_ALL_RANKS UINT32_MAX

/* Called by the Python side. */
void _pimrl_set_message(const char *message);
void _pimrl_mark_ready(void);

/* Implemented by the Python side (cffi embedding API); pimrl/shim/build.py reads this
   block, from this line to the next empty line, as the embedding API. */
int _pimrl_py_start(void);
int _pimrl_py_alloc(uint32_t count, const char *profile, int by_ranks, struct dpu_set_t *out);
int _pimrl_py_free(const struct dpu_set_t *set);
int _pimrl_py_count(const struct dpu_set_t *set, int ranks, uint32_t *out);
int _pimrl_py_member(const struct dpu_set_t *set, int ranks, uint32_t index, struct dpu_set_t *out);
int _pimrl_py_load(const struct dpu_set_t *set, const char *path, struct dpu_program_t **program);
int _pimrl_py_get_symbol(struct dpu_program_t *program, const char *name, struct dpu_symbol_t *symbol);
int _pimrl_py_launch(const struct dpu_set_t *set, int policy);
int _pimrl_py_status(const struct dpu_set_t *set, int *done, int *fault);
int _pimrl_py_sync(const struct dpu_set_t *set);
int _pimrl_py_copy(const struct dpu_set_t *set, int op, const char *name,
                   const struct dpu_symbol_t *symbol, uint32_t offset, void *buffer,
                   size_t length, int flags);
int _pimrl_py_prepare(const struct dpu_set_t *set, void *buffer);
int _pimrl_py_push(const struct dpu_set_t *set, int xfer, const char *name,
                   const struct dpu_symbol_t *symbol, uint32_t offset, size_t length, int flags);
int _pimrl_py_log(const struct dpu_set_t *set, char **text, size_t *length);
int _pimrl_py_phase(const struct dpu_set_t *set, const char *category);
int _pimrl_py_modelled(const struct dpu_set_t *set, const char *category, double *seconds);
int _pimrl_py_modelled_total(double *seconds);

/* _pimrl_py_copy operations */
#define PIMRL_COPY_TO 0
#define PIMRL_COPY_FROM 1
#define PIMRL_BROADCAST 2

#endif /* PIMRL_SHIM_INTERNAL_H */
