/* The SDK 2025.1 host API beyond the first tutorials: the set's fields, the management
 * calls, malloc'd error strings, loading from memory and from an embedded file, callbacks,
 * scatter/gather transfers, parallel transfers and the low-level memory calls. Checks every
 * answer and prints OK.
 *   dpu-upmem-dpurte-clang -o abi abi.c
 *   cc -o host_abi host_abi.c `dpu-pkg-config --cflags --libs dpu` */
#include <dpu.h>
#include <dpu_log.h>
#include <dpu_management.h>
#include <dpu_memory.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 70 /* two ranks of 64 */
#define BLOCK 64

DPU_INCBIN(abi_program, "abi")

static int failures = 0;
#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("FAIL line %d: %s\n", __LINE__, #cond);                                     \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

struct sg_args {
    uint8_t *halves[2];
};

/* Each DPU's 2 * BLOCK bytes come from two blocks: a per-DPU one and a shared one. */
static bool get_block(struct sg_block_info *out, uint32_t dpu_index, uint32_t block_index, void *args)
{
    struct sg_args *sg = args;
    if (block_index >= 2)
        return false;
    out->addr = block_index == 0 ? sg->halves[0] + (size_t)dpu_index * BLOCK : sg->halves[1];
    out->length = BLOCK;
    return true;
}

