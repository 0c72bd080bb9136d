/* dpu_shim.c: the C face of libdpu.so: sets, iterators, allocation, programs, launches,
 * transfers, callbacks and logs. Work on the simulated DPUs goes to the Python simulator
 * (pimrl.shim.runtime -> pimrl.pim.system); small transfers take dpu_fast.c's path. */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first, as Python asks; it also sets the POSIX feature macros */

#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "dpu.h"
#include "dpu_log.h"
#include "dpu_probe.h"
#include "pimrl_sim.h"
#include "shim_internal.h"

/* ----------------------------------------------------------------------------- start-up */

static int shim_ready = 0;
static int shim_tried = 0;
static char last_message[2048];
static int last_code = DPU_OK;

void _pimrl_set_message(const char *message)
{
    if (message == NULL)
        message = "";
    strncpy(last_message, message, sizeof(last_message) - 1);
    last_message[sizeof(last_message) - 1] = '\0';
}

void _pimrl_set_error(int code, const char *message)
{
    last_code = code;
    _pimrl_set_message(message);
}

void _pimrl_mark_ready(void) { shim_ready = 1; }

const char *pimrl_sim_last_error(void) { return last_message; }

#ifndef PIMRL_PYTHON_EXECUTABLE
#define PIMRL_PYTHON_EXECUTABLE ""
#endif

/* Start the interpreter as the Python that built the library would start (so a virtual
 * environment's site-packages, not the base installation's, come first), then release the
 * GIL; cffi's embedding code takes it around each call. Inside a Python process (the library
 * loaded by ctypes, say) the running interpreter is used as it is. */
static void start_interpreter(void)
{
    PyConfig config;
    PyStatus status;
    if (Py_IsInitialized() || PIMRL_PYTHON_EXECUTABLE[0] == '\0')
        return;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0; /* the host program keeps its signal handlers */
    config.parse_argv = 0;
    status = PyConfig_SetBytesString(&config, &config.program_name, PIMRL_PYTHON_EXECUTABLE);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        fprintf(stderr, "pimrl libdpu: cannot start Python (%s): %s\n", PIMRL_PYTHON_EXECUTABLE,
                status.err_msg ? status.err_msg : "unknown error");
        return;
    }
    PyEval_SaveThread();
}

/* Python's signal module, when first imported, makes SIGINT raise KeyboardInterrupt if the
 * process left it at its default, whatever install_signal_handlers says (CPython issue
 * 111400); the simulator's modules import it. In a C host the interpreter only runs inside
 * SDK calls, so that handler would only set a flag: Ctrl-C would be ignored everywhere, in
 * the host's own code too. So the signal module is imported while the simulator starts,
 * and the host's SIGINT disposition (default, ignored, or its own handler) is put back. */
static void keep_host_sigint(const struct sigaction *host)
{
    if (Py_IsInitialized()) {
        PyGILState_STATE gil = PyGILState_Ensure();
        PyObject *module = PyImport_ImportModule("signal");
        if (module == NULL)
            PyErr_Clear();
        Py_XDECREF(module);
        PyGILState_Release(gil);
    }
    sigaction(SIGINT, host, NULL);
}

/* Start the embedded simulator on first use; 0 if it could not start. */
int _pimrl_ready(void)
{
    if (shim_ready)
        return 1;
    if (!shim_tried) {
        struct sigaction host_sigint;
        int saved = sigaction(SIGINT, NULL, &host_sigint) == 0;
        shim_tried = 1;
        _pimrl_mclock_enter(); /* starting the simulator is a simulator call's time */
        start_interpreter();
        _pimrl_py_start(); /* runs cffi's embedding_init_code, which calls _pimrl_mark_ready */
        if (saved)
            keep_host_sigint(&host_sigint);
        _pimrl_mclock_leave();
    }
    if (!shim_ready)
        _pimrl_set_message("the embedded Python simulator could not start (see the Python "
                           "error printed above; rebuild with `pimrl shim build`)");
    return shim_ready;
}

/* ----------------------------------------------------------------------------- modelled clock
 * With PIMRL_MODELLED_CLOCK=1 (or a program built with `dpu-pkg-config --modelled-clock`,
 * unless PIMRL_MODELLED_CLOCK=0) the host program's own clock (gettimeofday, clock_gettime,
 * called from the program's executable) is its measured host time plus the modelled time
 * of each simulator call in place of that call's wall time: an unmodified host program that
 * times its phases with the host clock then reports the phase times the cost model gives.
 * Everyone else (the simulator, libraries) sees the real clock. Both clocks are reported on
 * stderr at exit. */
static int mclock_on = -1;          /* -1: not decided yet */
static int mclock_depth = 0;        /* inside a simulator call */
static double mclock_offset = 0.0;  /* seconds to take off the real clock */
static double mclock_enter_s = 0.0; /* real monotonic seconds at the call's start */
static double mclock_total = 0.0;   /* modelled seconds of every allocation, last known */
static double mclock_call_wall = 0.0, mclock_call_modelled = 0.0, mclock_start_s = 0.0;
static long mclock_calls = 0;
static uintptr_t exe_lo = 0, exe_hi = 0;

static double real_mono(void)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int find_exe(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            if (exe_lo == 0 || lo < exe_lo)
                exe_lo = lo;
            if (lo + ph->p_memsz > exe_hi)
                exe_hi = lo + ph->p_memsz;
        }
    }
    return 1;                                          /* the first object is the program */
}

static void mclock_report(void)
{
    double wall = real_mono() - mclock_start_s;
    fprintf(stderr,
            "pimrl modelled clock: measured (wall) %.6f s; modelled clock %.6f s = host time "
            "outside the simulator %.6f s + modelled time of %ld simulator calls %.6f s "
            "(their measured wall time %.6f s)\n",
            wall, wall - mclock_offset, wall - mclock_call_wall, mclock_calls,
            mclock_call_modelled, mclock_call_wall);
}

