/* blas_drive.c: a real BLAS routine's results as `parity fit` inputs.
 *
 *   blas_drive LIB ROUTINE N ROWS SEED IN.safetensors Y.safetensors
 *
 * LIB is the path of a shared library with the Fortran BLAS interface
 * (netlib, OpenBLAS, BLIS), opened with dlopen so that no alternatives
 * switch decides which one runs.  The thread count is the library's own
 * environment (OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, OMP_NUM_THREADS).
 * ROUTINE, with fp32 values from a fixed generator (SEED):
 *   sdot     ROWS independent calls sdot(N, a_r, 1, b_r, 1)
 *   sgemv_n  y = A x, A of ROWS x N, column major, trans 'N'
 *   sgemv_t  y = A^T x, A of N x ROWS, column major, trans 'T'
 *   sgemm    one column of C = A B (A ROWS x N, B N x 3, C ROWS x 3, beta 0):
 *            column SEED % 3, so that the pairs of a fit see different columns
 * IN holds a [ROWS, N] and b [ROWS, N] (row r's terms a[r,k]*b[r,k] are the
 * products the routine sums for output r); Y holds y [ROWS].  Written by
 * hand (it does not use the library under test).  Exit 0, or 2. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef float (*sdot_fn)(const int *, const float *, const int *, const float *, const int *);
typedef void (*sgemv_fn)(const char *, const int *, const int *, const float *, const float *, const int *,
                         const float *, const int *, const float *, float *, const int *);
typedef void (*sgemm_fn)(const char *, const char *, const int *, const int *, const int *, const float *,
                         const float *, const int *, const float *, const int *, const float *, float *,
                         const int *);

static uint64_t state;
static float rnd(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    float m = (float)((double)(z >> 40) / (double)(1u << 24));
    float v = (1.0f + m) / (float)(1 << (int)((z >> 8) & 7));
    return (z & 1) ? -v : v;
}

static int write_st(const char *path, const char *header, const void *const *data, const size_t *bytes, int k)
{
    size_t hl = strlen(header), pad = (8 - hl % 8) % 8;
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    uint64_t n = hl + pad;
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(n >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(header, 1, hl, f);
    for (size_t i = 0; i < pad; i++)
        fputc(' ', f);
    for (int i = 0; i < k; i++)
        fwrite(data[i], 1, bytes[i], f);
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: blas_drive LIB sdot|sgemv_n|sgemv_t|sgemm N ROWS SEED IN Y\n");
        return 2;
    }
    const char *lib = argv[1], *rt = argv[2];
    int n = atoi(argv[3]), rows = atoi(argv[4]);
    state = strtoull(argv[5], NULL, 10) * 0x2545f4914f6cdd1dull + 1;
    if (n < 1 || rows < 1)
        return 2;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "blas_drive: %s\n", dlerror());
        return 2;
    }
    size_t rn = (size_t)rows * (size_t)n;
    float *a = malloc(rn * sizeof *a), *b = malloc(rn * sizeof *b), *y = malloc((size_t)rows * 3 * sizeof *y);
    if (!a || !b || !y)
        return 2;
    int one = 1;
    float alpha = 1.0f, beta = 0.0f;
    if (!strcmp(rt, "sdot")) {
        sdot_fn f = (sdot_fn)dlsym(h, "sdot_");
        if (!f)
            return 2;
        for (size_t i = 0; i < rn; i++) {
            a[i] = rnd();
            b[i] = rnd();
        }
        for (int r = 0; r < rows; r++)
            y[r] = f(&n, a + (size_t)r * n, &one, b + (size_t)r * n, &one);
    } else if (!strcmp(rt, "sgemv_n") || !strcmp(rt, "sgemv_t")) {
        sgemv_fn f = (sgemv_fn)dlsym(h, "sgemv_");
        if (!f)
            return 2;
        int tr = rt[6] == 't';
        float *A = malloc(rn * sizeof *A), *x = malloc((size_t)n * sizeof *x);
        if (!A || !x)
            return 2;
        for (size_t i = 0; i < rn; i++)
            A[i] = rnd();
        for (int k = 0; k < n; k++)
            x[k] = rnd();
        if (!tr) { /* A is rows x n, lda = rows: A[r + k*rows] */
            f("N", &rows, &n, &alpha, A, &rows, x, &one, &beta, y, &one);
            for (int r = 0; r < rows; r++)
                for (int k = 0; k < n; k++) {
                    a[(size_t)r * n + k] = A[r + (size_t)k * rows];
                    b[(size_t)r * n + k] = x[k];
                }
        } else { /* A is n x rows, lda = n: output r is column r */
            f("T", &n, &rows, &alpha, A, &n, x, &one, &beta, y, &one);
            for (int r = 0; r < rows; r++)
                for (int k = 0; k < n; k++) {
                    a[(size_t)r * n + k] = A[k + (size_t)r * n];
                    b[(size_t)r * n + k] = x[k];
                }
        }
        free(A);
        free(x);
    } else if (!strcmp(rt, "sgemm")) {
        sgemm_fn f = (sgemm_fn)dlsym(h, "sgemm_");
        if (!f)
            return 2;
        int nc = 3, col = (int)(strtoull(argv[5], NULL, 10) % 3);
        float *A = malloc(rn * sizeof *A), *B = malloc((size_t)n * nc * sizeof *B), *C = malloc((size_t)rows * nc * sizeof *C);
        if (!A || !B || !C)
            return 2;
        for (size_t i = 0; i < rn; i++)
            A[i] = rnd();
        for (size_t i = 0; i < (size_t)n * nc; i++)
            B[i] = rnd();
        f("N", "N", &rows, &nc, &n, &alpha, A, &rows, B, &n, &beta, C, &rows);
        for (int r = 0; r < rows; r++) {
            y[r] = C[r + (size_t)col * rows];
            for (int k = 0; k < n; k++) {
                a[(size_t)r * n + k] = A[r + (size_t)k * rows];
                b[(size_t)r * n + k] = B[k + (size_t)col * n];
            }
        }
        free(A);
        free(B);
        free(C);
    } else {
        fprintf(stderr, "blas_drive: unknown routine %s\n", rt);
        return 2;
    }
    char hdr[512];
    size_t ab = rn * sizeof(float);
    snprintf(hdr, sizeof hdr,
             "{\"a\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}}",
             rows, n, ab, rows, n, ab, 2 * ab);
    const void *d1[2] = {a, b};
    size_t s1[2] = {ab, ab};
    if (write_st(argv[6], hdr, d1, s1, 2))
        return 2;
    snprintf(hdr, sizeof hdr, "{\"y\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[0,%zu]}}", rows,
             (size_t)rows * sizeof(float));
    const void *d2[1] = {y};
    size_t s2[1] = {(size_t)rows * sizeof(float)};
    if (write_st(argv[7], hdr, d2, s2, 1))
        return 2;
    return 0;
}
