/* wramfifo.h: WRAM input/output fifos between the host and a DPU (pimrl DPU runtime; the
 * SDK's API and layouts). Pointers count elements since the start (element k is at
 * data[(k mod 2^ptr_size) * data_size]); the DPU owns the input's read_ptr and the output's
 * write_ptr, the host the other two.
 *
 * pimrl runs a launch to its end without the host, so the host fills the input fifo before
 * dpu_launch and reads the output fifo after it. A DPU that waits for input while `active`
 * is set, or for room in a full output fifo, can never be served: the DPU faults saying so
 * (on hardware the host would serve it while the DPU runs). */
#ifndef PIMRL_DPURT_WRAMFIFO_H
#define PIMRL_DPURT_WRAMFIFO_H

#include <stdbool.h>
#include <stdint.h>
#include "attributes.h"
#include "barrier.h"
#include "defs.h"
#include "macro_utils.h"
#include "mutex.h"

#define WRAM_FIFO_SIZE(FIFO_PTR_SIZE) (1 << (FIFO_PTR_SIZE))
#define MASK_WRAM_FIFO_PTR(FIFO_PTR_SIZE, x) ((x) & ((1U << (FIFO_PTR_SIZE)) - 1))
#define __get_fifo_data_name(fifo_name) __CONCAT(__CONCAT(__, fifo_name), _data)
#define __get_fifo_tmp_data_name(fifo_name) __CONCAT(__CONCAT(__, fifo_name), _tmp_data)

struct dpu_input_fifo_t {
    uint64_t read_ptr;            /* the DPU's */
    volatile uint64_t write_ptr;  /* the host's */
    uint8_t *data;
    uint8_t *tmp_data;            /* NR_TASKLETS elements of scratch */
    const uint32_t ptr_size;      /* 2^ptr_size elements */
    const uint32_t data_size;     /* bytes per element, a multiple of 8 */
};

struct dpu_output_fifo_t {
    volatile uint64_t read_ptr;   /* the host's */
    uint64_t write_ptr;           /* the DPU's */
    uint8_t *data;
    uint8_t *tmp_data;
    const uint32_t ptr_size;
    const uint32_t data_size;
    uint32_t nb_reserved;         /* slots reserved by tasklets, not yet written */
};

#define INPUT_FIFO_INIT(name, INPUT_FIFO_PTR_SIZE, INPUT_FIFO_DATA_SIZE) \
    _Static_assert((INPUT_FIFO_PTR_SIZE) <= 10, "INPUT_FIFO_INIT: the pointer size is at most 10 bits"); \
    _Static_assert((INPUT_FIFO_DATA_SIZE) && ((INPUT_FIFO_DATA_SIZE) & 7) == 0, \
                   "INPUT_FIFO_INIT: the element size must be a positive multiple of 8"); \
    __host uint8_t __get_fifo_data_name(name)[(1 << (INPUT_FIFO_PTR_SIZE)) * (INPUT_FIFO_DATA_SIZE)]; \
    __dma_aligned uint8_t __get_fifo_tmp_data_name(name)[NR_TASKLETS * (INPUT_FIFO_DATA_SIZE)]; \
    __host struct dpu_input_fifo_t name = {0, 0, __get_fifo_data_name(name), __get_fifo_tmp_data_name(name), \
                                           (INPUT_FIFO_PTR_SIZE), (INPUT_FIFO_DATA_SIZE)};

#define OUTPUT_FIFO_INIT(name, OUTPUT_FIFO_PTR_SIZE, OUTPUT_FIFO_DATA_SIZE) \
    _Static_assert((OUTPUT_FIFO_PTR_SIZE) <= 10, "OUTPUT_FIFO_INIT: the pointer size is at most 10 bits"); \
    _Static_assert((OUTPUT_FIFO_DATA_SIZE) && ((OUTPUT_FIFO_DATA_SIZE) & 7) == 0, \
                   "OUTPUT_FIFO_INIT: the element size must be a positive multiple of 8"); \
    __host uint8_t __get_fifo_data_name(name)[(1 << (OUTPUT_FIFO_PTR_SIZE)) * (OUTPUT_FIFO_DATA_SIZE)]; \
    __dma_aligned uint8_t __get_fifo_tmp_data_name(name)[NR_TASKLETS * (OUTPUT_FIFO_DATA_SIZE)]; \
    __host struct dpu_output_fifo_t name = {0, 0, __get_fifo_data_name(name), __get_fifo_tmp_data_name(name), \
                                            (OUTPUT_FIFO_PTR_SIZE), (OUTPUT_FIFO_DATA_SIZE), 0};

bool is_input_fifo_empty(struct dpu_input_fifo_t *fifo);
uint8_t *input_fifo_peek(struct dpu_input_fifo_t *fifo);
void input_fifo_pop(struct dpu_input_fifo_t *fifo);
bool is_output_fifo_full(struct dpu_output_fifo_t *fifo);
void output_fifo_push(struct dpu_output_fifo_t *fifo, const uint8_t *data);

/* Every input is processed by all tasklets together (process_input on each, then reduce on
 * tasklet 0 makes its output); `barrier` must count every tasklet. Returns when the input
 * fifo is empty and *active is 0. */
void process_inputs_all_tasklets(struct dpu_input_fifo_t *input_fifo,
                                 struct dpu_output_fifo_t *output_fifo,
                                 void (*process_input)(uint8_t *, void *),
                                 void (*reduce)(uint8_t *, uint8_t *, void *), void *ctx,
                                 barrier_t *barrier, volatile uint64_t *active);

/* Each input is processed by one tasklet (process_input(input, output)); outputs are pushed
 * in the inputs' order. Returns when the input fifo is empty and *active is 0. */
void process_inputs_each_tasklet(struct dpu_input_fifo_t *input_fifo,
                                 struct dpu_output_fifo_t *output_fifo,
                                 void (*process_input)(uint8_t *, uint8_t *), mutex_id_t mutex,
                                 volatile uint64_t *active);

#endif