/* Defined (weak) by dpu.h in a program built with `dpu-pkg-config --modelled-clock`. */
extern int pimrl_modelled_clock_built __attribute__((weak));

static int mclock_enabled(void)
{
    if (mclock_on < 0) {
        const char *v = getenv("PIMRL_MODELLED_CLOCK");
        if (v != NULL && v[0] != '\0')
            mclock_on = strcmp(v, "0") != 0;
        else
            mclock_on = &pimrl_modelled_clock_built != NULL && pimrl_modelled_clock_built;
        if (mclock_on) {
            dl_iterate_phdr(find_exe, NULL);
            mclock_start_s = real_mono();
            atexit(mclock_report);
        }
    }
    return mclock_on;
}

/* Around every simulator or fast-path call (PIMRL_LOCKED, under _pimrl_lock) and the
 * simulator's start. */
void _pimrl_mclock_enter(void)
{
    if (!mclock_enabled() || mclock_depth++)
        return;
    mclock_enter_s = real_mono();
}

void _pimrl_mclock_leave(void)
{
    if (!mclock_on || --mclock_depth)
        return;
    double total = mclock_total;
    if (shim_ready)
        _pimrl_py_modelled_total(&total);
    double wall = real_mono() - mclock_enter_s;      /* the query is the simulator's time */
    double modelled = total - mclock_total;
    mclock_total = total;
    mclock_offset += wall - modelled;
    mclock_call_wall += wall;
    mclock_call_modelled += modelled;
    mclock_calls++;
}

/* Seconds to take off a real clock reading made by `caller`. */
static double mclock_shift(const void *caller)
{
    if (mclock_enabled() <= 0 || (uintptr_t)caller < exe_lo || (uintptr_t)caller >= exe_hi)
        return 0.0;
    return mclock_offset + (mclock_depth ? real_mono() - mclock_enter_s : 0.0);
}

static void shift_timespec(struct timespec *ts, double s)
{
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec - (long long)(s * 1e9);
    ts->tv_sec = (time_t)(ns / 1000000000LL);
    ts->tv_nsec = (long)(ns % 1000000000LL);
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int r = (int)syscall(SYS_clock_gettime, clk, ts);
    if (r == 0 && (clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC ||
                                 clk == CLOCK_MONOTONIC_RAW || clk == CLOCK_BOOTTIME ||
                                 clk == CLOCK_REALTIME_COARSE || clk == CLOCK_MONOTONIC_COARSE)) {
        double s = mclock_shift(__builtin_return_address(0));
        if (s != 0.0)
            shift_timespec(ts, s);
    }
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    int r = (int)syscall(SYS_gettimeofday, tv, tz);
    if (r == 0) {
        double s = mclock_shift(__builtin_return_address(0));
        if (s != 0.0) {
            struct timespec ts = {tv->tv_sec, tv->tv_usec * 1000L};
            shift_timespec(&ts, s);
            tv->tv_sec = ts.tv_sec;
            tv->tv_usec = ts.tv_nsec / 1000L;
        }
    }
    return r;
}

#define READY()                                                                                \
    do {                                                                                       \
        if (!_pimrl_ready())                                                                   \
            return DPU_ERR_SYSTEM;                                                             \
    } while (0)

static dpu_error_t fail(dpu_error_t error, const char *message)
{
    _pimrl_set_error((int)error, message);
    return error;
}

/* One lock for the simulator's state: the fast path reads the memories Python publishes,
 * and both queue or book records; host threads may call the API concurrently. */
pthread_mutex_t _pimrl_lock = PTHREAD_MUTEX_INITIALIZER;

/* ----------------------------------------------------------------------------- records */

static struct pimrl_record *records = NULL;
static size_t nr_records = 0, records_cap = 0;

void _pimrl_record(const struct pimrl_record *record)
{
    if (nr_records == records_cap) {
        size_t cap = records_cap ? 2 * records_cap : 1024;
        struct pimrl_record *grown = realloc(records, cap * sizeof(*records));
        if (grown == NULL) { /* cannot queue: book it now */
            _pimrl_py_flush(); /* the fast path that called us holds the lock */
            if (nr_records == records_cap)
                return;
        } else {
            records = grown;
            records_cap = cap;
        }
    }
    records[nr_records++] = *record;
}

/* Called by Python (with the GIL): the queued records, which it books now. */
size_t _pimrl_take_records(struct pimrl_record **out)
{
    size_t n = nr_records;
    *out = records;
    nr_records = 0;
    return n;
}

/* ----------------------------------------------------------------------------- errors */

