/* app.c: the SwiftRL host program, written only against the UPMEM SDK's dpu.h.
 *
 * Reads a pimrl dataset file, splits it into even contiguous partitions (one per DPU, the
 * first n % D one record longer), pushes them to the DPUs' MRAM with prepare/push, sets each
 * DPU's parameters and its tasklets' random streams, launches the SwiftRL kernel, gathers the
 * DPUs' Q-tables and averages them (optionally in R synchronisation rounds, broadcasting the
 * average back between rounds), prints PrIM's four time categories and checks the result
 * against a plain C implementation of the reference learner (docs/design.md).
 *
 *   cc -O2 -Wall -Wextra -Werror -ffp-contract=off app.c $(dpu-pkg-config --cflags --libs dpu) -lm
 *
 * The DPU program is the SwiftRL kernel kernels/swiftrl.c, built by kernels/Makefile with
 * dpu-upmem-dpurte-clang for the run's variant (see DPU_BINARY below); the two share
 * kernels/swiftrl_common.h (symbols, record, params, counters, variant codes) and
 * kernels/swiftrl_arith.h (the lanes' xorshift32 streams and the Q-format arithmetic).
 * Against pimrl (bin/ first on PATH) the DPUs are simulated and the times are *modelled*
 * by the simulator's cost model (via pimrl_sim.h, only when PIMRL_SIMULATOR is defined);
 * against the real SDK the same sources run on real DPUs and the times are *measured*.
 */
#define _POSIX_C_SOURCE 200809L

#include <dpu.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PIMRL_SIMULATOR
#include <pimrl_sim.h>
#endif

#include "../kernels/swiftrl_common.h"
#include "../kernels/swiftrl_arith.h"

/* The DPU program: the SwiftRL kernel built from kernels/swiftrl.c by kernels/Makefile, for
 * the run's variant, the dataset's states and actions and -t tasklets:
 * SWIFTRL_KERNEL_DIR/swiftrl-<algo>-<dtype>-<sampling>-s<S>-a<A>-t<T> (kernels/Makefile's
 * naming; host/Makefile sets the folder). -DDPU_BINARY=path fixes one program instead, and
 * -b PATH picks one at run time; in the simulator -b builtin runs the simulator's built-in
 * numba kernel (pimrl:swiftrl?...) instead of a built file. */
#ifndef SWIFTRL_KERNEL_DIR
#define SWIFTRL_KERNEL_DIR "kernels/build"
#endif
#ifdef DPU_BINARY
#define DEFAULT_BINARY_HELP DPU_BINARY
#else
#define DEFAULT_BINARY_HELP SWIFTRL_KERNEL_DIR "/swiftrl-ALGO-DTYPE-SAMPLING-sS-aA-tT"
#endif

#define MAX_TASKLETS 24

/* ------------------------------------------------------------------------------ options */

struct options {
    const char *data;
    const char *binary;
    const char *profile;
    const char *output;
    uint32_t dpus, tasklets, stride, epochs, rounds, frac_bits;
    int algo, dtype, sampling, sarsa_draw;
    double alpha, gamma, epsilon, tolerance;
    uint64_t seed;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: app [options] DATASET\n"
            "  -n, --dpus N           DPUs (default 64)\n"
            "  -t, --tasklets T       tasklets per DPU, as the DPU program was built (16)\n"
            "  -a, --algo q|sarsa     (q)\n"
            "  -p, --dtype fp32|int32 (fp32)\n"
            "  -s, --sampling seq|str|ran (seq)\n"
            "  -k, --stride K         STR stride (4)\n"
            "  -e, --epochs E         passes over each partition (1)\n"
            "  -r, --rounds R         synchronisation rounds: average and broadcast between (1)\n"
            "      --alpha A --gamma G --epsilon E --seed S --frac-bits F\n"
            "      --next-action logged|epsilon-greedy   SARSA's next action (logged)\n"
            "  -b, --binary PATH      DPU program, built for this variant and -t\n"
            "                         (default " DEFAULT_BINARY_HELP ")\n"
#ifdef PIMRL_SIMULATOR
            "  -b builtin             the simulator's built-in numba kernel (pimrl:swiftrl?...)\n"
#endif

            "  -P, --profile STR      dpu_alloc profile (default none)\n"
            "  -o, --output FILE      write the averaged Q-table (float64, states x actions)\n"
            "      --tolerance X      largest accepted difference to the reference (1e-5)\n");
}

