/* pimrl DPU runtime: runs a UPMEM DPU program, compiled for the host, on simulated DPUs.
 *
 * One copy of a built program (a shared object) is one worker: it runs DPUs one after the
 * other on the thread that calls dpurt_run. For each DPU it
 *   - swaps the DPU's WRAM image (the program's .data + .bss, kept by the host in
 *     alloc.wram[slot]) into the copy's own globals, and its MRAM globals too: small ones
 *     whole, large ones on demand, 64 KiB at a time (section "MRAM variables" below);
 *   - runs NR_TASKLETS tasklets as coroutines on private stacks, each with its own modelled
 *     time, always resuming the tasklet with the earliest modelled time; a tasklet gives way
 *     at every runtime call and, inside call-free code, at the block counters once it has
 *     run a quantum of instructions (section "modelled time" below);
 *   - checks the SDK's rules at run time (mram_read/mram_write, mem_alloc), turning a
 *     violation into a fault of that DPU (tasklet and reason reported to the host);
 *   - counts its work: the basic-block counters the compiler driver inserted (and the
 *     DPU instructions each block costs), DMA transfers and bytes, runtime calls; the
 *     modelled clock is the DPU's cycle counter (perfcounter_get);
 *   - saves the images back;
 *   - stops when the host asks (Ctrl-C, the launch's time limit: the word launch->stop),
 *     checked at every quantum and every scheduling step, so that even a `while (1)` ends:
 *     the running tasklet faults its DPU, reporting where it was (its PC), and the DPUs not
 *     started yet are not run.
 * All state of the runtime itself lives in the section dpurt_state, outside the image.
 * docs/dpu-runtime.md describes the design.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#define DPURT_ABI 4
#define MAX_TASKLETS 24
#define MRAM_BASE 0x08000000u
#define PAGE_SHIFT 12
#define PAGE_BYTES (1 << PAGE_SHIFT)
#define DMA_MIN 8
#define DMA_MAX 2048
#define DPU_NR_ATOMIC_BITS 256
/* The MRAM globals of the running DPU are in the copy's own sections (direct access works):
 * copied in and out whole at boot and shutdown (EAGER), or paged in on first touch (PAGED). */
#define MRAM_SWAP_EAGER 1
#define MRAM_SWAP_PAGED 2
#define GRANULE_SHIFT 16                /* PAGED: 64 KiB of MRAM globals per fault */
#define GRANULE_BYTES (1 << GRANULE_SHIFT)
enum { G_ABSENT, G_CLEAN, G_DIRTY };    /* a granule: no access / read-only / read-write */

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))
#define STATE __attribute__((section("dpurt_state")))

/* ------------------------------------------------------------------ shared with Python */
struct dpurt_config {                   /* pimrl/dpurt/copies.py: Config */
    int64_t abi;
    uint8_t *image;                     /* .data .. end of .bss of this copy */
    int64_t image_size;
    uint64_t *bbc;                      /* basic-block counters (section dpurt_bbc) */
    int64_t n_bb;
    double *bb_cost;                    /* instructions charged per execution of each block */
    uint64_t *bb_accum;                 /* optional: counts summed over DPUs (profiling) */
    uint8_t *mram_sec;                  /* MRAM globals (sections dpu_mram, dpu_mram_noinit) */
    int64_t mram_sec_size;
    int64_t mram_swap;                  /* how the MRAM globals are swapped: MRAM_SWAP_* */
    int64_t nr_tasklets;
    int64_t wram_bytes;
    int64_t mram_bytes;
    int64_t stack_model_bytes;          /* WRAM a DPU stack takes (for the heap limit) */
    int64_t host_stack_bytes;           /* real stack of a tasklet coroutine */
    int64_t log_cap;
    double dma_alpha_read, dma_alpha_write, dma_beta, issue_interval, frequency_hz;
    double cost_mutex, cost_barrier, cost_handshake, cost_dma_call, cost_alloc, cost_printf;
    uint64_t *bb_weight;                /* section dpurt_bbw: fixed-point cost of each block */
    double quantum;                     /* instructions a tasklet runs before it may give way */
    double cost_perfcounter;
};

struct dpurt_result {                   /* pimrl/dpurt/copies.py: Result */
    int64_t slot;
    int64_t fault_tasklet;              /* -1: no fault */
    char fault_reason[512];
    double instructions;
    double runtime_instructions;
    int64_t dma_reads, dma_read_bytes, dma_writes, dma_write_bytes;
    int64_t sync_calls;
    int64_t heap_peak;
    char *log;
    int64_t log_len;
    int64_t log_truncated;
    int64_t n_new_pages;
    int64_t *new_page_ids;
    uint8_t *new_page_data;
    double cycles;                      /* modelled: when the last tasklet finished */
    double dma_busy_cycles;             /* modelled: the DMA engine's busy cycles */
    double tasklet_cycles[MAX_TASKLETS];/* modelled: when each tasklet finished */
    int64_t dma_unaligned;              /* transfers whose addresses were aligned down */
    int64_t stop_kind;                  /* the host's *launch->stop when it stopped this DPU */
    uint64_t fault_pc;                  /* host address the stopped tasklet was at (0: unknown) */
    int64_t ran;                        /* 0: not run (the launch was stopped before its turn) */
};

struct dpurt_launch {                   /* pimrl/dpurt/copies.py: Launch */
    int64_t n;
    int64_t *slots;
    uint8_t *wram;
    int64_t wram_stride;
    int32_t *page_table;
    int64_t pt_stride;
    uint8_t *pool;
    int64_t pool_rows;
    struct dpurt_result *results;
    volatile int64_t *stop;             /* nonzero (the host's reason): stop the launch now */
};

/* ------------------------------------------------------------------ runtime state */
enum { T_READY, T_BLOCKED, T_DONE };
enum { W_NONE, W_BARRIER, W_MUTEX, W_HS_WAIT, W_HS_NOTIFY, W_SEM };
static const char *WAIT_NAMES[] = {"running", "barrier_wait", "mutex_lock",
                                   "handshake_wait_for", "handshake_notify", "sem_take"};

struct tasklet {
    void *sp;
    int state;
    int wait_kind;
    void *wait_obj;
    int wait_arg;
    uint8_t *stack;            /* mapping, guard page first */
    size_t stack_size;
    double time;               /* modelled cycle of its next instruction */
    double ready_at;           /* modelled cycle it can issue again (DMA done, woken) */
    const void *pc;            /* where it last gave way in call-free code (0: not yet) */
};

struct page_entry {
    int64_t page;
    uint8_t *data;
};

