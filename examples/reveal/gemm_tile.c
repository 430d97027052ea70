/* gemm_tile.c: a register-tiled fp32 gemm served to `parity reveal --grid
 * M,N` (docs/reveal.md "Grid classes").
 *
 * reveal sets PARITY_GRID=M,N; every call is one M x N output C = A B,
 * row r = i * N + j of the probe file holding A's row i as a and B's
 * column j as b.  The kernel reads A's row i from row i * N and B's column
 * j from row j, as a gemm reads its operands: a batch that is not one
 * gemm's would come out wrong, and reveal's confirmation would say so.
 *
 * The outputs of whole 4 x 4 tiles run 4 fused lanes (fmaf) over the terms
 * in steps of 4, combined (l0 + l1) + (l2 + l3), the n % 4 tail terms then
 * fused into the sum one by one.  The edge outputs, the last M % 4 rows and
 * the last N % 4 columns, which no whole tile covers, run one accumulator
 * with a separate multiply and add (build with -ffp-contract=off).  On a
 * 6 x 10 grid the edge is rows 4, 5 and columns 8, 9: the class
 * `i >= M - M % 4 || j >= N - N % 4`.
 *
 *   cc -O2 -ffp-contract=off -shared -fPIC -I parity/reveal examples/reveal/gemm_tile.c -o libgemm_tile.so -lm
 *   parity reveal --dlopen ./libgemm_tile.so:gemm_tile --grid 6,10 --n 300
 *   cc -O2 -ffp-contract=off -I parity/reveal -DGEMM_TILE_MAIN examples/reveal/gemm_tile.c -o gemm_tile -lm
 *   parity reveal --serve './gemm_tile --serve' --grid 6,10 --n 300 */
#ifdef GEMM_TILE_MAIN
#define PARITY_PROBE_MAIN
#endif
#include "parity_probe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE 4

int gemm_tile(parity_probe *p)
{
    const char *g = getenv("PARITY_GRID");
    unsigned long M = 0, N = 0;
    char tail;
    if (!g || sscanf(g, "%lu,%lu%c", &M, &N, &tail) != 2 || M * N != p->rows || strcmp(p->dtype, "F32") != 0)
        return 1; /* not a grid call (reveal without --grid), or not fp32 */
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    const size_t n = p->n, q = n - n % TILE;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            const float *x = a + i * N * n, *w = b + j * n; /* A's row i, B's column j */
            float s;
            if (i >= M - M % TILE || j >= N - N % TILE) {
                s = 0;
                for (size_t k = 0; k < n; k++) {
                    float t = x[k] * w[k];
                    s = s + t;
                }
            } else {
                float l[TILE] = {0, 0, 0, 0};
                for (size_t k = 0; k < q; k += TILE)
                    for (int u = 0; u < TILE; u++)
                        l[u] = fmaf(x[k + u], w[k + u], l[u]);
                s = (l[0] + l[1]) + (l[2] + l[3]);
                for (size_t k = q; k < n; k++)
                    s = fmaf(x[k], w[k], s);
            }
            y[i * N + j] = s;
        }
    p->y_dtype = "F32";
    return 0;
}

#ifdef GEMM_TILE_MAIN
int main(int argc, char **argv)
{
    return parity_probe_main(argc, argv, gemm_tile);
}
#endif
