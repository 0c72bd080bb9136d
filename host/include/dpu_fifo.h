/* dpu_fifo.h: host access to WRAM FIFOs (pimrl's libdpu).
 *
 * Declared as in the SDK. The simulator has no WRAM FIFOs: dpu_link_input_fifo and
 * dpu_link_output_fifo answer DPU_ERR_SYSTEM, so no link to use the rest with exists.
 */
#ifndef DPU_FIFO_H
#define DPU_FIFO_H

#include <stdbool.h>
#include <stdint.h>

#include <dpu_error.h>
#include <dpu_transfer_matrix.h>
#include <dpu_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dpu_rank_t;
struct dpu_t;

/** The FIFOs of one rank. */
struct dpu_fifo_rank_t {
    uint8_t dpu_fifo_ptr_size;
    uint32_t dpu_fifo_address;
    uint32_t dpu_fifo_data_size;
    uint64_t dpu_fifo_pointers[MAX_NR_DPUS_PER_RANK * 2];
    struct dpu_transfer_matrix fifo_pointers_matrix;
    struct dpu_transfer_matrix transfer_matrix;
    uint32_t max_retries;
    uint32_t time_for_retry;
};

enum dpu_fifo_direction_t { DPU_INPUT_FIFO, DPU_OUTPUT_FIFO };

struct dpu_fifo_link_t {
    enum dpu_fifo_direction_t direction;
    struct dpu_symbol_t fifo_symbol;
    struct dpu_fifo_rank_t *rank_fifos;
};

dpu_error_t dpu_link_input_fifo(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *link, char *fifo_name);
dpu_error_t dpu_link_output_fifo(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *link, char *fifo_name);
dpu_error_t dpu_fifo_link_free(struct dpu_fifo_link_t *fifo_link);
uint16_t get_fifo_size(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu);
uint8_t get_fifo_elem_index(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu, uint8_t i);
uint8_t *get_fifo_elem(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu, uint8_t *fifo_data, uint8_t i);
uint16_t get_fifo_max_size(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo);
struct dpu_fifo_rank_t *get_rank_fifo(struct dpu_fifo_link_t *fifo_link, struct dpu_rank_t *rank);
void dpu_fifo_set_push_max_retries(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu_set, uint32_t max_retries);
void dpu_fifo_set_time_for_push_retries(struct dpu_fifo_link_t *fifo_link, struct dpu_set_t dpu_set, uint32_t time_us);
uint8_t get_fifo_rd_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
uint8_t get_fifo_wr_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
uint64_t get_fifo_abs_rd_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
uint64_t get_fifo_abs_wr_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
void set_fifo_rd_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu, uint8_t val);
void set_fifo_wr_ptr(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu, uint8_t val);
void swap_fifo_rd_wr_ptr(struct dpu_fifo_rank_t *fifo);
void incr_fifo_wr_ptr(struct dpu_fifo_rank_t *fifo);
bool is_fifo_full(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);
bool is_fifo_empty(struct dpu_fifo_rank_t *fifo, struct dpu_t *dpu);

#ifdef __cplusplus
}
#endif

#endif /* DPU_FIFO_H */
