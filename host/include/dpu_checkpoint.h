/* dpu_checkpoint.h: saving and restoring a DPU's state (pimrl's libdpu).
 *
 * Declared as in the SDK. The simulator does not implement checkpoints: every call answers
 * DPU_ERR_SYSTEM (pimrl_sim_last_error says why).
 */
#ifndef DPU_CHECKPOINT_H
#define DPU_CHECKPOINT_H

#include <dpu_error.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum _dpu_checkpoint_flags_t {
    DPU_CHECKPOINT_NONE = 0x0,
    DPU_CHECKPOINT_INTERNAL = 0x1,
    DPU_CHECKPOINT_IRAM = 0x2,
    DPU_CHECKPOINT_MRAM = 0x8,
    DPU_CHECKPOINT_WRAM = 0x10,
} dpu_checkpoint_flags_t;

#define DPU_CHECKPOINT_ALL (DPU_CHECKPOINT_INTERNAL | DPU_CHECKPOINT_IRAM | DPU_CHECKPOINT_MRAM | DPU_CHECKPOINT_WRAM)

dpu_error_t dpu_checkpoint_save(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_restore(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context);
uint32_t dpu_checkpoint_get_serialized_context_size(struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_serialize(struct dpu_context_t *context, uint8_t **serialized_context,
                                     uint32_t *serialized_context_size);
dpu_error_t dpu_checkpoint_deserialize(const uint8_t *serialized_context, uint32_t serialized_context_size,
                                       struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_free(struct dpu_context_t *context);

#ifdef __cplusplus
}
#endif

#endif /* DPU_CHECKPOINT_H */