static int choice(const char *value, const char *const *names, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (strcmp(value, names[i]) == 0)
            return i;
    fprintf(stderr, "app: unknown %s '%s'\n", what, value);
    exit(2);
}

static uint64_t parse_uint(const char *s, const char *what, uint64_t lo, uint64_t hi)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || s[0] == '-' || v < lo || v > hi) {
        fprintf(stderr, "app: %s must be an integer in [%llu, %llu]; got '%s'\n", what,
                (unsigned long long)lo, (unsigned long long)hi, s);
        exit(2);
    }
    return v;
}

static double parse_double(const char *s, const char *what, double lo, double hi)
{
    char *end;
    double v = strtod(s, &end);
    if (*s == '\0' || *end != '\0' || !(v >= lo && v <= hi)) {
        fprintf(stderr, "app: %s must lie in [%g, %g]; got '%s'\n", what, lo, hi, s);
        exit(2);
    }
    return v;
}

static void parse_options(int argc, char **argv, struct options *o)
{
    /* Choice names by code, from pimrl's variant registry (swiftrl_variants.h). */
    static const char *const algos[] = {SWIFTRL_ALGO_NAMES};
    static const char *const dtypes[] = {SWIFTRL_DTYPE_NAMES};
    static const char *const samplings[] = {SWIFTRL_SAMPLING_NAMES};
    static const char *const next_actions[] = {SWIFTRL_NEXT_ACTION_NAMES};
    enum { O_ALPHA = 1000, O_GAMMA, O_EPSILON, O_SEED, O_FRAC, O_NEXT, O_TOL };
    static const struct option longopts[] = {
        {"dpus", required_argument, 0, 'n'},      {"tasklets", required_argument, 0, 't'},
        {"algo", required_argument, 0, 'a'},      {"dtype", required_argument, 0, 'p'},
        {"sampling", required_argument, 0, 's'},  {"stride", required_argument, 0, 'k'},
        {"epochs", required_argument, 0, 'e'},    {"rounds", required_argument, 0, 'r'},
        {"binary", required_argument, 0, 'b'},    {"profile", required_argument, 0, 'P'},
        {"output", required_argument, 0, 'o'},    {"alpha", required_argument, 0, O_ALPHA},
        {"gamma", required_argument, 0, O_GAMMA}, {"epsilon", required_argument, 0, O_EPSILON},
        {"seed", required_argument, 0, O_SEED},   {"frac-bits", required_argument, 0, O_FRAC},
        {"next-action", required_argument, 0, O_NEXT},
        {"tolerance", required_argument, 0, O_TOL},
        {"help", no_argument, 0, 'h'},            {0, 0, 0, 0},
    };
    *o = (struct options){.dpus = 64, .tasklets = 16, .stride = 4, .epochs = 1, .rounds = 1,
                          .frac_bits = 16, .alpha = 0.1, .gamma = 0.95, .epsilon = 0.1,
                          .tolerance = 1e-5};
    int c;
    while ((c = getopt_long(argc, argv, "n:t:a:p:s:k:e:r:b:P:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'n': o->dpus = (uint32_t)parse_uint(optarg, "--dpus", 1, 1u << 20); break;
        case 't': o->tasklets = (uint32_t)parse_uint(optarg, "--tasklets", 1, MAX_TASKLETS); break;
        case 'a': o->algo = choice(optarg, algos, SWIFTRL_N_ALGOS, "algorithm"); break;
        case 'p': o->dtype = choice(optarg, dtypes, SWIFTRL_N_DTYPES, "dtype"); break;
        case 's': o->sampling = choice(optarg, samplings, SWIFTRL_N_SAMPLINGS, "sampling"); break;
        case 'k': o->stride = (uint32_t)parse_uint(optarg, "--stride", 1, 1u << 30); break;
        case 'e': o->epochs = (uint32_t)parse_uint(optarg, "--epochs", 1, 1u << 20); break;
        case 'r': o->rounds = (uint32_t)parse_uint(optarg, "--rounds", 1, 1u << 20); break;
        case 'b': o->binary = optarg; break;
        case 'P': o->profile = optarg; break;
        case 'o': o->output = optarg; break;
        case O_ALPHA: o->alpha = parse_double(optarg, "--alpha", 1e-12, 1.0); break;
        case O_GAMMA: o->gamma = parse_double(optarg, "--gamma", 0.0, 0.999999999); break;
        case O_EPSILON: o->epsilon = parse_double(optarg, "--epsilon", 0.0, 1.0); break;
        case O_SEED: o->seed = parse_uint(optarg, "--seed", 0, UINT64_MAX); break;
        case O_FRAC: o->frac_bits = (uint32_t)parse_uint(optarg, "--frac-bits", 1, 30); break;
        case O_NEXT: o->sarsa_draw = choice(optarg, next_actions, SWIFTRL_N_NEXT_ACTIONS, "next action"); break;
        case O_TOL: o->tolerance = parse_double(optarg, "--tolerance", 0.0, 1e300); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        exit(2);
    }
    o->data = argv[optind];
    if (o->algo != SWIFTRL_ALGO_SARSA)
        o->sarsa_draw = 0;
    if (o->rounds > o->epochs) {
        fprintf(stderr, "app: %u rounds need at least as many epochs; got %u\n", o->rounds, o->epochs);
        exit(2);
    }
}

/* ------------------------------------------------------------------------------ dataset */

struct dataset {
    uint64_t n;
    uint32_t n_states, n_actions;
    char env_id[64];
    swiftrl_transition_t *records;    /* n + 1 records: one zero record of padding */
};

static uint32_t crc32_bytes(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static void die(const char *path, const char *what)
{
    fprintf(stderr, "app: %s: %s\n", path, what);
    exit(1);
}

/* A pimrl dataset file (docs/dataset-format.md): 256-byte header, then 16-byte records. */
static void read_dataset(const char *path, struct dataset *ds)
{
    uint8_t h[256];
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die(path, strerror(errno));
    if (fread(h, 1, sizeof(h), f) != sizeof(h))
        die(path, "shorter than a dataset header (256 bytes)");
    if (memcmp(h, "PIMRLDS\0", 8) != 0)
        die(path, "not a pimrl dataset (bad magic)");
    if (le32(h + 8) != 1)
        die(path, "unsupported dataset format version (this program reads version 1)");
    uint32_t header_size = le32(h + 12);
    if (header_size < 256 || header_size % 8)
        die(path, "bad header_size");
    if (le32(h + 16) != SWIFTRL_RECORD_BYTES)
        die(path, "record_size is not 16");
    uint32_t stored_crc = le32(h + 56);
    memset(h + 56, 0, 4);
    if (crc32_bytes(h, sizeof(h)) != stored_crc)
        die(path, "header checksum mismatch: the header is corrupt");
    ds->n = le64(h + 24);
    ds->n_states = le32(h + 32);
    ds->n_actions = le32(h + 36);
    if (ds->n_states == 0 || ds->n_states > INT32_MAX || ds->n_actions == 0 || ds->n_actions > 255)
        die(path, "n_states or n_actions out of range");
    uint32_t env_len = (uint32_t)h[192] | (uint32_t)h[193] << 8;
    if (env_len > 62)
        env_len = 62;
    memcpy(ds->env_id, h + 194, env_len);
    ds->env_id[env_len] = '\0';
    if (fseek(f, 0, SEEK_END) != 0)
        die(path, strerror(errno));
    long size = ftell(f);
    /* compare by division: header_size + n * 16 could wrap for a crafted n */
    if (size < (long)header_size || ((uint64_t)size - header_size) % SWIFTRL_RECORD_BYTES != 0 ||
        ((uint64_t)size - header_size) / SWIFTRL_RECORD_BYTES != ds->n)
        die(path, "file size does not match n_transitions in the header (truncated?)");
    ds->records = calloc(ds->n + 1, sizeof(swiftrl_transition_t));
    if (ds->records == NULL)
        die(path, "out of memory");
    if (fseek(f, header_size, SEEK_SET) != 0 ||
        fread(ds->records, sizeof(swiftrl_transition_t), ds->n, f) != ds->n)
        die(path, "cannot read the records");
    fclose(f);
}

static void validate(const struct dataset *ds, const struct options *o)
{
    for (uint64_t i = 0; i < ds->n; i++) {
        const swiftrl_transition_t *r = &ds->records[i];
        const char *bad = NULL;
        if (r->state < 0 || (uint32_t)r->state >= ds->n_states)
            bad = "state out of range";
        else if (r->next_state < 0 || (uint32_t)r->next_state >= ds->n_states)
            bad = "next_state out of range";
        else if (r->action >= ds->n_actions)
            bad = "action out of range";
        else if (r->terminated > 1 || r->truncated > 1)
            bad = "terminated/truncated not 0 or 1";
        else if (!isfinite(r->reward.f))
            bad = "reward not finite";
        else if (o->algo == SWIFTRL_ALGO_SARSA && !o->sarsa_draw && !r->terminated &&
                 r->next_action >= ds->n_actions)
            bad = "next_action unknown or out of range (SARSA with the logged next action "
                  "needs it; use --next-action epsilon-greedy)";
        if (bad) {
            fprintf(stderr, "app: %s: record %llu: %s\n", o->data, (unsigned long long)i, bad);
            exit(1);
        }
    }
}

/* ------------------------------------------------------------------------------ learner */

struct learner {
    int algo, dtype, sampling, sarsa_draw;
    uint32_t n_actions, stride, frac;
    uint64_t eps_thr;
    float alpha_f, gamma_f;
    int32_t alpha_x, gamma_x;
};

/* Round to nearest (ties to even) in Q format; 0 if out of the int32 range. */
static int to_fixed(double x, uint32_t frac, int32_t *out)
{
    double v = nearbyint(x * (double)(1u << frac));
    if (!(v >= (double)INT32_MIN && v <= (double)INT32_MAX))
        return 0;
    *out = (int32_t)v;
    return 1;
}

static float max_f32(const float *row, uint32_t n)
{
    float m = row[0];
    for (uint32_t a = 1; a < n; a++)
        if (row[a] > m)
            m = row[a];
    return m;
}

static int32_t max_i32(const int32_t *row, uint32_t n)
{
    int32_t m = row[0];
    for (uint32_t a = 1; a < n; a++)
        if (row[a] > m)
            m = row[a];
    return m;
}

/* The column of Q[s'] a non-terminal update bootstraps from: -1 for the greedy maximum. */
static int64_t bootstrap_column(const struct learner *L, uint8_t logged, uint32_t *rng)
{
    if (L->algo == SWIFTRL_ALGO_Q)
        return -1;
    if (!L->sarsa_draw)
        return logged;
    *rng = xorshift32(*rng);
    if ((uint64_t)*rng < L->eps_thr) {
        *rng = xorshift32(*rng);
        return (int64_t)below(*rng, L->n_actions);
    }
    return -1;
}

static void update(const struct learner *L, void *q, const swiftrl_transition_t *r,
                   uint32_t *rng, int64_t *sat)
{
    uint64_t A = L->n_actions;
    uint64_t cell = (uint64_t)r->state * A + r->action;
    uint64_t row2 = (uint64_t)r->next_state * A;
    if (L->dtype == SWIFTRL_FP32) {
        float *qf = q;
        float target = r->reward.f;
        if (!r->terminated) {
            int64_t col = bootstrap_column(L, r->next_action, rng);
            float m = col < 0 ? max_f32(qf + row2, L->n_actions) : qf[row2 + (uint64_t)col];
            float t1 = L->gamma_f * m;
            target = r->reward.f + t1;
        }
        float cur = qf[cell];
        float td = target - cur;
        float step = L->alpha_f * td;
        qf[cell] = cur + step;
    } else {
        int32_t *qx = q;
        int32_t target = r->reward.fx;
        if (!r->terminated) {
            int64_t col = bootstrap_column(L, r->next_action, rng);
            int32_t m = col < 0 ? max_i32(qx + row2, L->n_actions) : qx[row2 + (uint64_t)col];
            target = sat32((int64_t)r->reward.fx + fx_mul(L->gamma_x, m, L->frac, sat), sat);
        }
        int32_t cur = qx[cell];
        int32_t td = sat32((int64_t)target - cur, sat);
        qx[cell] = sat32((int64_t)cur + fx_mul(L->alpha_x, td, L->frac, sat), sat);
    }
}

/* One DPU's work in the order of docs/design.md: its n records split into T lanes, updates
 * round-robin over the tasklets, `epochs` times; rng (T states) continues across calls. */
static void reference_partition(const struct learner *L, const swiftrl_transition_t *rec,
                                uint64_t n, uint32_t T, uint32_t epochs, uint32_t *rng, void *q,
                                int64_t *sat)
{
    uint64_t start[MAX_TASKLETS], end[MAX_TASKLETS], cursor[MAX_TASKLETS], offset[MAX_TASKLETS];
    uint64_t base = n / T, extra = n % T, pos = 0, longest = base + (extra ? 1 : 0);
    for (uint32_t t = 0; t < T; t++) {
        start[t] = pos;
        pos += base + (t < extra ? 1 : 0);
        end[t] = pos;
    }
    for (uint32_t e = 0; e < epochs; e++) {
        for (uint32_t t = 0; t < T; t++) {
            cursor[t] = start[t];
            offset[t] = 0;
        }
        for (uint64_t i = 0; i < longest; i++) {
            for (uint32_t t = 0; t < T; t++) {
                if (i >= end[t] - start[t])
                    continue;
                uint64_t j;
                if (L->sampling == SWIFTRL_RAN) {
                    rng[t] = xorshift32(rng[t]);
                    j = start[t] + below(rng[t], end[t] - start[t]);
                } else if (L->sampling == SWIFTRL_SEQ) {
                    j = cursor[t]++;
                } else { /* STR: offset o walks start+o, start+o+k, ...; then o+1 */
                    j = cursor[t];
                    uint64_t next = j + L->stride;
                    while (next >= end[t]) {
                        offset[t]++;
                        next = start[t] + offset[t];
                        if (offset[t] >= L->stride)
                            break;
                    }
                    cursor[t] = next;
                }
                update(L, q, &rec[j], &rng[t], sat);
            }
        }
    }
}

/* ------------------------------------------------------------------------------ timing */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { T_CPU_DPU, T_KERNEL, T_INTER_DPU, T_DPU_CPU, T_N };
static const char *const category_label[T_N] = {"CPU-DPU", "DPU kernel", "Inter-DPU", "DPU-CPU"};

#ifdef PIMRL_SIMULATOR
static const char *const category_name[T_N] = {PIMRL_SIM_CPU_DPU, PIMRL_SIM_DPU_KERNEL,
                                               PIMRL_SIM_INTER_DPU, PIMRL_SIM_DPU_CPU};
/* Book the transfers that follow under a category of the simulator's ledger. */
#define SIM_PHASE(set, category) DPU_ASSERT(pimrl_sim_set_phase((set), category_name[category]))
#else
#define SIM_PHASE(set, category) ((void)0)
#endif

/* ------------------------------------------------------------------------------ main */

/* Mean over DPUs of their tables (raw float32 or Q format), in double. */
static void average(const struct learner *L, const void *raw, uint32_t D, uint64_t nq, double *out)
{
    double scale = 1.0 / (double)(1u << L->frac);
    for (uint64_t e = 0; e < nq; e++) {
        double sum = 0.0;
        for (uint32_t d = 0; d < D; d++) {
            if (L->dtype == SWIFTRL_FP32)
                sum += (double)((const float *)raw)[d * nq + e];
            else
                sum += (double)((const int32_t *)raw)[d * nq + e] * scale;
        }
        out[e] = sum / (double)D;
    }
}

/* The average as the DPUs store it; 0 if a value does not fit the Q format. */
static int to_raw(const struct learner *L, const double *q, uint64_t nq, void *raw)
{
    for (uint64_t e = 0; e < nq; e++) {
        if (L->dtype == SWIFTRL_FP32)
            ((float *)raw)[e] = (float)q[e];
        else if (!to_fixed(q[e], L->frac, &((int32_t *)raw)[e]))
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    struct options o;
    struct dataset ds;
    parse_options(argc, argv, &o);
    read_dataset(o.data, &ds);
    validate(&ds, &o);
    const uint32_t D = o.dpus, T = o.tasklets, S = ds.n_states, A = ds.n_actions;
    const uint64_t nq = (uint64_t)S * A;
    if (ds.n < D) {
        fprintf(stderr, "app: %llu transitions cannot feed %u DPUs\n", (unsigned long long)ds.n, D);
        return 1;
    }

    struct learner L = {.algo = o.algo, .dtype = o.dtype, .sampling = o.sampling,
                        .sarsa_draw = o.sarsa_draw, .n_actions = A, .stride = o.stride,
                        .frac = o.frac_bits, .alpha_f = (float)o.alpha, .gamma_f = (float)o.gamma};
    L.eps_thr = (uint64_t)(o.epsilon * 4294967296.0);
    if (L.eps_thr > 4294967296ull)
        L.eps_thr = 4294967296ull;
    if (!to_fixed(o.alpha, o.frac_bits, &L.alpha_x) || !to_fixed(o.gamma, o.frac_bits, &L.gamma_x)) {
        fprintf(stderr, "app: alpha or gamma does not fit the Q format\n");
        return 2;
    }
    if (o.dtype == SWIFTRL_INT32) { /* INT32 kernels read Q-format rewards */
        for (uint64_t i = 0; i < ds.n; i++) {
            int32_t fx;
            if (!to_fixed((double)ds.records[i].reward.f, o.frac_bits, &fx)) {
                fprintf(stderr, "app: record %llu: reward %g does not fit the Q format\n",
                        (unsigned long long)i, (double)ds.records[i].reward.f);
                return 1;
            }
            ds.records[i].reward.fx = fx;
        }
    }

    /* Partitions: even contiguous, the first n % D one record longer. */
    uint64_t *first = malloc((D + 1) * sizeof(uint64_t));
    swiftrl_params_t *params = calloc(D, sizeof(swiftrl_params_t));
    uint32_t *rng = malloc((size_t)D * T * sizeof(uint32_t));
    void *raw = malloc((size_t)(D * nq) * 4);
    void *bcast = malloc((size_t)nq * 4);
    double *q_dpu = malloc(nq * sizeof(double));
    if (!first || !params || !rng || !raw || !bcast || !q_dpu) {
        fprintf(stderr, "app: out of memory\n");
        return 1;
    }
    uint64_t base = ds.n / D, extra = ds.n % D, longest = base + (extra ? 1 : 0);
    first[0] = 0;
    for (uint32_t d = 0; d < D; d++)
        first[d + 1] = first[d] + base + (d < extra ? 1 : 0);
    for (uint32_t d = 0; d < D; d++) {
        swiftrl_params_t *p = &params[d];
        float a32 = L.alpha_f, g32 = L.gamma_f;
        int32_t a_bits, g_bits;
        memcpy(&a_bits, &a32, 4);
        memcpy(&g_bits, &g32, 4);
        p->algo = o.algo;
        p->dtype = o.dtype;
        p->sampling = o.sampling;
        p->stride = o.stride;
        p->sarsa_draw = o.sarsa_draw;
        p->eps_threshold = (int64_t)L.eps_thr;
        p->frac_bits = o.frac_bits;
        p->alpha_f32_bits = a_bits;
        p->gamma_f32_bits = g_bits;
        p->alpha_fx = L.alpha_x;
        p->gamma_fx = L.gamma_x;
        p->n_records = (int64_t)(first[d + 1] - first[d]);
        for (uint32_t t = 0; t < T; t++)
            rng[(size_t)d * T + t] = lane_seed(o.seed, (uint64_t)d * T + t);
    }

    /* The DPU program: the kernel built for this variant (kernels/Makefile's naming), -b's,
     * or in the simulator with -b builtin the built-in numba kernel. */
    static const char *const algo_name[] = {"q", "sarsa"}, *const dtype_name[] = {"fp32", "int32"},
                             *const sampling_name[] = {"seq", "str", "ran"};
    char path[4096];
    const char *binary = o.binary;
    (void)path; /* unused with DPU_BINARY on real hardware */
    if (binary == NULL) {
#ifdef DPU_BINARY
        binary = DPU_BINARY;
#else
        snprintf(path, sizeof(path), "%s/swiftrl-%s-%s-%s-s%u-a%u-t%u", SWIFTRL_KERNEL_DIR,
                 algo_name[o.algo], dtype_name[o.dtype], sampling_name[o.sampling], S, A, T);
        binary = path;
#endif
    } else if (strcmp(binary, "builtin") == 0) {
#ifdef PIMRL_SIMULATOR
        snprintf(path, sizeof(path), "pimrl:swiftrl?states=%u&actions=%u&tasklets=%u&algo=%s&dtype=%s&sampling=%s&visits=0",
                 S, A, T, algo_name[o.algo], dtype_name[o.dtype], sampling_name[o.sampling]);
        binary = path;
#else
        fprintf(stderr, "app: -b builtin names the simulator's built-in kernel; on a UPMEM machine give a DPU program\n");
        return 2;
#endif
    }

    struct dpu_set_t set, dpu;
    struct dpu_program_t *program;
    struct dpu_symbol_t sym;
    uint32_t nr_dpus, i;
    double measured[T_N] = {0}, t0, host_aggregation = 0.0;

    DPU_ASSERT(dpu_alloc(D, o.profile, &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    if (nr_dpus != D) {
        fprintf(stderr, "app: asked for %u DPUs, got %u\n", D, nr_dpus);
        return 1;
    }
    if (o.binary == NULL) { /* the default program: say how to build it if it is missing */
        FILE *f = fopen(binary, "rb");
        if (f == NULL) {
            fprintf(stderr, "app: no DPU program %s: build it with `make -C kernels ALGO=%s DTYPE=%s "
                    "SAMPLING=%s STATES=%u ACTIONS=%u TASKLETS=%u`%s, or give one with -b\n", binary,
                    algo_name[o.algo], dtype_name[o.dtype], sampling_name[o.sampling], S, A, T,
#ifdef PIMRL_SIMULATOR
                    " (-b builtin: the simulator's built-in kernel)"
#else
                    ""
#endif
                    );
            return 1;
        }
        fclose(f);
    }
    DPU_ASSERT(dpu_load(set, binary, &program));
    DPU_ASSERT(dpu_get_symbol(program, DPU_MRAM_HEAP_POINTER_NAME, &sym));
    if (longest * SWIFTRL_RECORD_BYTES > sym.size) {
        fprintf(stderr, "app: a partition of %llu transitions exceeds a DPU's free MRAM (%u B); use more DPUs\n",
                (unsigned long long)longest, sym.size);
        return 1;
    }
    DPU_ASSERT(dpu_get_symbol(program, SWIFTRL_SYM_Q, &sym));
    if (sym.size != nq * 4) {
        fprintf(stderr, "app: %s: its Q-table (%u B) is not the dataset's %u x %u entries: build the "
                "kernel with N_STATES=%u N_ACTIONS=%u\n", binary, sym.size, S, A, S, A);
        return 1;
    }
    DPU_ASSERT(dpu_get_symbol(program, SWIFTRL_SYM_RNG, &sym));
    if (sym.size != T * sizeof(uint32_t)) {
        fprintf(stderr, "app: %s: built for %u tasklets, not -t %u\n", binary,
                sym.size / (uint32_t)sizeof(uint32_t), T);
        return 1;
    }

    printf("SwiftRL host program: %llu transitions of %s (%u states x %u actions) on %u DPUs x %u tasklets\n",
           (unsigned long long)ds.n, ds.env_id[0] ? ds.env_id : "?", S, A, D, T);
    printf("  %s, %s, %s sampling, %u epoch(s) in %u round(s), alpha %g, gamma %g\n",
           o.algo ? "SARSA" : "Q-learning", o.dtype ? "int32" : "fp32",
           o.sampling == 0 ? "seq" : o.sampling == 1 ? "str" : "ran", o.epochs, o.rounds, o.alpha, o.gamma);
    printf("  DPU program: %s\n", binary);

    /* CPU-DPU: partitions (one length for every DPU; the padding record covers the last
     * DPU's overhang), then the lanes' random streams. */
    t0 = now();
    SIM_PHASE(set, T_CPU_DPU);
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &ds.records[first[i]])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0,
                             longest * SWIFTRL_RECORD_BYTES, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &rng[(size_t)i * T])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, SWIFTRL_SYM_RNG, 0, T * sizeof(uint32_t), DPU_XFER_DEFAULT));
    measured[T_CPU_DPU] += now() - t0;

    for (uint32_t r = 0; r < o.rounds; r++) {
        int last = r == o.rounds - 1;
        uint32_t epochs = o.epochs / o.rounds + (r < o.epochs % o.rounds ? 1 : 0);
        for (uint32_t d = 0; d < D; d++)
            params[d].epochs = epochs;
        int phase = r == 0 ? T_CPU_DPU : T_INTER_DPU;
        t0 = now();
        SIM_PHASE(set, phase);
        DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &params[i])); }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, SWIFTRL_SYM_PARAMS, 0,
                                 sizeof(swiftrl_params_t), DPU_XFER_DEFAULT));
        measured[phase] += now() - t0;

        t0 = now();
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        measured[T_KERNEL] += now() - t0;

        phase = last ? T_DPU_CPU : T_INTER_DPU;
        t0 = now();
        SIM_PHASE(set, phase);
        DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, (char *)raw + (size_t)i * nq * 4)); }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, SWIFTRL_SYM_Q, 0, nq * 4, DPU_XFER_DEFAULT));
        measured[phase] += now() - t0;

        t0 = now();
        average(&L, raw, D, nq, q_dpu);
        if (last) {
            host_aggregation += now() - t0;
        } else {
            if (!to_raw(&L, q_dpu, nq, bcast)) {
                fprintf(stderr, "app: an averaged Q value does not fit the Q format\n");
                return 1;
            }
            SIM_PHASE(set, T_INTER_DPU);
            DPU_ASSERT(dpu_broadcast_to(set, SWIFTRL_SYM_Q, 0, bcast, nq * 4, DPU_XFER_DEFAULT));
            measured[T_INTER_DPU] += now() - t0;
        }
    }

