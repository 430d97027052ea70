/* dot8.c: a hand-written C kernel served to `parity reveal` (docs/reveal.md).
 *
 * A dot product of fp32 rows with 8 strided accumulators, each a separate
 * multiply and add (build with -ffp-contract=off), combined as a shared-
 * memory halving: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).  Its
 * point is { tree = "stride(8, seq, halving)", fma = false }.  More kernels
 * below (a bf16 epilogue; 4 fused lanes with an irregular combine and a tail;
 * the same lanes after a clean-up loop run first).
 *
 *   cc -O2 -ffp-contract=off -I parity/reveal -DDOT8_MAIN examples/reveal/dot8.c -o dot8 -lm
 *   parity reveal --exec './dot8 {in} {out}' --n 256      # one process per batch
 *   parity reveal --serve './dot8 --serve' --n 256        # one process, a loop
 *   cc -O2 -ffp-contract=off -shared -fPIC -I parity/reveal examples/reveal/dot8.c -o libdot8.so -lm
 *   parity reveal --dlopen ./libdot8.so:dot8 --n 256      # in process */
#ifdef DOT8_MAIN
#define PARITY_PROBE_MAIN
#endif
#include "parity_probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int dot8(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    for (size_t r = 0; r < p->rows; r++) {
        float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (size_t i = 0; i < p->n; i++) {
            float t = a[r * p->n + i] * b[r * p->n + i];
            l[i % 8] = l[i % 8] + t;
        }
        for (int o = 4; o >= 1; o /= 2)
            for (int j = 0; j < o; j++)
                l[j] = l[j] + l[j + o];
        y[r] = l[0];
    }
    p->y_dtype = "F32";
    return 0;
}

/* A bf16-out variant: the same sums, the result rounded to bf16 (ties to
 * even) as a kernel with a bf16 epilogue does. */
int dot8_bf16(parity_probe *p)
{
    int rc = dot8(p);
    if (rc)
        return rc;
    float *yf = p->y;
    unsigned short *yb = p->y;
    for (size_t r = 0; r < p->rows; r++) {
        unsigned int u;
        memcpy(&u, &yf[r], 4);
        u += 0x7fff + ((u >> 16) & 1);
        yb[r] = (unsigned short)(u >> 16);
    }
    p->y_dtype = "BF16";
    return 0;
}

/* Four fmaf lanes over x[i] * w[i] from i while four terms remain, each
 * lane from +0: l[j] takes the terms i + j, i + 4 + j, ...  Returns where
 * the terms left start. */
static size_t lanes4_fma(const float *x, const float *w, size_t i, size_t n, float l[4])
{
    l[0] = l[1] = l[2] = l[3] = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++)
            l[j] = fmaf(x[i + j], w[i + j], l[j]);
    return i;
}

/* A 4-lane loop with fused multiply-adds, the lanes combined as
 * (l0 + l3) + (l1 + l2), and a scalar tail that continues from the
 * combined value: { tree = "body(4, stride(4, seq, expr(((0 + 3) + (1 + 2)))),
 * seq, carry)", fma = true } (at n a multiple of 4 the body alone). */
int dot4_fma(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    for (size_t r = 0; r < p->rows; r++) {
        const float *x = a + r * p->n, *w = b + r * p->n;
        float l[4];
        size_t i = lanes4_fma(x, w, 0, p->n, l);
        float s = (l[0] + l[3]) + (l[1] + l[2]);
        for (; i < p->n; i++)
            s = fmaf(x[i], w[i], s);
        y[r] = s;
    }
    p->y_dtype = "F32";
    return 0;
}

/* dot8_mixed's and dot8_cast's body: 8 fused float lanes over the blocks
 * of 8, combined pairwise in double; *i is where the tail starts. */
