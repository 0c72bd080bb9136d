/* Host side of hello.c, as the SDK's documentation writes it; the output of each DPU goes
 * to a temporary file, which the program then checks.
 *   dpu-upmem-dpurte-clang -o helloworld hello.c
 *   cc -o hello_host hello_host.c `dpu-pkg-config --cflags --libs dpu` */
#include <dpu.h>
#include <stdio.h>
#include <string.h>

#ifndef DPU_BINARY
#define DPU_BINARY "./helloworld"
#endif

int main(void)
{
    struct dpu_set_t set, dpu;
    char line[256];
    int greetings = 0, headers = 0;
    FILE *log = tmpfile();

    DPU_ASSERT(dpu_alloc(4, NULL, &set));
    DPU_ASSERT(dpu_load(set, DPU_BINARY, NULL));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_FOREACH (set, dpu) {
        DPU_ASSERT(dpu_log_read(dpu, log));
    }
    DPU_ASSERT(dpu_free(set));

    rewind(log);
    while (fgets(line, sizeof(line), log)) {
        fputs(line, stdout);
        greetings += strcmp(line, "Hello World from DPU!\n") == 0;
        headers += strncmp(line, "=== DPU#0x", 10) == 0;
    }
    if (greetings != 4 || headers != 4) {
        printf("FAIL: %d greetings and %d headers from 4 DPUs\n", greetings, headers);
        return 1;
    }
    printf("OK\n");
    return 0;
}
