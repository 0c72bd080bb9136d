/* Shared by the host program and the DPU program. */
#ifndef CHECKSUM_H
#define CHECKSUM_H
#include <stdint.h>

#define BLOCK_BYTES 256 /* one mram_read per block; a multiple of 8 */

typedef struct {
    uint32_t n_words; /* 32-bit words at the start of this DPU's MRAM heap (even) */
    uint32_t seed;    /* mixed into each word's position */
} checksum_args_t;

/* The checksum of one word at index i: the host computes the same. */
static inline uint32_t checksum_word(uint32_t word, uint32_t i, uint32_t seed)
{
    return (word ^ (i * 2654435761u + seed)) * 2246822519u;
}
#endif
