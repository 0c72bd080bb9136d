/* dpu_lowlevel.c: the headers dpu.h leaves to the low level (dpu_management.h,
 * dpu_memory.h, dpu_runner.h, dpu_program.h, dpu_transfer_matrix.h), over the same
 * allocations as dpu.h; and the SDK calls the simulator has no model for (checkpoints, WRAM
 * FIFOs, bank-interface counters, DPU ELF files), which answer DPU_ERR_SYSTEM and say why
 * in pimrl_sim_last_error(). */
#include <stdlib.h>
#include <string.h>

#include "dpu.h"
#include "dpu_elf.h"
#include "dpu_memory.h"
#include "dpu_transfer_matrix.h"
#include "shim_internal.h"

static dpu_error_t unsupported(const char *what)
{
    char message[256];
    snprintf(message, sizeof(message), "%s: not modelled by the pimrl simulator", what);
    _pimrl_set_error(DPU_ERR_SYSTEM, message);
    return DPU_ERR_SYSTEM;
}

static int rank_ok(const struct dpu_rank_t *rank) { return rank != NULL && rank->magic == PIMRL_RANK_MAGIC; }
static int dpu_ok(const struct dpu_t *dpu) { return dpu != NULL && rank_ok(dpu->rank); }

/* ----------------------------------------------------------------------------- management */

void _pimrl_hw_description(struct _dpu_description_t *d, const uint64_t *hw)
{
    memset(d, 0, sizeof(*d));
    d->hw.signature.chip_id = vD_fun_v1_4;
    d->hw.timings.fck_frequency_in_mhz = (uint32_t)hw[PIMRL_HW_FREQ_MHZ];
    d->hw.topology.nr_of_control_interfaces = DPU_MAX_NR_CIS;
    d->hw.topology.nr_of_dpus_per_control_interface = (uint8_t)((hw[PIMRL_HW_DPUS_PER_RANK] + DPU_MAX_NR_CIS - 1) / DPU_MAX_NR_CIS);
    d->hw.topology.ci_mask = 0xff;
    d->hw.memories.mram_size = (mram_size_t)hw[PIMRL_HW_MRAM];
    d->hw.memories.wram_size = (wram_size_t)hw[PIMRL_HW_WRAM];
    d->hw.memories.iram_size = (iram_size_t)(hw[PIMRL_HW_IRAM] > 0xffff ? 0xffff : hw[PIMRL_HW_IRAM]);
    d->hw.dpu.nr_of_threads = (uint8_t)hw[PIMRL_HW_THREADS];
    d->hw.dpu.nr_of_atomic_bits = 256;
    d->hw.dpu.nr_of_notify_bits = 40;
    d->hw.dpu.nr_of_work_registers_per_thread = 24;
    d->type = FUNCTIONAL_SIMULATOR;
    d->refcount = 1;
}

static void free_malloced(void *data) { free(data); }

dpu_error_t dpu_get_profile_description(const char *profile, dpu_description_t *description)
{
    uint64_t hw[PIMRL_HW_COUNT] = { 0 };
    dpu_error_t status;
    struct _dpu_description_t *d;
    if (!_pimrl_ready())
        return DPU_ERR_SYSTEM;
    if (description == NULL)
        return DPU_ERR_INTERNAL;
    status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_profile_description(profile, hw));
    if (status != DPU_OK)
        return status;
    d = malloc(sizeof(*d));
    if (d == NULL)
        return DPU_ERR_SYSTEM;
    _pimrl_hw_description(d, hw);
    d->_internals.data = d;
    d->_internals.free = free_malloced;
    *description = d;
    return DPU_OK;
}

void dpu_acquire_description(dpu_description_t description)
{
    if (description != NULL)
        description->refcount++;
}

void dpu_free_description(dpu_description_t description)
{
    /* A rank's own description (no free function) lives as long as the rank. */
    if (description != NULL && description->refcount > 0 && --description->refcount == 0 && description->_internals.free)
        description->_internals.free(description->_internals.data);
}