#ifdef PIMRL_SIMULATOR
    double modelled[T_N];
    for (int c = 0; c < T_N; c++)
        DPU_ASSERT(pimrl_sim_modelled_seconds(set, category_name[c], &modelled[c]));
#endif
    DPU_ASSERT(dpu_free(set));

    /* The reference learner, partition by partition, with the same rounds. */
    double *q_ref = malloc(nq * sizeof(double));
    void *ref_raw = calloc((size_t)(D * nq), 4);
    int64_t saturations = 0;
    if (!q_ref || !ref_raw) {
        fprintf(stderr, "app: out of memory\n");
        return 1;
    }
    for (uint32_t d = 0; d < D; d++)
        for (uint32_t t = 0; t < T; t++)
            rng[(size_t)d * T + t] = lane_seed(o.seed, (uint64_t)d * T + t);
    for (uint32_t r = 0; r < o.rounds; r++) {
        uint32_t epochs = o.epochs / o.rounds + (r < o.epochs % o.rounds ? 1 : 0);
        for (uint32_t d = 0; d < D; d++)
            reference_partition(&L, &ds.records[first[d]], first[d + 1] - first[d], T, epochs,
                                &rng[(size_t)d * T], (char *)ref_raw + (size_t)d * nq * 4, &saturations);
        average(&L, ref_raw, D, nq, q_ref);
        if (r + 1 < o.rounds) {
            to_raw(&L, q_ref, nq, bcast);
            for (uint32_t d = 0; d < D; d++)
                memcpy((char *)ref_raw + (size_t)d * nq * 4, bcast, nq * 4);
        }
    }
    double worst = 0.0;
    for (uint64_t e = 0; e < nq; e++) {
        double diff = fabs(q_dpu[e] - q_ref[e]);
        if (!(diff <= worst)) /* also catches NaN */
            worst = isnan(diff) ? INFINITY : diff;
    }

    printf("Time (PrIM categories)      seconds  source\n");
    for (int c = 0; c < T_N; c++) {
#ifdef PIMRL_SIMULATOR
        printf("  %-20s %12.6f  modelled (simulator cost model)\n", category_label[c], modelled[c]);
#else
        printf("  %-20s %12.6f  measured (host wall clock)\n", category_label[c], measured[c]);
#endif
    }
