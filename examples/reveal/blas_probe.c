/* blas_probe.c: a BLAS library served to `parity reveal`, named by the
 * environment variable BLAS_LIB (a path, opened with dlopen, so that no
 * alternatives switch decides which library runs).  blas.sh wraps it.
 *
 * BLAS_ROUTINE picks what a probe row r is:
 *   sdot (the default)  sdot(n, a_r, 1, b_r, 1)
 *   sgemv_t             output r of y = A^T x: the rows of a batch are the
 *                       outputs of one sgemv call, so the row classes of
 *                       the kernel (4, 2 and 1 outputs at a time) show.
 *                       When every row has the same b (reveal --shared-b),
 *                       column r of A is a_r and x is b: the library's own
 *                       arithmetic.  Otherwise A[i, r] = a_r[i] * b_r[i]
 *                       rounded to float and x = ones, exact for the order
 *                       probes (powers of two), not for random rows: use
 *                       that with --order-only.
 *   sgemv_n             output r of y = A x, A of rows x n (column major,
 *                       trans 'N'), row r of A being a_r and x = b (or as
 *                       sgemv_t's, premultiplied, when the b differ)
 *   sgemm               output r of column 0 of C = A B, A as sgemv_n's,
 *                       B of n x 3 with every column b (or ones); under
 *                       `reveal --grid M,N` (PARITY_GRID=M,N) the whole
 *                       M x N output of C = A B, output r = i * N + j,
 *                       A's row i read from row i * N's a and B's column j
 *                       from row j's b (docs/reveal.md "Grid classes")
 *
 *   cc -O2 -I parity/reveal examples/reveal/blas_probe.c -o blas_probe -ldl */
#define PARITY_PROBE_MAIN
#include "parity_probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef float (*sdot_fn)(const int *, const float *, const int *, const float *, const int *);
typedef void (*sgemm_fn)(const char *, const char *, const int *, const int *, const int *, const float *,
                         const float *, const int *, const float *, const int *, const float *, float *,
                         const int *);
typedef void (*sgemv_fn)(const char *, const int *, const int *, const float *, const float *, const int *,
                         const float *, const int *, const float *, float *, const int *);
static sdot_fn sdot;
static sgemv_fn sgemv;
static sgemm_fn sgemm;
static int trans_n; /* sgemv_n, sgemm: A is rows x n */

static int kernel(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    int n = (int)p->n, one = 1;
    const char *g = getenv("PARITY_GRID");
    unsigned long gm, gn;
    char gt;
    if (sgemm && g && sscanf(g, "%lu,%lu%c", &gm, &gn, &gt) == 2) {
        if (gm * gn != p->rows)
            return 1;
        int m = (int)gm, nc = (int)gn;
        float *A = malloc(gm * p->n * sizeof *A), *B = malloc(p->n * gn * sizeof *B), *C = malloc(gm * gn * sizeof *C);
        if (!A || !B || !C) {
            free(A);
            free(B);
            free(C);
            return 1;
        }
        for (size_t i = 0; i < gm; i++) /* column major, lda = M */
            for (size_t k = 0; k < p->n; k++)
                A[i + k * gm] = a[i * gn * p->n + k];
        for (size_t j = 0; j < gn; j++) /* ldb = n */
            memcpy(B + j * p->n, b + j * p->n, p->n * sizeof *B);
        const float alpha = 1, beta = 0;
        sgemm("N", "N", &m, &nc, &n, &alpha, A, &m, B, &n, &beta, C, &m);
        for (size_t i = 0; i < gm; i++)
            for (size_t j = 0; j < gn; j++)
                y[i * gn + j] = C[i + j * gm];
        free(A);
        free(B);
        free(C);
        p->y_dtype = "F32";
        return 0;
    }
    if (sgemv || sgemm) {
        int m = (int)p->rows, nc = 3;
        float *A = malloc(p->rows * p->n * sizeof *A), *x = malloc(p->n * nc * sizeof *x);
        float *C = sgemm ? malloc(p->rows * nc * sizeof *C) : NULL;
        if (!A || !x || (sgemm && !C)) {
            free(A);
            free(x);
            free(C);
            return 1;
        }
        /* rows that share b (reveal --shared-b): A's rows are a, x is b,
         * the library's own products; otherwise A holds the products
         * rounded to float and x is ones (order probes only).
         * trans 'T': A is n x rows, column r is row r;
         * trans 'N' and sgemm: A is rows x n, A[r + i*rows] */
        int shared = 1;
        for (size_t r = 1; r < p->rows && shared; r++)
            shared = !memcmp(b, b + r * p->n, p->n * sizeof *b);
        for (size_t r = 0; r < p->rows; r++)
            for (size_t i = 0; i < p->n; i++)
                A[trans_n ? r + i * p->rows : i + r * p->n] =
                    shared ? a[r * p->n + i] : a[r * p->n + i] * b[r * p->n + i];
        for (size_t i = 0; i < p->n * nc; i++)
            x[i] = shared ? b[i % p->n] : 1;
        const float alpha = 1, beta = 0;
        if (sgemm) {
            sgemm("N", "N", &m, &nc, &n, &alpha, A, &m, x, &n, &beta, C, &m);
            memcpy(y, C, p->rows * sizeof *y);
        } else if (trans_n)
            sgemv("N", &m, &n, &alpha, A, &m, x, &one, &beta, y, &one);
        else
            sgemv("T", &n, &m, &alpha, A, &n, x, &one, &beta, y, &one);
        free(A);
        free(x);
        free(C);
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
    const char *sym = "sdot_";
    if (routine && strcmp(routine, "sdot") != 0) {
        if (!strcmp(routine, "sgemv_t") || !strcmp(routine, "sgemv_n"))
            sym = "sgemv_";
        else if (!strcmp(routine, "sgemm"))
            sym = "sgemm_";
        else {
            fprintf(stderr, "blas_probe: BLAS_ROUTINE must be sdot, sgemv_t, sgemv_n or sgemm, not '%s'\n", routine);
            return 2;
        }
        trans_n = strcmp(routine, "sgemv_t") != 0;
    }
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    void *f = h ? dlsym(h, sym) : NULL;
    if (!f) {
        fprintf(stderr, "blas_probe: set BLAS_LIB to a BLAS library with %s (%s)\n", sym, h ? "not found" : dlerror());
        return 2;
    }
    if (!strcmp(sym, "sgemv_"))
        *(void **)&sgemv = f;
    else if (!strcmp(sym, "sgemm_"))
        *(void **)&sgemm = f;
    else
        *(void **)&sdot = f;
    return parity_probe_main(argc, argv, kernel);
}