dpu_error_t dpu_get_rank_of_type(const char *profile, struct dpu_rank_t **rank)
{
    struct dpu_set_t set;
    dpu_error_t status;
    if (rank == NULL)
        return DPU_ERR_INTERNAL;
    status = dpu_alloc_ranks(1, profile, &set);
    if (status == DPU_OK)
        *rank = set.list.ranks[0];
    return status;
}

dpu_error_t dpu_free_rank(struct dpu_rank_t *rank)
{
    struct dpu_set_t set;
    if (!rank_ok(rank) || rank->alloc->nr_ranks != 1)
        return DPU_ERR_INVALID_DPU_SET;
    set.kind = DPU_SET_RANKS;
    set.list.nr_ranks = 1;
    set.list.ranks = rank->alloc->ranks;
    return dpu_free(set);
}

void dpu_lock_rank(struct dpu_rank_t *rank)
{
    if (rank_ok(rank))
        pthread_mutex_lock(&rank->lock);
}

int dpu_trylock_rank(struct dpu_rank_t *rank) { return rank_ok(rank) ? pthread_mutex_trylock(&rank->lock) : -1; }

void dpu_unlock_rank(struct dpu_rank_t *rank)
{
    if (rank_ok(rank))
        pthread_mutex_unlock(&rank->lock);
}

struct dpu_t *dpu_get(struct dpu_rank_t *rank, dpu_slice_id_t slice_id, dpu_member_id_t dpu_id)
{
    uint32_t per_ci, index;
    if (!rank_ok(rank))
        return NULL;
    per_ci = rank->description.hw.topology.nr_of_dpus_per_control_interface;
    if (slice_id >= DPU_MAX_NR_CIS || dpu_id >= per_ci)
        return NULL;
    index = (uint32_t)slice_id * per_ci + dpu_id;
    return index < rank->nr_dpus ? &rank->dpus[index] : NULL;
}

dpu_id_t dpu_get_id(struct dpu_t *dpu)
{
    return (dpu_id_t)(((uint32_t)dpu->rank->rank_id << 16) | ((dpu->slice_id & 0xffu) << 8) | (dpu->dpu_id & 0xffu));
}

dpu_id_t dpu_get_rank_id(struct dpu_rank_t *rank) { return (dpu_id_t)rank->rank_id; }
int dpu_get_rank_numa_node(struct dpu_rank_t *rank) { return rank_ok(rank) ? 0 : -1; }
struct dpu_rank_t *dpu_get_rank(struct dpu_t *dpu) { return dpu->rank; }
dpu_slice_id_t dpu_get_slice_id(struct dpu_t *dpu) { return dpu->slice_id; }
dpu_member_id_t dpu_get_member_id(struct dpu_t *dpu) { return dpu->dpu_id; }
bool dpu_is_enabled(struct dpu_t *dpu) { return dpu->enabled; }
dpu_description_t dpu_get_description(struct dpu_rank_t *rank) { return &rank->description; }

struct dpu_set_t dpu_set_from_rank(struct dpu_rank_t **rank)
{
    struct dpu_set_t set;
    memset(&set, 0, sizeof(set));
    set.kind = DPU_SET_RANKS;
    set.list.nr_ranks = 1;
    set.list.ranks = rank;
    return set;
}

struct dpu_set_t dpu_set_from_dpu(struct dpu_t *dpu)
{
    struct dpu_set_t set;
    memset(&set, 0, sizeof(set));
    set.kind = DPU_SET_DPU;
    set.dpu = dpu;
    return set;
}

struct dpu_rank_t *dpu_rank_from_set(struct dpu_set_t set)
{
    if (set.kind != DPU_SET_RANKS || set.list.nr_ranks != 1)
        return NULL;
    return set.list.ranks[0];
}

struct dpu_t *dpu_from_set(struct dpu_set_t set) { return set.kind == DPU_SET_DPU ? set.dpu : NULL; }

