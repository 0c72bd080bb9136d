/* swiftrl_arith.h: the arithmetic every pimrl DPU kernel shares (docs/design.md): the
 * xorshift32 step, the uniform integer below n, and the saturating Q-format operations of the
 * INT32 kernels (each saturation counted). Plain C99 and <stdint.h>; include it after
 * swiftrl_variants.h (SWIFTRL_DTYPE chooses whether the Q-format part is compiled). */
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

#if SWIFTRL_DTYPE == SWIFTRL_INT32
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
#endif

#endif /* SWIFTRL_ARITH_H */
