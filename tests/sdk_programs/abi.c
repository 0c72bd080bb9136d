/* A small DPU program for host_abi.c: a WRAM counter and word array, an MRAM area. */
#include <defs.h>
#include <stdint.h>
#include <stdio.h>

__host uint32_t value;
__host uint64_t words[16];
__mram_noinit uint64_t area[512];

int main()
{
    if (me() == 0) {
        value += 1;
        printf("value %u\n", value);
    }
    return 0;
}