static void advance(struct dpu_iterator_t *it)
{
    for (uint32_t i = it->next_idx; rank_ok(it->rank) && i < it->rank->nr_dpus; i++) {
        if (it->rank->dpus[i].enabled) {
            it->has_next = true;
            it->next_idx = i + 1;
            it->next = &it->rank->dpus[i];
            return;
        }
    }
    it->has_next = false;
}

struct dpu_iterator_t dpu_iterator_from(struct dpu_rank_t *rank)
{
    struct dpu_iterator_t it;
    memset(&it, 0, sizeof(it));
    it.rank = rank;
    advance(&it);
    return it;
}

void dpu_iterator_next(struct dpu_iterator_t *iterator)
{
    iterator->count++;
    advance(iterator);
}

/* ----------------------------------------------------------------------------- memory */

enum { RAW_WRAM = 0, RAW_MRAM = 1 };

static dpu_error_t raw(struct dpu_t *dpu, int to_dpu, int memory, uint64_t offset, void *buffer, uint64_t length)
{
    struct dpu_set_t set = dpu_set_from_dpu(dpu);
    struct pimrl_set_ref ref;
    dpu_error_t status;
    if (!_pimrl_ready())
        return DPU_ERR_SYSTEM;
    if (!dpu_ok(dpu))
        return DPU_ERR_INVALID_DPU_SET;
    status = _pimrl_resolve(&set, &ref, NULL);
    if (status != DPU_OK)
        return status;
    if (offset > UINT32_MAX)
        return memory == RAW_MRAM ? DPU_ERR_INVALID_MRAM_ACCESS : DPU_ERR_INVALID_WRAM_ACCESS;
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_raw(&ref, to_dpu, memory, (uint32_t)offset, buffer, (size_t)length));
}

dpu_error_t dpu_copy_to_mram(struct dpu_t *dpu, mram_addr_t mram_byte_offset, const uint8_t *source, mram_size_t nb_of_bytes)
{
    return raw(dpu, 1, RAW_MRAM, mram_byte_offset, (void *)source, nb_of_bytes);
}

dpu_error_t dpu_copy_from_mram(struct dpu_t *dpu, uint8_t *destination, mram_addr_t mram_byte_offset, mram_size_t nb_of_bytes)
{
    return raw(dpu, 0, RAW_MRAM, mram_byte_offset, destination, nb_of_bytes);
}

dpu_error_t dpu_copy_to_wram_for_dpu(struct dpu_t *dpu, wram_addr_t wram_word_offset, const dpuword_t *source,
                                     wram_size_t nb_of_words)
{
    return raw(dpu, 1, RAW_WRAM, (uint64_t)wram_word_offset * 4, (void *)source, (uint64_t)nb_of_words * 4);
}

dpu_error_t dpu_copy_from_wram_for_dpu(struct dpu_t *dpu, dpuword_t *destination, wram_addr_t wram_word_offset,
                                       wram_size_t nb_of_words)
{
    return raw(dpu, 0, RAW_WRAM, (uint64_t)wram_word_offset * 4, destination, (uint64_t)nb_of_words * 4);
}

dpu_error_t dpu_copy_to_wram_for_rank(struct dpu_rank_t *rank, wram_addr_t wram_word_offset, const dpuword_t *source,
                                      wram_size_t nb_of_words)
{
    struct dpu_t *dpu;
    if (!rank_ok(rank))
        return DPU_ERR_INVALID_DPU_SET;
    STRUCT_DPU_FOREACH (rank, dpu) {
        dpu_error_t status = dpu_copy_to_wram_for_dpu(dpu, wram_word_offset, source, nb_of_words);
        if (status != DPU_OK)
            return status;
    }
    return DPU_OK;
}

