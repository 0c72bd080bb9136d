/* errors.c: a host program of a user's kind that walks through the UPMEM host API and each
 * of its error cases (../shared/reference/upmem.md, "Host API semantics"). Builds with
 * nothing but
 *
 *     cc errors.c $(dpu-pkg-config --cflags --libs dpu)
 *
 * and prints one line per check; the exit status is the number of failed checks (0: all
 * passed). DIAG is a small diagnostic DPU program with one symbol in each memory (WRAM
 * "counter", "fault", "words"; MRAM "buffer" and the heap; IRAM "iram_code"); SWIFTRL is the
 * SwiftRL kernel. On a real machine, point them at equivalent DPU binaries.
 */
#include <dpu.h>
#include <stdio.h>
#include <string.h>

#ifndef DIAG
#define DIAG "pimrl:diag"
#endif
#ifndef SWIFTRL
#define SWIFTRL "pimrl:swiftrl?states=16&actions=4&tasklets=4"
#endif
#ifndef PROFILE
#define PROFILE "hardware=upmem-640"
#endif

static int failures = 0;

#define EXPECT(call, expected)                                                                  \
    do {                                                                                        \
        dpu_error_t got_ = (call);                                                              \
        if (got_ != (expected)) {                                                               \
            char *text_ = dpu_error_to_string(got_); /* malloc'd: the caller frees it */        \
            failures++;                                                                         \
            printf("FAIL line %d: %s\n     gave %d (%s), expected %s\n", __LINE__, #call, got_,  \
                   text_, #expected);                                                           \
            free(text_);                                                                        \
        } else {                                                                                \
            printf("ok   %-36s %s\n", #expected, #call);                                        \
        }                                                                                       \
    } while (0)

#define CHECK(cond)                                                                             \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            failures++;                                                                         \
            printf("FAIL line %d: %s\n", __LINE__, #cond);                                      \
        } else {                                                                                \
            printf("ok   %s\n", #cond);                                                         \
        }                                                                                       \
    } while (0)

int main(void)
{
    struct dpu_set_t set, other, dpu, rank, first_dpu;
    struct dpu_program_t *program = NULL;
    struct dpu_symbol_t sym;
    uint32_t nr_dpus = 0, nr_ranks = 0, i, seen;
    uint64_t buffer[512], back[512], bufs[100][4];
    uint32_t word = 7, words[64];

    /* ---- allocation and profiles */
    EXPECT(dpu_alloc(0, PROFILE, &set), DPU_ERR_ALLOCATION);
    EXPECT(dpu_alloc(100000, PROFILE, &set), DPU_ERR_ALLOCATION);
    EXPECT(dpu_alloc(8, "no-equals-sign", &set), DPU_ERR_INVALID_PROFILE);
    EXPECT(dpu_alloc(8, "backend=hw", &set), DPU_ERR_INVALID_PROFILE);
    EXPECT(dpu_alloc(8, "hardware=no-such-machine", &set), DPU_ERR_INVALID_PROFILE);
    EXPECT(dpu_alloc_ranks(0, PROFILE, &set), DPU_ERR_ALLOCATION);

    EXPECT(dpu_alloc(100, PROFILE, &set), DPU_OK);
    EXPECT(dpu_get_nr_dpus(set, &nr_dpus), DPU_OK);
    EXPECT(dpu_get_nr_ranks(set, &nr_ranks), DPU_OK);
    CHECK(nr_dpus == 100 && nr_ranks == 2); /* whole ranks of 64, surplus disabled */
    seen = 0;
    DPU_FOREACH(set, dpu, i) { seen = i + 1; }
    CHECK(seen == 100);
    seen = 0;
    DPU_RANK_FOREACH(set, rank) {
        uint32_t n = 0;
        DPU_ASSERT(dpu_get_nr_dpus(rank, &n));
        seen += n;
    }
    CHECK(seen == 100);
    EXPECT(dpu_alloc_ranks(9, PROFILE, &other), DPU_ERR_ALLOCATION); /* 8 of 10 ranks left */
    EXPECT(dpu_alloc_ranks(1, PROFILE, &other), DPU_OK);
    EXPECT(dpu_get_nr_dpus(other, &nr_dpus), DPU_OK);
    CHECK(nr_dpus == 64);
    EXPECT(dpu_free(other), DPU_OK);
    EXPECT(dpu_free(other), DPU_ERR_INVALID_DPU_SET);               /* twice */
    EXPECT(dpu_get_nr_dpus(other, &nr_dpus), DPU_ERR_INVALID_DPU_SET); /* after free */
    DPU_RANK_FOREACH(set, rank) { EXPECT(dpu_free(rank), DPU_ERR_INVALID_DPU_SET); break; }

    /* ---- programs */
    EXPECT(dpu_copy_to(set, "counter", 0, &word, 4), DPU_ERR_NO_PROGRAM_LOADED);
    EXPECT(dpu_launch(set, DPU_SYNCHRONOUS), DPU_ERR_NO_PROGRAM_LOADED);
    EXPECT(dpu_load(set, "/no/such/dpu/binary", &program), DPU_ERR_ELF_NO_SUCH_FILE);
    EXPECT(dpu_load(set, "/etc/hostname", &program), DPU_ERR_ELF_INVALID_FILE);
    EXPECT(dpu_load(set, "pimrl:no-such-program", &program), DPU_ERR_ELF_NO_SUCH_FILE);
    EXPECT(dpu_load(set, "pimrl:swiftrl?states=abc&actions=4", &program), DPU_ERR_ELF_INVALID_FILE);
    EXPECT(dpu_load(set, "pimrl:swiftrl?states=100000&actions=200", &program), DPU_ERR_ELF_INVALID_FILE);
    EXPECT(dpu_load(set, DIAG, &program), DPU_OK);
    EXPECT(dpu_get_symbol(program, "counter", &sym), DPU_OK);
    CHECK(sym.address == 0 && sym.size == 8);
    EXPECT(dpu_get_symbol(program, DPU_MRAM_HEAP_POINTER_NAME, &sym), DPU_OK);
    CHECK(sym.address == 0x08000000 + 4096 && sym.size == (64u << 20) - 4096);
    EXPECT(dpu_get_symbol(program, "no_such_symbol", &sym), DPU_ERR_UNKNOWN_SYMBOL);

    /* ---- the transfer checks, in the SDK's order */
    EXPECT(dpu_copy_to(set, "no_such_symbol", 0, &word, 4), DPU_ERR_UNKNOWN_SYMBOL);
    EXPECT(dpu_copy_to(set, "fault", 4, &word, 4), DPU_ERR_INVALID_SYMBOL_ACCESS);
    EXPECT(dpu_copy_to(set, "buffer", 0, buffer, 4104), DPU_ERR_INVALID_SYMBOL_ACCESS);
    EXPECT(dpu_copy_to(set, "buffer", 4, buffer, 8), DPU_ERR_INVALID_MRAM_ACCESS);
    EXPECT(dpu_copy_to(set, "buffer", 0, buffer, 12), DPU_ERR_INVALID_MRAM_ACCESS);
    EXPECT(dpu_copy_to(set, "words", 2, words, 4), DPU_ERR_INVALID_WRAM_ACCESS);
    EXPECT(dpu_copy_to(set, "words", 0, words, 6), DPU_ERR_INVALID_WRAM_ACCESS);
    EXPECT(dpu_copy_to(set, "iram_code", 0, buffer, 12), DPU_ERR_INVALID_IRAM_ACCESS);
    EXPECT(dpu_broadcast_to(set, "buffer", 0, buffer, 12, DPU_XFER_DEFAULT), DPU_ERR_INVALID_MRAM_ACCESS);

    /* ---- copies: to every DPU, back from one */
    for (i = 0; i < 512; i++)
        buffer[i] = 0x0123456789abcdefull * (i + 1);
    EXPECT(dpu_copy_to(set, "buffer", 0, buffer, sizeof(buffer)), DPU_OK);
    EXPECT(dpu_copy_from(set, "buffer", 0, back, sizeof(back)), DPU_ERR_INVALID_DPU_SET);
    seen = 0;
    DPU_FOREACH(set, dpu, i) {
        memset(back, 0, sizeof(back));
        if (dpu_copy_from(dpu, "buffer", 0, back, sizeof(back)) == DPU_OK && memcmp(back, buffer, sizeof(back)) == 0)
            seen++;
        if (i == 0)
            first_dpu = dpu;
    }
    CHECK(seen == 100);
    EXPECT(dpu_broadcast_to(set, "buffer", 8, buffer, 16, DPU_XFER_DEFAULT), DPU_OK);
    EXPECT(dpu_copy_from(first_dpu, "buffer", 8, back, 16), DPU_OK);
    CHECK(back[0] == buffer[0] && back[1] == buffer[1]);

    /* ---- prepare / push */
    DPU_FOREACH(set, dpu, i) {
        bufs[i][0] = i;
        bufs[i][1] = 1000 + i;
        if (i % 2 == 0) /* odd DPUs get no buffer: they are skipped */
            DPU_ASSERT(dpu_prepare_xfer(dpu, bufs[i]));
        else { /* a buffer given and taken back (NULL), as the SDK allows */
            DPU_ASSERT(dpu_prepare_xfer(dpu, bufs[i]));
            DPU_ASSERT(dpu_prepare_xfer(dpu, NULL));
        }
    }
    EXPECT(dpu_prepare_xfer(first_dpu, bufs[1]), DPU_OK); /* the SDK replaces the buffer... */
    EXPECT(dpu_prepare_xfer(first_dpu, bufs[0]), DPU_OK); /* ...so this one counts */
    EXPECT(dpu_push_xfer(set, (dpu_xfer_t)7, "buffer", 0, 16, DPU_XFER_DEFAULT), DPU_ERR_INVALID_MEMORY_TRANSFER);
    /* the SDK checks the access before the direction, and ignores flag bits it does not know */
    EXPECT(dpu_push_xfer(set, (dpu_xfer_t)7, "no_such_symbol", 0, 16, DPU_XFER_DEFAULT), DPU_ERR_UNKNOWN_SYMBOL);
    EXPECT(dpu_push_xfer(set, (dpu_xfer_t)7, "buffer", 0, 12, DPU_XFER_DEFAULT), DPU_ERR_INVALID_MRAM_ACCESS);
    EXPECT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "buffer", 0, 16, (dpu_xfer_flags_t)(8 | DPU_XFER_NO_RESET)), DPU_OK);
    EXPECT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "buffer", 0, 12, DPU_XFER_DEFAULT), DPU_ERR_INVALID_MRAM_ACCESS);
    EXPECT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "buffer", 0, 16, DPU_XFER_NO_RESET), DPU_OK);
    EXPECT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "buffer", 0, 16, DPU_XFER_DEFAULT), DPU_OK); /* kept */
    EXPECT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "buffer", 0, 0, DPU_XFER_DEFAULT), DPU_OK);
    seen = 0;
    DPU_FOREACH(set, dpu, i) {
        uint64_t v[2];
        DPU_ASSERT(dpu_copy_from(dpu, "buffer", 0, v, sizeof(v)));
        if (i % 2 == 0 ? (v[0] == i && v[1] == 1000 + i) : (v[0] == buffer[0] && v[1] == buffer[0]))
            seen++;
    }
    CHECK(seen == 100);
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, bufs[i])); }
    memset(bufs, 0, sizeof(bufs));
    EXPECT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "buffer", 0, 16, DPU_XFER_DEFAULT), DPU_OK);
    CHECK(bufs[2][0] == 2 && bufs[2][1] == 1002 && bufs[3][0] == buffer[0]); /* written at push time */

    /* ---- launches */
    memset(words, 0, sizeof(words));
    EXPECT(dpu_copy_to(set, "words", 0, words, sizeof(words)), DPU_OK);
    EXPECT(dpu_launch(set, (dpu_launch_policy_t)5), DPU_ERR_INVALID_LAUNCH_POLICY);
    EXPECT(dpu_launch(set, DPU_SYNCHRONOUS), DPU_OK);
    EXPECT(dpu_launch(set, DPU_ASYNCHRONOUS), DPU_OK);
    EXPECT(dpu_launch(set, DPU_ASYNCHRONOUS), DPU_ERR_DPU_ALREADY_RUNNING);
    EXPECT(dpu_sync(set), DPU_OK);
    EXPECT(dpu_copy_from(first_dpu, "words", 0, words, sizeof(words)), DPU_OK);
    CHECK(words[0] == 2 && words[63] == 2);
    EXPECT(dpu_log_read(set, stdout), DPU_ERR_INVALID_DPU_SET);
    EXPECT(dpu_log_read(first_dpu, stdout), DPU_OK);
    word = 1;
    EXPECT(dpu_copy_to(first_dpu, "fault", 0, &word, 4), DPU_OK);
    EXPECT(dpu_launch(set, DPU_SYNCHRONOUS), DPU_ERR_DPU_FAULT);
    EXPECT(dpu_launch(set, DPU_ASYNCHRONOUS), DPU_OK);
    EXPECT(dpu_sync(set), DPU_ERR_DPU_FAULT);
    word = 0;
    EXPECT(dpu_copy_to(first_dpu, "fault", 0, &word, 4), DPU_OK);
    EXPECT(dpu_launch(set, DPU_SYNCHRONOUS), DPU_OK);

    /* ---- one DPU running another program */
    EXPECT(dpu_load(first_dpu, SWIFTRL, NULL), DPU_OK);
    EXPECT(dpu_copy_to(set, "counter", 0, &word, 4), DPU_ERR_DIFFERENT_DPU_PROGRAMS);
    EXPECT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "counter", 0, 8, DPU_XFER_DEFAULT), DPU_ERR_DIFFERENT_DPU_PROGRAMS);
    EXPECT(dpu_copy_from(first_dpu, "q_table", 0, words, 64), DPU_OK);
    EXPECT(dpu_load(set, DIAG, NULL), DPU_OK);
    EXPECT(dpu_copy_to(set, "counter", 0, buffer, 8), DPU_OK);

    /* ---- after dpu_free */
    EXPECT(dpu_free(set), DPU_OK);
    EXPECT(dpu_copy_to(set, "counter", 0, buffer, 8), DPU_ERR_INVALID_DPU_SET);
    EXPECT(dpu_launch(set, DPU_SYNCHRONOUS), DPU_ERR_INVALID_DPU_SET);
    EXPECT(dpu_alloc(DPU_ALLOCATE_ALL, PROFILE, &set), DPU_OK);
    EXPECT(dpu_get_nr_dpus(set, &nr_dpus), DPU_OK);
    CHECK(nr_dpus == 640);
    EXPECT(dpu_alloc(1, PROFILE, &other), DPU_ERR_ALLOCATION);
    EXPECT(dpu_free(set), DPU_OK);
    EXPECT(dpu_alloc(1, PROFILE, &other), DPU_OK);
    EXPECT(dpu_free(other), DPU_OK);

    printf("%s: %d failed check(s)\n", failures ? "FAIL" : "OK", failures);
    return failures;
}