static const char *error_text(dpu_error_t status)
{
    switch (status) {
    case DPU_OK: return "success";
    case DPU_ERR_INTERNAL: return "internal error";
    case DPU_ERR_SYSTEM: return "system error";
    case DPU_ERR_DRIVER: return "driver error";
    case DPU_ERR_ALLOCATION: return "allocation error: not enough free DPUs or ranks";
    case DPU_ERR_INVALID_DPU_SET: return "invalid DPU set";
    case DPU_ERR_INVALID_THREAD_ID: return "invalid thread id";
    case DPU_ERR_INVALID_NOTIFY_ID: return "invalid notify id";
    case DPU_ERR_INVALID_WRAM_ACCESS: return "invalid WRAM access (offset and length must be multiples of 4)";
    case DPU_ERR_INVALID_IRAM_ACCESS: return "invalid IRAM access";
    case DPU_ERR_INVALID_MRAM_ACCESS: return "invalid MRAM access (offset and length must be multiples of 8)";
    case DPU_ERR_INVALID_SYMBOL_ACCESS: return "invalid symbol access (offset + length exceeds the symbol)";
    case DPU_ERR_MRAM_BUSY: return "MRAM busy";
    case DPU_ERR_TRANSFER_ALREADY_SET: return "a transfer buffer is already prepared for this DPU";
    case DPU_ERR_INVALID_PARALLEL_MEMORY_TRANSFER: return "invalid parallel memory transfer (WRAM symbols only)";
    case DPU_ERR_WRAM_FIFO_FULL: return "WRAM FIFO full";
    case DPU_ERR_NO_PROGRAM_LOADED: return "no program loaded";
    case DPU_ERR_DIFFERENT_DPU_PROGRAMS: return "the DPUs of the set run different programs";
    case DPU_ERR_CORRUPTED_MEMORY: return "corrupted memory";
    case DPU_ERR_DPU_DISABLED: return "DPU disabled";
    case DPU_ERR_DPU_ALREADY_RUNNING: return "DPU already running";
    case DPU_ERR_INVALID_MEMORY_TRANSFER: return "invalid memory transfer";
    case DPU_ERR_INVALID_LAUNCH_POLICY: return "invalid launch policy";
    case DPU_ERR_DPU_FAULT: return "DPU fault";
    case DPU_ERR_ELF_INVALID_FILE: return "invalid DPU program file";
    case DPU_ERR_ELF_NO_SUCH_FILE: return "no such DPU program file";
    case DPU_ERR_ELF_NO_SUCH_SECTION: return "no such section in the DPU program";
    case DPU_ERR_TIMEOUT: return "timeout";
    case DPU_ERR_INVALID_PROFILE: return "invalid profile";
    case DPU_ERR_UNKNOWN_SYMBOL: return "unknown symbol";
    case DPU_ERR_LOG_FORMAT: return "invalid log format";
    case DPU_ERR_LOG_CONTEXT_MISSING: return "log context missing";
    case DPU_ERR_LOG_BUFFER_TOO_SMALL: return "log buffer too small";
    case DPU_ERR_VPD_INVALID_FILE: return "invalid VPD file";
    case DPU_ERR_VPD_NO_REPAIR: return "no VPD repair";
    case DPU_ERR_NO_THREAD_PER_RANK: return "no thread per rank";
    case DPU_ERR_INVALID_BUFFER_SIZE: return "invalid buffer size";
    case DPU_ERR_NONBLOCKING_SYNC_CALLBACK: return "a non-blocking callback must be asynchronous";
    case DPU_ERR_TOO_MANY_TASKLETS: return "too many tasklets";
    case DPU_ERR_SG_TOO_MANY_BLOCKS: return "scatter/gather transfer: too many blocks";
    case DPU_ERR_SG_LENGTH_MISMATCH: return "scatter/gather transfer: the blocks do not add up to the length";
    case DPU_ERR_SG_NOT_ACTIVATED: return "scatter/gather transfers are not enabled (profile sgXferEnable=true)";
    case DPU_ERR_SG_NOT_MRAM_SYMBOL: return "scatter/gather transfer: not an MRAM symbol";
    case DPU_ERR_ASYNC_JOBS: return "asynchronous operation error";
    }
    return "unknown error";
}

char *dpu_error_to_string(dpu_error_t status)
{
    char *string = NULL;
    int n;
    if ((unsigned)status & (unsigned)DPU_ERR_ASYNC_JOBS) {
        unsigned rest = (unsigned)status & ~(unsigned)DPU_ERR_ASYNC_JOBS;
        dpu_error_t error = (dpu_error_t)(rest & ((1u << DPU_ERROR_ASYNC_JOB_TYPE_SHIFT) - 1));
        n = asprintf(&string, "%s (job %u): %s (0x%x)", error_text(DPU_ERR_ASYNC_JOBS),
                     rest >> DPU_ERROR_ASYNC_JOB_TYPE_SHIFT, error_text(error), rest);
    } else if (status == last_code && last_message[0] != '\0') {
        /* The simulator knows which file, symbol, DPU or value is at fault: say it. */
        n = asprintf(&string, "%s; pimrl simulator: %s", error_text(status), last_message);
    } else {
        n = asprintf(&string, "%s", error_text(status));
    }
    return n < 0 ? NULL : string;
}

const char *dpu_slice_target_names[NR_OF_DPU_SLICE_TARGETS] = {
    "DPU_SLICE_TARGET_NONE", "DPU_SLICE_TARGET_DPU", "DPU_SLICE_TARGET_ALL", "DPU_SLICE_TARGET_GROUP",
};

/* ----------------------------------------------------------------------------- sets */

static int rank_ok(const struct dpu_rank_t *rank) { return rank != NULL && rank->magic == PIMRL_RANK_MAGIC; }

/* The allocation and Python's name of a set; DPU_ERR_INVALID_DPU_SET for a set that no
 * allocation made, a freed one, or a list of some (not one, not all) of its ranks. */
