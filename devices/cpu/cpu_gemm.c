/* cpu_gemm.c: gemm kernels, y[m, n] = epilogue(a[m, :] . b[n, :])
 * (docs/families.md, gemm; docs/cpu-backend.md).
 *
 *   cpu_gemm_seq             k: seq (one fmaf chain over K per output)
 *   cpu_gemm_splitk          k: split(S, stride(V, seq, pairwise), seq), a tiled
 *                            loop nest: 4 output columns share each a[m, :] load
 *   cpu_gemm_splitk_legacy   the same tree, written the straightforward way
 *                            (one output at a time, one lane at a time)
 *   cpu_gemm_splitk_threads  NEGATIVE CONTROL: split(T, ...) with T = the
 *                            OpenMP team size, not the declared split_k
 *   cpu_gemm_batch_split     NEGATIVE CONTROL: split(f(M), ...) with
 *                            f(M) = 8 / M for M < 8, else 1, not split_k
 *   cpu_gemm_atomic_split    NEGATIVE CONTROL (determinism): split(S, stride(V,
 *                            seq, pairwise), atomic), the partials combined in
 *                            an order that changes from launch to launch, as
 *                            atomics arriving in another order would
 *   cpu_gemm_reversed        NEGATIVE CONTROL (new vs legacy): the point says
 *   (and _legacy)            seq; cpu_gemm_reversed is seq, its _legacy runs
 *                            the K loop backwards: reverse(seq), a legacy bug
 *
 * S = param split_k, V = param vec (the class default, 8).  The epilogue is
 * fp32: t = alpha * acc, t = t + beta * c, t = t + bias[n], y = t rounded to
 * param `out` with the k point's saturate (rne).  OpenMP runs over
 * independent outputs only, except in the thread-count negative control. */
#include "cpu_internal.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct gemm_args {
    long M, N, K;
    nx_fmt in, out;
    float alpha, beta;
    int bias;
    long split, vec;
    const fam_reduction *k;
} gemm_args;

/* What the numerics check needs (no shape). */
static nx_status numerics(const fam_spec *s, gemm_args *g, nx_err *err)
{
    nx_status st;
    if ((st = cpu_fmt(s, "in", FAM_DEFAULT_FMT, &g->in, err)) || (st = cpu_fmt(s, "out", FAM_DEFAULT_FMT, &g->out, err)) ||
        (st = cpu_long(s, "split_k", 1, &g->split, err)) || (st = cpu_long(s, "vec", 8, &g->vec, err)) ||
        (st = cpu_f32(s, "alpha", FAM_DEFAULT_STR, &g->alpha, err)) || (st = cpu_f32(s, "beta", FAM_DEFAULT_STR, &g->beta, err)) ||
        (st = cpu_bool(s, "bias", FAM_DEFAULT_BOOL, &g->bias, err)))
        return st;
    if (!cpu_fmt_readable(g->in) || !cpu_fmt_writable(g->out))
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: gemm reads fp32/fp16/bf16/e4m3/e5m2 and writes fp32/fp16/bf16; "
                          "the point has in = %s, out = %s", nx_format(g->in)->name, nx_format(g->out)->name);
    if (g->split < 1 || g->split > (1L << 20) || g->vec < 1 || g->vec > CPU_MAX_VEC)
        return nx_err_set(err, NX_EUNSUPPORTED, "cpu: gemm: split_k = %ld, vec = %ld outside [1, 2^20] x [1, %d]",
                          g->split, g->vec, CPU_MAX_VEC);
    return NX_OK;
}

static nx_status check_seq(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    gemm_args g;
    nx_status st = numerics(s, &g, err);
    return st ? st : cpu_check_red(s, k, "k", "seq", 1, &g.k, err);
}

static nx_status check_split(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    gemm_args g;
    nx_status st = numerics(s, &g, err);
    if (st)
        return st;
    char tree[96];
    snprintf(tree, sizeof tree, "split(%ld, stride(%ld, seq, pairwise), seq)", g.split, g.vec);
    return cpu_check_red(s, k, "k", tree, 1, &g.k, err);
}

/* --- the reductions ------------------------------------------------------------------ */