struct rt {
    struct dpurt_config cfg;
    int ready;
    struct tasklet t[MAX_TASKLETS];
    void *sched_sp;
    int cur;
    int ntask;
    int faulted;
    int halted;
    /* the DPU being run */
    struct dpurt_result *res;
    int32_t *page_row;
    uint8_t *pool;
    int64_t pool_rows;
    uint8_t *heap;
    int64_t heap_top, heap_limit;
    struct page_entry *pages;  /* open addressing, capacity a power of two */
    int64_t pages_cap, pages_n;
    char *log;
    int64_t log_len, log_cap;
    double rt_instr;
    double perf_base;
    int perf_mode;
    /* modelled time (see "modelled time") */
    uint64_t disp_icount;        /* __dpurt_icount when the running tasklet's time was settled */
    double interval;             /* cycles between two instructions of the running tasklet */
    double instr_total;          /* instructions the DPU retired (all tasklets) */
    double dma_free;             /* cycle the DMA engine is free again */
    double dma_busy;
    uint64_t quantum_w;          /* quantum in __dpurt_icount units */
    volatile int in_tasklet;     /* a tasklet (not the scheduler) runs on this copy */
    int strict_dma;              /* PIMRL_DPURT_STRICT_DMA: unaligned DMA addresses fault */
    int64_t log_limit;           /* cfg.log_cap, or the program's STDOUT_BUFFER_INIT size */
    uint8_t atomic[DPU_NR_ATOMIC_BITS];   /* atomic bits: 0 free, else owner tasklet + 1 */
    double both_base_cycles, both_base_instr;   /* perfcounter_get_both's reset point */
    int sem_arrivals;            /* sem_take waits numbered in arrival order */
    struct sigaction previous[32];
    int handlers;
    /* MRAM_SWAP_PAGED: the MRAM globals' granules (G_*), those touched by the running DPU */
    int64_t mram_span;                  /* bytes mapped for the globals (whole pages) */
    int64_t n_granules;
    uint8_t *granule;
    int64_t *touched;
    int64_t n_touched;
    int paged;                          /* the span is protected (set up for paging) */
    volatile int64_t *stop;             /* the running launch's stop word */
};

static struct rt S STATE;
/* Made inaccessible at setup (see dpurt.ld): overrunning the image faults here. */
static uint8_t guard_page[4096] __attribute__((section("dpurt_guard"), aligned(4096), used));
uint32_t __dpurt_mram_heap_addr STATE = MRAM_BASE;
/* Instrumented blocks add their fixed-point cost (WEIGHT_ONE per DPU instruction) to
 * __dpurt_icount and call __dpurt_preempt once it reaches __dpurt_ilimit
 * (pimrl/dpurt/instrument.py). */
HIDDEN uint64_t __dpurt_icount STATE;
HIDDEN uint64_t __dpurt_ilimit STATE = UINT64_MAX;
#define WEIGHT_ONE 65536.0
uint32_t __dpurt_clocks_per_sec STATE = 350000000u;

extern int main(void);
HIDDEN void dpurt_switch(void **save_sp, void *new_sp);
HIDDEN void __dpurt_preempt_c(const void *pc);
static volatile int64_t no_stop STATE;         /* the stop word of a launch that has none */

/* ------------------------------------------------------------------ context switch */
#if defined(__x86_64__)
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl dpurt_switch\n"
    ".hidden dpurt_switch\n"
    ".type dpurt_switch,@function\n"
    "dpurt_switch:\n"
    "\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
    "\tmovq %rsp, (%rdi)\n"
    "\tmovq %rsi, %rsp\n"
    "\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
    "\tret\n"
    ".size dpurt_switch, .-dpurt_switch\n"
    /* __dpurt_preempt: called by instrumented code at any point of a tasklet (flags already
     * saved): keeps every caller-saved register, aligns the stack, calls the scheduler. */
    ".p2align 4\n"
    ".globl __dpurt_preempt\n"
    ".hidden __dpurt_preempt\n"
    ".type __dpurt_preempt,@function\n"
    "__dpurt_preempt:\n"
    "\tpushq %rbp\n\tmovq %rsp, %rbp\n"
    "\tpushq %rax\n\tpushq %rcx\n\tpushq %rdx\n\tpushq %rsi\n\tpushq %rdi\n"
    "\tpushq %r8\n\tpushq %r9\n\tpushq %r10\n\tpushq %r11\n"
    "\tandq $-16, %rsp\n\tsubq $256, %rsp\n"
    "\tmovdqu %xmm0, 0(%rsp)\n\tmovdqu %xmm1, 16(%rsp)\n\tmovdqu %xmm2, 32(%rsp)\n"
    "\tmovdqu %xmm3, 48(%rsp)\n\tmovdqu %xmm4, 64(%rsp)\n\tmovdqu %xmm5, 80(%rsp)\n"
    "\tmovdqu %xmm6, 96(%rsp)\n\tmovdqu %xmm7, 112(%rsp)\n\tmovdqu %xmm8, 128(%rsp)\n"
    "\tmovdqu %xmm9, 144(%rsp)\n\tmovdqu %xmm10, 160(%rsp)\n\tmovdqu %xmm11, 176(%rsp)\n"
    "\tmovdqu %xmm12, 192(%rsp)\n\tmovdqu %xmm13, 208(%rsp)\n\tmovdqu %xmm14, 224(%rsp)\n"
    "\tmovdqu %xmm15, 240(%rsp)\n"
    "\tmovq 8(%rbp), %rdi\n"                  /* the instrumented code's address */
    "\tcall __dpurt_preempt_c\n"
    "\tmovdqu 0(%rsp), %xmm0\n\tmovdqu 16(%rsp), %xmm1\n\tmovdqu 32(%rsp), %xmm2\n"
    "\tmovdqu 48(%rsp), %xmm3\n\tmovdqu 64(%rsp), %xmm4\n\tmovdqu 80(%rsp), %xmm5\n"
    "\tmovdqu 96(%rsp), %xmm6\n\tmovdqu 112(%rsp), %xmm7\n\tmovdqu 128(%rsp), %xmm8\n"
    "\tmovdqu 144(%rsp), %xmm9\n\tmovdqu 160(%rsp), %xmm10\n\tmovdqu 176(%rsp), %xmm11\n"
    "\tmovdqu 192(%rsp), %xmm12\n\tmovdqu 208(%rsp), %xmm13\n\tmovdqu 224(%rsp), %xmm14\n"
    "\tmovdqu 240(%rsp), %xmm15\n"
    "\tleaq -72(%rbp), %rsp\n"
    "\tpopq %r11\n\tpopq %r10\n\tpopq %r9\n\tpopq %r8\n\tpopq %rdi\n\tpopq %rsi\n"
    "\tpopq %rdx\n\tpopq %rcx\n\tpopq %rax\n"
    "\tpopq %rbp\n\tret\n"
    ".size __dpurt_preempt, .-__dpurt_preempt\n");
#else
#error "pimrl DPU runtime: only x86-64 hosts are supported (context switch)"
#endif

static void tasklet_entry(void);

static void *initial_sp(struct tasklet *t)
{
    uintptr_t top = ((uintptr_t)t->stack + t->stack_size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 64);
    for (int i = 0; i < 6; i++)
        sp[i] = 0;                                   /* r15 r14 r13 r12 rbx rbp */
    sp[6] = (uint64_t)(uintptr_t)&tasklet_entry;     /* ret target */
    sp[7] = 0;                                       /* fake return address */
    return sp;
}

