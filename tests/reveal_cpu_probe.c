/* reveal_cpu_probe.c: the cpu backend's dot-product kernels (devices/cpu/
 * cpu_dot.c) served to `parity reveal --exec` (parity_probe.h):
 *
 *   reveal_cpu_probe seq IN OUT       cpu_seq_dot, declared seq (fmaf chain)
 *   reveal_cpu_probe stride8 IN OUT   cpu_strided_dot V = 8, declared
 *                                     stride(8, seq, pairwise)
 *   reveal_cpu_probe stride16 IN OUT  the same with V = 16 */
#define PARITY_PROBE_MAIN
#include "parity_probe.h"

#include "cpu_internal.h"

#include <string.h>

static size_t lanes;

static int kernel(parity_probe *p)
{
    if (strcmp(p->dtype, "F32") != 0)
        return 1;
    const float *a = p->a, *b = p->b;
    float *y = p->y;
    for (size_t r = 0; r < p->rows; r++)
        y[r] = lanes ? cpu_strided_dot(a + r * p->n, b + r * p->n, p->n, lanes) : cpu_seq_dot(a + r * p->n, b + r * p->n, p->n);
    p->y_dtype = "F32";
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    lanes = !strcmp(argv[1], "stride8") ? 8 : !strcmp(argv[1], "stride16") ? 16 : 0;
    return parity_probe_main(argc - 1, argv + 1, kernel);
}