static double lanes8_double(const float *x, const float *w, size_t n, size_t *i)
{
    float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (*i = 0; *i + 8 <= n; *i += 8)
        for (int u = 0; u < 8; u++)
            l[u] = fmaf(x[*i + u], w[*i + u], l[u]);
    return (((double)l[0] + l[1]) + ((double)l[2] + l[3])) + (((double)l[4] + l[5]) + ((double)l[6] + l[7]));
}

/* Three parts in three arithmetics: 8 fused float lanes over blocks of 8,
 * the lanes combined pairwise in double (a horizontal sum widened before
 * it is added), then a scalar tail that continues from that double, each
 * product rounded to float and added in double (build with
 * -ffp-contract=off); the result rounded to float once, at the end:
 * { tree = "body(8, stride(8, seq, pairwise@fp64), seq[acc=fp64,
 * product=fp32], carry)", fma = true }.  No point with one setting for the
 * whole tree, or with one part apart, reproduces it (docs/reveal.md
 * "Per-part arithmetic").  dot8_cast, below, keeps the combined lanes in a
 * float before the tail. */
int dot8_mixed(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    for (size_t r = 0; r < p->rows; r++) {
        const float *x = a + r * p->n, *w = b + r * p->n;
        size_t i = 0;
        double d = lanes8_double(x, w, p->n, &i);
        for (; i < p->n; i++) {
            float t = x[i] * w[i];
            d = d + t;
        }
        y[r] = (float)d;
    }
    p->y_dtype = "F32";
    return 0;
}

/* dot8_mixed's lanes and double combine, the combined value then kept in
 * a float, `s = (float)d`, and the tail fused in float from it: { tree =
 * "body(8, stride(8, seq, pairwise@fp64)[store=fp32], seq, carry)", fma =
 * true } (docs/numerics.md section 4.2, the seventh edition's store). */
int dot8_cast(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    for (size_t r = 0; r < p->rows; r++) {
        const float *x = a + r * p->n, *w = b + r * p->n;
        size_t i = 0;
        double d = lanes8_double(x, w, p->n, &i);
        float s = (float)d;
        for (; i < p->n; i++)
            s = fmaf(x[i], w[i], s);
        y[r] = s;
    }
    p->y_dtype = "F32";
    return 0;
}

/* The clean-up loop first (docs/numerics.md's eighth edition): the first
 * n mod 4 products fused into one float, then 4 fused lanes over the rest,
 * combined pairwise and added to it.  Its point is { tree = "head(4, seq,
 * stride(4, seq, pairwise))", fma = true }; at a length that is a
 * multiple of 4 there is no head, and the lanes alone show. */
int dot4_head(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    for (size_t r = 0; r < p->rows; r++) {
        const float *x = a + r * p->n, *w = b + r * p->n;
        size_t h = p->n % 4, i = 0;
        float s = 0;
        for (; i < h; i++)
            s = fmaf(x[i], w[i], s);
        float l[4];
        lanes4_fma(x, w, i, p->n, l);
        y[r] = s + ((l[0] + l[1]) + (l[2] + l[3]));
    }
    p->y_dtype = "F32";
    return 0;
}

/* A gemv: y = A x, the rows of a call being the outputs and x one vector
 * for all of them, read from row 0's b (a kernel that takes one b per
 * call); each output is dot4_fma's loop over its row.  Reveal it with
 * --shared-b: without, every row after the first is computed with the
 * wrong b. */
int gemv4_fma(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *x = p->b;
    float *y = p->y;
    for (size_t r = 0; r < p->rows; r++) {
        parity_probe one = *p;
        float *w = malloc(p->n * sizeof *w);
        if (!w)
            return 1;
        memcpy(w, x, p->n * sizeof *w);
        one.rows = 1;
        one.a = (const float *)p->a + r * p->n;
        one.b = w;
        one.y = y + r;
        int rc = dot4_fma(&one);
        free(w);
        if (rc)
            return rc;
    }
    p->y_dtype = "F32";
    return 0;
}

#ifdef DOT8_MAIN
int main(int argc, char **argv)
{
    return parity_probe_main(argc, argv, dot8);
}
#endif