/* split(S, stride(V, seq, pairwise), seq) over a[0..K) . b[0..K), the
 * straightforward way, one output at a time: slice c = ceil(K / S) terms
 * (an empty slice gives +0), each reduced from scratch by V fmaf lanes, the
 * lanes combined pairwise, the partials added in slice order from +0. */
CPU_HOT static float split_dot(const float *a, const float *b, size_t K, size_t S, size_t V)
{
    size_t c = (K + S - 1) / S;
    float s = 0.0f;
    for (size_t k = 0; k < S; k++) {
        size_t lo = k * c < K ? k * c : K, hi = lo + c < K ? lo + c : K;
        float lane[CPU_MAX_VEC];
        for (size_t l = 0; l < V; l++)
            lane[l] = 0.0f;
        if (V == 8)
            cpu_lanes_fma(lane, a + lo, b + lo, hi - lo, 8);
        else
            cpu_lanes_fma(lane, a + lo, b + lo, hi - lo, V);
        s = s + cpu_pairwise(lane, V);
    }
    return s;
}

typedef struct gemm_io {
    float *a, *c, *bias, *acc; /* decoded whole: [M, K], [M, N], [N]; the fp32 results [M, N] */
    const st_tensor *b;        /* [N, K], decoded a tile of rows at a time (packing) */
} gemm_io;

/* Per-thread packing buffers: rows of b converted to float. */
typedef struct pack {
    float *buf;
    int oom;
} pack;

static float *pack_rows(pack *p, const st_tensor *b, size_t n0, size_t nrows, size_t K)
{
    if (!p->buf)
        return NULL;
    cpu_decode_range(b, n0 * K, nrows * K, p->buf);
    return p->buf;
}

/* cpu_gemm_seq: tiles of 8 output columns.  The tile's rows of b are packed
 * transposed (cpu_pack8), so the 8 fmaf chains advance together (one vector
 * register in the x86-64-v3 clone); each output's chain still runs over
 * i = 0 .. K-1 in order.  A short tile pads with zeros and drops the padding. */
static int k_seq(const gemm_args *g, const gemm_io *io, int nt)
{
    size_t M = (size_t)g->M, N = (size_t)g->N, K = (size_t)g->K, nblk = (N + 7) / 8;
    int oom = 0;
#pragma omp parallel num_threads(nt) reduction(| : oom)
    {
        float *row = malloc(K * sizeof *row), *bt = malloc(8 * K * sizeof *bt);
        oom |= !row || !bt;
#pragma omp for schedule(static)
        for (size_t t = 0; t < nblk; t++) {
            if (!row || !bt)
                continue;
            size_t n0 = t * 8, nb = N - n0 < 8 ? N - n0 : 8;
            cpu_pack8(io->b, n0, nb, K, row, bt);
            for (size_t m = 0; m < M; m++) {
                float y8[8];
                cpu_seq_dot8(io->a + m * K, bt, K, y8); /* k: seq, per output */
                for (size_t j = 0; j < nb; j++)
                    io->acc[m * N + n0 + j] = y8[j];
            }
        }
        free(row);
        free(bt);
    }
    return oom;
}

/* cpu_gemm_splitk: tiles of NB output columns; per K slice the NB x V lane
 * accumulators advance together over a[m, i .. i+V).  Each output's lane l
 * still sees the slice's terms l, l+V, ... in order. */
#define NB 4
static inline __attribute__((always_inline)) void tile_lanes(float lane[NB][CPU_MAX_VEC], const float *ar,
                                                             const float *const *br, size_t lo, size_t hi, size_t V)
{
    size_t i = lo;
    for (; i + V <= hi; i += V)
        for (size_t j = 0; j < NB; j++)
            for (size_t l = 0; l < V; l++)
                lane[j][l] = fmaf(ar[i + l], br[j][i + l], lane[j][l]);
    for (size_t j = 0; j < NB; j++)
        for (size_t l = 0; i + l < hi; l++)
            lane[j][l] = fmaf(ar[i + l], br[j][i + l], lane[j][l]);
}

