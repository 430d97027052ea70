/* blas_probe.c: sdot of a BLAS library served to `parity reveal`: each
 * probe row r is sdot(n, a_r, 1, b_r, 1) of the library named by the
 * environment variable BLAS_LIB (a path, opened with dlopen, so that no
 * alternatives switch decides which library runs).  blas.sh wraps it.
 *
 *   cc -O2 -I parity/reveal examples/reveal/blas_probe.c -o blas_probe -ldl */
#define PARITY_PROBE_MAIN
#include "parity_probe.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef float (*sdot_fn)(const int *, const float *, const int *, const float *, const int *);
static sdot_fn sdot;

static int kernel(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    int n = (int)p->n, one = 1;
    for (size_t r = 0; r < p->rows; r++)
        y[r] = sdot(&n, a + r * p->n, &one, b + r * p->n, &one);
    p->y_dtype = "F32";
    return 0;
}

int main(int argc, char **argv)
{
    const char *lib = getenv("BLAS_LIB");
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    if (!h || !(*(void **)&sdot = dlsym(h, "sdot_"))) {
        fprintf(stderr, "blas_probe: set BLAS_LIB to a BLAS library with sdot_ (%s)\n", h ? "no sdot_" : dlerror());
        return 2;
    }
    return parity_probe_main(argc, argv, kernel);
}
