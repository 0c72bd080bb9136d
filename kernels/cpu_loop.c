/* cpu_loop.c: the CPU baseline written as plain C (pimrl.baselines.c_loop builds and runs it).
 *
 * The same data, the same partitions (one Q-table per partition, P contiguous parts of the
 * records, each one lane, as SwiftRL's threaded CPU version and `pimrl train --backend cpu`),
 * the same update order and arithmetic (docs/design.md: float32 without fused multiply-adds,
 * or saturating Q-format int32; xorshift32 streams seeded by lane number), so its tables
 * equal the numba baseline's bit for bit and the benchmark checks that they do.
 *
 * The variant is fixed when it is built, as in the numba loops, with the C kernel's -D flags
 * (Variant.c_defines) and DRAW (1: SARSA draws b' epsilon-greedily); the codes and the
 * arithmetic (xorshift32, below, saturating Q format, the lanes' seeds) come from the kernels'
 * headers:
 *   cc -O3 -march=native -ffp-contract=off -pthread -I kernels -DSWIFTRL_ALGO=0 \
 *      -DSWIFTRL_DTYPE=0 -DSWIFTRL_SAMPLING=0 -DDRAW=0 cpu_loop.c -o cpu_loop
 * Usage: cpu_loop RECORDS N S A P THREADS EPOCHS STRIDE EPS FRAC ALPHA GAMMA SEED OUT_Q [REPEATS]
 *   RECORDS: raw 16-byte records (reward already in Q format for IS_INT=1); ALPHA and GAMMA
 *   are float32 bit patterns (IS_INT=0) or Q-format integers (IS_INT=1); OUT_Q receives the
 *   P tables (raw) then P uint32 lane streams. The training runs REPEATS times (default 1),
 *   each from zeroed tables and freshly seeded streams, as the numba baseline repeats in one
 *   process. Prints the shortest training wall time (seconds, CLOCK_MONOTONIC around the
 *   threads' work only) and the saturation count.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "swiftrl_variants.h"
#ifndef SWIFTRL_ALGO
#define SWIFTRL_ALGO SWIFTRL_ALGO_Q
#endif
#ifndef SWIFTRL_DTYPE
#define SWIFTRL_DTYPE SWIFTRL_FP32
#endif
#ifndef SWIFTRL_SAMPLING
#define SWIFTRL_SAMPLING SWIFTRL_SEQ
#endif
#ifndef DRAW
#define DRAW 0 /* SARSA: 1 draws b' epsilon-greedily */
#endif
#include "swiftrl_arith.h"
#define IS_INT (SWIFTRL_DTYPE == SWIFTRL_INT32)

#if IS_INT
typedef int32_t q_t;
#else
typedef float q_t;
#endif

typedef struct {
    int32_t s, s2;
    union { float f; int32_t x; } r;
    uint8_t a, b, term, trunc;
} rec_t;

static const rec_t *R;
static q_t *Q;
static uint32_t *RNG;
static int64_t N, S, A, P, EPOCHS, STRIDE, FRAC, THREADS;
static uint64_t EPS;
static q_t ALPHA, GAMMA;
static int64_t *SAT;


static inline q_t row_max(const q_t *row)
{
    q_t m = row[0];
    for (int64_t k = 1; k < A; k++)
        if (row[k] > m) m = row[k];
    return m;
}

static inline void update(q_t *q, const rec_t *x, uint32_t *rng, int64_t *nsat)
{
    q_t target;
#if IS_INT
    q_t r = x->r.x;
#else
    q_t r = x->r.f;
#endif
    if (x->term) {
        target = r;
    } else {
        const q_t *row = q + (int64_t)x->s2 * A;
        q_t m;
#if SWIFTRL_ALGO == SWIFTRL_ALGO_Q
        m = row_max(row);
#elif DRAW
        *rng = xorshift32(*rng);
        if ((uint64_t)*rng < EPS) {
            *rng = xorshift32(*rng);
            m = row[below(*rng, (uint32_t)A)];
        } else {
            m = row_max(row);
        }
#else
        m = row[x->b];
#endif
#if IS_INT
        target = add_sat32(r, fx_mul(GAMMA, m, (int)FRAC, nsat), nsat);
#else
        target = r + GAMMA * m;
#endif
    }
    q_t *cell = q + (int64_t)x->s * A + x->a;
    q_t cur = *cell;
#if IS_INT
    int32_t td = sub_sat32(target, cur, nsat);
    *cell = add_sat32(cur, fx_mul(ALPHA, td, (int)FRAC, nsat), nsat);
#else
    *cell = cur + ALPHA * (target - cur);
#endif
}

