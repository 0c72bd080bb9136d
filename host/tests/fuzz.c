/* fuzz.c: random sequences of host API calls with random arguments, reproducible from a seed.
 *
 *     fuzz-asan --seed N --iterations K [--verbose]
 *
 * Built with -fsanitize=address against the ASan build of libdpu.so (make -C host fuzz), it
 * checks that no call sequence crashes, corrupts memory or answers outside the dpu_error_t
 * enum, and that DPU_ERR_INTERNAL (an unexpected exception inside the simulator) appears
 * only where the arguments ask for it (a NULL output pointer, an unknown time category).
 * Host buffers are always large enough for the lengths the fuzzer passes *unless* the length
 * is one the symbol cannot hold, which the API must refuse before touching the buffer.
 *
 * Not fuzzed: launching the SwiftRL kernel (it trusts its WRAM parameters, as the real DPU
 * kernel does); launches run the diagnostic program pimrl:diag.
 */
#include <dpu.h>
#include <pimrl_sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEN (64u * 1024u)
#define PREP_SPAN 4096u
#define N_SETS 12
#define N_PROGRAMS 6

static uint64_t rng_state;
static uint8_t hostbuf[PREP_SPAN + MAX_LEN + 64];
static struct dpu_set_t sets[N_SETS];
static int set_used[N_SETS];
static struct dpu_program_t *progs[N_PROGRAMS];
static long failures = 0, calls = 0, ok_calls = 0;
static long seen_codes[DPU_ERR_SG_NOT_MRAM_SYMBOL + 1];
static int verbose = 0;
static FILE *devnull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }
#define PICK(array) (array[below(sizeof(array) / sizeof(array[0]))])

static const char *const profiles[] = {"hardware=upmem-640", "hardware=upmem-640", NULL, "",
                                       "backend=simulator,hardware=upmem-640", "bogus",
                                       "hardware=upmem-v1b", "frequency_hz=abc", "backend=hw"};
static const char *const paths[] = {"pimrl:diag", "pimrl:diag", "pimrl:diag?cycles=7",
                                    "pimrl:diag?cycles=-1", "pimrl:diag?x=1", "pimrl:nothing",
                                    "pimrl:swiftrl", "pimrl:swiftrl?states=0&actions=4",
                                    "pimrl:swiftrl?states=10&actions=900",
                                    "pimrl:swiftrl?states=4&actions=4&tasklets=99", "/no/such/file",
                                    "/etc/hostname", "/", "", NULL};
static const char *const names[] = {"counter", "fault", "words", "buffer", DPU_MRAM_HEAP_POINTER_NAME,
                                    "iram_code", "q_table", "params", "", "no_such_symbol", NULL};
static const char *const categories[] = {PIMRL_SIM_CPU_DPU, PIMRL_SIM_DPU_KERNEL, PIMRL_SIM_INTER_DPU,
                                         PIMRL_SIM_DPU_CPU, NULL, "bogus"};

static uint32_t random_count(void)
{
    static const uint32_t counts[] = {0, 1, 2, 3, 8, 63, 64, 65, 100, 128, 640, 641, DPU_ALLOCATE_ALL};
    return below(4) ? PICK(counts) : (uint32_t)rnd();
}

static uint32_t random_offset(void)
{
    static const uint32_t offs[] = {0, 0, 0, 2, 4, 6, 8, 12, 16, 252, 256, 4088, 4096, 0xFFFFFFF8u, 0xFFFFFFFFu};
    return below(5) ? PICK(offs) : (uint32_t)below(8192) * 4;
}

static size_t random_length(void)
{
    static const size_t lens[] = {0, 3, 4, 6, 8, 12, 16, 256, 260, 4096, 4104, MAX_LEN,
                                  (size_t)1 << 33, (size_t)1 << 40, (size_t)-1, (size_t)-8};
    return below(4) ? PICK(lens) : (size_t)below(MAX_LEN / 8 + 1) * 8;
}

/* A length the fuzzer may pass with hostbuf: either it fits, or it is one no symbol holds. */
static int length_safe(size_t len) { return len <= MAX_LEN || len > ((size_t)1 << 32); }

