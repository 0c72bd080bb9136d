/* dpu_fast.c: transfers done in C, without the Python interpreter.
 *
 * A transfer takes this path only when every check the simulator would make is known to
 * pass: one program on every DPU involved, a known symbol, an access inside it and aligned
 * for its memory, no asynchronous launch running, MRAM pages already backed. Anything else
 * returns DPU_ERR_INTERNAL and goes to Python (pimrl.shim.runtime), which reports the SDK's
 * error in the SDK's order or does the transfer itself. The bytes land in the simulator's
 * own memories (published by Python in struct pimrl_mem); each transfer is queued as a
 * record that Python costs, in order, before its next call. */
#include <string.h>

#include "pimrl_sim.h"
#include "shim_internal.h"

#define NOT_HERE DPU_ERR_INTERNAL
#define MRAM_BASE 0x08000000u
#define IRAM_BASE 0x80000000u
#define PAGE_SHIFT 12
#define PAGE_BYTES (1u << PAGE_SHIFT)

enum space { WRAM, MRAM };

struct access {
    uint32_t program;    /* index in the allocation's programs */
    uint32_t symbol;     /* index in the program's symbols */
    enum space space;
    uint64_t start;      /* byte offset of the access in its memory */
};

/* Slots [first, end) of the set (disabled ones are skipped by the callers). */
static void slots_of(const struct pimrl_alloc *a, const struct pimrl_set_ref *ref, uint32_t *first, uint32_t *end)
{
    if (ref->kind == PIMRL_SET_DPU) {
        *first = ref->pimrl_dpu;
        *end = *first + 1;
    } else if (ref->pimrl_rank == PIMRL_ALL_RANKS) {
        *first = 0;
        *end = a->nr_slots;
    } else {
        *first = ref->pimrl_rank * a->dpus_per_rank;
        *end = *first + a->dpus_per_rank;
    }
}

/* Resolve symbol, bounds and alignment as the simulator would, for the program of `slot`;
 * 0 when the fast path cannot vouch for the access. */
static int resolve_access(const struct pimrl_alloc *a, uint32_t slot, const char *name,
                          const struct dpu_symbol_t *raw, uint32_t offset, size_t length, struct access *out)
{
    const struct pimrl_mem *m = &a->mem;
    int64_t pid = m->program_of[slot];
    const dpu_elf_symbols_t *symbols;
    uint32_t address = 0, size = 0;
    unsigned i;
    if (pid < 0 || (uint64_t)pid >= m->nr_programs || m->programs[pid] == NULL)
        return 0;
    symbols = m->programs[pid]->sdk.symbols;
    if (symbols == NULL)
        return 0;
    for (i = 0; i < symbols->nr_symbols; i++) {
        const dpu_elf_symbol_t *s = &symbols->map[i];
        if (name != NULL ? strcmp(s->name, name) == 0 : (s->value == raw->address && s->size == raw->size)) {
            address = s->value;
            size = s->size;
            break;
        }
    }
    if (i == symbols->nr_symbols || length == 0 || (uint64_t)offset + length > size)
        return 0;
    if (address >= IRAM_BASE)
        return 0;
    if (address >= MRAM_BASE) {
        if (offset % 8 || length % 8)
            return 0;
        out->space = MRAM;
        out->start = (uint64_t)(address - MRAM_BASE) + offset;
        if (out->start + length > m->mram_bytes)
            return 0;
    } else {
        if (offset % 4 || length % 4)
            return 0;
        out->space = WRAM;
        out->start = (uint64_t)address + offset;
        if (out->start + length > m->wram_bytes)
            return 0;
    }
    out->program = (uint32_t)pid;
    out->symbol = i;
    return 1;
}

static int rank_idle(const struct pimrl_alloc *a, uint32_t slot)
{
    return !a->mem.running[slot / a->dpus_per_rank];
}

static int mram_backed(const struct pimrl_alloc *a, uint32_t slot, uint64_t start, size_t length)
{
    const int32_t *row = a->mem.page_table + (uint64_t)slot * a->mem.pages_per_bank;
    for (uint64_t p = start >> PAGE_SHIFT; p <= (start + length - 1) >> PAGE_SHIFT; p++)
        if (row[p] <= 0)
            return 0;
    return 1;
}

static void move(const struct pimrl_alloc *a, uint32_t slot, const struct access *x, uint8_t *host, size_t length,
                 int to_dpu)
{
    if (x->space == WRAM) {
        uint8_t *dpu = a->mem.wram + (uint64_t)slot * a->mem.wram_bytes + x->start;
        if (to_dpu)
            memcpy(dpu, host, length);
        else
            memcpy(host, dpu, length);
        return;
    }
    const int32_t *row = a->mem.page_table + (uint64_t)slot * a->mem.pages_per_bank;
    size_t done = 0;
    while (done < length) {
        uint64_t at = x->start + done;
        uint32_t lo = (uint32_t)(at & (PAGE_BYTES - 1));
        size_t chunk = length - done < PAGE_BYTES - lo ? length - done : PAGE_BYTES - lo;
        uint8_t *dpu = a->mem.pool + (uint64_t)(row[at >> PAGE_SHIFT] - 1) * PAGE_BYTES + lo;
        if (to_dpu)
            memcpy(dpu, host + done, chunk);
        else
            memcpy(host + done, dpu, chunk);
        done += chunk;
    }
}