static void *worker(void *arg)
{
    int64_t tid = (int64_t)(intptr_t)arg;
    for (int64_t p = tid; p < P; p += THREADS) {
        int64_t base = N / P, extra = N % P;
        int64_t start = p * base + (p < extra ? p : extra);
        int64_t end = start + base + (p < extra ? 1 : 0), n = end - start;
        q_t *q = Q + p * S * A;
        uint32_t rng = RNG[p];
        int64_t nsat = 0;
        for (int64_t e = 0; e < EPOCHS; e++) {
#if SWIFTRL_SAMPLING == SWIFTRL_SEQ
            for (int64_t j = start; j < end; j++) update(q, &R[j], &rng, &nsat);
#elif SWIFTRL_SAMPLING == SWIFTRL_STR
            for (int64_t o = 0; o < STRIDE && o < n; o++)
                for (int64_t j = start + o; j < end; j += STRIDE) update(q, &R[j], &rng, &nsat);
#else
            for (int64_t k = 0; k < n; k++) {
                rng = xorshift32(rng);
                update(q, &R[start + below(rng, (uint32_t)n)], &rng, &nsat);
            }
#endif
        }
        RNG[p] = rng;
        SAT[p] = nsat;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 15 && argc != 16) {
        fprintf(stderr, "usage: %s RECORDS N S A P THREADS EPOCHS STRIDE EPS FRAC ALPHA GAMMA SEED OUT_Q [REPEATS]\n", argv[0]);
        return 2;
    }
    N = atoll(argv[2]); S = atoll(argv[3]); A = atoll(argv[4]); P = atoll(argv[5]);
    THREADS = atoll(argv[6]); EPOCHS = atoll(argv[7]); STRIDE = atoll(argv[8]);
    EPS = strtoull(argv[9], NULL, 10); FRAC = atoll(argv[10]);
    int64_t alpha = atoll(argv[11]), gamma = atoll(argv[12]);
    uint64_t seed = strtoull(argv[13], NULL, 10);
    int64_t repeats = argc == 16 ? atoll(argv[15]) : 1;
    if (repeats < 1) return 2;
#if IS_INT
    ALPHA = (int32_t)alpha; GAMMA = (int32_t)gamma;
#else
    int32_t ab = (int32_t)alpha, gb = (int32_t)gamma;
    memcpy(&ALPHA, &ab, 4); memcpy(&GAMMA, &gb, 4);
#endif
    /* The records are mapped, not copied (a dataset of several GB stays one copy, in the
     * page cache), and populated before the clock starts. */
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    size_t bytes = (size_t)N * sizeof(rec_t);
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < bytes || N < 1) {
        fprintf(stderr, "%s: cannot read %lld records\n", argv[1], (long long)N);
        return 1;
    }
    void *rec = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (rec == MAP_FAILED) {
        fprintf(stderr, "%s: cannot map %lld records\n", argv[1], (long long)N);
        return 1;
    }
    close(fd);
    R = rec;
    Q = calloc((size_t)(P * S * A), sizeof(q_t));
    RNG = malloc((size_t)P * sizeof(uint32_t));
    SAT = calloc((size_t)P, sizeof(int64_t));
    pthread_t th[256];
    if (THREADS < 1 || THREADS > 256) return 2;
    double best = 0;
    for (int64_t rep = 0; rep < repeats; rep++) {
        memset(Q, 0, (size_t)(P * S * A) * sizeof(q_t));
        for (int64_t p = 0; p < P; p++) RNG[p] = lane_seed(seed, (uint64_t)p);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int64_t t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
        for (int64_t t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
        if (rep == 0 || dt < best) best = dt;
    }
    int64_t nsat = 0;
    for (int64_t p = 0; p < P; p++) nsat += SAT[p];
    FILE *o = fopen(argv[14], "wb");
    if (!o || fwrite(Q, sizeof(q_t), (size_t)(P * S * A), o) != (size_t)(P * S * A) ||
        fwrite(RNG, 4, (size_t)P, o) != (size_t)P || fclose(o)) {
        fprintf(stderr, "%s: cannot write\n", argv[14]);
        return 1;
    }
    printf("%.9f %lld\n", best, (long long)nsat);
    return 0;
}
