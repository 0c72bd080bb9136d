/* dpu_management.h: ranks and DPUs as objects (pimrl's libdpu).
 *
 * As in the SDK: a DPU's id is (rank id << 16) | (slice << 8) | member; a rank's id is its
 * index in the machine; slices are control interfaces and members the DPUs on one.
 */
#ifndef DPU_MANAGEMENT_H
#define DPU_MANAGEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include <dpu_description.h>
#include <dpu_error.h>
#include <dpu_macro_utils.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_rank_t;
struct dpu_t;

/** The description of the hardware a profile selects (free it with dpu_free_description). */
dpu_error_t dpu_get_profile_description(const char *profile, dpu_description_t *description);
/** Allocate one rank (free it with dpu_free_rank). */
dpu_error_t dpu_get_rank_of_type(const char *profile, struct dpu_rank_t **rank);
dpu_error_t dpu_free_rank(struct dpu_rank_t *rank);
void dpu_lock_rank(struct dpu_rank_t *rank);
int dpu_trylock_rank(struct dpu_rank_t *rank);
void dpu_unlock_rank(struct dpu_rank_t *rank);
/** The DPU at (slice, member) of the rank, or NULL outside the rank. */
struct dpu_t *dpu_get(struct dpu_rank_t *rank, dpu_slice_id_t slice_id, dpu_member_id_t dpu_id);
dpu_id_t dpu_get_id(struct dpu_t *dpu);
dpu_id_t dpu_get_rank_id(struct dpu_rank_t *rank);
int dpu_get_rank_numa_node(struct dpu_rank_t *rank);
struct dpu_rank_t *dpu_get_rank(struct dpu_t *dpu);
dpu_slice_id_t dpu_get_slice_id(struct dpu_t *dpu);
dpu_member_id_t dpu_get_member_id(struct dpu_t *dpu);
bool dpu_is_enabled(struct dpu_t *dpu);
dpu_description_t dpu_get_description(struct dpu_rank_t *rank);
/** A one-rank set over `*rank` (the pointer is kept: it must outlive the set). */
struct dpu_set_t dpu_set_from_rank(struct dpu_rank_t **rank);
struct dpu_set_t dpu_set_from_dpu(struct dpu_t *dpu);
/** The rank of a one-rank set, else NULL. */
struct dpu_rank_t *dpu_rank_from_set(struct dpu_set_t set);
/** The DPU of a one-DPU set, else NULL. */
struct dpu_t *dpu_from_set(struct dpu_set_t set);

/** STRUCT_DPU_FOREACH(rank, dpu[, i]): every enabled DPU of a rank as a struct dpu_t *. */
#define STRUCT_DPU_FOREACH(rank, dpu, ...)                                                     \
    _CONCAT(_STRUCT_DPU_FOREACH_, _DPU_FOREACH_VARIANT(rank, dpu, ##__VA_ARGS__))(rank, dpu, ##__VA_ARGS__)

#define _STRUCT_DPU_FOREACH_X(rank, dpu)                                                       \
    for (struct dpu_iterator_t __dpu_it = dpu_iterator_from(rank); dpu = __dpu_it.next, __dpu_it.has_next; \
         dpu_iterator_next(&__dpu_it))

#define _STRUCT_DPU_FOREACH_I(rank, dpu, i)                                                    \
    for (struct dpu_iterator_t __dpu_it = dpu_iterator_from(rank);                             \
         i = __dpu_it.count, dpu = __dpu_it.next, __dpu_it.has_next; dpu_iterator_next(&__dpu_it))

struct dpu_iterator_t {
    struct dpu_rank_t *rank;
    uint32_t count;
    uint32_t next_idx;
    bool has_next;
    struct dpu_t *next;
};

struct dpu_iterator_t dpu_iterator_from(struct dpu_rank_t *rank);
void dpu_iterator_next(struct dpu_iterator_t *iterator);

#ifdef __cplusplus
}
#endif

#endif /* DPU_MANAGEMENT_H */
