/* assert_demo.c: DPU_ASSERT on a failing call prints file, line and the error, then exits
 * with EXIT_FAILURE, as with the SDK. */
#include <dpu.h>

int main(void)
{
    struct dpu_set_t set;
    DPU_ASSERT(dpu_alloc(1, "hardware=upmem-640", &set));
    DPU_ASSERT(dpu_load(set, "/no/such/dpu/program", NULL)); /* line 9 */
    printf("not reached\n");
    return 0;
}
