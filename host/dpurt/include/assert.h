/* assert.h (pimrl DPU runtime): assert in DPU code. A failed assert faults its DPU, as on
 * the DPU (dpu_launch returns DPU_ERR_DPU_FAULT naming the assertion, file and line), and
 * writes the message to the DPU's log; the host program carries on. Without this header the
 * host's C library would abort the whole host process.
 *
 * Like the C library's, this header may be included more than once, with NDEBUG defined or
 * not: each inclusion defines assert anew. */
#undef assert
#ifdef NDEBUG
#define assert(expression) ((void)0)
#else
void __dpurt_assert_fail(const char *expression, const char *file, int line,
                         const char *function) __attribute__((noreturn));
#define assert(expression)                                                                 \
    ((expression) ? (void)0 : __dpurt_assert_fail(#expression, __FILE__, __LINE__, __func__))
#endif

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus) \
    && !defined(static_assert)
#define static_assert _Static_assert
#endif
