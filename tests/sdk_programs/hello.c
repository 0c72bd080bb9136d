/* DPU side of the SDK's first program: every DPU says hello through its log. */
#include <stdio.h>

int main()
{
    printf("Hello World from DPU!\n");
    return 0;
}