dpu_error_t _pimrl_resolve(const struct dpu_set_t *set, struct pimrl_set_ref *ref, struct pimrl_alloc **alloc)
{
    struct pimrl_alloc *a;
    if (set == NULL)
        return fail(DPU_ERR_INVALID_DPU_SET, "the DPU set is NULL");
    if (set->kind == DPU_SET_DPU) {
        struct dpu_t *dpu = set->dpu;
        if (dpu == NULL || !rank_ok(dpu->rank))
            return fail(DPU_ERR_INVALID_DPU_SET, "the DPU set names no DPU (was it made by DPU_FOREACH?)");
        a = dpu->rank->alloc;
        if (a->freed)
            return fail(DPU_ERR_INVALID_DPU_SET, "this DPU's allocation was freed");
        if (!dpu->enabled)
            return fail(DPU_ERR_DPU_DISABLED, "this DPU is disabled");
        ref->kind = PIMRL_SET_DPU;
        ref->pimrl_rank = dpu->rank->index;
        ref->pimrl_dpu = dpu->slot;
    } else if (set->kind == DPU_SET_RANKS) {
        if (set->list.nr_ranks == 0 || set->list.ranks == NULL || !rank_ok(set->list.ranks[0]))
            return fail(DPU_ERR_INVALID_DPU_SET, "the DPU set lists no rank (was it made by dpu_alloc?)");
        a = set->list.ranks[0]->alloc;
        if (a->freed)
            return fail(DPU_ERR_INVALID_DPU_SET, "this DPU set was freed");
        ref->kind = PIMRL_SET_RANKS;
        ref->pimrl_dpu = 0;
        if (set->list.ranks == a->ranks && set->list.nr_ranks == a->nr_ranks)
            ref->pimrl_rank = PIMRL_ALL_RANKS;
        else if (set->list.nr_ranks == 1)
            ref->pimrl_rank = set->list.ranks[0]->index;
        else
            return fail(DPU_ERR_INVALID_DPU_SET, "a list of some of an allocation's ranks is not a set the "
                                                 "simulator supports (use the allocation, one rank or one DPU)");
    } else {
        return fail(DPU_ERR_INVALID_DPU_SET, "unknown DPU set kind");
    }
    ref->pimrl_handle = a->handle;
    if (alloc != NULL)
        *alloc = a;
    return DPU_OK;
}

#define RESOLVE(set, ref, alloc)                                                               \
    do {                                                                                       \
        dpu_error_t __status = _pimrl_resolve(&(set), &(ref), alloc);                          \
        if (__status != DPU_OK)                                                                \
            return __status;                                                                   \
    } while (0)

/* ----------------------------------------------------------------------------- allocation */

static int sg_requested(const char *profile)
{
    return profile != NULL && strstr(profile, "sgXferEnable=true") != NULL;
}

static dpu_error_t alloc_common(uint32_t count, const char *profile, int by_ranks, struct dpu_set_t *dpu_set)
{
    struct pimrl_alloc *a;
    uint32_t *rank_ids;
    uint8_t *enabled;
    uint64_t hw[PIMRL_HW_COUNT] = { 0 };
    dpu_error_t status;
    READY();
    if (dpu_set == NULL)
        return fail(DPU_ERR_INTERNAL, "dpu_alloc: the output set pointer is NULL");
    a = calloc(1, sizeof(*a));
    if (a == NULL)
        return fail(DPU_ERR_SYSTEM, "dpu_alloc: out of host memory");
    a->sg_enabled = sg_requested(profile);
    status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_alloc(count, profile, by_ranks, a));
    if (status != DPU_OK) {
        free(a);
        return status;
    }
    rank_ids = calloc(a->nr_ranks, sizeof(*rank_ids));
    enabled = calloc(a->nr_slots, 1);
    a->ranks = calloc(a->nr_ranks, sizeof(*a->ranks));
    a->rank_storage = calloc(a->nr_ranks, sizeof(*a->rank_storage));
    a->dpu_storage = calloc(a->nr_slots, sizeof(*a->dpu_storage));
    a->prepared = calloc(a->nr_slots, sizeof(*a->prepared));
    if (!rank_ids || !enabled || !a->ranks || !a->rank_storage || !a->dpu_storage || !a->prepared) {
        free(rank_ids);
        free(enabled);
        return fail(DPU_ERR_SYSTEM, "dpu_alloc: out of host memory");
    }
    status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_describe(a, rank_ids, enabled, hw));
    if (status != DPU_OK) {
        free(rank_ids);
        free(enabled);
        return status;
    }
    for (uint32_t r = 0; r < a->nr_ranks; r++) {
        struct dpu_rank_t *rank = &a->rank_storage[r];
        uint32_t per_ci;
        int any = 0;
        rank->magic = PIMRL_RANK_MAGIC;
        rank->alloc = a;
        rank->index = r;
        rank->rank_id = (dpu_rank_id_t)rank_ids[r];
        rank->nr_dpus = a->dpus_per_rank;
        rank->dpus = &a->dpu_storage[r * a->dpus_per_rank];
        pthread_mutex_init(&rank->lock, NULL);
        _pimrl_hw_description(&rank->description, hw);
        per_ci = rank->description.hw.topology.nr_of_dpus_per_control_interface;
        for (uint32_t i = 0; i < a->dpus_per_rank; i++) {
            struct dpu_t *dpu = &rank->dpus[i];
            dpu->rank = rank;
            dpu->slot = r * a->dpus_per_rank + i;
            dpu->slice_id = (dpu_slice_id_t)(i / per_ci);
            dpu->dpu_id = (dpu_member_id_t)(i % per_ci);
            dpu->enabled = enabled[dpu->slot] != 0;
            a->nr_enabled += dpu->enabled;
            any |= dpu->enabled;
        }
        a->nr_ranks_enabled += any;
        a->ranks[r] = rank;
    }
    free(rank_ids);
    free(enabled);
    memset(dpu_set, 0, sizeof(*dpu_set));
    dpu_set->kind = DPU_SET_RANKS;
    dpu_set->list.nr_ranks = a->nr_ranks;
    dpu_set->list.ranks = a->ranks;
    return DPU_OK;
}

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set)
{
    return alloc_common(nr_dpus, profile, 0, dpu_set);
}

dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set)
{
    return alloc_common(nr_ranks, profile, 1, dpu_set);
}

