/* buddy_alloc.h and fsb_allocator.h (both brought in by alloc.h, as in the SDK): every
 * tasklet takes blocks, fills them with its id, gives way (DMA), and checks nobody else
 * wrote them; tasklet 0 checks the allocators' documented corner cases. */
#include <alloc.h>
#include <barrier.h>
#include <buddy_alloc.h>
#include <defs.h>
#include <errno.h>
#include <fsb_allocator.h>
#include <mram.h>
#include <stdint.h>
#include <string.h>

BARRIER_INIT(bar, NR_TASKLETS);

__host uint32_t errors;
__host uint32_t checks;
fsb_allocator_t blocks;
uint64_t scratch[NR_TASKLETS] __dma_aligned;

__host uint32_t failed_line;     /* the line of the last failed check */
#define CHECK(c) do { checks++; if (!(c)) { errors++; failed_line = __LINE__; } } while (0)

static void dma_pause(void)
{
    mram_read(DPU_MRAM_HEAP_POINTER, &scratch[me()], 8);
}

int main(void)
{
    if (me() == 0) {
        errors = checks = 0;
        mem_reset();
        buddy_init(4096);
        blocks = fsb_alloc(12, NR_TASKLETS);     /* 12 B -> 16 B blocks */
    }
    barrier_wait(&bar);
    uint8_t *b = buddy_alloc(100);               /* 128 B blocks */
    uint8_t *f = fsb_get(blocks);
    CHECK(b != NULL && ((uintptr_t)b & 7) == 0);
    CHECK(f != NULL && ((uintptr_t)f & 7) == 0);
    memset(b, (int)me(), 100);
    memset(f, (int)me(), 12);
    dma_pause();
    int mine = 1;
    for (int k = 0; k < 100; k++)
        mine &= b[k] == me();
    for (int k = 0; k < 12; k++)
        mine &= f[k] == me();
    CHECK(mine);
    barrier_wait(&bar);
    CHECK(fsb_get(blocks) == NULL || NR_TASKLETS == 0);   /* all NR_TASKLETS blocks taken */
    barrier_wait(&bar);
    fsb_free(blocks, f);
    buddy_free(b + 50);                          /* anywhere inside the block frees it */
    barrier_wait(&bar);
    if (me() == 0) {
        /* everything was freed and merged: the whole heap is one block again */
        uint8_t *all = buddy_alloc(4096);
        CHECK(all != NULL);
        errno = 0;
        CHECK(buddy_alloc(16) == NULL && errno == ENOMEM);
        buddy_free(all);
        errno = 0;
        CHECK(buddy_alloc(0) == NULL && errno == EINVAL);
        errno = 0;
        CHECK(buddy_alloc(8192) == NULL && errno == EINVAL);
        errno = 0;
        buddy_free(all + 8);                     /* not allocated any more */
        CHECK(errno == EINVAL);
        /* blocks are powers of two, at least 16 B: 33 B takes 64 B */
        uint8_t *p = buddy_alloc(33), *q = buddy_alloc(33);
        CHECK(p && q && (q - p == 64 || p - q == 64));
        for (int k = 0; k < 33; k++)
            p[k] = (uint8_t)k;
        uint8_t *r = buddy_realloc(p, 1000);     /* grows: contents kept */
        int kept = r != NULL;
        for (int k = 0; r && k < 33; k++)
            kept &= r[k] == k;
        CHECK(kept);
        CHECK(buddy_realloc(r, 10) == r);        /* shrinks in place */
        buddy_reset();
        CHECK(buddy_alloc(4096) != NULL);
        /* fsb: blocks in a row, 16 B apart; a freed block is handed out again */
        fsb_allocator_t a = fsb_alloc(1, 3);
        uint8_t *x = fsb_get(a), *y = fsb_get(a), *z = fsb_get(a);
        CHECK(x && y && z && y - x == 8 && z - y == 8 && fsb_get(a) == NULL);
        fsb_free(a, y);
        CHECK(fsb_get(a) == y);
    }
    return 0;
}