/* Each enabled DPU of the rank with a buffer in the matrix (indexed by its position). */
static dpu_error_t for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *m, int to_dpu, int memory)
{
    if (!rank_ok(rank) || m == NULL)
        return DPU_ERR_INVALID_DPU_SET;
    if (m->type != DPU_DEFAULT_XFER_MATRIX)
        return unsupported("scatter/gather transfer matrices");
    for (uint32_t i = 0; i < rank->nr_dpus && i < MAX_NR_DPUS_PER_RANK; i++) {
        dpu_error_t status;
        if (!rank->dpus[i].enabled || m->ptr[i] == NULL)
            continue;
        status = raw(&rank->dpus[i], to_dpu, memory, memory == RAW_WRAM ? (uint64_t)m->offset * 4 : m->offset,
                     m->ptr[i], memory == RAW_WRAM ? (uint64_t)m->size * 4 : m->size);
        if (status != DPU_OK)
            return status;
    }
    return DPU_OK;
}

dpu_error_t dpu_copy_to_wram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix)
{
    return for_matrix(rank, transfer_matrix, 1, RAW_WRAM);
}

dpu_error_t dpu_copy_from_wram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix)
{
    return for_matrix(rank, transfer_matrix, 0, RAW_WRAM);
}

dpu_error_t dpu_copy_to_mrams(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix)
{
    return for_matrix(rank, transfer_matrix, 1, RAW_MRAM);
}

dpu_error_t dpu_copy_from_mrams(struct dpu_rank_t *rank, struct dpu_transfer_matrix *transfer_matrix)
{
    return for_matrix(rank, transfer_matrix, 0, RAW_MRAM);
}

static dpu_error_t iram(void)
{
    _pimrl_set_error(DPU_ERR_INVALID_IRAM_ACCESS, "IRAM is not host-accessible in the simulator");
    return DPU_ERR_INVALID_IRAM_ACCESS;
}

dpu_error_t dpu_copy_to_iram_for_rank(struct dpu_rank_t *rank, iram_addr_t i, const dpuinstruction_t *s, iram_size_t n)
{
    (void)rank, (void)i, (void)s, (void)n;
    return iram();
}

dpu_error_t dpu_copy_to_iram_for_dpu(struct dpu_t *dpu, iram_addr_t i, const dpuinstruction_t *s, iram_size_t n)
{
    (void)dpu, (void)i, (void)s, (void)n;
    return iram();
}

dpu_error_t dpu_copy_from_iram_for_dpu(struct dpu_t *dpu, dpuinstruction_t *d, iram_addr_t i, iram_size_t n)
{
    (void)dpu, (void)d, (void)i, (void)n;
    return iram();
}

dpu_error_t dpu_copy_to_iram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *matrix)
{
    (void)rank, (void)matrix;
    return iram();
}

dpu_error_t dpu_copy_from_iram_for_matrix(struct dpu_rank_t *rank, struct dpu_transfer_matrix *matrix)
{
    (void)rank, (void)matrix;
    return iram();
}

dpu_error_t dpu_copy_to_wram_fifo(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo, struct dpu_transfer_matrix *m)
{
    (void)rank, (void)fifo, (void)m;
    return unsupported("WRAM FIFOs");
}

dpu_error_t dpu_copy_from_wram_fifo(struct dpu_rank_t *rank, struct dpu_fifo_rank_t *fifo, struct dpu_transfer_matrix *m)
{
    (void)rank, (void)fifo, (void)m;
    return unsupported("WRAM FIFOs");
}

/* ----------------------------------------------------------------------------- transfer matrix */

static uint32_t index_in_rank(const struct dpu_t *dpu) { return dpu->slot % dpu->rank->nr_dpus; }

void dpu_transfer_matrix_add_dpu(struct dpu_t *dpu, struct dpu_transfer_matrix *m, void *buffer)
{
    if (dpu_ok(dpu) && m != NULL)
        m->ptr[index_in_rank(dpu)] = buffer;
}

dpu_error_t dpu_transfer_matrix_add_dpu_block(struct dpu_t *dpu, struct dpu_transfer_matrix *m, void *buffer, uint32_t length)
{
    (void)dpu, (void)m, (void)buffer, (void)length;
    return unsupported("scatter/gather transfer matrices (use dpu_push_sg_xfer)");
}