dpu_error_t dpu_free(struct dpu_set_t dpu_set)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    dpu_error_t status;
    READY();
    RESOLVE(dpu_set, ref, &a);
    if (ref.kind != PIMRL_SET_RANKS || ref.pimrl_rank != PIMRL_ALL_RANKS)
        return fail(DPU_ERR_INVALID_DPU_SET, "dpu_free takes the set returned by dpu_alloc (not one of its ranks or DPUs)");
    status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_free(&ref));
    if (status == DPU_OK) {
        a->freed = 1;
        a->mem.valid = 0;
        memset(a->prepared, 0, a->nr_slots * sizeof(*a->prepared));
    }
    return status;
}

/* Count the enabled DPUs (and ranks holding some) of a resolved set. */
static void count_set(const struct pimrl_alloc *a, const struct pimrl_set_ref *ref, uint32_t *dpus, uint32_t *ranks)
{
    if (ref->kind == PIMRL_SET_DPU) {
        *dpus = 1;
        *ranks = 1;
    } else if (ref->pimrl_rank == PIMRL_ALL_RANKS) {
        *dpus = a->nr_enabled;
        *ranks = a->nr_ranks_enabled;
    } else {
        const struct dpu_rank_t *rank = a->ranks[ref->pimrl_rank];
        uint32_t n = 0;
        for (uint32_t i = 0; i < rank->nr_dpus; i++)
            n += rank->dpus[i].enabled;
        *dpus = n;
        *ranks = n > 0;
    }
}

dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    uint32_t dpus, ranks;
    RESOLVE(dpu_set, ref, &a);
    if (nr_ranks == NULL)
        return fail(DPU_ERR_INTERNAL, "dpu_get_nr_ranks: the output pointer is NULL");
    count_set(a, &ref, &dpus, &ranks);
    *nr_ranks = ref.kind == PIMRL_SET_RANKS && ref.pimrl_rank == PIMRL_ALL_RANKS ? a->nr_ranks : 1;
    return DPU_OK;
}

dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    uint32_t ranks;
    RESOLVE(dpu_set, ref, &a);
    if (nr_dpus == NULL)
        return fail(DPU_ERR_INTERNAL, "dpu_get_nr_dpus: the output pointer is NULL");
    count_set(a, &ref, nr_dpus, &ranks);
    return DPU_OK;
}

/* ----------------------------------------------------------------------------- iterators */

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set)
{
    struct dpu_set_rank_iterator_t it;
    memset(&it, 0, sizeof(it));
    it.set = set;
    it.next_idx = 1;
    if (set == NULL)
        return it;
    it.next = *set;
    if (set->kind == DPU_SET_RANKS) {
        it.has_next = set->list.nr_ranks != 0;
        it.next.list.nr_ranks = 1;
    } else {
        it.has_next = set->kind == DPU_SET_DPU;
    }
    return it;
}

void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *it)
{
    it->count++;
    if (!it->has_next)
        return;
    if (it->set->kind == DPU_SET_RANKS) {
        it->has_next = it->next_idx < it->set->list.nr_ranks;
        if (it->has_next) {
            it->next.list.ranks = it->set->list.ranks + it->next_idx;
            it->next_idx++;
        }
    } else {
        it->has_next = false;
    }
}

/* Move to the next enabled DPU of the current rank, then of the following ranks. */
static void advance_dpu(struct dpu_set_dpu_iterator_t *it)
{
    for (;;) {
        struct dpu_rank_t *rank = *it->rank_iterator.next.list.ranks;
        if (rank_ok(rank)) {
            for (uint32_t i = it->next_idx; i < rank->nr_dpus; i++) {
                if (rank->dpus[i].enabled) {
                    it->has_next = true;
                    it->next_idx = i + 1;
                    it->next.kind = DPU_SET_DPU;
                    it->next.dpu = &rank->dpus[i];
                    return;
                }
            }
        }
        dpu_set_rank_iterator_next(&it->rank_iterator);
        if (!it->rank_iterator.has_next) {
            it->has_next = false;
            return;
        }
        it->next_idx = 0;
    }
}

struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set)
{
    struct dpu_set_dpu_iterator_t it;
    memset(&it, 0, sizeof(it));
    it.rank_iterator = dpu_set_rank_iterator_from(set);
    if (!it.rank_iterator.has_next)
        return it;
    if (set->kind == DPU_SET_RANKS) {
        if (set->list.ranks == NULL) {
            it.has_next = false;
            return it;
        }
        it.next_idx = 0;
        advance_dpu(&it);
    } else {
        it.has_next = true;
        it.next = *set;
    }
    return it;
}

void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *it)
{
    it->count++;
    if (!it->has_next)
        return;
    if (it->rank_iterator.set->kind == DPU_SET_RANKS)
        advance_dpu(it);
    else
        it->has_next = false;
}

/* ----------------------------------------------------------------------------- programs */

dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program)
{
    struct pimrl_set_ref ref;
    READY();
    RESOLVE(dpu_set, ref, NULL);
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_load(&ref, binary_path, NULL, 0, program));
}

dpu_error_t dpu_load_from_memory(struct dpu_set_t dpu_set, uint8_t *buffer, size_t buffer_size,
                                 struct dpu_program_t **program)
{
    struct pimrl_set_ref ref;
    READY();
    RESOLVE(dpu_set, ref, NULL);
    if (buffer == NULL || buffer_size == 0)
        return fail(DPU_ERR_ELF_INVALID_FILE, "dpu_load_from_memory: the buffer is empty");
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_load(&ref, NULL, buffer, buffer_size, program));
}

