/* dpu_memory.h: low-level copies to and from one DPU's or one rank's memories (pimrl's
 * libdpu). Offsets here are memory offsets (MRAM byte 0 is offset 0), not symbol
 * addresses; WRAM is addressed in 32-bit words, IRAM in 64-bit instructions. In the
 * simulator the WRAM and MRAM copies work (and are costed as serial transfers); IRAM and
 * WRAM FIFO copies answer DPU_ERR_INVALID_IRAM_ACCESS / DPU_ERR_SYSTEM.
 */
#ifndef DPU_MEMORY_H
#define DPU_MEMORY_H

#include <stdint.h>

#include <dpu_error.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_fifo_rank_t;
struct dpu_rank_t;
struct dpu_t;
struct dpu_transfer_matrix;

dpu_error_t dpu_copy_to_iram_for_rank(struct dpu_rank_t *rank, iram_addr_t iram_instruction_index,
                                      const dpuinstruction_t *source, iram_size_t nb_of_instructions);
dpu_error_t dpu_copy_to_iram_for_dpu(struct dpu_t *dpu, iram_addr_t iram_instruction_index,
                                     const dpuinstruction_t *source, iram_size_t nb_of_instructions);
dpu_error_t dpu_copy_from_iram_for_dpu(struct dpu_t *dpu, dpuinstruction_t *destination,
                                       iram_addr_t iram_instruction_index, iram_size_t nb_of_instructions);
dpu_error_t dpu_copy_to_iram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *matrix);
dpu_error_t dpu_copy_from_iram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *matrix);
dpu_error_t dpu_copy_to_wram_for_rank(struct dpu_rank_t *rank, wram_addr_t wram_word_offset, const dpuword_t *source,
                                      wram_size_t nb_of_words);
dpu_error_t dpu_copy_to_wram_for_dpu(struct dpu_t *dpu, wram_addr_t wram_word_offset, const dpuword_t *source,
                                     wram_size_t nb_of_words);
dpu_error_t dpu_copy_to_wram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_from_wram_for_dpu(struct dpu_t *dpu, dpuword_t *destination, wram_addr_t wram_word_offset,
                                       wram_size_t nb_of_words);
dpu_error_t dpu_copy_from_wram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_to_wram_fifo(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo,
                                  struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_from_wram_fifo(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo,
                                    struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_to_mram(struct dpu_t *dpu, mram_addr_t mram_byte_offset, const uint8_t *source,
                             mram_size_t nb_of_bytes);
dpu_error_t dpu_copy_from_mram(struct dpu_t *dpu, uint8_t *destination, mram_addr_t mram_byte_offset,
                               mram_size_t nb_of_bytes);
dpu_error_t dpu_copy_to_mrams(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);
dpu_error_t dpu_copy_from_mrams(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix);

#ifdef __cplusplus
}
#endif

#endif /* DPU_MEMORY_H */
