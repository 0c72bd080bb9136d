/* dpu_transfer_matrix.h: one host buffer per DPU of a rank (pimrl's libdpu; the SDK's
 * low-level layout, used by dpu_memory.h and dpu_fifo.h). */
#ifndef DPU_TRANSFER_MATRIX_H
#define DPU_TRANSFER_MATRIX_H

#include <stdint.h>

#include <dpu_error.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_rank_t;
struct dpu_t;

#define MAX_NR_DPUS_PER_RANK 64

#define struct_dpu_transfer_matrix_t

/** Host buffers indexed by the DPU's position in its rank, the DPU-side offset and size. */
struct dpu_transfer_matrix {
    union {
        void *ptr[MAX_NR_DPUS_PER_RANK];
        struct sg_xfer_buffer *sg_ptr[MAX_NR_DPUS_PER_RANK];
    };
    uint32_t offset;
    uint32_t size;
    dpu_transfer_matrix_type_t type;
};

void dpu_transfer_matrix_add_dpu(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix, void *buffer);
dpu_error_t dpu_transfer_matrix_add_dpu_block(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix,
                                              void *buffer, uint32_t length);
void dpu_transfer_matrix_set_all(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix, void *buffer);
void dpu_transfer_matrix_clear_dpu(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix);
void dpu_transfer_matrix_clear_all(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
void dpu_transfer_matrix_copy(struct dpu_transfer_matrix *dst, struct dpu_transfer_matrix *src);
void *dpu_transfer_matrix_get_ptr(struct dpu_t *dpu, struct dpu_transfer_matrix *transfer_matrix);

#ifdef __cplusplus
}
#endif

#endif /* DPU_TRANSFER_MATRIX_H */