void dpu_transfer_matrix_set_all(struct dpu_rank_t *rank, struct dpu_transfer_matrix *m, void *buffer)
{
    if (rank_ok(rank) && m != NULL)
        for (uint32_t i = 0; i < rank->nr_dpus && i < MAX_NR_DPUS_PER_RANK; i++)
            if (rank->dpus[i].enabled)
                m->ptr[i] = buffer;
}

void dpu_transfer_matrix_clear_dpu(struct dpu_t *dpu, struct dpu_transfer_matrix *m)
{
    if (dpu_ok(dpu) && m != NULL)
        m->ptr[index_in_rank(dpu)] = NULL;
}

void dpu_transfer_matrix_clear_all(struct dpu_rank_t *rank, struct dpu_transfer_matrix *m)
{
    (void)rank;
    if (m != NULL)
        memset(m->ptr, 0, sizeof(m->ptr));
}

void dpu_transfer_matrix_copy(struct dpu_transfer_matrix *dst, struct dpu_transfer_matrix *src)
{
    if (dst != NULL && src != NULL)
        memcpy(dst, src, sizeof(*dst));
}

void *dpu_transfer_matrix_get_ptr(struct dpu_t *dpu, struct dpu_transfer_matrix *m)
{
    return dpu_ok(dpu) && m != NULL ? m->ptr[index_in_rank(dpu)] : NULL;
}

/* ----------------------------------------------------------------------------- runner */

dpu_error_t dpu_launch_thread_on_rank(struct dpu_rank_t *rank, dpu_thread_t thread, bool should_resume)
{
    (void)rank, (void)thread, (void)should_resume;
    return unsupported("booting a single tasklet");
}

dpu_error_t dpu_launch_thread_on_dpu(struct dpu_t *dpu, dpu_thread_t thread, bool should_resume)
{
    (void)dpu, (void)thread, (void)should_resume;
    return unsupported("booting a single tasklet");
}

static struct dpu_rank_t *one_rank_storage(struct dpu_rank_t *rank, struct dpu_set_t *set)
{
    /* a one-rank set needs a pointer to the rank pointer that outlives it: the allocation's */
    *set = dpu_set_from_rank(&rank->alloc->ranks[rank->index]);
    return rank;
}

dpu_error_t dpu_boot_rank(struct dpu_rank_t *rank)
{
    struct dpu_set_t set;
    if (!rank_ok(rank))
        return DPU_ERR_INVALID_DPU_SET;
    one_rank_storage(rank, &set);
    return dpu_launch(set, DPU_SYNCHRONOUS);
}

dpu_error_t dpu_boot_dpu(struct dpu_t *dpu)
{
    if (!dpu_ok(dpu))
        return DPU_ERR_INVALID_DPU_SET;
    return dpu_launch(dpu_set_from_dpu(dpu), DPU_SYNCHRONOUS);
}

dpu_error_t dpu_status_rank(struct dpu_rank_t *rank, bool *done, bool *fault)
{
    struct dpu_set_t set;
    if (!rank_ok(rank))
        return DPU_ERR_INVALID_DPU_SET;
    one_rank_storage(rank, &set);
    return dpu_status(set, done, fault);
}

dpu_error_t dpu_status_dpu(struct dpu_t *dpu, bool *done, bool *fault)
{
    if (!dpu_ok(dpu))
        return DPU_ERR_INVALID_DPU_SET;
    return dpu_status(dpu_set_from_dpu(dpu), done, fault);
}