/* ------------------------------------------------------------------ faults */
static void to_scheduler(void)
{
    dpurt_switch(&S.t[S.cur].sp, S.sched_sp);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fault(const char *fmt, ...)
{
    if (!S.faulted) {
        S.faulted = 1;
        S.res->fault_tasklet = S.cur;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(S.res->fault_reason, sizeof S.res->fault_reason, fmt, ap);
        va_end(ap);
    }
    S.t[S.cur].state = T_DONE;
    to_scheduler();
    abort();                                          /* never resumed */
}

EXPORT void __dpurt_fault(const char *file, int line, const char *what)
{
    fault("%s at %s:%d", what, file, line);
}

/* ------------------------------------------------------------------ modelled time
 * Every tasklet has its own modelled time: the cycle at which it issues its next
 * instruction. The DPU's pipeline revolves: a tasklet issues at most once every
 * issue_interval (11) cycles, and the DPU issues at most one instruction a cycle in all, so
 * while m tasklets compute, each issues once every max(11, m) cycles. Computing tasklets
 * are those that are neither finished, nor waiting for a DMA transfer, nor stopped in a
 * barrier, handshake or semaphore (a tasklet spinning on a taken mutex computes: the SDK's
 * mutex_lock retries its acquire).
 *
 * The scheduler always resumes the tasklet with the earliest modelled time (ties: lower
 * id). The running tasklet's time advances by interval x the DPU instructions it retires:
 * its basic blocks' costs (counted by the instrumented code in __dpurt_icount) and the
 * modelled cost of each runtime call (charge). It gives way at every runtime call that
 * another tasklet must see in time order, and inside call-free code once it has retired
 * `quantum` instructions (__dpurt_preempt), if another tasklet is then earlier. So
 * synchronisation happens in modelled-time order, and an interval timed by one tasklet
 * holds the other tasklets' work. The runtime's own host work is never DPU time.
 *
 * The DMA engine serves one transfer at a time: a transfer of n bytes issued at cycle t
 * starts at max(t, the engine's free cycle), takes alpha + beta * n cycles, and its tasklet
 * waits until it is done. */
static int computing_at(double t)
{
    int m = 0;
    for (int i = 0; i < S.ntask; i++) {
        struct tasklet *x = &S.t[i];
        if (x->state == T_READY ? x->ready_at <= t
                                : x->state == T_BLOCKED && x->wait_kind == W_MUTEX)
            m++;
    }
    return m;
}

/* The running tasklet's issue interval from now on. */
static void retime(void)
{
    int m = computing_at(S.t[S.cur].time);
    S.interval = m > S.cfg.issue_interval ? (double)m : S.cfg.issue_interval;
}

/* Bring the running tasklet's time up to the instructions its blocks retired so far. */
static void settle(void)
{
    uint64_t d = __dpurt_icount - S.disp_icount;
    S.disp_icount = __dpurt_icount;
    if (d) {
        double n = (double)d / WEIGHT_ONE;
        S.t[S.cur].time += n * S.interval;
        S.instr_total += n;
    }
}

/* Instructions of a runtime routine, retired by the running tasklet. */
static void charge(double n)
{
    settle();
    S.t[S.cur].time += n * S.interval;
    S.instr_total += n;
    S.rt_instr += n;
}

static int earlier(int a, int b)
{
    return S.t[a].time < S.t[b].time || (S.t[a].time == S.t[b].time && a < b);
}

/* Is another ready tasklet before the running one in modelled time? */
static int someone_earlier(void)
{
    for (int i = 0; i < S.ntask; i++)
        if (i != S.cur && S.t[i].state == T_READY && earlier(i, S.cur))
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ scheduling */

/* Let every tasklet that is earlier in modelled time run first; then go on (retimed). */
static void in_order(void)
{
    settle();
    if (someone_earlier())
        to_scheduler();
    else
        retime();
}

/* The host asked the launch to stop (*S.stop: its reason): the running tasklet, at `pc`,
 * faults its DPU. */
static void __attribute__((noreturn)) stopped(const void *pc)
{
    settle();
    if (!S.faulted) {
        S.faulted = 1;
        S.res->fault_tasklet = S.cur;
        S.res->stop_kind = *S.stop;
        S.res->fault_pc = (uint64_t)(uintptr_t)pc;
        snprintf(S.res->fault_reason, sizeof S.res->fault_reason, "stopped by the host");
    }
    S.t[S.cur].state = T_DONE;
    to_scheduler();
    abort();                                          /* never resumed */
}

/* Called by the instrumented code (through __dpurt_preempt) every `quantum` instructions,
 * `pc` its address. */
HIDDEN void __dpurt_preempt_c(const void *pc)
{
    S.t[S.cur].pc = pc;
    if (*S.stop)
        stopped(pc);
    in_order();
    __dpurt_ilimit = __dpurt_icount + S.quantum_w;
}

static void block(int kind, void *obj, int arg)
{
    struct tasklet *t = &S.t[S.cur];
    settle();
    t->state = T_BLOCKED;
    t->wait_kind = kind;
    t->wait_obj = obj;
    t->wait_arg = arg;
    to_scheduler();
}

/* Wake tasklet id at modelled time `now` (it cannot issue before). */
static void wake_at(int id, double now)
{
    struct tasklet *t = &S.t[id];
    t->state = T_READY;
    t->wait_kind = W_NONE;
    t->wait_obj = NULL;
    if (t->time < now)
        t->time = now;
    t->ready_at = t->time;
}

/* Wake tasklet id at the running tasklet's modelled time. */
static void wake(int id)
{
    wake_at(id, S.t[S.cur].time);
}

static void finish(void)
{
    settle();
    S.t[S.cur].state = T_DONE;
    to_scheduler();
    abort();                                          /* never resumed */
}

static void tasklet_entry(void)
{
    main();
    finish();
}

EXPORT uint32_t me(void)
{
    return (uint32_t)S.cur;
}

EXPORT void halt(void)
{
    settle();
    S.halted = 1;
    S.t[S.cur].state = T_DONE;
    to_scheduler();
    abort();
}

EXPORT int check_stack(void)
{
    return (int)S.cfg.stack_model_bytes;
}

/* ------------------------------------------------------------------ perfcounter */
/* The DPU's counter at the running tasklet's modelled time: cycles since boot, or the
 * instructions the DPU retired (every tasklet, to within a quantum). */
static double counter_now(void)
{
    return S.perf_mode == 2 ? S.instr_total : S.t[S.cur].time;
}

EXPORT uint64_t perfcounter_get(void)
{
    in_order();
    charge(S.cfg.cost_perfcounter);
    if (S.perf_mode == 3)
        return 0;
    double v = counter_now() - S.perf_base;
    return v > 0 ? (uint64_t)v : 0;
}

EXPORT uint64_t perfcounter_config(int config, _Bool reset_value)
{
    in_order();
    charge(S.cfg.cost_perfcounter);
    double v = counter_now() - S.perf_base;
    uint64_t previous = S.perf_mode == 3 ? 0 : v > 0 ? (uint64_t)v : 0;
    if (config != 0)
        S.perf_mode = config;
    if (reset_value)
        S.perf_base = counter_now();
    return previous;
}

/* v1B: both counters at once (cycles at the caller's modelled time, instructions the DPU
 * retired), relative to the last perfcounter_get_both(true) (or boot). */
struct perfcounter_pair {
    uint64_t cycles;
    uint64_t instr;
};

EXPORT struct perfcounter_pair perfcounter_get_both(_Bool should_reset)
{
    in_order();
    charge(S.cfg.cost_perfcounter);
    double c = S.t[S.cur].time, i = S.instr_total;
    double dc = c - S.both_base_cycles, di = i - S.both_base_instr;
    struct perfcounter_pair r = {dc > 0 ? (uint64_t)dc : 0, di > 0 ? (uint64_t)di : 0};
    if (should_reset) {
        S.both_base_cycles = c;
        S.both_base_instr = i;
    }
    return r;
}

/* ------------------------------------------------------------------ MRAM */
static uint8_t *new_page(int64_t page)
{
    if (S.pages_n * 2 >= S.pages_cap) {
        int64_t cap = S.pages_cap ? 2 * S.pages_cap : 64;
        struct page_entry *grown = calloc((size_t)cap, sizeof *grown);
        if (!grown)
            fault("out of host memory for MRAM pages");
        for (int64_t i = 0; i < S.pages_cap; i++) {
            if (!S.pages[i].data)
                continue;
            int64_t h = (S.pages[i].page * 0x9E3779B97F4A7C15ull) >> 7 & (cap - 1);
            while (grown[h].data)
                h = (h + 1) & (cap - 1);
            grown[h] = S.pages[i];
        }
        free(S.pages);
        S.pages = grown;
        S.pages_cap = cap;
    }
    int64_t h = (page * 0x9E3779B97F4A7C15ull) >> 7 & (S.pages_cap - 1);
    while (S.pages[h].data)
        h = (h + 1) & (S.pages_cap - 1);
    S.pages[h].page = page;
    S.pages[h].data = calloc(1, PAGE_BYTES);
    if (!S.pages[h].data)
        fault("out of host memory for MRAM pages");
    S.pages_n++;
    return S.pages[h].data;
}

static uint8_t *mram_page(int64_t page, int create)
{
    int32_t pid = S.page_row[page];
    if (pid > 0)
        return S.pool + (int64_t)(pid - 1) * PAGE_BYTES;
    if (S.pages_cap) {
        int64_t h = (page * 0x9E3779B97F4A7C15ull) >> 7 & (S.pages_cap - 1);
        while (S.pages[h].data) {
            if (S.pages[h].page == page)
                return S.pages[h].data;
            h = (h + 1) & (S.pages_cap - 1);
        }
    }
    return create ? new_page(page) : NULL;
}

/* ------------------------------------------------------------------ MRAM variables
 * The DPU code reads and writes its __mram variables directly, at their host addresses in
 * the copy's sections dpu_mram and dpu_mram_noinit; DMA and host transfers use the DPU's
 * MRAM pages. Both must see one set of bytes. Small variables (MRAM_SWAP_EAGER) are copied
 * from the DPU's MRAM into the sections at boot and back at shutdown. Large ones
 * (MRAM_SWAP_PAGED: up to the whole MRAM) would cost that copy for every DPU of every
 * launch, so their sections stay inaccessible between uses: the first access to a 64 KiB
 * granule faults, and the fault handler copies it in from the DPU's MRAM (read-only); the
 * first write to it faults again and makes it writable (dirty). At shutdown the dirty
 * granules are copied back and every touched granule is made inaccessible again. DMA
 * into or out of the variables goes through the same granules, so a tasklet's direct
 * write and another's mram_read agree within a launch. */
static int mram_paged(void)
{
    return S.paged && S.cfg.mram_swap == MRAM_SWAP_PAGED;
}

static int64_t granule_len(int64_t g)
{
    int64_t off = g << GRANULE_SHIFT;
    return S.mram_span - off < GRANULE_BYTES ? S.mram_span - off : GRANULE_BYTES;
}

/* Granule g of the running DPU's MRAM variables in (G_CLEAN), from its MRAM pages. */
static int granule_in(int64_t g)
{
    int64_t off = g << GRANULE_SHIFT, len = granule_len(g);
    uint8_t *dst = S.cfg.mram_sec + off;
    if (mprotect(dst, (size_t)len, PROT_READ | PROT_WRITE) != 0)
        return -1;
    for (int64_t p = 0; p < len; p += PAGE_BYTES) {
        uint8_t *page = mram_page((off + p) >> PAGE_SHIFT, 0);
        if (page)
            memcpy(dst + p, page, PAGE_BYTES);
        else
            memset(dst + p, 0, PAGE_BYTES);
    }
    if (mprotect(dst, (size_t)len, PROT_READ) != 0)
        return -1;
    S.granule[g] = G_CLEAN;
    S.touched[S.n_touched++] = g;
    return 0;
}

/* Make granule g of the MRAM variables resident, and writable if `write` (G_DIRTY). */
static int granule_open(int64_t g, int write)
{
    if (S.granule[g] == G_ABSENT && granule_in(g) != 0)
        return -1;
    if (write && S.granule[g] == G_CLEAN) {
        if (mprotect(S.cfg.mram_sec + (g << GRANULE_SHIFT), (size_t)granule_len(g),
                     PROT_READ | PROT_WRITE) != 0)
            return -1;
        S.granule[g] = G_DIRTY;
    }
    return 0;
}

/* Called by the fault handler: a paged MRAM variable's granule was touched. 1 if handled. */
static int granule_fault(uintptr_t a)
{
    uintptr_t sec = (uintptr_t)S.cfg.mram_sec;
    if (!mram_paged() || a < sec || a >= sec + (uintptr_t)S.mram_span)
        return 0;
    int64_t g = (int64_t)((a - sec) >> GRANULE_SHIFT);
    if (S.granule[g] == G_DIRTY)
        return 0;                       /* writable already: a real fault */
    /* absent: bring it in (a write faults once more); clean: this was a write */
    return granule_open(g, S.granule[g] == G_CLEAN) == 0;
}

/* Shutdown: dirty granules back to the DPU's MRAM; every touched one inaccessible again. */
static void granules_out(void)
{
    for (int64_t i = 0; i < S.n_touched; i++) {
        int64_t g = S.touched[i], off = g << GRANULE_SHIFT, len = granule_len(g);
        uint8_t *src = S.cfg.mram_sec + off;
        if (S.granule[g] == G_DIRTY) {
            for (int64_t p = 0; p < len; p += PAGE_BYTES) {
                int64_t page_id = (off + p) >> PAGE_SHIFT;
                uint8_t *page = mram_page(page_id, 0);
                if (!page) {
                    /* a page never written stays unallocated if it is still all zeros */
                    int zero = 1;
                    for (int64_t k = 0; k < PAGE_BYTES && zero; k += 8)
                        zero = *(const uint64_t *)(src + p + k) == 0;
                    if (zero)
                        continue;
                    page = new_page(page_id);
                }
                memcpy(page, src + p, PAGE_BYTES);
            }
        }
        mprotect(src, (size_t)len, PROT_NONE);
        S.granule[g] = G_ABSENT;
    }
    S.n_touched = 0;
}

/* The host address of MRAM variable bytes [off, off + n) (off + n <= the variables' size),
 * made resident (and writable if `write`) for the running DPU. */
static uint8_t *mram_var_bytes(int64_t off, int64_t n, int write)
{
    if (mram_paged())
        for (int64_t g = off >> GRANULE_SHIFT; g <= (off + n - 1) >> GRANULE_SHIFT; g++)
            if (granule_open(g, write) != 0)
                fault("cannot map MRAM variable bytes at MRAM address 0x%08llx (%s)",
                      (unsigned long long)(MRAM_BASE + (g << GRANULE_SHIFT)), strerror(errno));
    return S.cfg.mram_sec + off;
}

/* Copy between WRAM and MRAM bytes [off, off + n) of the running DPU. */
static void mram_copy(int64_t off, uint8_t *wram, int64_t n, int to_mram)
{
    int64_t done = 0;
    if (S.cfg.mram_swap && off < S.cfg.mram_sec_size) {
        int64_t k = S.cfg.mram_sec_size - off;
        if (k > n)
            k = n;
        uint8_t *var = mram_var_bytes(off, k, to_mram);
        if (to_mram)
            memcpy(var, wram, (size_t)k);
        else
            memcpy(wram, var, (size_t)k);
        done = k;
    }
    while (done < n) {
        int64_t a = off + done;
        int64_t lo = a & (PAGE_BYTES - 1);
        int64_t chunk = n - done < PAGE_BYTES - lo ? n - done : PAGE_BYTES - lo;
        uint8_t *page = mram_page(a >> PAGE_SHIFT, to_mram);
        if (to_mram)
            memcpy(page + lo, wram + done, (size_t)chunk);
        else if (page)
            memcpy(wram + done, page + lo, (size_t)chunk);
        else
            memset(wram + done, 0, (size_t)chunk);
        done += chunk;
    }
}

/* A DPU MRAM offset for a pointer: a 32-bit DPU address, or a host address at or after the
 * MRAM variables (`&var + k` reaches the MRAM that follows var, as on the DPU, e.g. a
 * read-ahead past the last __mram_noinit array). -1 if it is neither. */
static int64_t mram_offset(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t sec = (uintptr_t)S.cfg.mram_sec;
    if (S.cfg.mram_sec_size && a >= sec && a < sec + (uintptr_t)S.cfg.mram_bytes) {
        /* the window past the variables is host address space: never a WRAM buffer */
        if (a >= sec + (uintptr_t)S.cfg.mram_sec_size && S.heap && a >= (uintptr_t)S.heap
            && a < (uintptr_t)S.heap + (uintptr_t)S.cfg.wram_bytes)
            return -1;
        for (int i = 0; i < MAX_TASKLETS && a >= sec + (uintptr_t)S.cfg.mram_sec_size; i++)
            if (S.t[i].stack && a >= (uintptr_t)S.t[i].stack - 4096
                && a < (uintptr_t)S.t[i].stack + S.t[i].stack_size)
                return -1;
        return (int64_t)(a - sec);
    }
    if (a >= MRAM_BASE && a < MRAM_BASE + (uintptr_t)S.cfg.mram_bytes)
        return (int64_t)(a - MRAM_BASE);
    return -1;
}

/* How a fault message names an address: as the DPU would (an MRAM or WRAM address, or a
 * small integer), never as a host pointer. */
static void describe_addr(const void *p, char *out, size_t cap)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t img = (uintptr_t)S.cfg.image;
    int64_t off = mram_offset(p);
    if (off >= 0)
        snprintf(out, cap, "MRAM address 0x%08llx", (unsigned long long)(off + MRAM_BASE));
    else if (a >= img && a < img + (uintptr_t)S.cfg.image_size)
        snprintf(out, cap, "WRAM address 0x%05llx (a WRAM variable)", (unsigned long long)(a - img));
    else if (S.heap && a >= (uintptr_t)S.heap && a < (uintptr_t)S.heap + (uintptr_t)S.cfg.wram_bytes)
        snprintf(out, cap, "a WRAM heap address (offset %llu in the heap)",
                 (unsigned long long)(a - (uintptr_t)S.heap));
    else if (S.cur >= 0 && S.cur < MAX_TASKLETS && S.t[S.cur].stack
             && a >= (uintptr_t)S.t[S.cur].stack && a < (uintptr_t)S.t[S.cur].stack + S.t[S.cur].stack_size)
        snprintf(out, cap, "a WRAM address on the stack of tasklet %d", S.cur);
    else if (a < ((uintptr_t)1 << 32))
        snprintf(out, cap, "address 0x%llx", (unsigned long long)a);
    else
        snprintf(out, cap, "an address outside the DPU's WRAM and MRAM");
}

static void dma(const char *fn, const void *mram, void *wram, unsigned int n, int to_mram)
{
    in_order();
    int64_t off = mram_offset(mram);
    char where[96];
    if (n < DMA_MIN || n > DMA_MAX || n % 8) {
        describe_addr(mram, where, sizeof where);
        fault("%s of %u bytes: the size must be a multiple of 8 in [8, 2048] (%s)", fn, n, where);
    }
    if (off < 0) {
        describe_addr(mram, where, sizeof where);
        fault("%s: %s is not an MRAM address (MRAM spans 0x%08x..0x%08llx)", fn, where,
              MRAM_BASE, (unsigned long long)(MRAM_BASE + S.cfg.mram_bytes));
    }
    if (off % 8 || (uintptr_t)wram % 8) {
        /* The DMA engine ignores the low three bits of both addresses. */
        if (S.strict_dma) {
            if (off % 8)
                fault("%s of %u bytes: MRAM address 0x%08llx is not 8-byte aligned "
                      "(strict DMA: PIMRL_DPURT_STRICT_DMA)", fn, n,
                      (unsigned long long)(off + MRAM_BASE));
            describe_addr(wram, where, sizeof where);
            fault("%s of %u bytes: WRAM buffer (%s) is not 8-byte aligned (use __dma_aligned; "
                  "strict DMA: PIMRL_DPURT_STRICT_DMA)", fn, n, where);
        }
        off &= ~(int64_t)7;
        wram = (void *)((uintptr_t)wram & ~(uintptr_t)7);
        S.res->dma_unaligned++;
    }
    if (off + n > S.cfg.mram_bytes)
        fault("%s of %u bytes at MRAM address 0x%08llx runs past the end of MRAM", fn, n,
              (unsigned long long)(off + MRAM_BASE));
    mram_copy(off, (uint8_t *)wram, n, to_mram);
    if (to_mram) {
        S.res->dma_writes++;
        S.res->dma_write_bytes += n;
    } else {
        S.res->dma_reads++;
        S.res->dma_read_bytes += n;
    }
    /* the engine serves one transfer at a time; the tasklet waits for its own */
    charge(S.cfg.cost_dma_call);
    struct tasklet *t = &S.t[S.cur];
    double start = t->time > S.dma_free ? t->time : S.dma_free;
    double busy = (to_mram ? S.cfg.dma_alpha_write : S.cfg.dma_alpha_read) + S.cfg.dma_beta * n;
    S.dma_free = start + busy;
    S.dma_busy += busy;
    t->time = t->ready_at = S.dma_free;
    to_scheduler();                /* the transfer is in flight: other tasklets run */
}

EXPORT void mram_read(const void *from, void *to, unsigned int nb_of_bytes)
{
    dma("mram_read", from, to, nb_of_bytes, 0);
}

EXPORT void mram_write(const void *from, void *to, unsigned int nb_of_bytes)
{
    dma("mram_write", to, (void *)from, nb_of_bytes, 1);
}

/* ------------------------------------------------------------------ WRAM heap */
EXPORT void *mem_alloc(size_t size)
{
    in_order();                    /* one heap for all tasklets: allocate in time order */
    charge(S.cfg.cost_alloc);
    int64_t start = (S.heap_top + 7) & ~(int64_t)7;
    if ((int64_t)size < 0 || start + (int64_t)size > S.heap_limit)
        fault("mem_alloc(%zu): WRAM exhausted: %lld B of globals + %d stacks x %lld B + "
              "%lld B already allocated + %zu B > %lld B of WRAM", size,
              (long long)S.cfg.image_size, S.ntask, (long long)S.cfg.stack_model_bytes,
              (long long)start, size, (long long)S.cfg.wram_bytes);
    S.heap_top = start + (int64_t)size;
    if (S.heap_top > S.res->heap_peak)
        S.res->heap_peak = S.heap_top;
    return S.heap + start;
}

EXPORT void *mem_reset(void)
{
    S.heap_top = 0;
    return S.heap;
}

/* ------------------------------------------------------------------ synchronisation */
/* The SDK's layouts (barrier.h, sem.h): programs may read these fields. wait_queue is 0xFF
 * when no tasklet waits, else the id of the last tasklet that started waiting; lock is the
 * structure's atomic bit (unused here: the runtime's calls run one at a time). */
struct barrier_t {
    uint8_t wait_queue;
    uint8_t count;                 /* tasklets still expected before the barrier opens */
    uint8_t initial_count;
    uint8_t lock;
};

EXPORT void barrier_wait(struct barrier_t *b)
{
    in_order();
    charge(S.cfg.cost_barrier);
    S.res->sync_calls++;
    if (b->initial_count == 0 || b->initial_count > (uint32_t)S.ntask)
        fault("barrier_wait: barrier of %u tasklets can never open with NR_TASKLETS=%d",
              b->initial_count, S.ntask);
    if (b->count == 0 || b->count > b->initial_count)
        b->count = b->initial_count;   /* a count the program broke: restart the round */
    if (--b->count == 0) {
        b->count = b->initial_count;
        b->wait_queue = 0xFF;
        for (int i = 0; i < S.ntask; i++)
            if (S.t[i].state == T_BLOCKED && S.t[i].wait_kind == W_BARRIER
                && S.t[i].wait_obj == b)
                wake(i);
        in_order();
        return;
    }
    b->wait_queue = (uint8_t)S.cur;
    block(W_BARRIER, b, 0);
}

/* Mutexes are atomic bits, as on the DPU: a mutex_id_t is the address of a byte of the
 * dpurt_atomic section (ATOMIC_BIT_INIT), or the bit number itself (the hardware uses the
 * low 8 bits of the register, so a zero-initialised mutex_id_t is bit 0). */
extern uint8_t __atomic_start_addr[] __attribute__((weak, visibility("hidden")));
extern uint8_t __atomic_end_addr[] __attribute__((weak, visibility("hidden")));

static uint8_t *atomic_bit(const char *fn, const uint8_t *m)
{
    uintptr_t a = (uintptr_t)m;
    uintptr_t lo = (uintptr_t)__atomic_start_addr, hi = (uintptr_t)__atomic_end_addr;
    if (lo && a >= lo && a < hi)
        return &S.atomic[(a - lo) % DPU_NR_ATOMIC_BITS];
    if (a < DPU_NR_ATOMIC_BITS)
        return &S.atomic[a];
    char where[96];
    describe_addr(m, where, sizeof where);
    fault("%s: %s is not a mutex (declare it with MUTEX_INIT, or an __atomic_bit byte)", fn, where);
}

EXPORT _Bool mutex_trylock(uint8_t *mutex)
{
    in_order();
    charge(S.cfg.cost_mutex);
    uint8_t *bit = atomic_bit("mutex_trylock", mutex);
    if (*bit)
        return 0;
    *bit = (uint8_t)(S.cur + 1);
    return 1;
}

EXPORT void mutex_lock(uint8_t *mutex)
{
    in_order();
    charge(S.cfg.cost_mutex);
    S.res->sync_calls++;
    uint8_t *bit = atomic_bit("mutex_lock", mutex);
    if (!*bit) {
        *bit = (uint8_t)(S.cur + 1);
        return;
    }
    block(W_MUTEX, bit, 0);            /* the unlocker hands the mutex over */
}

EXPORT void mutex_unlock(uint8_t *mutex)
{
    in_order();
    charge(S.cfg.cost_mutex);
    uint8_t *bit = atomic_bit("mutex_unlock", mutex);
    for (int k = 1; k <= S.ntask; k++) {
        int i = (S.cur + k) % S.ntask;
        if (S.t[i].state == T_BLOCKED && S.t[i].wait_kind == W_MUTEX && S.t[i].wait_obj == bit) {
            *bit = (uint8_t)(i + 1);
            wake(i);
            return;
        }
    }
    *bit = 0;
}

/* Let the other tasklets run (used by the system library's waiting loops): the caller
 * retires an instruction and gives way to any tasklet then earlier in modelled time. */
EXPORT void __dpurt_yield(void)
{
    in_order();
    charge(1);
    to_scheduler();
}

EXPORT void handshake_notify(void)
{
    in_order();
    charge(S.cfg.cost_handshake);
    S.res->sync_calls++;
    for (int i = 0; i < S.ntask; i++)
        if (S.t[i].state == T_BLOCKED && S.t[i].wait_kind == W_HS_WAIT
            && S.t[i].wait_arg == S.cur) {
            wake(i);
            return;
        }
    block(W_HS_NOTIFY, NULL, 0);
}

EXPORT int handshake_wait_for(uint32_t notifier)
{
    in_order();
    double arrival = S.t[S.cur].time;
    charge(S.cfg.cost_handshake);
    S.res->sync_calls++;
    if (notifier >= (uint32_t)S.ntask || (int)notifier == S.cur)
        return EINVAL;
    for (int i = 0; i < S.ntask; i++)
        if (S.t[i].state == T_BLOCKED && S.t[i].wait_kind == W_HS_WAIT
            && S.t[i].wait_arg == (int)notifier)
            return EALREADY;
    struct tasklet *n = &S.t[notifier];
    if (n->state == T_BLOCKED && n->wait_kind == W_HS_NOTIFY) {
        /* Both go on, as on the DPU; the notifier first: it handed over what it had
         * prepared, and what it does next (e.g. a transfer that the waiter's own transfer
         * overlaps, as in PrIM's UNI) precedes the waiter's on hardware. It resumes at the
         * waiter's arrival, before the waiter's handshake instructions. */
        wake_at((int)notifier, arrival);
        to_scheduler();
        return 0;
    }
    block(W_HS_WAIT, NULL, (int)notifier);
    return 0;
}

struct sem_t {
    uint8_t wait_queue;
    uint8_t count;                 /* units available, as a signed byte: < 0 means waiters */
    uint8_t initial_count;
    uint8_t lock;
};

/* SDK semantics: take decrements and blocks while the count is negative; give increments
 * and, if the count was negative, resumes the longest waiter (which then owns its unit). */
EXPORT void sem_take(struct sem_t *s)
{
    in_order();
    charge(S.cfg.cost_mutex);
    S.res->sync_calls++;
    int8_t c = (int8_t)(s->count - 1);
    s->count = (uint8_t)c;
    if (c >= 0)
        return;
    s->wait_queue = (uint8_t)S.cur;
    block(W_SEM, s, S.sem_arrivals++);  /* arrival order: sem_give resumes the first */
}

EXPORT void sem_give(struct sem_t *s)
{
    in_order();
    charge(S.cfg.cost_mutex);
    int8_t before = (int8_t)s->count;
    s->count = (uint8_t)(before + 1);
    if (before >= 0)
        return;
    int first = -1;
    for (int i = 0; i < S.ntask; i++)
        if (S.t[i].state == T_BLOCKED && S.t[i].wait_kind == W_SEM && S.t[i].wait_obj == s
            && (first < 0 || S.t[i].wait_arg < S.t[first].wait_arg))
            first = i;
    if (first >= 0)
        wake(first);
    if ((int8_t)s->count >= 0)
        s->wait_queue = 0xFF;
}

/* ------------------------------------------------------------------ log (printf) */
/* Defined by STDOUT_BUFFER_INIT(size) in the program (stdio.h): the log's capacity. */
extern const unsigned int __stdout_buffer_size __attribute__((weak, visibility("hidden")));

static void log_append(const char *s, int64_t n)
{
    if (n <= 0)
        return;
    if (S.log_len + n > S.log_limit) {
        n = S.log_limit - S.log_len;
        S.res->log_truncated = 1;
        if (n <= 0)
            return;
    }
    if (S.log_len + n > S.log_cap) {
        int64_t cap = S.log_cap ? S.log_cap : 1024;
        while (cap < S.log_len + n)
            cap *= 2;
        char *grown = realloc(S.log, (size_t)cap);
        if (!grown)
            return;
        S.log = grown;
        S.log_cap = cap;
    }
    memcpy(S.log + S.log_len, s, (size_t)n);
    S.log_len += n;
}

EXPORT int printf(const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    charge(S.cfg.cost_printf);
    if (n < 0)
        return n;
    if ((size_t)n < sizeof small) {
        log_append(small, n);
        return n;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return -1;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    log_append(big, n);
    free(big);
    return n;
}

EXPORT int puts(const char *s)
{
    charge(S.cfg.cost_printf);
    log_append(s, (int64_t)strlen(s));
    log_append("\n", 1);
    return 1;
}

/* assert.h: a failed assert writes the C library's message to the log, then faults. */
EXPORT void __dpurt_assert_fail(const char *expression, const char *file, int line,
                                const char *function)
{
    printf("%s:%d: %s: Assertion `%s' failed.\n", file, line, function, expression);
    fault("assertion `%s' failed at %s:%d (in %s)", expression, file, line, function);
}

EXPORT int putchar(int c)
{
    char ch = (char)c;
    charge(1);
    log_append(&ch, 1);
    return c;
}

/* ------------------------------------------------------------------ hardware faults */
/* A tasklet that dereferences a bad pointer, overflows its stack, divides by zero or hits
 * an illegal instruction faults its DPU, as on the DPU, instead of killing the host
 * process. Every copy of every program installs its handler in front of the previous one;
 * a signal that is not its own (no tasklet of this copy running on this thread) goes down
 * the chain, ending with the process's own handler. */
static __thread int tls_running;
static const int SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    if (sig == SIGSEGV && tls_running && granule_fault((uintptr_t)info->si_addr))
        return;                                       /* an MRAM variable paged in: retry */
    if (tls_running && S.in_tasklet) {
        const char *what = sig == SIGSEGV   ? "invalid memory access (SIGSEGV)"
                           : sig == SIGBUS  ? "bus error (SIGBUS)"
                           : sig == SIGFPE  ? "arithmetic fault (SIGFPE, e.g. division by zero)"
                                            : "illegal instruction (SIGILL)";
        if (!S.faulted) {
            S.faulted = 1;
            S.res->fault_tasklet = S.cur;
            uintptr_t a = (uintptr_t)info->si_addr;
            uintptr_t lo = (uintptr_t)S.t[S.cur].stack - 4096, hi = lo + 4096;
            uintptr_t g = (uintptr_t)guard_page;
            if (sig == SIGSEGV && a >= lo && a < hi)
                snprintf(S.res->fault_reason, sizeof S.res->fault_reason,
                         "stack overflow of tasklet %d (host stack of %zu B)", S.cur,
                         S.t[S.cur].stack_size);
            else if (sig == SIGSEGV && a >= g && a < g + sizeof guard_page)
                snprintf(S.res->fault_reason, sizeof S.res->fault_reason,
                         "access past the end of the program's WRAM globals (WRAM address "
                         "0x%05llx)", (unsigned long long)(a - (uintptr_t)S.cfg.image));
            else {
                char where[96];
                describe_addr(info->si_addr, where, sizeof where);
                snprintf(S.res->fault_reason, sizeof S.res->fault_reason, "%s at %s", what,
                         where);
            }
        }
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        S.t[S.cur].state = T_DONE;
        S.in_tasklet = 0;
        void *dead;
        dpurt_switch(&dead, S.sched_sp);
    }
    struct sigaction *prev = &S.previous[sig];
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction) {
            prev->sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);                      /* default action: re-raised on return */
}

