/* wramfifo.h, implemented in DPU C (pimrl DPU runtime's system library). */
#include <barrier.h>
#include <defs.h>
#include <mutex.h>
#include <string.h>
#include <wramfifo.h>

#define SLOTS(f) (1ull << (f)->ptr_size)
#define AT(f, k) ((f)->data + (size_t)((k) & (SLOTS(f) - 1)) * (f)->data_size)

bool is_input_fifo_empty(struct dpu_input_fifo_t *fifo)
{
    return fifo->read_ptr == fifo->write_ptr;
}

uint8_t *input_fifo_peek(struct dpu_input_fifo_t *fifo)
{
    return AT(fifo, fifo->read_ptr);
}

void input_fifo_pop(struct dpu_input_fifo_t *fifo)
{
    fifo->read_ptr++;
}

bool is_output_fifo_full(struct dpu_output_fifo_t *fifo)
{
    return fifo->write_ptr + fifo->nb_reserved - fifo->read_ptr >= SLOTS(fifo);
}

void output_fifo_push(struct dpu_output_fifo_t *fifo, const uint8_t *data)
{
    if (fifo->write_ptr - fifo->read_ptr >= SLOTS(fifo))
        __dpurt_fault(__FILE__, __LINE__, "output_fifo_push: the output fifo is full and the "
                      "host cannot empty it during a launch in pimrl (size the fifo for a launch)");
    memcpy(AT(fifo, fifo->write_ptr), data, fifo->data_size);
    fifo->write_ptr++;
}

static void no_input(void)
{
    __dpurt_fault(__FILE__, __LINE__, "wramfifo: the input fifo is empty while `active` is set; "
                  "pimrl runs a launch without the host, so fill the fifo and clear `active` "
                  "before dpu_launch");
}

static volatile int all_stop;

void process_inputs_all_tasklets(struct dpu_input_fifo_t *input_fifo,
                                 struct dpu_output_fifo_t *output_fifo,
                                 void (*process_input)(uint8_t *, void *),
                                 void (*reduce)(uint8_t *, uint8_t *, void *), void *ctx,
                                 barrier_t *barrier, volatile uint64_t *active)
{
    for (;;) {
        if (me() == 0) {
            all_stop = is_input_fifo_empty(input_fifo);
            if (all_stop && *active)
                no_input();
        }
        barrier_wait(barrier);
        if (all_stop)
            return;
        uint8_t *input = input_fifo_peek(input_fifo);
        process_input(input, ctx);
        barrier_wait(barrier);
        if (me() == 0) {
            uint8_t *out = output_fifo->tmp_data;
            reduce(input, out, ctx);
            output_fifo_push(output_fifo, out);
            input_fifo_pop(input_fifo);
        }
    }
}

void process_inputs_each_tasklet(struct dpu_input_fifo_t *input_fifo,
                                 struct dpu_output_fifo_t *output_fifo,
                                 void (*process_input)(uint8_t *, uint8_t *), mutex_id_t mutex,
                                 volatile uint64_t *active)
{
    uint8_t *in = input_fifo->tmp_data + (size_t)me() * input_fifo->data_size;
    uint8_t *out = output_fifo->tmp_data + (size_t)me() * output_fifo->data_size;
    for (;;) {
        mutex_lock(mutex);
        if (is_input_fifo_empty(input_fifo)) {
            mutex_unlock(mutex);
            if (*active)
                no_input();
            return;
        }
        memcpy(in, input_fifo_peek(input_fifo), input_fifo->data_size);
        input_fifo_pop(input_fifo);
        if (is_output_fifo_full(output_fifo))
            __dpurt_fault(__FILE__, __LINE__, "process_inputs_each_tasklet: the output fifo is "
                          "full and the host cannot empty it during a launch in pimrl");
        uint64_t slot = output_fifo->write_ptr + output_fifo->nb_reserved++;
        mutex_unlock(mutex);
        process_input(in, out);
        for (;;) {                              /* outputs leave in the inputs' order */
            mutex_lock(mutex);
            if (output_fifo->write_ptr == slot) {
                memcpy(AT(output_fifo, slot), out, output_fifo->data_size);
                output_fifo->write_ptr++;
                output_fifo->nb_reserved--;
                mutex_unlock(mutex);
                break;
            }
            mutex_unlock(mutex);
            __dpurt_yield();
        }
    }
}