dpu_error_t dpu_poll_rank(struct dpu_rank_t *rank)
{
    bool done = true, fault = false;
    dpu_error_t status;
    if (!rank_ok(rank))
        return DPU_ERR_INVALID_DPU_SET;
    status = dpu_status_rank(rank, &done, &fault);
    memset(rank->run_context.dpu_running, 0, sizeof(rank->run_context.dpu_running));
    memset(rank->run_context.dpu_in_fault, 0, sizeof(rank->run_context.dpu_in_fault));
    rank->run_context.nb_dpu_running = 0;
    rank->run_context.poll_status = status;
    if (status == DPU_OK && fault) {
        for (uint32_t i = 0; i < rank->nr_dpus; i++) {
            struct dpu_t *dpu = &rank->dpus[i];
            bool d = true, f = false;
            if (dpu->enabled && dpu_status_dpu(dpu, &d, &f) == DPU_OK && f)
                rank->run_context.dpu_in_fault[dpu->slice_id] |= (dpu_bitfield_t)(1u << dpu->dpu_id);
        }
    }
    return status;
}

dpu_error_t dpu_poll_dpu(struct dpu_t *dpu, bool *dpu_is_running, bool *dpu_is_in_fault)
{
    bool done = true, fault = false;
    dpu_error_t status = dpu_status_dpu(dpu, &done, &fault);
    if (status == DPU_OK) {
        if (dpu_is_running != NULL)
            *dpu_is_running = !done;
        if (dpu_is_in_fault != NULL)
            *dpu_is_in_fault = fault;
    }
    return status;
}

dpu_run_context_t dpu_get_run_context(struct dpu_rank_t *rank) { return rank_ok(rank) ? &rank->run_context : NULL; }

/* ----------------------------------------------------------------------------- programs */

void dpu_init_program_ref(struct dpu_program_t *program)
{
    if (program != NULL)
        program->reference_count = 1;
}

void dpu_take_program_ref(struct dpu_program_t *program)
{
    if (program != NULL)
        program->reference_count++;
}

void dpu_free_program(struct dpu_program_t *program)
{
    /* The allocation that loaded a program owns it; dropping a reference never frees it. */
    if (program != NULL && program->reference_count > 0)
        program->reference_count--;
}

struct dpu_program_t *dpu_get_program(struct dpu_t *dpu)
{
    const struct pimrl_mem *m;
    int64_t pid;
    if (!dpu_ok(dpu) || dpu->rank->alloc->freed || !dpu->rank->alloc->mem.valid)
        return NULL;
    m = &dpu->rank->alloc->mem;
    pid = m->program_of[dpu->slot];
    return pid >= 0 && (uint64_t)pid < m->nr_programs && m->programs[pid] ? &m->programs[pid]->sdk : NULL;
}

void dpu_set_program(struct dpu_t *dpu, struct dpu_program_t *program)
{
    (void)dpu, (void)program;
    unsupported("dpu_set_program (load programs with dpu_load)");
}

dpu_error_t dpu_load_elf_program_from_memory(dpu_elf_file_t *elf_info, const char *path, uint8_t *buffer_start,
                                             size_t buffer_size, struct dpu_program_t *program, mram_size_t hint)
{
    (void)elf_info, (void)path, (void)buffer_start, (void)buffer_size, (void)program, (void)hint;
    return unsupported("UPMEM DPU ELF files (use dpu_load_from_memory)");
}

dpu_error_t dpu_load_elf_program(dpu_elf_file_t *elf_info, const char *path, struct dpu_program_t *program,
                                 mram_size_t hint)
{
    (void)elf_info, (void)path, (void)program, (void)hint;
    return unsupported("UPMEM DPU ELF files (use dpu_load)");
}

dpu_error_t dpu_get_common_program(struct dpu_set_t *dpu_set, struct dpu_program_t **program)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    struct dpu_set_t dpu;
    struct dpu_program_t *common = NULL;
    int first = 1;
    dpu_error_t status;
    if (dpu_set == NULL || program == NULL)
        return DPU_ERR_INTERNAL;
    status = _pimrl_resolve(dpu_set, &ref, &a);
    if (status != DPU_OK)
        return status;
    DPU_FOREACH (*dpu_set, dpu) {
        struct dpu_program_t *mine = dpu_get_program(dpu.dpu);
        if (!first && mine != common)
            return DPU_ERR_DIFFERENT_DPU_PROGRAMS;
        common = mine;
        first = 0;
    }
    if (common == NULL)
        return DPU_ERR_NO_PROGRAM_LOADED;
    *program = common;
    return DPU_OK;
}

