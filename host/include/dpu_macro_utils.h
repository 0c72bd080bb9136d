/* dpu_macro_utils.h: preprocessor helpers of the UPMEM host API (pimrl's libdpu). */
#ifndef BACKENDS_DPU_MACRO_UTILS_H
#define BACKENDS_DPU_MACRO_UTILS_H

/* Token pasting and stringification, one level of expansion first. */
#define _CONCAT_X(x, y) x##y
#define _CONCAT(x, y) _CONCAT_X(x, y)
#define _XSTR(x) #x
#define _STR(x) _XSTR(x)

/* _DPU_FOREACH_VARIANT(set, a[, b]) is X for one argument after the set, I for two
   (the optional index), WRONG_NR_OF_ARGUMENTS otherwise. */
#define _DPU_FOREACH_VARIANT(...) _DPU_FOREACH_VARIANT_(__VA_ARGS__, _DPU_FOREACH_VARIANT_SEQ())
#define _DPU_FOREACH_VARIANT_(a, ...) _DPU_FOREACH_VARIANT_N(__VA_ARGS__)
#define _DPU_FOREACH_VARIANT_N(_1, _2, N, ...) N
#define _DPU_FOREACH_VARIANT_SEQ() I, X, WRONG_NR_OF_ARGUMENTS

#endif /* BACKENDS_DPU_MACRO_UTILS_H */