static struct dpu_set_t *random_set(void)
{
    static struct dpu_set_t garbage;
    if (below(12) == 0) { /* a forged set: a random kind over NULL, or parts of a real set */
        struct dpu_set_t *real = &sets[below(N_SETS)];
        memset(&garbage, 0, sizeof(garbage));
        garbage.kind = (dpu_set_kind_t)below(4);
        if (below(2) && set_used[real - sets]) {
            if (real->kind == DPU_SET_RANKS && garbage.kind == DPU_SET_RANKS) {
                garbage.list.ranks = real->list.ranks; /* some, one or none of its ranks */
                garbage.list.nr_ranks = (uint32_t)below(real->list.nr_ranks + 1);
            } else if (real->kind == DPU_SET_DPU && garbage.kind == DPU_SET_DPU) {
                garbage.dpu = real->dpu;
            }
        }
        return &garbage;
    }
    for (int tries = 0; tries < 8; tries++) {
        int k = (int)below(N_SETS);
        if (set_used[k])
            return &sets[k];
    }
    memset(&garbage, 0, sizeof(garbage));
    return &garbage;
}

static void store_set(struct dpu_set_t s)
{
    int k = (int)below(N_SETS);
    sets[k] = s;
    set_used[k] = 1;
}

static void record(const char *what, dpu_error_t err, int internal_ok)
{
    calls++;
    if (err == DPU_OK)
        ok_calls++;
    if ((int)err >= 0 && err <= DPU_ERR_SG_NOT_MRAM_SYMBOL)
        seen_codes[err]++;
    int bad = (int)err < 0 || err > DPU_ERR_SG_NOT_MRAM_SYMBOL || (err == DPU_ERR_INTERNAL && !internal_ok);
    if (bad || verbose) {
        char *text = dpu_error_to_string(err); /* the caller frees it */
        if (bad) {
            failures++;
            printf("FAIL call %ld %s -> %d (%s): %s\n", calls, what, (int)err, text, pimrl_sim_last_error());
        } else {
            printf("%6ld %-16s -> %s\n", calls, what, err ? text : "ok");
        }
        free(text);
    }
}

