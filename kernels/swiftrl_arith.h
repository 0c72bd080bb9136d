/* swiftrl_arith.h: the arithmetic every pimrl C program shares (docs/design.md): the
 * xorshift32 step, the uniform integer below n, the saturating Q-format operations of the
 * INT32 kernels (each saturation counted), and, for the host programs (host/app.c,
 * benchmarks/cpu_loop.c), a lane's first xorshift32 state. Plain C99 and <stdint.h>, static
 * inline only: a program compiles what it calls. */
#ifndef SWIFTRL_ARITH_H
#define SWIFTRL_ARITH_H

#include <stdint.h>

static inline uint32_t xorshift32(uint32_t x)
{
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
}

/* Uniform integer in [0, n): (x * n) >> 32. */
static inline uint32_t below(uint32_t x, uint32_t n)
{
    return (uint32_t)(((uint64_t)x * n) >> 32);
}

static inline int32_t sat32(int64_t x, int64_t *sat)
{
    if (x > INT32_MAX) {
        ++*sat;
        return INT32_MAX;
    }
    if (x < INT32_MIN) {
        ++*sat;
        return INT32_MIN;
    }
    return (int32_t)x;
}

/* Q-format product: 64-bit product, round half up, arithmetic shift, saturate. */
static inline int32_t fx_mul(int32_t a, int32_t b, int frac, int64_t *sat)
{
    int64_t p = (int64_t)a * (int64_t)b;
    p = (p + ((int64_t)1 << (frac - 1))) >> frac;
    return sat32(p, sat);
}

/* sat32(a + b) and sat32(a - b) of two int32, for the host loops (benchmarks/cpu_loop.c): the
 * int64 result leaves the int32 range exactly when the 32-bit operation overflows, and then
 * has a's sign; one add and a jump on overflow instead of two compares (GCC and Clang
 * builtins; the DPU kernels keep sat32 of the int64 result). */
static inline int32_t clamp_overflow(int overflowed, int32_t r, int32_t a, int64_t *sat)
{
    if (__builtin_expect(overflowed, 0)) {
        ++*sat;
        return a >= 0 ? INT32_MAX : INT32_MIN;
    }
    return r;
}

static inline int32_t add_sat32(int32_t a, int32_t b, int64_t *sat)
{
    int32_t r;
    int overflowed = __builtin_add_overflow(a, b, &r);
    return clamp_overflow(overflowed, r, a, sat);
}

static inline int32_t sub_sat32(int32_t a, int32_t b, int64_t *sat)
{
    int32_t r;
    int overflowed = __builtin_sub_overflow(a, b, &r);
    return clamp_overflow(overflowed, r, a, sat);
}

static inline uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

/* pimrl.rng.lane_seed: the initial xorshift32 state of lane `lane` of a run seeded `seed`. */
static inline uint32_t lane_seed(uint64_t seed, uint64_t lane)
{
    uint32_t base = fmix32((uint32_t)seed ^ fmix32((uint32_t)(seed >> 32) ^ 0x9E3779B9u));
    uint32_t state = fmix32(base ^ (uint32_t)(lane * 0x9E3779B9u + 1u));
    return state ? state : 0x6D2B79F5u;
}

#endif /* SWIFTRL_ARITH_H */