#ifdef PIMRL_SIMULATOR
    printf("  host wall clock of the same phases, simulation included (measured):");
    for (int c = 0; c < T_N; c++)
        printf(" %s %.4f s%s", category_label[c], measured[c], c + 1 < T_N ? "," : "\n");
#endif
    printf("  %-20s %12.6f  measured (host wall clock)\n", "host aggregation", host_aggregation);
    if (L.dtype == SWIFTRL_INT32)
        printf("  fixed-point saturations in the reference learner: %lld\n", (long long)saturations);

    if (o.output) {
        FILE *f = fopen(o.output, "wb");
        if (f == NULL || fwrite(q_dpu, sizeof(double), nq, f) != nq || fclose(f) != 0) {
            fprintf(stderr, "app: cannot write %s\n", o.output);
            return 1;
        }
    }
    int ok = worst <= o.tolerance;
    printf("Check against the reference learner: %s (largest difference %.3g over %llu Q entries, tolerance %.3g)\n",
           ok ? "OK" : "FAIL", worst, (unsigned long long)nq, o.tolerance);

    free(q_ref);
    free(ref_raw);
    free(first);
    free(params);
    free(rng);
    free(raw);
    free(bcast);
    free(q_dpu);
    free(ds.records);
    return ok ? 0 : 1;
}