/* ----------------------------------------------------------------------------- not modelled */

dpu_error_t dpu_checkpoint_save(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context)
{
    (void)set, (void)flags, (void)context;
    return unsupported("checkpoints");
}

dpu_error_t dpu_checkpoint_restore(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context)
{
    (void)set, (void)flags, (void)context;
    return unsupported("checkpoints");
}

uint32_t dpu_checkpoint_get_serialized_context_size(struct dpu_context_t *context)
{
    (void)context;
    return 0;
}

dpu_error_t dpu_checkpoint_serialize(struct dpu_context_t *context, uint8_t **out, uint32_t *size)
{
    (void)context, (void)out, (void)size;
    return unsupported("checkpoints");
}

dpu_error_t dpu_checkpoint_deserialize(const uint8_t *in, uint32_t size, struct dpu_context_t *context)
{
    (void)in, (void)size, (void)context;
    return unsupported("checkpoints");
}

dpu_error_t dpu_checkpoint_free(struct dpu_context_t *context)
{
    (void)context;
    return unsupported("checkpoints");
}

dpu_error_t dpu_fifo_prepare_xfer(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *fifo_link, void *buffer)
{
    (void)dpu_set, (void)fifo_link, (void)buffer;
    return unsupported("WRAM FIFOs");
}

dpu_error_t dpu_fifo_push_xfer(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *fifo_link, dpu_xfer_flags_t flags)
{
    (void)dpu_set, (void)fifo_link, (void)flags;
    return unsupported("WRAM FIFOs");
}

dpu_error_t dpu_link_input_fifo(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *link, char *fifo_name)
{
    (void)dpu_set, (void)link, (void)fifo_name;
    return unsupported("WRAM FIFOs");
}

dpu_error_t dpu_link_output_fifo(struct dpu_set_t dpu_set, struct dpu_fifo_link_t *link, char *fifo_name)
{
    (void)dpu_set, (void)link, (void)fifo_name;
    return unsupported("WRAM FIFOs");
}

dpu_error_t dpu_fifo_link_free(struct dpu_fifo_link_t *fifo_link)
{
    (void)fifo_link;
    return unsupported("WRAM FIFOs");
}

/* Without a link (none can be made here) there is no FIFO to read: empty answers. */
uint16_t get_fifo_size(struct dpu_fifo_link_t *l, struct dpu_set_t d) { (void)l, (void)d; return 0; }
uint8_t get_fifo_elem_index(struct dpu_fifo_link_t *l, struct dpu_set_t d, uint8_t i) { (void)l, (void)d; return i; }
uint8_t *get_fifo_elem(struct dpu_fifo_link_t *l, struct dpu_set_t d, uint8_t *data, uint8_t i) { (void)l, (void)d, (void)data, (void)i; return NULL; }
uint16_t get_fifo_max_size(struct dpu_rank_t *r, struct dpu_fifo_rank_t *f) { (void)r, (void)f; return 0; }
struct dpu_fifo_rank_t *get_rank_fifo(struct dpu_fifo_link_t *l, struct dpu_rank_t *r) { (void)l, (void)r; return NULL; }
void dpu_fifo_set_push_max_retries(struct dpu_fifo_link_t *l, struct dpu_set_t s, uint32_t n) { (void)l, (void)s, (void)n; }
void dpu_fifo_set_time_for_push_retries(struct dpu_fifo_link_t *l, struct dpu_set_t s, uint32_t t) { (void)l, (void)s, (void)t; }
uint8_t get_fifo_rd_ptr(struct dpu_fifo_rank_t *f, struct dpu_t *d) { (void)f, (void)d; return 0; }
uint8_t get_fifo_wr_ptr(struct dpu_fifo_rank_t *f, struct dpu_t *d) { (void)f, (void)d; return 0; }
uint64_t get_fifo_abs_rd_ptr(struct dpu_fifo_rank_t *f, struct dpu_t *d) { (void)f, (void)d; return 0; }
uint64_t get_fifo_abs_wr_ptr(struct dpu_fifo_rank_t *f, struct dpu_t *d) { (void)f, (void)d; return 0; }
void set_fifo_rd_ptr(struct dpu_fifo_rank_t *f, struct dpu_t *d, uint8_t v) { (void)f, (void)d, (void)v; }
void set_fifo_wr_ptr(struct dpu_fifo_rank_t *f, struct dpu_t *d, uint8_t v) { (void)f, (void)d, (void)v; }
void swap_fifo_rd_wr_ptr(struct dpu_fifo_rank_t *f) { (void)f; }
void incr_fifo_wr_ptr(struct dpu_fifo_rank_t *f) { (void)f; }
bool is_fifo_full(struct dpu_fifo_rank_t *f, struct dpu_t *d) { (void)f, (void)d; return false; }
bool is_fifo_empty(struct dpu_fifo_rank_t *f, struct dpu_t *d) { (void)f, (void)d; return true; }