dpu_error_t dpu_load_from_incbin(struct dpu_set_t dpu_set, struct dpu_incbin_t *incbin, struct dpu_program_t **program)
{
    if (incbin == NULL)
        return fail(DPU_ERR_ELF_INVALID_FILE, "dpu_load_from_incbin: the incbin is NULL");
    return dpu_load_from_memory(dpu_set, incbin->buffer, incbin->size, program);
}

dpu_error_t dpu_get_symbol(struct dpu_program_t *program, const char *symbol_name, struct dpu_symbol_t *symbol)
{
    READY();
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_get_symbol(program, symbol_name, symbol));
}

/* ----------------------------------------------------------------------------- execution */

dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy)
{
    struct pimrl_set_ref ref;
    READY();
    RESOLVE(dpu_set, ref, NULL);
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_launch(&ref, (int)policy));
}

dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault)
{
    struct pimrl_set_ref ref;
    int d = 0, f = 0;
    dpu_error_t status;
    READY();
    RESOLVE(dpu_set, ref, NULL);
    status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_status(&ref, &d, &f));
    if (status == DPU_OK) {
        if (done != NULL)
            *done = d != 0;
        if (fault != NULL)
            *fault = f != 0;
    }
    return status;
}

dpu_error_t dpu_sync(struct dpu_set_t dpu_set)
{
    struct pimrl_set_ref ref;
    READY();
    RESOLVE(dpu_set, ref, NULL);
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_sync(&ref));
}

/* ----------------------------------------------------------------------------- transfers */

static dpu_error_t copy(struct dpu_set_t set, int op, const char *name, const struct dpu_symbol_t *symbol,
                        uint32_t offset, void *buffer, size_t length, int flags)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    READY();
    RESOLVE(set, ref, &a);
    if (PIMRL_LOCKED(_pimrl_fast_copy(a, &ref, op, name, symbol, offset, buffer, length, flags)) == DPU_OK)
        return DPU_OK;
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_copy(&ref, op, name, symbol, offset, buffer, length, flags));
}

dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, const void *src,
                        size_t length)
{
    return copy(dpu_set, PIMRL_COPY_TO, symbol_name, NULL, symbol_offset, (void *)src, length, DPU_XFER_DEFAULT);
}

dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset, void *dst,
                          size_t length)
{
    return copy(dpu_set, PIMRL_COPY_FROM, symbol_name, NULL, symbol_offset, dst, length, DPU_XFER_DEFAULT);
}

dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                             const void *src, size_t length, dpu_xfer_flags_t flags)
{
    return copy(dpu_set, PIMRL_BROADCAST, symbol_name, NULL, symbol_offset, (void *)src, length, (int)flags);
}

dpu_error_t dpu_copy_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                               const void *src, size_t length)
{
    return copy(dpu_set, PIMRL_COPY_TO, NULL, &symbol, symbol_offset, (void *)src, length, DPU_XFER_DEFAULT);
}

dpu_error_t dpu_copy_from_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                 void *dst, size_t length)
{
    return copy(dpu_set, PIMRL_COPY_FROM, NULL, &symbol, symbol_offset, dst, length, DPU_XFER_DEFAULT);
}

dpu_error_t dpu_broadcast_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                    const void *src, size_t length, dpu_xfer_flags_t flags)
{
    return copy(dpu_set, PIMRL_BROADCAST, NULL, &symbol, symbol_offset, (void *)src, length, (int)flags);
}

/* The slots of a resolved set, in order: the allocation's enabled slots, a rank's, or one. */
static uint32_t set_slots(const struct pimrl_alloc *a, const struct pimrl_set_ref *ref, uint32_t *first,
                          uint32_t *end)
{
    if (ref->kind == PIMRL_SET_DPU) {
        *first = ref->pimrl_dpu;
        *end = ref->pimrl_dpu + 1;
    } else if (ref->pimrl_rank == PIMRL_ALL_RANKS) {
        *first = 0;
        *end = a->nr_slots;
    } else {
        *first = ref->pimrl_rank * a->dpus_per_rank;
        *end = *first + a->dpus_per_rank;
    }
    return *end - *first;
}

/* As the SDK: the buffer replaces any prepared before (NULL takes it back); no other check. */
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    uint32_t first, end;
    RESOLVE(dpu_set, ref, &a);
    set_slots(a, &ref, &first, &end);
    pthread_mutex_lock(&_pimrl_lock);
    for (uint32_t s = first; s < end; s++)
        if (a->dpu_storage[s].enabled)
            a->prepared[s] = buffer;
    pthread_mutex_unlock(&_pimrl_lock);
    return DPU_OK;
}

static void clear_prepared(struct pimrl_alloc *a, const struct pimrl_set_ref *ref)
{
    uint32_t first, end;
    set_slots(a, ref, &first, &end);
    memset(&a->prepared[first], 0, (end - first) * sizeof(*a->prepared));
}

static dpu_error_t push(struct dpu_set_t set, int xfer, const char *name, const struct dpu_symbol_t *symbol,
                        uint32_t offset, size_t length, int flags)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    dpu_error_t status;
    READY();
    RESOLVE(set, ref, &a);
    status = PIMRL_LOCKED(_pimrl_fast_push(a, &ref, xfer, name, symbol, offset, length, flags));
    if (status != DPU_OK)
        status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_push(&ref, xfer, name, symbol, offset, length, flags, a->prepared));
    if (status == DPU_OK && !(flags & DPU_XFER_NO_RESET))
        clear_prepared(a, &ref);
    return status;
}

dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name, uint32_t symbol_offset,
                          size_t length, dpu_xfer_flags_t flags)
{
    return push(dpu_set, (int)xfer, symbol_name, NULL, symbol_offset, length, (int)flags);
}