CPU_HOT static void splitk_tile(const float *ar, const float *bt, size_t nb, size_t K, size_t S, size_t V, float *out)
{
    const float *br[NB];
    for (size_t j = 0; j < NB; j++)
        br[j] = bt + (j < nb ? j : 0) * K; /* a short tile repeats its first column */
    size_t c = (K + S - 1) / S;
    float sum[NB] = {0.0f, 0.0f, 0.0f, 0.0f};
    /* k: split(S, stride(V, seq, pairwise), seq) */
    for (size_t k = 0; k < S; k++) {
        size_t lo = k * c < K ? k * c : K, hi = lo + c < K ? lo + c : K;
        float lane[NB][CPU_MAX_VEC];
        for (size_t j = 0; j < NB; j++)
            for (size_t l = 0; l < V; l++)
                lane[j][l] = 0.0f;
        if (V == 8)
            tile_lanes(lane, ar, br, lo, hi, 8);
        else
            tile_lanes(lane, ar, br, lo, hi, V);
        for (size_t j = 0; j < NB; j++)
            sum[j] = sum[j] + cpu_pairwise(lane[j], V);
    }
    for (size_t j = 0; j < nb; j++)
        out[j] = sum[j];
}

static int k_splitk_tiled(const gemm_args *g, const gemm_io *io, int nt)
{
    size_t M = (size_t)g->M, N = (size_t)g->N, K = (size_t)g->K, nblk = (N + NB - 1) / NB;
    int oom = 0;
#pragma omp parallel num_threads(nt) reduction(| : oom)
    {
        pack p = {malloc(NB * K * sizeof(float)), 0};
        oom |= !p.buf;
#pragma omp for schedule(static)
        for (size_t t = 0; t < nblk; t++) {
            size_t n0 = t * NB, nb = N - n0 < NB ? N - n0 : NB;
            const float *bt = pack_rows(&p, io->b, n0, nb, K);
            if (bt)
                for (size_t m = 0; m < M; m++)
                    splitk_tile(io->a + m * K, bt, nb, K, (size_t)g->split, (size_t)g->vec, io->acc + m * N + n0);
        }
        free(p.buf);
    }
    return oom;
}

/* cpu_gemm_splitk_legacy and cpu_gemm_batch_split: one column of b at a
 * time, one output at a time, split_dot with S slices (S = split_k, or
 * f(M) for the negative control). */
static int k_by_column(const gemm_args *g, const gemm_io *io, int nt, size_t S)
{
    size_t M = (size_t)g->M, N = (size_t)g->N, K = (size_t)g->K;
    int oom = 0;
#pragma omp parallel num_threads(nt) reduction(| : oom)
    {
        pack p = {malloc(K * sizeof(float)), 0};
        oom |= !p.buf;
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++) {
            const float *bn = pack_rows(&p, io->b, n, 1, K);
            if (bn)
                for (size_t m = 0; m < M; m++) /* k: split(S, stride(V, seq, pairwise), seq) */
                    io->acc[m * N + n] = split_dot(io->a + m * K, bn, K, S, (size_t)g->vec);
        }
        free(p.buf);
    }
    return oom;
}

/* cpu_gemm_batch_split (negative control): the split count follows the batch
 * size, so a row alone and the same row in a batch of 8 or more differ. */
static size_t batch_splits(size_t M)
{
    return M >= 8 ? 1 : 8 / M;
}

/* cpu_gemm_splitk_threads (negative control): each thread of the team
 * reduces its own K slice of every output, so the split count is the team
 * size: 1 thread and 2 threads give different bits. */
static int k_splitk_threads(const gemm_args *g, const gemm_io *io, int nt, float *part)
{
    size_t M = (size_t)g->M, N = (size_t)g->N, MN = M * N, K = (size_t)g->K, V = (size_t)g->vec;
    int oom = 0;
#pragma omp parallel num_threads(nt) reduction(| : oom)
    {
        size_t T = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
        size_t c = (K + T - 1) / T, lo = t * c < K ? t * c : K, hi = lo + c < K ? lo + c : K;
        float *bs = malloc((hi - lo + 1) * sizeof *bs);
        oom |= !bs;
        /* k: split(T, stride(V, seq, pairwise), seq): slice t of every output here ... */
        for (size_t n = 0; bs && n < N; n++) {
            cpu_decode_range(io->b, n * K + lo, hi - lo, bs);
            for (size_t m = 0; m < M; m++)
                part[t * MN + m * N + n] = cpu_strided_dot(io->a + m * K + lo, bs, hi - lo, V);
        }
        free(bs);
#pragma omp barrier
        /* ... and the T partials in slice order */
#pragma omp for schedule(static)
        for (size_t r = 0; r < MN; r++) {
            float s = 0.0f;
            for (size_t k = 0; k < T; k++)
                s = s + part[k * MN + r];
            io->acc[r] = s;
        }
    }
    return oom;
}