static void step(void)
{
    struct dpu_set_t *s = random_set();
    uint32_t n;
    dpu_error_t err;
    switch (below(22)) {
    case 0:
    case 1: {
        struct dpu_set_t out;
        err = below(4) ? dpu_alloc(random_count(), PICK(profiles), &out)
                       : dpu_alloc_ranks((uint32_t)below(12), PICK(profiles), &out);
        record("alloc", err, 0);
        if (err == DPU_OK)
            store_set(out);
        break;
    }
    case 2:
        record("free", dpu_free(*s), 0);
        break;
    case 3:
    case 4: {
        struct dpu_program_t *p = NULL;
        err = dpu_load(*s, PICK(paths), below(4) ? &p : NULL);
        record("load", err, 0);
        if (err == DPU_OK && p != NULL)
            progs[below(N_PROGRAMS)] = p;
        break;
    }
    case 5: {
        struct dpu_symbol_t sym;
        int null_out = below(10) == 0;
        record("get_symbol", dpu_get_symbol(progs[below(N_PROGRAMS)], PICK(names), null_out ? NULL : &sym),
               null_out);
        break;
    }
    case 6:
    case 7: {
        size_t len = random_length();
        if (!length_safe(len))
            break;
        int op = (int)below(3);
        const char *name = PICK(names);
        uint32_t off = random_offset();
        /* An exactly sized heap buffer: ASan sees any access past `len`. */
        uint8_t *buf = len <= MAX_LEN ? malloc(len ? len : 1) : hostbuf;
        if (buf == NULL)
            break;
        if (buf != hostbuf)
            memcpy(buf, hostbuf, len);
        if (op == 0)
            err = dpu_copy_to(*s, name, off, buf, len);
        else if (op == 1)
            err = dpu_copy_from(*s, name, off, buf, len);
        else
            err = dpu_broadcast_to(*s, name, off, buf, len, (dpu_xfer_flags_t)below(5));
        if (buf != hostbuf)
            free(buf);
        record(op == 0 ? "copy_to" : op == 1 ? "copy_from" : "broadcast_to", err, 0);
        break;
    }
    case 8: {
        struct dpu_symbol_t sym = {(uint32_t)(below(2) ? 0x08000000u + below(4) * 4096 : rnd()),
                                   (uint32_t)below(8192)};
        size_t len = random_length();
        if (!length_safe(len))
            break;
        err = below(2) ? dpu_copy_to_symbol(*s, sym, random_offset(), hostbuf, len)
                       : dpu_copy_from_symbol(*s, sym, random_offset(), hostbuf, len);
        record("copy_symbol", err, 0);
        break;
    }
    case 9:
    case 10: {
        struct dpu_set_t dpu;
        uint32_t i;
        DPU_FOREACH(*s, dpu, i) {
            if (below(3) == 0)
                record("prepare", dpu_prepare_xfer(dpu, hostbuf + below(PREP_SPAN / 8) * 8), 0);
            if (i > 300)
                break;
        }
        if (below(6) == 0)
            record("prepare_set", dpu_prepare_xfer(*s, below(8) ? (void *)hostbuf : NULL), 0);
        break;
    }
    case 11:
    case 12: {
        size_t len = random_length();
        if (!length_safe(len))
            break;
        dpu_xfer_t x = (dpu_xfer_t)(below(8) ? below(2) : below(5));
        dpu_xfer_flags_t f = (dpu_xfer_flags_t)(below(4) ? 0 : below(9));
        record("push_xfer", dpu_push_xfer(*s, x, PICK(names), random_offset(), len, f), 0);
        break;
    }
    case 13:
        record("launch", dpu_launch(*s, (dpu_launch_policy_t)(below(6) ? below(2) : below(4))), 0);
        break;
    case 14:
        record("sync", dpu_sync(*s), 0);
        break;
    case 15: {
        bool done, fault;
        record("status", dpu_status(*s, &done, &fault), 0);
        break;
    }
    case 16: {
        int null_out = below(10) == 0;
        err = below(2) ? dpu_get_nr_dpus(*s, null_out ? NULL : &n) : dpu_get_nr_ranks(*s, null_out ? NULL : &n);
        record("get_nr", err, null_out);
        break;
    }
    case 17: { /* keep a rank or a DPU of a set */
        struct dpu_set_t it;
        uint32_t i, want = (uint32_t)below(130);
        if (below(2)) {
            DPU_RANK_FOREACH(*s, it, i) {
                if (i == want % 3) {
                    store_set(it);
                    break;
                }
            }
        } else {
            DPU_FOREACH(*s, it, i) {
                if (i == want) {
                    store_set(it);
                    break;
                }
            }
        }
        break;
    }
    case 18:
        record("log_read", dpu_log_read(*s, devnull), 0);
        break;
    case 19: {
        const char *c = PICK(categories);
        double secs;
        int bad_category = c != NULL && strcmp(c, "bogus") == 0;
        record("sim_phase", pimrl_sim_set_phase(*s, c), bad_category);
        record("sim_modelled", pimrl_sim_modelled_seconds(*s, c, &secs), c == NULL || bad_category);
        break;
    }
    case 20:
        free(dpu_error_to_string((dpu_error_t)(int)below(60)));
        break;
    case 21: { /* a fault flag on a DPU, to reach DPU_ERR_DPU_FAULT */
        uint32_t flag = (uint32_t)below(2);
        record("copy_to fault", dpu_copy_to(*s, "fault", 0, &flag, 4), 0);
        break;
    }
    }
}

int main(int argc, char **argv)
{
    uint64_t seed = 1;
    long iterations = 2000;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--seed") == 0 && a + 1 < argc)
            seed = strtoull(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "--iterations") == 0 && a + 1 < argc)
            iterations = strtol(argv[++a], NULL, 10);
        else if (strcmp(argv[a], "--verbose") == 0)
            verbose = 1;
        else {
            fprintf(stderr, "usage: %s [--seed N] [--iterations K] [--verbose]\n", argv[0]);
            return 2;
        }
    }
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1;
    devnull = fopen("/dev/null", "w");
    for (size_t i = 0; i < sizeof(hostbuf); i++)
        hostbuf[i] = (uint8_t)(i * 31u + 7u);
    for (long it = 0; it < iterations; it++)
        step();
    for (int k = 0; k < N_SETS; k++) /* free what is still allocated */
        if (set_used[k])
            (void)dpu_free(sets[k]);
    fclose(devnull);
    printf("fuzz: codes returned:");
    for (int c = 0; c <= DPU_ERR_SG_NOT_MRAM_SYMBOL; c++)
        if (seen_codes[c])
            printf(" %d:%ld", c, seen_codes[c]);
    printf("\n");
    printf("fuzz: seed %llu, %ld iterations, %ld calls (%ld succeeded), %ld failure(s)\n",
           (unsigned long long)seed, iterations, calls, ok_calls, failures);
    return failures ? 1 : 0;
}