dpu_error_t dpu_push_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol,
                                 uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags)
{
    return push(dpu_set, (int)xfer, NULL, &symbol, symbol_offset, length, (int)flags);
}

/* Scatter/gather: each DPU's blocks are gathered into (or scattered from) one contiguous
 * buffer, which then goes through an ordinary prepared push. */
static dpu_error_t push_sg(struct dpu_set_t set, int xfer, const char *name, const struct dpu_symbol_t *symbol,
                           uint32_t offset, size_t length, get_block_t *get_block, int flags)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    struct dpu_symbol_t resolved;
    uint32_t first, end, index = 0;
    uint8_t *staging = NULL;
    void **saved = NULL;
    dpu_error_t status;
    READY();
    RESOLVE(set, ref, &a);
    if (!a->sg_enabled)
        return fail(DPU_ERR_SG_NOT_ACTIVATED, "scatter/gather transfers need the profile sgXferEnable=true at dpu_alloc");
    if (xfer != DPU_XFER_TO_DPU && xfer != DPU_XFER_FROM_DPU)
        return fail(DPU_ERR_INVALID_MEMORY_TRANSFER, "unknown transfer direction");
    if (flags & ~(DPU_SG_XFER_ASYNC | DPU_SG_XFER_DISABLE_LENGTH_CHECK))
        return fail(DPU_ERR_INVALID_MEMORY_TRANSFER, "unknown scatter/gather transfer flags");
    if (get_block == NULL || get_block->f == NULL)
        return fail(DPU_ERR_INTERNAL, "dpu_push_sg_xfer: no get_block function");
    status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_check_symbol(&ref, name, symbol, offset, length, 1, &resolved));
    if (status != DPU_OK)
        return status;
    set_slots(a, &ref, &first, &end);
    staging = calloc((size_t)(end - first) * (length ? length : 1), 1);
    saved = malloc((size_t)(end - first) * sizeof(*saved));
    if (staging == NULL || saved == NULL) {
        free(staging);
        free(saved);
        return fail(DPU_ERR_SYSTEM, "dpu_push_sg_xfer: out of host memory");
    }
    memcpy(saved, &a->prepared[first], (end - first) * sizeof(*saved));
    status = DPU_OK;
    for (uint32_t s = first; s < end && status == DPU_OK; s++) {
        uint8_t *mine = staging + (size_t)(s - first) * length;
        size_t done = 0;
        struct sg_block_info block;
        if (!a->dpu_storage[s].enabled)
            continue;
        for (uint32_t b = 0; get_block->f(&block, index, b, get_block->args); b++) {
            if (done + block.length > length) {
                status = fail(DPU_ERR_SG_LENGTH_MISMATCH, "dpu_push_sg_xfer: the blocks of a DPU exceed the length");
                break;
            }
            if (xfer == DPU_XFER_TO_DPU && block.length)
                memcpy(mine + done, block.addr, block.length);
            done += block.length;
        }
        if (status == DPU_OK && done != length && !(flags & DPU_SG_XFER_DISABLE_LENGTH_CHECK))
            status = fail(DPU_ERR_SG_LENGTH_MISMATCH, "dpu_push_sg_xfer: the blocks of a DPU do not add up to the length");
        a->prepared[s] = mine;
        index++;
    }
    if (status == DPU_OK)
        status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_push(&ref, xfer, NULL, &resolved, offset, length, DPU_XFER_DEFAULT, a->prepared));
    if (status == DPU_OK && xfer == DPU_XFER_FROM_DPU) {
        index = 0;
        for (uint32_t s = first; s < end; s++) {
            const uint8_t *mine = staging + (size_t)(s - first) * length;
            size_t done = 0;
            struct sg_block_info block;
            if (!a->dpu_storage[s].enabled)
                continue;
            for (uint32_t b = 0; done < length && get_block->f(&block, index, b, get_block->args); b++) {
                size_t n = block.length < length - done ? block.length : length - done;
                memcpy(block.addr, mine + done, n);
                done += n;
            }
            index++;
        }
    }
    memcpy(&a->prepared[first], saved, (end - first) * sizeof(*saved));
    free(saved);
    free(staging);
    return status;
}

dpu_error_t dpu_push_sg_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name,
                             uint32_t symbol_offset, size_t length, get_block_t *get_block_info,
                             dpu_sg_xfer_flags_t flags)
{
    return push_sg(dpu_set, (int)xfer, symbol_name, NULL, symbol_offset, length, get_block_info, (int)flags);
}

dpu_error_t dpu_push_sg_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol,
                                    uint32_t symbol_offset, size_t length, get_block_t *get_block_info,
                                    dpu_sg_xfer_flags_t flags)
{
    return push_sg(dpu_set, (int)xfer, NULL, &symbol, symbol_offset, length, get_block_info, (int)flags);
}

/* ----------------------------------------------------------------------------- callbacks */

dpu_error_t dpu_callback(struct dpu_set_t dpu_set, dpu_error_t (*callback)(struct dpu_set_t, uint32_t, void *),
                         void *args, dpu_callback_flags_t flags)
{
    struct pimrl_set_ref ref;
    struct pimrl_alloc *a;
    bool is_sync = (flags & DPU_CALLBACK_ASYNC) == 0;
    bool nonblocking = (flags & DPU_CALLBACK_NONBLOCKING) != 0;
    bool single = (flags & DPU_CALLBACK_SINGLE_CALL) != 0;
    if (dpu_set.kind != DPU_SET_RANKS && dpu_set.kind != DPU_SET_DPU)
        return fail(DPU_ERR_INTERNAL, "dpu_callback: unknown DPU set kind");
    if (is_sync && nonblocking)
        return fail(DPU_ERR_NONBLOCKING_SYNC_CALLBACK, "dpu_callback: DPU_CALLBACK_NONBLOCKING needs DPU_CALLBACK_ASYNC");
    RESOLVE(dpu_set, ref, &a);
    if (callback == NULL)
        return fail(DPU_ERR_INTERNAL, "dpu_callback: the callback is NULL");
    /* Work queued before the callback is done before it (the simulator queues nothing). */
    if (single || dpu_set.kind == DPU_SET_DPU)
        return callback(dpu_set, 0, args);
    for (uint32_t r = 0; r < dpu_set.list.nr_ranks; r++) {
        struct dpu_set_t rank = dpu_set;
        dpu_error_t status;
        rank.list.nr_ranks = 1;
        rank.list.ranks = dpu_set.list.ranks + r;
        status = callback(rank, r, args);
        if (status != DPU_OK)
            return status;
    }
    return DPU_OK;
}