/* cpu_gemm_atomic_split (negative control): like k_by_column, but the S
 * partials of every output are added starting at slice `first` and wrapping
 * around, with `first` advanced at every launch. */
static unsigned long atomic_launches;

static int k_atomic_split(const gemm_args *g, const gemm_io *io, int nt)
{
    size_t M = (size_t)g->M, N = (size_t)g->N, K = (size_t)g->K, S = (size_t)g->split, V = (size_t)g->vec;
    size_t first;
#pragma omp atomic capture
    first = atomic_launches++;
    first %= S;
    size_t c = (K + S - 1) / S;
    int oom = 0;
#pragma omp parallel num_threads(nt) reduction(| : oom)
    {
        pack p = {malloc(K * sizeof(float)), 0};
        oom |= !p.buf;
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++) {
            const float *bn = pack_rows(&p, io->b, n, 1, K);
            for (size_t m = 0; bn && m < M; m++) {
                /* k: split(S, stride(V, seq, pairwise), atomic): this launch's order */
                float s = 0.0f;
                for (size_t j = 0; j < S; j++) {
                    size_t k = (first + j) % S;
                    size_t lo = k * c < K ? k * c : K, hi = lo + c < K ? lo + c : K;
                    s = s + cpu_strided_dot(io->a + m * K + lo, bn + lo, hi - lo, V);
                }
                io->acc[m * N + n] = s;
            }
        }
        free(p.buf);
    }
    return oom;
}

/* cpu_gemm_reversed_legacy (negative control): reverse(seq), while the point
 * it serves declares seq. */
static int k_reversed(const gemm_args *g, const gemm_io *io, int nt)
{
    size_t M = (size_t)g->M, N = (size_t)g->N, K = (size_t)g->K;
    int oom = 0;
#pragma omp parallel num_threads(nt) reduction(| : oom)
    {
        pack p = {malloc(K * sizeof(float)), 0};
        oom |= !p.buf;
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++) {
            const float *bn = pack_rows(&p, io->b, n, 1, K);
            for (size_t m = 0; bn && m < M; m++) {
                float s = 0.0f; /* reverse(seq) */
                for (size_t i = K; i-- > 0;)
                    s = fmaf(io->a[m * K + i], bn[i], s);
                io->acc[m * N + n] = s;
            }
        }
        free(p.buf);
    }
    return oom;
}

static nx_status check_atomic(const fam_spec *s, const cpu_kernel *k, nx_err *err)
{
    gemm_args g;
    nx_status st = numerics(s, &g, err);
    if (st)
        return st;
    char tree[96];
    snprintf(tree, sizeof tree, "split(%ld, stride(%ld, seq, pairwise), atomic)", g.split, g.vec);
    return cpu_check_red(s, k, "k", tree, 1, &g.k, err);
}

/* --- running ------------------------------------------------------------------------- */