/* Every enabled slot of [first, end) runs the same program and is idle, and the access
 * fits that program's symbol; the slots that take part (all, or those with a prepared
 * buffer for a push) have their MRAM pages backed. Fills `x` and the counts. */
static int check_slots(const struct pimrl_alloc *a, uint32_t first, uint32_t end, int prepared_only,
                       const char *name, const struct dpu_symbol_t *raw, uint32_t offset, size_t length,
                       struct access *x, uint32_t *n_dpus, uint32_t *n_ranks)
{
    int found = 0;
    uint32_t last_rank = UINT32_MAX;
    *n_dpus = *n_ranks = 0;
    for (uint32_t s = first; s < end; s++) {
        if (!a->dpu_storage[s].enabled)
            continue;
        if (!found) {
            if (!resolve_access(a, s, name, raw, offset, length, x))
                return 0;
            found = 1;
        } else if ((uint64_t)a->mem.program_of[s] != x->program) {
            return 0;
        }
        if (!rank_idle(a, s))
            return 0;
        if (prepared_only && a->prepared[s] == NULL)
            continue;
        if (x->space == MRAM && !mram_backed(a, s, x->start, length))
            return 0;
        (*n_dpus)++;
        if (s / a->dpus_per_rank != last_rank) {
            last_rank = s / a->dpus_per_rank;
            (*n_ranks)++;
        }
    }
    return found;
}

static unsigned long long fast_transfers = 0;

unsigned long long pimrl_sim_fast_path_transfers(void) { return fast_transfers; }

static void record(const struct pimrl_alloc *a, int op, const struct access *x, size_t length, uint32_t n_dpus,
                   uint32_t n_ranks)
{
    struct pimrl_record r;
    memset(&r, 0, sizeof(r));
    r.handle = a->handle;
    r.op = (uint32_t)op;
    r.phase = a->mem.phase;
    r.program = x->program;
    r.symbol = x->symbol;
    r.n_dpus = n_dpus;
    r.n_ranks = n_ranks;
    r.bytes = length;
    _pimrl_record(&r);
    fast_transfers++;
}

static int plain_flags(int flags)
{
    return (flags & ~(DPU_XFER_NO_RESET | DPU_XFER_ASYNC)) == 0;
}

dpu_error_t _pimrl_fast_copy(struct pimrl_alloc *a, const struct pimrl_set_ref *ref, int op, const char *name,
                             const struct dpu_symbol_t *symbol, uint32_t offset, void *buffer, size_t length,
                             int flags)
{
    struct access x;
    uint32_t first, end, n_dpus, n_ranks;
    if (!a->mem.valid || buffer == NULL || (name == NULL && symbol == NULL) || !plain_flags(flags))
        return NOT_HERE;
    if (op == PIMRL_COPY_FROM && ref->kind != PIMRL_SET_DPU)
        return NOT_HERE;
    slots_of(a, ref, &first, &end);
    if (!check_slots(a, first, end, 0, name, symbol, offset, length, &x, &n_dpus, &n_ranks))
        return NOT_HERE;
    for (uint32_t s = first; s < end; s++)
        if (a->dpu_storage[s].enabled)
            move(a, s, &x, buffer, length, op != PIMRL_COPY_FROM);
    record(a, op, &x, length, n_dpus, n_ranks);
    return DPU_OK;
}

dpu_error_t _pimrl_fast_push(struct pimrl_alloc *a, const struct pimrl_set_ref *ref, int xfer, const char *name,
                             const struct dpu_symbol_t *symbol, uint32_t offset, size_t length, int flags)
{
    struct access x;
    uint32_t first, end, n_dpus, n_ranks;
    if (!a->mem.valid || (name == NULL && symbol == NULL) || !plain_flags(flags)
        || (xfer != DPU_XFER_TO_DPU && xfer != DPU_XFER_FROM_DPU))
        return NOT_HERE;
    slots_of(a, ref, &first, &end);
    if (!check_slots(a, first, end, 1, name, symbol, offset, length, &x, &n_dpus, &n_ranks))
        return NOT_HERE;
    for (uint32_t s = first; s < end; s++)
        if (a->dpu_storage[s].enabled && a->prepared[s] != NULL)
            move(a, s, &x, a->prepared[s], length, xfer == DPU_XFER_TO_DPU);
    record(a, xfer == DPU_XFER_TO_DPU ? PIMRL_PUSH_TO : PIMRL_PUSH_FROM, &x, length, n_dpus, n_ranks);
    return DPU_OK;
}