static void install_handlers(void)
{
    if (S.handlers)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof SIGNALS / sizeof SIGNALS[0]; i++)
        sigaction(SIGNALS[i], &sa, &S.previous[SIGNALS[i]]);
    S.handlers = 1;
}

/* ------------------------------------------------------------------ entry points */
EXPORT int dpurt_abi(void)
{
    return DPURT_ABI;
}

/* Its address minus its symbol value is the load base of this copy. */
EXPORT void dpurt_anchor(void) {}

static uint8_t *map_stack(size_t size)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, size + (size_t)pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    mprotect(p, (size_t)pg, PROT_NONE);               /* guard page */
    return p + pg;
}

/* Configure this copy (once per program copy, again when the cost table changes). */
/* MRAM_SWAP_PAGED: the MRAM variables' sections inaccessible, no granule touched (any
 * other mode: accessible, as the loader mapped them). */
static int setup_paging(void)
{
    int64_t span = (S.cfg.mram_sec_size + PAGE_BYTES - 1) & ~(int64_t)(PAGE_BYTES - 1);
    if (S.paged) {                       /* set up before: undo (the mode may change) */
        mprotect(S.cfg.mram_sec, (size_t)S.mram_span, PROT_READ | PROT_WRITE);
        free(S.granule);
        free(S.touched);
        S.granule = NULL;
        S.touched = NULL;
        S.paged = 0;
    }
    if (S.cfg.mram_swap != MRAM_SWAP_PAGED || !span)
        return 0;
    S.mram_span = span;
    S.n_granules = (span + GRANULE_BYTES - 1) >> GRANULE_SHIFT;
    S.granule = calloc((size_t)S.n_granules, 1);
    S.touched = calloc((size_t)S.n_granules, sizeof *S.touched);
    S.n_touched = 0;
    if (!S.granule || !S.touched || mprotect(S.cfg.mram_sec, (size_t)span, PROT_NONE) != 0)
        return -1;
    S.paged = 1;
    return 0;
}

