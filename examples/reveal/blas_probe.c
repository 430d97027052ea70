/* blas_probe.c: a BLAS library served to `parity reveal`, named by the
 * environment variable BLAS_LIB (a path, opened with dlopen, so that no
 * alternatives switch decides which library runs).  blas.sh wraps it.
 *
 * BLAS_ROUTINE picks what a probe row r is:
 *   sdot (the default)  sdot(n, a_r, 1, b_r, 1)
 *   sgemv_t             output r of y = A^T x with A[i, r] = a_r[i] * b_r[i]
 *                       (rounded to float) and x = ones: the rows of a
 *                       batch are the outputs of one sgemv call, so the
 *                       row classes of the kernel (4, 2 and 1 outputs at a
 *                       time) show.  The products are exact for the order
 *                       probes (powers of two and small integers), not for
 *                       random rows: use it with --order-only.
 *
 *   cc -O2 -I parity/reveal examples/reveal/blas_probe.c -o blas_probe -ldl */
#define PARITY_PROBE_MAIN
#include "parity_probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef float (*sdot_fn)(const int *, const float *, const int *, const float *, const int *);
typedef void (*sgemv_fn)(const char *, const int *, const int *, const float *, const float *, const int *,
                         const float *, const int *, const float *, float *, const int *);
static sdot_fn sdot;
static sgemv_fn sgemv;

static int kernel(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    int n = (int)p->n, one = 1;
    if (sgemv) {
        /* A is n x rows, column-major: column r holds row r's products */
        int m = (int)p->rows;
        float *A = malloc(p->rows * p->n * sizeof *A), *x = malloc(p->n * sizeof *x);
        if (!A || !x) {
            free(A);
            free(x);
            return 1;
        }
        for (size_t i = 0; i < p->rows * p->n; i++)
            A[i] = a[i] * b[i];
        for (size_t i = 0; i < p->n; i++)
            x[i] = 1;
        const float alpha = 1, beta = 0;
        sgemv("T", &n, &m, &alpha, A, &n, x, &one, &beta, y, &one);
        free(A);
        free(x);
    } else {
        for (size_t r = 0; r < p->rows; r++)
            y[r] = sdot(&n, a + r * p->n, &one, b + r * p->n, &one);
    }
    p->y_dtype = "F32";
    return 0;
}

int main(int argc, char **argv)
{
    const char *lib = getenv("BLAS_LIB"), *routine = getenv("BLAS_ROUTINE");
    if (routine && strcmp(routine, "sdot") != 0 && strcmp(routine, "sgemv_t") != 0) {
        fprintf(stderr, "blas_probe: BLAS_ROUTINE must be sdot or sgemv_t, not '%s'\n", routine);
        return 2;
    }
    int gemv = routine && strcmp(routine, "sgemv_t") == 0;
    const char *sym = gemv ? "sgemv_" : "sdot_";
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    void *f = h ? dlsym(h, sym) : NULL;
    if (!f) {
        fprintf(stderr, "blas_probe: set BLAS_LIB to a BLAS library with %s (%s)\n", sym, h ? "not found" : dlerror());
        return 2;
    }
    if (gemv)
        *(void **)&sgemv = f;
    else
        *(void **)&sdot = f;
    return parity_probe_main(argc, argv, kernel);
}
