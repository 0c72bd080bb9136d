/* dpu_shim.c: the C face of libdpu.so. Every SDK call is forwarded to the Python simulator
 * (pimrl.shim.runtime -> pimrl.pim.system); only error strings, iterators, the probe clock
 * and FILE* output are handled here. */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first, as Python asks; it also sets the POSIX feature macros */

#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "dpu.h"
#include "dpu_probe.h"
#include "pimrl_sim.h"
#include "shim_internal.h"

/* ----------------------------------------------------------------------------- start-up */

static int shim_ready = 0;
static int shim_tried = 0;
static char last_message[2048];

void _pimrl_set_message(const char *message)
{
    if (message == NULL)
        message = "";
    strncpy(last_message, message, sizeof(last_message) - 1);
    last_message[sizeof(last_message) - 1] = '\0';
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

/* Start the embedded simulator on first use; 0 if it could not start. */
static int ready(void)
{
    if (shim_ready)
        return 1;
    if (!shim_tried) {
        shim_tried = 1;
        start_interpreter();
        _pimrl_py_start(); /* runs cffi's embedding_init_code, which calls _pimrl_mark_ready */
    }
    if (!shim_ready)
        _pimrl_set_message("the embedded Python simulator could not start (see the Python "
                           "error printed above; rebuild with `pimrl shim build`)");
    return shim_ready;
}

/* ----------------------------------------------------------------------------- modelled clock
 * With PIMRL_MODELLED_CLOCK=1 the host program's own clock (gettimeofday, clock_gettime,
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

static int mclock_enabled(void)
{
    if (mclock_on < 0) {
        const char *v = getenv("PIMRL_MODELLED_CLOCK");
        mclock_on = v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
        if (mclock_on) {
            dl_iterate_phdr(find_exe, NULL);
            mclock_start_s = real_mono();
            atexit(mclock_report);
        }
    }
    return mclock_on;
}

static void mclock_enter(void)
{
    if (!mclock_enabled() || mclock_depth++)
        return;
    mclock_enter_s = real_mono();
}

static void mclock_leave(void)
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

#define FORWARD(call)                                                                          \
    do {                                                                                       \
        mclock_enter();                                                                        \
        dpu_error_t forward_result_ = ready() ? (dpu_error_t)(call) : DPU_ERR_SYSTEM;           \
        mclock_leave();                                                                        \
        return forward_result_;                                                                \
    } while (0)

/* ----------------------------------------------------------------------------- errors */

const char *dpu_error_to_string(dpu_error_t status)
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
    case DPU_ERR_INVALID_PARALLEL_MEMORY_TRANSFER: return "invalid parallel memory transfer";
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
    case DPU_ERR_NONBLOCKING_SYNC_CALLBACK: return "non-blocking synchronous callback";
    }
    return "unknown error";
}

void _pimrl_dpu_check_failed(const char *file, int line, const char *function, dpu_error_t error)
{
    fprintf(stderr, "%s:%d(%s): DPU Error (%s)\n", file, line, function, dpu_error_to_string(error));
    if (shim_ready && last_message[0] != '\0')
        fprintf(stderr, "    pimrl simulator: %s\n", last_message);
    fflush(stderr);
}

/* ----------------------------------------------------------------------------- allocation */

dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set)
{
    FORWARD(_pimrl_py_alloc(nr_dpus, profile, 0, dpu_set));
}

dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set)
{
    FORWARD(_pimrl_py_alloc(nr_ranks, profile, 1, dpu_set));
}

dpu_error_t dpu_free(struct dpu_set_t dpu_set) { FORWARD(_pimrl_py_free(&dpu_set)); }

dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks)
{
    FORWARD(_pimrl_py_count(&dpu_set, 1, nr_ranks));
}

dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus)
{
    FORWARD(_pimrl_py_count(&dpu_set, 0, nr_dpus));
}

/* ----------------------------------------------------------------------------- iterators */

static bool member(const struct dpu_set_t *set, int ranks, uint32_t index, struct dpu_set_t *out)
{
    memset(out, 0, sizeof(*out));
    if (set == NULL)
        return false;
    mclock_enter();
    bool found = ready() && _pimrl_py_member(set, ranks, index, out) == 1;
    mclock_leave();
    return found;
}

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set)
{
    struct dpu_set_rank_iterator_t it;
    memset(&it, 0, sizeof(it));
    if (set != NULL)
        it.set = *set;
    it.count = 0;
    it.has_next = member(set, 1, 0, &it.next);
    return it;
}

void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *it)
{
    if (it == NULL || !it->has_next)
        return;
    it->count++;
    it->has_next = member(&it->set, 1, it->count, &it->next);
}

struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set)
{
    struct dpu_set_dpu_iterator_t it;
    memset(&it, 0, sizeof(it));
    if (set != NULL)
        it.set = *set;
    it.count = 0;
    it.has_next = member(set, 0, 0, &it.next);
    return it;
}

void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *it)
{
    if (it == NULL || !it->has_next)
        return;
    it->count++;
    it->has_next = member(&it->set, 0, it->count, &it->next);
}

/* ----------------------------------------------------------------------------- programs */

dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path, struct dpu_program_t **program)
{
    FORWARD(_pimrl_py_load(&dpu_set, binary_path, program));
}

dpu_error_t dpu_get_symbol(struct dpu_program_t *program, const char *symbol_name, struct dpu_symbol_t *symbol)
{
    FORWARD(_pimrl_py_get_symbol(program, symbol_name, symbol));
}

/* ----------------------------------------------------------------------------- execution */

dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy)
{
    FORWARD(_pimrl_py_launch(&dpu_set, (int)policy));
}

dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault)
{
    int d = 0, f = 0;
    dpu_error_t status;
    mclock_enter();
    status = ready() ? (dpu_error_t)_pimrl_py_status(&dpu_set, &d, &f) : DPU_ERR_SYSTEM;
    mclock_leave();
    if (status == DPU_ERR_SYSTEM && !shim_ready)
        return status;
    if (status == DPU_OK) {
        if (done != NULL)
            *done = d != 0;
        if (fault != NULL)
            *fault = f != 0;
    }
    return status;
}

dpu_error_t dpu_sync(struct dpu_set_t dpu_set) { FORWARD(_pimrl_py_sync(&dpu_set)); }

/* ----------------------------------------------------------------------------- transfers */

dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                        const void *src, size_t length)
{
    FORWARD(_pimrl_py_copy(&dpu_set, PIMRL_COPY_TO, symbol_name, NULL, symbol_offset, (void *)src,
                           length, DPU_XFER_DEFAULT));
}

dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                          void *dst, size_t length)
{
    FORWARD(_pimrl_py_copy(&dpu_set, PIMRL_COPY_FROM, symbol_name, NULL, symbol_offset, dst, length,
                           DPU_XFER_DEFAULT));
}

dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
                             const void *src, size_t length, dpu_xfer_flags_t flags)
{
    FORWARD(_pimrl_py_copy(&dpu_set, PIMRL_BROADCAST, symbol_name, NULL, symbol_offset, (void *)src,
                           length, (int)flags));
}

dpu_error_t dpu_copy_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                               const void *src, size_t length)
{
    FORWARD(_pimrl_py_copy(&dpu_set, PIMRL_COPY_TO, NULL, &symbol, symbol_offset, (void *)src, length,
                           DPU_XFER_DEFAULT));
}

dpu_error_t dpu_copy_from_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol, uint32_t symbol_offset,
                                 void *dst, size_t length)
{
    FORWARD(_pimrl_py_copy(&dpu_set, PIMRL_COPY_FROM, NULL, &symbol, symbol_offset, dst, length,
                           DPU_XFER_DEFAULT));
}

dpu_error_t dpu_broadcast_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol,
                                    uint32_t symbol_offset, const void *src, size_t length,
                                    dpu_xfer_flags_t flags)
{
    FORWARD(_pimrl_py_copy(&dpu_set, PIMRL_BROADCAST, NULL, &symbol, symbol_offset, (void *)src, length,
                           (int)flags));
}

dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer)
{
    FORWARD(_pimrl_py_prepare(&dpu_set, buffer));
}

dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name,
                          uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags)
{
    FORWARD(_pimrl_py_push(&dpu_set, (int)xfer, symbol_name, NULL, symbol_offset, length, (int)flags));
}

dpu_error_t dpu_push_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer, struct dpu_symbol_t symbol,
                                 uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags)
{
    FORWARD(_pimrl_py_push(&dpu_set, (int)xfer, NULL, &symbol, symbol_offset, length, (int)flags));
}

/* ----------------------------------------------------------------------------- log */

dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream)
{
    char *text = NULL;
    size_t length = 0;
    dpu_error_t status;
    mclock_enter();
    status = ready() ? (dpu_error_t)_pimrl_py_log(&set, &text, &length) : DPU_ERR_SYSTEM;
    mclock_leave();
    if (status == DPU_ERR_SYSTEM && !shim_ready)
        return status;
    if (status != DPU_OK)
        return status;
    if (stream == NULL) {
        _pimrl_set_message("dpu_log_read: the output stream is NULL");
        return DPU_ERR_SYSTEM;
    }
    fprintf(stream, "=== DPU#0x%x ===\n", set.pimrl_dpu);
    if (length > 0 && fwrite(text, 1, length, stream) != length)
        return DPU_ERR_SYSTEM;
    return DPU_OK;
}

/* ----------------------------------------------------------------------------- simulator extras */

dpu_error_t pimrl_sim_set_phase(struct dpu_set_t dpu_set, const char *category)
{
    FORWARD(_pimrl_py_phase(&dpu_set, category));
}

dpu_error_t pimrl_sim_modelled_seconds(struct dpu_set_t dpu_set, const char *category, double *seconds)
{
    FORWARD(_pimrl_py_modelled(&dpu_set, category, seconds));
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
    if (option == DPU_ENERGY) {
        _pimrl_set_message("dpu_probe_get: the simulator has no energy model (DPU_ENERGY is "
                           "unavailable; DPU_TIME gives host wall-clock seconds)");
        return DPU_ERR_SYSTEM;
    }
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