EXPORT int dpurt_setup(const struct dpurt_config *cfg, uint32_t mram_heap_addr)
{
    if (cfg->abi != DPURT_ABI || cfg->nr_tasklets < 1 || cfg->nr_tasklets > MAX_TASKLETS)
        return -1;
    size_t old_stack = S.ready ? S.t[0].stack_size : 0;
    S.cfg = *cfg;
    if (!S.ready && mprotect(guard_page, sizeof guard_page, PROT_NONE) != 0)
        return -4;
    __dpurt_mram_heap_addr = mram_heap_addr;
    S.quantum_w = (uint64_t)((cfg->quantum > 1 ? cfg->quantum : 1) * WEIGHT_ONE);
    for (int64_t i = 0; cfg->bb_weight && i < cfg->n_bb; i++)
        cfg->bb_weight[i] = (uint64_t)(cfg->bb_cost[i] * WEIGHT_ONE + 0.5);
    __dpurt_clocks_per_sec = (uint32_t)cfg->frequency_hz;
    if (!S.heap) {
        S.heap = aligned_alloc(64, (size_t)((cfg->wram_bytes + 63) & ~63ll));
        if (!S.heap)
            return -2;
    }
    for (int i = 0; i < MAX_TASKLETS; i++) {
        if (S.t[i].stack && old_stack == (size_t)cfg->host_stack_bytes)
            continue;
        S.t[i].stack = map_stack((size_t)cfg->host_stack_bytes);
        if (!S.t[i].stack)
            return -3;
        S.t[i].stack_size = (size_t)cfg->host_stack_bytes;
    }
    if (setup_paging() != 0)
        return -5;
    S.ready = 1;
    return 0;
}