dpu_error_t dpu_bank_interface_pmc_enable(struct dpu_set_t set, bank_interface_pmc_config_t configuration)
{
    (void)set, (void)configuration;
    return unsupported("bank-interface performance counters");
}

dpu_error_t dpu_bank_interface_pmc_disable(struct dpu_set_t set)
{
    (void)set;
    return unsupported("bank-interface performance counters");
}

dpu_error_t dpu_bank_interface_pmc_stop_counters(struct dpu_set_t set)
{
    (void)set;
    return unsupported("bank-interface performance counters");
}

dpu_error_t dpu_bank_interface_pmc_read_counters(struct dpu_set_t set, bank_interface_pmc_result_t *result)
{
    (void)set, (void)result;
    return unsupported("bank-interface performance counters");
}

dpu_error_t dpu_elf_open(const char *path, dpu_elf_file_t *file)
{
    (void)path, (void)file;
    return unsupported("UPMEM DPU ELF files");
}

dpu_error_t dpu_elf_map(uint8_t *memory, unsigned int size, dpu_elf_file_t *file, const char *name)
{
    (void)memory, (void)size, (void)file, (void)name;
    return unsupported("UPMEM DPU ELF files");
}

void dpu_elf_close(dpu_elf_file_t file) { (void)file; }

dpu_error_t dpu_elf_load_section(dpu_elf_file_t file, const char *name, unsigned int *size, uint8_t **buffer)
{
    (void)file, (void)name, (void)size, (void)buffer;
    return unsupported("UPMEM DPU ELF files");
}

dpu_error_t dpu_elf_load_symbols(dpu_elf_file_t file, const char *name, dpu_elf_symbols_t **symbols)
{
    (void)file, (void)name, (void)symbols;
    return unsupported("UPMEM DPU ELF files");
}

void dpu_elf_free_symbols(dpu_elf_symbols_t *symbols) { (void)symbols; }

dpu_error_t dpu_elf_get_sections(dpu_elf_file_t file, unsigned int *nr_sections, char ***sections)
{
    (void)file, (void)nr_sections, (void)sections;
    return unsupported("UPMEM DPU ELF files");
}

void dpu_elf_get_runtime_info(dpu_elf_file_t file, dpu_elf_runtime_info_t *info)
{
    (void)file;
    if (info != NULL)
        memset(info, 0, sizeof(*info));
}

void free_runtime_info(dpu_elf_runtime_info_t *info) { (void)info; }

dpu_error_t dpu_elf_create_core_dump(const char *exe_path, const char *core_file_path, uint8_t *wram, uint8_t *mram,
                                     uint8_t *iram, uint8_t *context, uint32_t wram_size, uint32_t mram_size,
                                     uint32_t iram_size, uint32_t context_size)
{
    (void)exe_path, (void)core_file_path, (void)wram, (void)mram, (void)iram, (void)context;
    (void)wram_size, (void)mram_size, (void)iram_size, (void)context_size;
    return unsupported("core dumps");
}