/* ----------------------------------------------------------------------------- log */

static dpu_error_t write_log(struct dpu_t *dpu, FILE *stream)
{
    struct dpu_set_t set = dpu_set_from_dpu(dpu);
    struct pimrl_set_ref ref;
    char *text = NULL;
    size_t length = 0;
    dpu_error_t status;
    READY();
    RESOLVE(set, ref, NULL);
    if (stream == NULL)
        return fail(DPU_ERR_SYSTEM, "the output stream is NULL");
    status = (dpu_error_t)PIMRL_LOCKED(_pimrl_py_log(&ref, &text, &length));
    if (status != DPU_OK)
        return status;
    if (length > 0 && fwrite(text, 1, length, stream) != length)
        return fail(DPU_ERR_SYSTEM, "could not write the DPU log to the stream");
    return DPU_OK;
}

dpu_error_t dpulog_read_for_dpu(struct dpu_t *dpu, FILE *stream) { return write_log(dpu, stream); }

dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream)
{
    if (set.kind != DPU_SET_DPU)
        return fail(DPU_ERR_INVALID_DPU_SET, "dpu_log_read needs a single DPU (from DPU_FOREACH)");
    if (set.dpu == NULL || !rank_ok(set.dpu->rank))
        return fail(DPU_ERR_INVALID_DPU_SET, "the DPU set names no DPU");
    if (stream == NULL)
        return fail(DPU_ERR_SYSTEM, "the output stream is NULL");
    fprintf(stream, "=== DPU#0x%x ===\n", dpu_get_id(set.dpu));
    return write_log(set.dpu, stream);
}

/* ----------------------------------------------------------------------------- simulator extras */

dpu_error_t pimrl_sim_set_phase(struct dpu_set_t dpu_set, const char *category)
{
    struct pimrl_set_ref ref;
    READY();
    RESOLVE(dpu_set, ref, NULL);
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_phase(&ref, category));
}

dpu_error_t pimrl_sim_modelled_seconds(struct dpu_set_t dpu_set, const char *category, double *seconds)
{
    struct pimrl_set_ref ref;
    READY();
    if (dpu_set.kind == DPU_SET_RANKS && dpu_set.list.nr_ranks > 0 && dpu_set.list.ranks != NULL
        && rank_ok(dpu_set.list.ranks[0])) {
        ref.kind = PIMRL_SET_RANKS; /* also after dpu_free: the ledger stays readable */
        ref.pimrl_handle = dpu_set.list.ranks[0]->alloc->handle;
        ref.pimrl_rank = PIMRL_ALL_RANKS;
        ref.pimrl_dpu = 0;
    } else {
        RESOLVE(dpu_set, ref, NULL);
    }
    return (dpu_error_t)PIMRL_LOCKED(_pimrl_py_modelled(&ref, category, seconds));
}

/* ----------------------------------------------------------------------------- probe */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

dpu_error_t dpu_probe_init(const char *name, struct dpu_probe_t *probe)
{
    if (probe == NULL)
        return DPU_ERR_INTERNAL;
    memset(probe, 0, sizeof(*probe));
    probe->name = name;
    return DPU_OK;
}

dpu_error_t dpu_probe_deinit(struct dpu_probe_t *probe)
{
    if (probe == NULL)
        return DPU_ERR_INTERNAL;
    memset(probe, 0, sizeof(*probe));
    return DPU_OK;
}

dpu_error_t dpu_probe_start(struct dpu_probe_t *probe)
{
    if (probe == NULL)
        return DPU_ERR_INTERNAL;
    probe->started_s = now_seconds();
    probe->running = 1;
    return DPU_OK;
}

dpu_error_t dpu_probe_stop(struct dpu_probe_t *probe)
{
    if (probe == NULL || !probe->running)
        return DPU_ERR_INTERNAL;
    probe->accumulated_s += now_seconds() - probe->started_s;
    probe->nr_samples++;
    probe->running = 0;
    return DPU_OK;
}

dpu_error_t dpu_probe_get(struct dpu_probe_t *probe, dpu_probe_option_t option, dpu_probe_value_t value,
                          double *result)
{
    if (probe == NULL || result == NULL)
        return DPU_ERR_INTERNAL;
    if (option == DPU_ENERGY)
        return fail(DPU_ERR_SYSTEM, "dpu_probe_get: the simulator has no energy model (DPU_ENERGY is "
                                    "unavailable; DPU_TIME gives host wall-clock seconds)");
    if (option != DPU_TIME)
        return DPU_ERR_INTERNAL;
    if (value == DPU_ACCUMULATE)
        *result = probe->accumulated_s;
    else if (value == DPU_AVERAGE)
        *result = probe->nr_samples ? probe->accumulated_s / probe->nr_samples : 0.0;
    else
        return DPU_ERR_INTERNAL;
    return DPU_OK;
}