static void finish_pages(struct dpurt_result *r)
{
    r->n_new_pages = S.pages_n;
    if (S.pages_n) {
        r->new_page_ids = malloc((size_t)S.pages_n * sizeof(int64_t));
        r->new_page_data = malloc((size_t)S.pages_n * PAGE_BYTES);
        int64_t k = 0;
        for (int64_t i = 0; i < S.pages_cap; i++) {
            if (!S.pages[i].data)
                continue;
            if (r->new_page_ids && r->new_page_data) {
                r->new_page_ids[k] = S.pages[i].page;
                memcpy(r->new_page_data + k * PAGE_BYTES, S.pages[i].data, PAGE_BYTES);
            }
            k++;
            free(S.pages[i].data);
        }
        if (!r->new_page_ids || !r->new_page_data)
            r->n_new_pages = -1;
    }
    free(S.pages);
    S.pages = NULL;
    S.pages_cap = S.pages_n = 0;
}

static void deadlock_report(void)
{
    int n = 0;
    S.faulted = 1;
    S.res->fault_tasklet = -2;
    n += snprintf(S.res->fault_reason, sizeof S.res->fault_reason,
                  "deadlock: every unfinished tasklet is blocked:");
    for (int i = 0; i < S.ntask && n < (int)sizeof S.res->fault_reason - 40; i++) {
        struct tasklet *t = &S.t[i];
        if (t->state != T_BLOCKED)
            continue;
        if (S.res->fault_tasklet == -2)
            S.res->fault_tasklet = i;
        if (t->wait_kind == W_HS_WAIT)
            n += snprintf(S.res->fault_reason + n, sizeof S.res->fault_reason - (size_t)n,
                          " %d in handshake_wait_for(%d);", i, t->wait_arg);
        else
            n += snprintf(S.res->fault_reason + n, sizeof S.res->fault_reason - (size_t)n,
                          " %d in %s;", i, WAIT_NAMES[t->wait_kind]);
    }
}