static dpu_error_t count_rank(struct dpu_set_t rank, uint32_t index, void *args)
{
    uint32_t *seen = args, nr_dpus;
    dpu_error_t status = dpu_get_nr_dpus(rank, &nr_dpus);
    if (status == DPU_OK && rank.kind == DPU_SET_RANKS && rank.list.nr_ranks == 1)
        seen[index] = nr_dpus;
    return status;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    data = malloc(*size);
    if (data && fread(data, 1, *size, f) != *size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

int main(void)
{
    struct dpu_set_t set, dpu, rank;
    struct dpu_program_t *program = NULL;
    struct dpu_symbol_t area;
    uint32_t nr_ranks, nr_dpus, each, seen[2] = { 0, 0 }, value;
    size_t size;
    uint8_t *image = read_file("abi", &size);

    /* sets are the SDK's: a kind, then a list of ranks or one DPU */
    CHECK(sizeof(struct dpu_set_t) == 24);
    DPU_ASSERT(dpu_alloc(NR_DPUS, "sgXferEnable=true", &set));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    CHECK(set.kind == DPU_SET_RANKS && set.list.nr_ranks == nr_ranks && nr_ranks == 2 && nr_dpus == NR_DPUS);

    /* loading: from memory, from the embedded copy; the program lists its symbols */
    CHECK(image != NULL);
    DPU_ASSERT(dpu_load_from_memory(set, image, size, &program));
    CHECK(program != NULL && dpu_get_symbol(program, "area", &area) == DPU_OK && area.size == 4096);
    DPU_ASSERT(dpu_load_from_incbin(set, &abi_program, &program));
    CHECK(abi_program.size == size && memcmp(abi_program.buffer, image, size) == 0);

    /* management: ranks and DPUs as objects */
    DPU_RANK_FOREACH (set, rank, each) {
        struct dpu_rank_t *r = dpu_rank_from_set(rank);
        struct dpu_t *d;
        uint32_t in_rank = 0;
        CHECK(r != NULL && dpu_from_set(rank) == NULL);
        STRUCT_DPU_FOREACH (r, d) {
            CHECK(dpu_get_rank(d) == r && dpu_is_enabled(d));
            CHECK(dpu_get_id(d) == ((dpu_get_rank_id(r) << 16) | ((uint32_t)dpu_get_slice_id(d) << 8) | dpu_get_member_id(d)));
            in_rank++;
        }
        CHECK(in_rank == (each == 0 ? 64u : NR_DPUS - 64u));
    }
    DPU_FOREACH (set, dpu, each) {
        CHECK(dpu.kind == DPU_SET_DPU && dpu_from_set(dpu) == dpu.dpu && dpu_rank_from_set(dpu) == NULL);
        CHECK(dpu_get(dpu_get_rank(dpu.dpu), dpu_get_slice_id(dpu.dpu), dpu_get_member_id(dpu.dpu)) == dpu.dpu);
    }

    /* error strings belong to the caller */
    char *text = dpu_error_to_string(DPU_ERR_TOO_MANY_TASKLETS);
    CHECK(text != NULL && strlen(text) > 0);
    free(text);

    /* launch, and the log of one DPU through its struct dpu_t */
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH (set, dpu, each) {
        if (each == 3) {
            FILE *log = tmpfile();
            char line[64] = "";
            DPU_ASSERT(dpulog_read_for_dpu(dpu.dpu, log));
            rewind(log);
            CHECK(fgets(line, sizeof(line), log) != NULL && strcmp(line, "value 1\n") == 0);
            fclose(log);
        }
    }

    /* callbacks: once per rank, with its index */
    DPU_ASSERT(dpu_callback(set, count_rank, seen, DPU_CALLBACK_DEFAULT));
    CHECK(seen[0] == 64 && seen[1] == NR_DPUS - 64);
    CHECK(dpu_callback(set, count_rank, seen, DPU_CALLBACK_NONBLOCKING) == DPU_ERR_NONBLOCKING_SYNC_CALLBACK);

    /* scatter/gather: two blocks per DPU into MRAM, read back with an ordinary push */
    {
        static uint8_t own[NR_DPUS * BLOCK], shared[BLOCK], back[NR_DPUS][2 * BLOCK];
        struct sg_args args = { { own, shared } };
        get_block_t blocks = { .f = get_block, .args = &args, .args_size = sizeof(args) };
        for (size_t i = 0; i < sizeof(own); i++)
            own[i] = (uint8_t)(i * 7 + 1);
        memset(shared, 0xab, sizeof(shared));
        DPU_ASSERT(dpu_push_sg_xfer(set, DPU_XFER_TO_DPU, "area", 0, 2 * BLOCK, &blocks, DPU_SG_XFER_DEFAULT));
        DPU_FOREACH (set, dpu, each) {
            DPU_ASSERT(dpu_prepare_xfer(dpu, back[each]));
        }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "area", 0, 2 * BLOCK, DPU_XFER_DEFAULT));
        for (uint32_t d = 0; d < NR_DPUS; d++)
            CHECK(memcmp(back[d], own + d * BLOCK, BLOCK) == 0 && memcmp(back[d] + BLOCK, shared, BLOCK) == 0);
        CHECK(dpu_push_sg_xfer(set, DPU_XFER_TO_DPU, "area", 0, 3 * BLOCK, &blocks, DPU_SG_XFER_DEFAULT)
              == DPU_ERR_SG_LENGTH_MISMATCH);
        CHECK(dpu_push_sg_xfer(set, DPU_XFER_TO_DPU, "words", 0, 2 * BLOCK, &blocks, DPU_SG_XFER_DEFAULT)
              == DPU_ERR_SG_NOT_MRAM_SYMBOL);
    }

    /* parallel transfers: WRAM only */
    {
        uint64_t zeros[16] = { 0 };
        DPU_ASSERT(dpu_broadcast_to(set, "words", 0, zeros, sizeof(zeros), DPU_XFER_PARALLEL));
        CHECK(dpu_broadcast_to(set, "area", 0, zeros, sizeof(zeros), DPU_XFER_PARALLEL)
              == DPU_ERR_INVALID_PARALLEL_MEMORY_TRANSFER);
    }

    /* low-level memory calls: memory offsets, not symbol addresses */
    DPU_FOREACH (set, dpu, each) {
        if (each == 5) {
            uint8_t out[16], in[16];
            for (int i = 0; i < 16; i++)
                out[i] = (uint8_t)(0xf0 + i);
            DPU_ASSERT(dpu_copy_to_mram(dpu.dpu, area.address - 0x08000000u + 256, out, sizeof(out)));
            DPU_ASSERT(dpu_copy_from(dpu, "area", 256, in, sizeof(in)));
            CHECK(memcmp(in, out, sizeof(in)) == 0);
            struct dpu_symbol_t counter;
            DPU_ASSERT(dpu_get_symbol(program, "value", &counter));
            DPU_ASSERT(dpu_copy_from_wram_for_dpu(dpu.dpu, (dpuword_t *)&value, counter.address / 4, 1));
            CHECK(value == 1);
        }
    }

    /* scatter/gather must be asked for at allocation */
    {
        struct dpu_set_t plain;
        uint8_t shared[BLOCK] = { 0 };
        struct sg_args args = { { shared, shared } };
        get_block_t blocks = { .f = get_block, .args = &args, .args_size = sizeof(args) };
        DPU_ASSERT(dpu_alloc(1, NULL, &plain));
        DPU_ASSERT(dpu_load(plain, "abi", NULL));
        CHECK(dpu_push_sg_xfer(plain, DPU_XFER_TO_DPU, "area", 0, BLOCK, &blocks, DPU_SG_XFER_DEFAULT)
              == DPU_ERR_SG_NOT_ACTIVATED);
        DPU_ASSERT(dpu_free(plain));
    }

    DPU_ASSERT(dpu_free(set));
    CHECK(dpu_launch(set, DPU_SYNCHRONOUS) == DPU_ERR_INVALID_DPU_SET); /* freed */
    free(image);
    printf("%s\n", failures ? "FAIL" : "OK");
    return failures != 0;
}