static nx_status run(const cpu_run *r, nx_err *err)
{
    const fam_spec *s = r->spec;
    gemm_args g;
    nx_status st;
    if ((st = numerics(s, &g, err)) || (st = cpu_dim(s, "M", -1, &g.M, err)) || (st = cpu_dim(s, "N", -1, &g.N, err)) ||
        (st = cpu_dim(s, "K", -1, &g.K, err)))
        return st;
    g.k = fam_reduction_get(s, "k");
    size_t M = (size_t)g.M, N = (size_t)g.N;
    gemm_io io = {0};
    io.b = st_find(r->in, "b");
    float *part = NULL;
    io.acc = malloc(M * N * sizeof *io.acc);
    if (r->kernel == &cpu_k_gemm_splitk_threads)
        part = malloc((size_t)r->threads * M * N * sizeof *part);
    if (!io.acc || (r->kernel == &cpu_k_gemm_splitk_threads && !part)) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory");
        goto done;
    }
    if ((st = cpu_decode(st_find(r->in, "a"), r->threads, &io.a, err)) ||
        (g.beta != 0 && (st = cpu_decode(st_find(r->in, "c"), r->threads, &io.c, err))) ||
        (g.bias && (st = cpu_decode(st_find(r->in, "bias"), r->threads, &io.bias, err))))
        goto done;
    const cpu_kernel *k = r->kernel;
    int oom;
    if (k == &cpu_k_gemm_seq || k == &cpu_k_gemm_reversed)
        oom = k_seq(&g, &io, r->threads);
    else if (k == &cpu_k_gemm_reversed_legacy)
        oom = k_reversed(&g, &io, r->threads);
    else if (k == &cpu_k_gemm_atomic_split)
        oom = k_atomic_split(&g, &io, r->threads);
    else if (k == &cpu_k_gemm_splitk)
        oom = k_splitk_tiled(&g, &io, r->threads);
    else if (k == &cpu_k_gemm_splitk_legacy)
        oom = k_by_column(&g, &io, r->threads, (size_t)g.split);
    else if (k == &cpu_k_gemm_batch_split)
        oom = k_by_column(&g, &io, r->threads, batch_splits(M));
    else
        oom = k_splitk_threads(&g, &io, r->threads, part);
    if (oom) {
        st = nx_err_set(err, NX_ENOMEM, "out of memory (packing buffers)");
        goto done;
    }
    /* epilogue, fp32 */
    int sat = g.k->point.saturate;
#pragma omp parallel for num_threads(r->threads) schedule(static)
    for (size_t i = 0; i < M * N; i++) {
        float t = g.alpha * io.acc[i];
        if (g.beta != 0)
            t = t + g.beta * io.c[i];
        if (g.bias)
            t = t + io.bias[i % N];
        io.acc[i] = t;
    }
    st = cpu_emit(r->out, "y", g.out, sat, 2, (int64_t[]){g.M, g.N}, io.acc, r->threads, err);
done:
    free(part);
    free(io.a);
    free(io.c);
    free(io.bias);
    free(io.acc);
    return st;
}

const cpu_kernel cpu_k_gemm_seq = {"cpu_gemm_seq", "gemm", "k: seq; one fmaf chain per output", check_seq, run};
const cpu_kernel cpu_k_gemm_splitk = {"cpu_gemm_splitk", "gemm",
                                      "k: split(S, stride(V, seq, pairwise), seq); tiled, 4 columns per tile",
                                      check_split, run};
const cpu_kernel cpu_k_gemm_splitk_legacy = {"cpu_gemm_splitk_legacy", "gemm",
                                             "k: split(S, stride(V, seq, pairwise), seq); one output at a time",
                                             check_split, run};
const cpu_kernel cpu_k_gemm_splitk_threads = {
    "cpu_gemm_splitk_threads", "gemm",
    "negative control: k: split(T, stride(V, seq, pairwise), seq), T = OpenMP threads (declared split_k nominal)",
    check_split, run};
const cpu_kernel cpu_k_gemm_batch_split = {
    "cpu_gemm_batch_split", "gemm",
    "negative control: k: split(f(M), stride(V, seq, pairwise), seq), f(M) = 8/M below 8 rows, else 1",
    check_split, run};
const cpu_kernel cpu_k_gemm_atomic_split = {
    "cpu_gemm_atomic_split", "gemm",
    "negative control: k: split(S, stride(V, seq, pairwise), atomic), the partials' order changes every launch",
    check_atomic, run};
const cpu_kernel cpu_k_gemm_reversed = {"cpu_gemm_reversed", "gemm",
                                        "k: seq (the new kernel of the new-vs-legacy negative control)", check_seq,
                                        run};
const cpu_kernel cpu_k_gemm_reversed_legacy = {
    "cpu_gemm_reversed_legacy", "gemm",
    "negative control: claims k: seq but runs reverse(seq), a legacy kernel with a reversed K loop", check_seq, run};