static void run_one(struct dpurt_result *r, const struct dpurt_launch *L, int64_t slot)
{
    memset(r, 0, sizeof *r);
    r->slot = slot;
    r->fault_tasklet = -1;
    S.res = r;
    if (*S.stop) {                               /* stopped before this DPU's turn: not run */
        r->stop_kind = *S.stop;
        return;
    }
    r->ran = 1;
    uint8_t *wram = L->wram + slot * L->wram_stride;
    S.page_row = L->page_table + slot * L->pt_stride;
    S.pool = L->pool;
    S.pool_rows = L->pool_rows;

    /* boot: images in, heap empty, counters zero */
    memcpy(S.cfg.image, wram, (size_t)S.cfg.image_size);
    if (S.cfg.mram_swap == MRAM_SWAP_EAGER && S.cfg.mram_sec_size) {
        S.cfg.mram_swap = 0;
        mram_copy(0, S.cfg.mram_sec, S.cfg.mram_sec_size, 0);
        S.cfg.mram_swap = MRAM_SWAP_EAGER;
    }
    memset(S.cfg.bbc, 0, (size_t)S.cfg.n_bb * sizeof(uint64_t));
    S.ntask = (int)S.cfg.nr_tasklets;
    S.heap_top = 0;
    S.heap_limit = S.cfg.wram_bytes - S.cfg.image_size - S.ntask * S.cfg.stack_model_bytes;
    if (S.heap_limit < 0)
        S.heap_limit = 0;
    S.faulted = S.halted = 0;
    S.rt_instr = 0;
    S.perf_base = 0;
    S.perf_mode = 1;
    S.both_base_cycles = S.both_base_instr = 0;
    S.log_len = 0;
    S.log_limit = S.cfg.log_cap;
    if (&__stdout_buffer_size && __stdout_buffer_size < S.log_limit)
        S.log_limit = __stdout_buffer_size;      /* STDOUT_BUFFER_INIT(size) */
    memset(S.atomic, 0, sizeof S.atomic);
    S.sem_arrivals = 0;
    S.instr_total = 0;
    S.dma_free = S.dma_busy = 0;
    __dpurt_icount = 0;
    __dpurt_ilimit = UINT64_MAX;
    uint64_t quantum = S.quantum_w;

    for (int i = 0; i < S.ntask; i++) {
        S.t[i].state = T_READY;
        S.t[i].wait_kind = W_NONE;
        S.t[i].wait_obj = NULL;
        S.t[i].sp = initial_sp(&S.t[i]);
        S.t[i].time = S.t[i].ready_at = 0;
        S.t[i].pc = NULL;
    }
    for (;;) {
        /* the ready tasklet with the earliest modelled time (ties: the lower id) */
        int found = -1;
        for (int c = 0; c < S.ntask; c++)
            if (S.t[c].state == T_READY && (found < 0 || earlier(c, found)))
                found = c;
        if (found < 0) {
            int blocked = 0;
            for (int i = 0; i < S.ntask; i++)
                blocked |= S.t[i].state == T_BLOCKED;
            if (blocked)
                deadlock_report();
            break;
        }
        if (*S.stop) {      /* a tasklet that gives way at runtime calls only ends here */
            S.faulted = 1;
            r->fault_tasklet = found;
            r->stop_kind = *S.stop;
            r->fault_pc = (uint64_t)(uintptr_t)S.t[found].pc;
            snprintf(r->fault_reason, sizeof r->fault_reason,
                     "stopped by the host in a runtime call");
            break;
        }
        S.cur = found;
        S.disp_icount = __dpurt_icount;
        retime();
        __dpurt_ilimit = __dpurt_icount + quantum;
        S.in_tasklet = 1;
        dpurt_switch(&S.sched_sp, S.t[found].sp);
        S.in_tasklet = 0;
        __dpurt_ilimit = UINT64_MAX;
        if (S.faulted || S.halted)
            break;
    }
    double end = 0;
    for (int i = 0; i < S.ntask; i++) {
        r->tasklet_cycles[i] = S.t[i].time;
        if (S.t[i].time > end)
            end = S.t[i].time;
    }
    r->cycles = end;
    r->dma_busy_cycles = S.dma_busy;

    /* shut down: count, images out */
    double instr = S.rt_instr;
    for (int64_t i = 0; i < S.cfg.n_bb; i++) {
        uint64_t c = S.cfg.bbc[i];
        if (!c)
            continue;
        instr += (double)c * S.cfg.bb_cost[i];
        if (S.cfg.bb_accum)
            S.cfg.bb_accum[i] += c;
    }
    r->instructions = instr;
    r->runtime_instructions = S.rt_instr;
    memcpy(wram, S.cfg.image, (size_t)S.cfg.image_size);
    if (S.cfg.mram_swap == MRAM_SWAP_EAGER && S.cfg.mram_sec_size) {
        S.cfg.mram_swap = 0;
        mram_copy(0, S.cfg.mram_sec, S.cfg.mram_sec_size, 1);
        S.cfg.mram_swap = MRAM_SWAP_EAGER;
    }
    if (mram_paged())
        granules_out();
    finish_pages(r);
    if (S.log_len) {
        r->log = malloc((size_t)S.log_len);
        if (r->log) {
            memcpy(r->log, S.log, (size_t)S.log_len);
            r->log_len = S.log_len;
        }
    }
}

/* Run the program on every DPU of the launch, one after the other. */
EXPORT int dpurt_run(const struct dpurt_launch *L)
{
    if (!S.ready)
        return -1;
    install_handlers();
    /* an alternate signal stack for this thread, so a stack overflow can be reported */
    static __thread uint8_t *altstack;
    stack_t ss, old;
    if (!altstack)
        altstack = malloc(65536);
    ss.ss_sp = altstack;
    ss.ss_size = 65536;
    ss.ss_flags = 0;
    int have_alt = altstack && sigaltstack(&ss, &old) == 0;
    const char *strict = getenv("PIMRL_DPURT_STRICT_DMA");
    S.strict_dma = strict && *strict && strcmp(strict, "0") != 0;
    S.stop = L->stop ? L->stop : &no_stop;
    tls_running = 1;
    for (int64_t k = 0; k < L->n; k++)
        run_one(&L->results[k], L, L->slots[k]);
    tls_running = 0;
    if (have_alt)
        sigaltstack(&old, NULL);
    return 0;
}

EXPORT void dpurt_release(struct dpurt_result *r, int64_t n)
{
    for (int64_t k = 0; k < n; k++) {
        free(r[k].log);
        free(r[k].new_page_ids);
        free(r[k].new_page_data);
        r[k].log = NULL;
        r[k].new_page_ids = NULL;
        r[k].new_page_data = NULL;
    }
}
