/* nx_simd.c: the vector path of the fast engine (nx_simd.h).
 *
 * The program is compiled once into a list of vector operations (vop):
 * each reads its operands from the previous operation's register (a chain
 * step), a slot (an earlier result, kept while it has readers), a value
 * term or a product term, and writes a register and, when some later
 * operation reads it, a slot.  A block of W rows is first transposed into
 * lane order (term t of row k at t * W + k, converted exactly to the
 * accumulator's type), then every operation runs once for the W rows with
 * one vector instruction.  Every lane therefore does exactly the scalar
 * operations of its row, in its row's order.
 *
 * The kernels are one body (KERNEL below) instantiated for three variants
 * and two lane types; the AVX ones carry target attributes, so the default
 * build stays portable and the choice is made at run time. */
#include "nx_simd.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define NX_SIMD_X86 1
#endif

enum { C_ZERO, C_START, C_LEAF, C_ADD, C_FMA };
enum { K_R, K_S, K_V, K_P };   /* register, slot, value term, product term */

typedef struct vop {
    uint8_t code, xk, yk;
    int32_t dst;                /* slot written, -1: none */
    int32_t x, y;               /* slot or term per xk, yk (FMA: y is a term) */
} vop;

typedef struct vprog {
    vop *ops;
    size_t nops;
    int nslots;
    int32_t result_slot;
    int dbl;                    /* lanes are binary64 */
    int dot;
    int window;                 /* terms through a transposed window (WIN terms) */
} vprog;

/* Terms are read through a window of WIN consecutive terms of every lane,
 * transposed into lane order a whole cache line of every row at a time:
 * gathering term by term from rows a power of two apart hits one L1 set
 * with every lane.  A program whose terms jump (stride trees) would refill
 * the window too often; it gathers directly. */
#define WIN 64

/* ---------------------------------------------------------------------- */
/* Eligibility. */

static int member32(nx_fmt f) { return f == NX_FP32 || f == NX_BF16 || f == NX_FP16; }
static int member64(nx_fmt f) { return f == NX_FP64 || member32(f); }

/* The lane format the program needs (NX_FP32 / NX_FP64), or -1. */
static int lane_fmt(const nx_program *p, nx_fmt a_fmt, nx_fmt b_fmt, nx_fmt c_fmt)
{
    int T = -1;
    if (p->nops == 0 || p->result >= 0)
        return -1;
    for (size_t i = 0; i < p->nops; i++) {
        const nx_op *op = &p->ops[i];
        if (op->kind == NX_OP_ATOM)
            return -1;
        if (op->kind != NX_OP_LEAF && op->kind != NX_OP_ADD)
            continue;
        if (op->mode != NX_RNE || (op->fmt != NX_FP32 && op->fmt != NX_FP64))
            return -1;
        if (T < 0)
            T = op->fmt;
        else if (T != op->fmt)
            return -1;
    }
    if (T < 0)
        T = NX_FP64; /* zero or the start value alone: exact in binary64 */
    int (*member)(nx_fmt) = T == NX_FP32 ? member32 : member64;
    if (p->in >= 0 && !(p->in == NX_FP64 || (p->in == NX_FP32 && member32(a_fmt) && (!p->dot || member32(b_fmt))) ||
                        (p->in == (int)a_fmt && (!p->dot || p->in == (int)b_fmt))))
        return -1; /* an `in` conversion that changes values */
    if (!member(a_fmt) || (p->dot && !member(b_fmt)) || (p->start && !member(c_fmt)))
        return -1;
    /* product terms: rounded once, to the lane format (or fused) */
    for (size_t i = 0; i < p->nops && p->dot; i++) {
        const nx_op *op = &p->ops[i];
        int xt = (op->kind == NX_OP_LEAF || op->kind == NX_OP_ADD) && NX_SRC_IS_TERM(op->x);
        int yt = op->kind == NX_OP_ADD && !op->fma && NX_SRC_IS_TERM(op->y);
        if (op->kind == NX_OP_LEAF && xt && (op->pfmt == op->fmt || op->pfmt == 0xff))
            continue; /* one rounding of the exact product to fmt */
        if ((xt || yt) && op->pfmt != T)
            return -1;
    }
    return T;
}

int nx_simd_eligible(const nx_program *p, nx_fmt a_fmt, nx_fmt b_fmt, nx_fmt c_fmt)
{
    return lane_fmt(p, a_fmt, b_fmt, c_fmt) >= 0;
}

/* ---------------------------------------------------------------------- */
/* Compilation: operands, chain registers and slots. */

static void vprog_free(vprog *v)
{
    free(v->ops);
}

static int vprog_build(vprog *v, const nx_program *p, int T)
{
    memset(v, 0, sizeof *v);
    v->dbl = T == NX_FP64;
    size_t nops = p->nops ? p->nops : 1;
    int32_t *uses = calloc(nops, sizeof *uses), *last = malloc(nops * sizeof *last),
            *slot = malloc(nops * sizeof *slot), *dying = malloc((nops + 1) * sizeof *dying),
            *next = malloc(nops * sizeof *next), *freel = malloc(nops * sizeof *freel);
    v->ops = malloc(nops * sizeof *v->ops);
    int ok = uses && last && slot && dying && next && freel && v->ops;
    if (ok) {
        v->nops = p->nops;
        for (size_t i = 0; i < p->nops; i++) {
            last[i] = -1;
            slot[i] = -1;
        }
        for (size_t i = 0; i < p->nops; i++) {
            const nx_op *op = &p->ops[i];
            if (op->kind != NX_OP_LEAF && op->kind != NX_OP_ADD)
                continue;
            if (!NX_SRC_IS_TERM(op->x)) {
                uses[NX_SRC_OP(op->x)]++;
                last[NX_SRC_OP(op->x)] = (int32_t)i;
            }
            if (op->kind == NX_OP_ADD && !op->fma && !NX_SRC_IS_TERM(op->y)) {
                uses[NX_SRC_OP(op->y)]++;
                last[NX_SRC_OP(op->y)] = (int32_t)i;
            }
        }
        int32_t res = NX_SRC_OP(p->result);
        uses[res]++;
        last[res] = (int32_t)p->nops; /* read after the last operation */
        /* operation i's register is read by i + 1 when i + 1 is its only
         * reader; otherwise it needs a slot */
        for (size_t i = 0; i < p->nops; i++) {
            const nx_op *op = &p->ops[i];
            vop *o = &v->ops[i];
            memset(o, 0, sizeof *o);
            o->code = op->kind == NX_OP_ZERO    ? C_ZERO
                    : op->kind == NX_OP_START ? C_START
                    : op->kind == NX_OP_LEAF  ? C_LEAF
                    : op->fma                 ? C_FMA
                                              : C_ADD;
            if (o->code == C_LEAF || o->code == C_ADD || o->code == C_FMA) {
                int32_t s = op->x;
                o->xk = NX_SRC_IS_TERM(s) ? (p->dot ? K_P : K_V)
                      : (NX_SRC_OP(s) == (int32_t)i - 1 && uses[i - 1] == 1) ? K_R
                                                                              : K_S;
                o->x = s;
            }
            if (o->code == C_ADD) {
                int32_t s = op->y;
                o->yk = NX_SRC_IS_TERM(s) ? (p->dot ? K_P : K_V)
                      : (NX_SRC_OP(s) == (int32_t)i - 1 && uses[i - 1] == 1 && o->xk != K_R) ? K_R
                                                                                              : K_S;
                o->y = s;
            }
            if (o->code == C_FMA)
                o->y = op->y;
        }
        /* which results need a slot: those read by anyone but the next
         * operation's register (next[] doubles as the dying lists' links) */
        for (size_t k = 0; k <= p->nops; k++)
            dying[k] = -1;
        for (size_t i = 0; i < p->nops; i++) {
            int reg = i + 1 < p->nops && uses[i] == 1 && last[i] == (int32_t)i + 1 &&
                      (v->ops[i + 1].xk == K_R || v->ops[i + 1].yk == K_R);
            if (reg || last[i] < 0)
                continue;
            slot[i] = 0; /* numbered below */
            next[i] = dying[last[i]];
            dying[last[i]] = (int32_t)i;
        }
        int nfree = 0, nslots = 0;
        for (size_t i = 0; i < p->nops; i++) {
            /* operation i reads its operands before it writes its slot */
            for (int32_t j = dying[i]; j >= 0; j = next[j])
                freel[nfree++] = slot[j];
            if (slot[i] == 0)
                slot[i] = nfree ? freel[--nfree] : nslots++;
            v->ops[i].dst = slot[i];
        }
        for (size_t i = 0; i < p->nops; i++) {
            vop *o = &v->ops[i];
            if (o->xk == K_S)
                o->x = slot[NX_SRC_OP(o->x)];
            if (o->code == C_ADD && o->yk == K_S)
                o->y = slot[NX_SRC_OP(o->y)];
        }
        v->result_slot = slot[res];
        v->nslots = nslots ? nslots : 1;
        v->dot = p->dot;
        /* window refills, in program order */
        size_t w0 = SIZE_MAX / 2, refills = 0;
        for (size_t i = 0; i < p->nops; i++) {
            const vop *o = &v->ops[i];
            int32_t ts[2];
            int nt = 0;
            if ((o->code == C_LEAF || o->code == C_ADD || o->code == C_FMA) && (o->xk == K_V || o->xk == K_P))
                ts[nt++] = o->x;
            if (o->code == C_FMA || (o->code == C_ADD && (o->yk == K_V || o->yk == K_P)))
                ts[nt++] = o->y;
            for (int j = 0; j < nt; j++)
                if ((size_t)ts[j] - w0 >= WIN) {
                    w0 = (size_t)ts[j] / WIN * WIN;
                    refills++;
                }
        }
        v->window = refills * WIN <= 2 * p->n + WIN;
    }
    free(uses);
    free(last);
    free(slot);
    free(dying);
    free(next);
    free(freel);
    if (!ok)
        vprog_free(v);
    return ok ? 0 : -1;
}

/* ---------------------------------------------------------------------- */
/* Terms: gathered straight from the rows as stored, one lane per row,
 * converted exactly to the lane type.  A lane's byte offset from the
 * block's first row is off[k] (a row past the end repeats the last one).
 * 16-bit elements are gathered as the 32-bit word that ends with them
 * (never past the end of a row); term 0 of those is read lane by lane. */

static inline float f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023u, u;
    if (e == 31)
        u = s | 0x7f800000u | m << 13; /* inf, NaN (payload kept) */
    else if (e)
        u = s | (e + 112) << 23 | m << 13;
    else {
        float v = (float)m * 0x1p-24f; /* subnormal or zero: exact */
        memcpy(&u, &v, 4);
        u |= s;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* One element, exactly, as a double. */
static inline double elem(const uint8_t *p, int store)
{
    switch (store) {
    case NX_ST_F64: {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    case NX_ST_F32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case NX_ST_BF16: {
        uint32_t u = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 24;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default:
        return f16_to_f32((uint16_t)(p[0] | p[1] << 8));
    }
}

static const unsigned store_bytes[4] = {8, 4, 2, 2};

/* Lane by lane (the scalar variant, and term 0 of 16-bit elements). */
#define LANES(T, W, out, base, offs, t, store)                                                      \
    do {                                                                                            \
        size_t es_ = store_bytes[store];                                                            \
        for (int k_ = 0; k_ < (W); k_++)                                                            \
            (out)[k_] = (T)elem((base) + (size_t)(offs)[k_] + (t) * es_, (store));                   \
    } while (0)

/* Term t of a (GA_) or b (GB_) in every lane: from the window (refilled
 * when t is outside it) or gathered. */
#define WIN_(t, FILL)                                                                                 \
    if (win && (size_t)(t) - w0 >= WIN) {                                                             \
        w0 = (size_t)(t) / WIN * WIN;                                                                 \
        FILL(pa, sa, oa, n, w0, wa);                                                                  \
        if (dot)                                                                                      \
            FILL(pb, sb, ob, n, w0, wb);                                                              \
    }
#define GA_(t, LOAD, W, GATHER, FILL) (win ? LOAD(wa + ((size_t)(t) - w0) * W) : GATHER(pa, ia, oa, (size_t)(t), sa))
#define GB_(t, LOAD, W, GATHER, FILL) (win ? LOAD(wb + ((size_t)(t) - w0) * W) : GATHER(pb, ib, ob, (size_t)(t), sb))

/* KERNEL(ATTR, NAME, T, V, W, LOAD, STORE, ADD, MUL, FMA, ZERO, GATHER, IDX, FILL) defines
 * NAME(vp, src, offs, tc, slots, res): one block of W rows.  src[0], src[1]:
 * a and b, each {row pointer, store}; GATHER(base, idx, offs, t, store) is
 * term t of every lane. */
#define KERNEL(ATTR, NAME, T, V, W, LOAD, STORE, ADD, MUL, FMA, ZERO, GATHER, IDXT, IDX, FILL)         \
    ATTR static void NAME(const vprog *vp, const uint8_t *pa, int sa, const int32_t *oa,               \
                          const uint8_t *pb, int sb, const int32_t *ob, const T *tc, T *slots, T *res,  \
                          T *wa, T *wb, size_t n)                                                       \
    {                                                                                                 \
        IDXT ia = IDX(oa), ib = IDX(ob);                                                              \
        size_t w0 = SIZE_MAX / 2;                                                                     \
        const int win = vp->window, dot = vp->dot;                                                    \
        V r = ZERO();                                                                                 \
        const vop *o = vp->ops, *end = vp->ops + vp->nops;                                            \
        for (; o < end; o++) {                                                                        \
            V x, y;                                                                                   \
            switch (o->xk) {                                                                          \
            case K_R: x = r; break;                                                                   \
            case K_S: x = LOAD(slots + (size_t)o->x * W); break;                                      \
            case K_V: WIN_(o->x, FILL) x = GA_(o->x, LOAD, W, GATHER, FILL); break;                                \
            default:                                                                                  \
                WIN_(o->x, FILL)                                                                      \
                x = MUL(GA_(o->x, LOAD, W, GATHER, FILL), GB_(o->x, LOAD, W, GATHER, FILL));   \
                break;                                                                                \
            }                                                                                         \
            switch (o->code) {                                                                        \
            case C_ZERO: r = ZERO(); break;                                                           \
            case C_START: r = LOAD(tc); break;                                                        \
            case C_LEAF: r = x; break;                                                                \
            case C_FMA:                                                                               \
                WIN_(o->y, FILL)                                                                      \
                r = FMA(GA_(o->y, LOAD, W, GATHER, FILL), GB_(o->y, LOAD, W, GATHER, FILL), x); \
                break;                                                                                \
            default:                                                                                  \
                switch (o->yk) {                                                                      \
                case K_R: y = r; break;                                                               \
                case K_S: y = LOAD(slots + (size_t)o->y * W); break;                                  \
                case K_V: WIN_(o->y, FILL) y = GA_(o->y, LOAD, W, GATHER, FILL); break;                            \
                default:                                                                              \
                    WIN_(o->y, FILL)                                                                  \
                    y = MUL(GA_(o->y, LOAD, W, GATHER, FILL), GB_(o->y, LOAD, W, GATHER, FILL)); \
                    break;                                                                            \
                }                                                                                     \
                r = ADD(x, y);                                                                        \
                break;                                                                                \
            }                                                                                         \
            if (o->dst >= 0)                                                                          \
                STORE(slots + (size_t)o->dst * W, r);                                                 \
        }                                                                                             \
        (void)r;                                                                                      \
        (void)ib;                                                                                     \
        memcpy(res, slots + (size_t)vp->result_slot * W, sizeof(T) * W);                              \
    }

/* Scalar: W lanes as arrays, per-lane fmaf/fma (a library call or one
 * instruction: the same bits). */
typedef struct sf8 { float v[8]; } sf8;
typedef struct sd4 { double v[4]; } sd4;
static inline sf8 sf_load(const float *p) { sf8 r; memcpy(r.v, p, sizeof r.v); return r; }
static inline void sf_store(float *p, sf8 a) { memcpy(p, a.v, sizeof a.v); }
static inline sf8 sf_zero(void) { sf8 r; for (int i = 0; i < 8; i++) r.v[i] = 0.0f; return r; }
static inline sf8 sf_add(sf8 a, sf8 b) { for (int i = 0; i < 8; i++) a.v[i] = a.v[i] + b.v[i]; return a; }
static inline sf8 sf_mul(sf8 a, sf8 b) { for (int i = 0; i < 8; i++) a.v[i] = a.v[i] * b.v[i]; return a; }
static inline sf8 sf_fma(sf8 a, sf8 b, sf8 c) { for (int i = 0; i < 8; i++) c.v[i] = fmaf(a.v[i], b.v[i], c.v[i]); return c; }
static inline sf8 sf_gather(const uint8_t *base, int idx, const int32_t *offs, size_t t, int store)
{
    (void)idx;
    sf8 r;
    LANES(float, 8, r.v, base, offs, t, store);
    return r;
}
static inline sd4 sd_load(const double *p) { sd4 r; memcpy(r.v, p, sizeof r.v); return r; }
static inline void sd_store(double *p, sd4 a) { memcpy(p, a.v, sizeof a.v); }
static inline sd4 sd_zero(void) { sd4 r; for (int i = 0; i < 4; i++) r.v[i] = 0.0; return r; }
static inline sd4 sd_add(sd4 a, sd4 b) { for (int i = 0; i < 4; i++) a.v[i] = a.v[i] + b.v[i]; return a; }
static inline sd4 sd_mul(sd4 a, sd4 b) { for (int i = 0; i < 4; i++) a.v[i] = a.v[i] * b.v[i]; return a; }
static inline sd4 sd_fma(sd4 a, sd4 b, sd4 c) { for (int i = 0; i < 4; i++) c.v[i] = fma(a.v[i], b.v[i], c.v[i]); return c; }
static inline sd4 sd_gather(const uint8_t *base, int idx, const int32_t *offs, size_t t, int store)
{
    (void)idx;
    sd4 r;
    LANES(double, 4, r.v, base, offs, t, store);
    return r;
}
static inline int no_idx(const int32_t *o) { (void)o; return 0; }

/* A window filled term by term (every variant but AVX-512 fp32 lanes). */
#define FILLG(ATTR, NAME, T, W, STORE, GATHER, IDXT, IDX)                                              \
    ATTR static void NAME(const uint8_t *p, int store, const int32_t *offs, size_t n, size_t w0, T *w) \
    {                                                                                                 \
        IDXT ix = IDX(offs);                                                                          \
        size_t t1 = w0 + WIN < n ? w0 + WIN : n;                                                      \
        for (size_t t = w0; t < t1; t++)                                                              \
            STORE(w + (t - w0) * W, GATHER(p, ix, offs, t, store));                                   \
    }

FILLG(, fill_scalar_f, float, 8, sf_store, sf_gather, int, no_idx)
FILLG(, fill_scalar_d, double, 4, sd_store, sd_gather, int, no_idx)
KERNEL(, kern_scalar_f, float, sf8, 8, sf_load, sf_store, sf_add, sf_mul, sf_fma, sf_zero, sf_gather, int, no_idx, fill_scalar_f)
KERNEL(, kern_scalar_d, double, sd4, 4, sd_load, sd_store, sd_add, sd_mul, sd_fma, sd_zero, sd_gather, int, no_idx, fill_scalar_d)

#ifdef NX_SIMD_X86
#define A2 __attribute__((target("avx2,fma,f16c")))
#define A5 __attribute__((target("avx512f,avx2,fma,f16c")))

/* AVX2 + FMA: 8 fp32 lanes, 4 fp64 lanes. */
A2 static inline __m256i a2_idx8(const int32_t *o) { return _mm256_loadu_si256((const __m256i *)o); }
A2 static inline __m128i a2_idx4(const int32_t *o) { return _mm_loadu_si128((const __m128i *)o); }
A2 static inline __m256 a2_gf(const uint8_t *b, __m256i ix, const int32_t *offs, size_t t, int store)
{
    switch (store) {
    case NX_ST_F32: return _mm256_i32gather_ps((const float *)(b + 4 * t), ix, 1);
    case NX_ST_F64: {
        __m128 lo = _mm256_cvtpd_ps(_mm256_i32gather_pd((const double *)(b + 8 * t), _mm256_castsi256_si128(ix), 1));
        __m128 hi = _mm256_cvtpd_ps(_mm256_i32gather_pd((const double *)(b + 8 * t), _mm256_extracti128_si256(ix, 1), 1));
        return _mm256_set_m128(hi, lo); /* exact: members of fp32 */
    }
    default:
        if (t == 0) {
            float v[8] __attribute__((aligned(32)));
            LANES(float, 8, v, b, offs, t, store);
            return _mm256_load_ps(v);
        }
        __m256i w = _mm256_i32gather_epi32((const int *)(b + 2 * t - 2), ix, 1);
        if (store == NX_ST_BF16)
            return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u)));
        w = _mm256_srli_epi32(w, 16);
        w = _mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x08);
        return _mm256_cvtph_ps(_mm256_castsi256_si128(w));
    }
}
A2 static inline __m256d a2_gd(const uint8_t *b, __m128i ix, const int32_t *offs, size_t t, int store)
{
    switch (store) {
    case NX_ST_F64: return _mm256_i32gather_pd((const double *)(b + 8 * t), ix, 1);
    case NX_ST_F32: return _mm256_cvtps_pd(_mm_i32gather_ps((const float *)(b + 4 * t), ix, 1));
    default:
        if (t == 0) {
            double v[4] __attribute__((aligned(32)));
            LANES(double, 4, v, b, offs, t, store);
            return _mm256_load_pd(v);
        }
        __m128i w = _mm_i32gather_epi32((const int *)(b + 2 * t - 2), ix, 1);
        if (store == NX_ST_BF16)
            return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_and_si128(w, _mm_set1_epi32((int)0xffff0000u))));
        w = _mm_srli_epi32(w, 16);
        return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_packus_epi32(w, w)));
    }
}
FILLG(A2, fill_avx2_f, float, 8, _mm256_store_ps, a2_gf, __m256i, a2_idx8)
FILLG(A2, fill_avx2_d, double, 4, _mm256_store_pd, a2_gd, __m128i, a2_idx4)
KERNEL(A2, kern_avx2_f, float, __m256, 8, _mm256_load_ps, _mm256_store_ps, _mm256_add_ps, _mm256_mul_ps,
       _mm256_fmadd_ps, _mm256_setzero_ps, a2_gf, __m256i, a2_idx8, fill_avx2_f)
KERNEL(A2, kern_avx2_d, double, __m256d, 4, _mm256_load_pd, _mm256_store_pd, _mm256_add_pd, _mm256_mul_pd,
       _mm256_fmadd_pd, _mm256_setzero_pd, a2_gd, __m128i, a2_idx4, fill_avx2_d)

/* AVX-512: 16 fp32 lanes, 8 fp64 lanes. */
A5 static inline __m512i a5_idx16(const int32_t *o) { return _mm512_loadu_si512(o); }
A5 static inline __m256i a5_idx8(const int32_t *o) { return _mm256_loadu_si256((const __m256i *)o); }
A5 static inline __m512 a5_gf(const uint8_t *b, __m512i ix, const int32_t *offs, size_t t, int store)
{
    switch (store) {
    case NX_ST_F32: return _mm512_i32gather_ps(ix, (const float *)(b + 4 * t), 1);
    case NX_ST_F64: {
        __m256 lo = _mm512_cvtpd_ps(_mm512_i32gather_pd(_mm512_castsi512_si256(ix), (const double *)(b + 8 * t), 1));
        __m256 hi = _mm512_cvtpd_ps(
            _mm512_i32gather_pd(_mm512_extracti64x4_epi64(ix, 1), (const double *)(b + 8 * t), 1));
        return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)),
                                                   _mm256_castps_pd(hi), 1)); /* exact: members of fp32 */
    }
    default:
        if (t == 0) {
            float v[16] __attribute__((aligned(64)));
            LANES(float, 16, v, b, offs, t, store);
            return _mm512_load_ps(v);
        }
        __m512i w = _mm512_i32gather_epi32(ix, (const int *)(b + 2 * t - 2), 1);
        if (store == NX_ST_BF16)
            return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
        return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w, 16)));
    }
}
A5 static inline __m512d a5_gd(const uint8_t *b, __m256i ix, const int32_t *offs, size_t t, int store)
{
    switch (store) {
    case NX_ST_F64: return _mm512_i32gather_pd(ix, (const double *)(b + 8 * t), 1);
    case NX_ST_F32: return _mm512_cvtps_pd(_mm256_i32gather_ps((const float *)(b + 4 * t), ix, 1));
    default:
        if (t == 0) {
            double v[8] __attribute__((aligned(64)));
            LANES(double, 8, v, b, offs, t, store);
            return _mm512_load_pd(v);
        }
        __m256i w = _mm256_i32gather_epi32((const int *)(b + 2 * t - 2), ix, 1);
        if (store == NX_ST_BF16)
            return _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xffff0000u))));
        w = _mm256_srli_epi32(w, 16);
        w = _mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x08);
        return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm256_castsi256_si128(w)));
    }
}
/* 16 rows x 16 terms, transposed in registers: r[k] = row k's terms on
 * entry, r[t] = term t's rows on return. */
A5 static inline void a5_tr16(__m512 *r)
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);     /* a0 b0 a1 b1 per 128 bits */
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]); /* a2 b2 a3 b3 */
    }
    for (int i = 0; i < 4; i++) {
        __m512d x0 = _mm512_castps_pd(t[4 * i]), x1 = _mm512_castps_pd(t[4 * i + 1]),
                x2 = _mm512_castps_pd(t[4 * i + 2]), x3 = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(x0, x2));     /* a0 b0 c0 d0 */
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x0, x2)); /* a1 b1 c1 d1 */
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(x1, x3)); /* a2 b2 c2 d2 */
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(x1, x3)); /* a3 b3 c3 d3 */
    }
    /* r[4g + j], 128-bit lane L: column j + 4L of rows 4g .. 4g + 3 */
    __m512 o[16];
    for (int j = 0; j < 4; j++) {
        __m512 u0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88), u1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd),
               u2 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88),
               u3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
        o[j] = _mm512_shuffle_f32x4(u0, u2, 0x88);
        o[j + 8] = _mm512_shuffle_f32x4(u0, u2, 0xdd);
        o[j + 4] = _mm512_shuffle_f32x4(u1, u3, 0x88);
        o[j + 12] = _mm512_shuffle_f32x4(u1, u3, 0xdd);
    }
    for (int c = 0; c < 16; c++)
        r[c] = o[c];
}

/* 16 terms of one row from t on, exactly as fp32. */
#define A5_ROW(store, q)                                                                                  \
    ((store) == NX_ST_F32    ? _mm512_loadu_ps(q)                                                         \
     : (store) == NX_ST_BF16 ? _mm512_castsi512_ps(                                                       \
                                   _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(q))), 16)) \
     : (store) == NX_ST_F16  ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(q)))                  \
                             : _mm512_castpd_ps(_mm512_insertf64x4(                                       \
                                   _mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(_mm512_loadu_pd(q)))), \
                                   _mm256_castps_pd(_mm512_cvtpd_ps(_mm512_loadu_pd((const double *)(q) + 8))), 1)))

#define A5_FILL_CASE(ST)                                                                                  \
    for (; t + 16 <= t1; t += 16) {                                                                       \
        __m512 r[16];                                                                                     \
        for (int k = 0; k < 16; k++)                                                                      \
            r[k] = A5_ROW(ST, (const void *)(p + (size_t)offs[k] + t * es));                             \
        a5_tr16(r);                                                                                       \
        for (int c = 0; c < 16; c++)                                                                      \
            _mm512_store_ps(w + (t - w0 + (size_t)c) * 16, r[c]);                                         \
    }

A5 static void fill_avx512_f(const uint8_t *p, int store, const int32_t *offs, size_t n, size_t w0, float *w)
{
    size_t t1 = w0 + WIN < n ? w0 + WIN : n, t = w0, es = store_bytes[store];
    switch (store) {
    case NX_ST_F32: A5_FILL_CASE(NX_ST_F32) break;
    case NX_ST_BF16: A5_FILL_CASE(NX_ST_BF16) break;
    case NX_ST_F16: A5_FILL_CASE(NX_ST_F16) break;
    default: A5_FILL_CASE(NX_ST_F64) break;
    }
    for (; t < t1; t++)
        LANES(float, 16, w + (t - w0) * 16, p, offs, t, store);
}
FILLG(A5, fill_avx512_d, double, 8, _mm512_store_pd, a5_gd, __m256i, a5_idx8)
KERNEL(A5, kern_avx512_f, float, __m512, 16, _mm512_load_ps, _mm512_store_ps, _mm512_add_ps, _mm512_mul_ps,
       _mm512_fmadd_ps, _mm512_setzero_ps, a5_gf, __m512i, a5_idx16, fill_avx512_f)
KERNEL(A5, kern_avx512_d, double, __m512d, 8, _mm512_load_pd, _mm512_store_pd, _mm512_add_pd, _mm512_mul_pd,
       _mm512_fmadd_pd, _mm512_setzero_pd, a5_gd, __m256i, a5_idx8, fill_avx512_d)
#endif

/* ---------------------------------------------------------------------- */
/* Dispatch. */

static nx_simd_isa isa_cpu(void)
{
#ifdef NX_SIMD_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return NX_SIMD_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return NX_SIMD_AVX2;
#endif
    return NX_SIMD_SCALAR;
}

nx_simd_isa nx_simd_isa_now(void)
{
    nx_simd_isa cpu = isa_cpu(), want = cpu;
    const char *e = getenv("PARITY_SIMD");
    if (e && strcmp(e, "off") == 0)
        return NX_SIMD_OFF;
    if (e && strcmp(e, "scalar") == 0)
        want = NX_SIMD_SCALAR;
    else if (e && strcmp(e, "avx2") == 0)
        want = NX_SIMD_AVX2;
    else if (e && strcmp(e, "avx512") == 0)
        want = NX_SIMD_AVX512;
    return want < cpu ? want : cpu;
}

int nx_simd_forced(void)
{
    const char *e = getenv("PARITY_SIMD");
    return e && (strcmp(e, "scalar") == 0 || strcmp(e, "avx2") == 0 || strcmp(e, "avx512") == 0);
}

const char *nx_simd_isa_name(nx_simd_isa isa)
{
    return isa == NX_SIMD_AVX512 ? "avx512" : isa == NX_SIMD_AVX2 ? "avx2" : isa == NX_SIMD_SCALAR ? "scalar" : "off";
}

typedef void (*kern_f)(const vprog *, const uint8_t *, int, const int32_t *, const uint8_t *, int,
                       const int32_t *, const float *, float *, float *, float *, float *, size_t);
typedef void (*kern_d)(const vprog *, const uint8_t *, int, const int32_t *, const uint8_t *, int,
                       const int32_t *, const double *, double *, double *, double *, double *, size_t);

int nx_simd_reduce(const nx_program *p, const nx_simd_rows *in, double *acc, int threads, nx_simd_isa isa)
{
    int T = lane_fmt(p, in->a.fmt, p->dot ? in->b.fmt : in->a.fmt, p->start ? in->c.fmt : NX_FP32);
    if (T < 0 || isa == NX_SIMD_OFF || isa > isa_cpu())
        return 1;
    int dbl = T == NX_FP64, W = dbl ? 4 : 8;
    kern_f kf = kern_scalar_f;
    kern_d kd = kern_scalar_d;
#ifdef NX_SIMD_X86
    if (isa == NX_SIMD_AVX512) {
        kf = kern_avx512_f;
        kd = kern_avx512_d;
        W = dbl ? 8 : 16;
    } else if (isa == NX_SIMD_AVX2) {
        kf = kern_avx2_f;
        kd = kern_avx2_d;
    }
#endif
    /* lane offsets are int32 bytes from the block's first row */
    size_t ra = in->a.stride * store_bytes[in->a.store], rb = p->dot ? in->b.stride * store_bytes[in->b.store] : 0;
    if ((ra > rb ? ra : rb) > (size_t)INT32_MAX / (size_t)W)
        return 1;
    vprog vp;
    if (vprog_build(&vp, p, T))
        return -1;
    if (!vp.window && !nx_simd_forced()) {
        vprog_free(&vp);
        return 1;
    }
    size_t rows = in->rows, nblocks = (rows + (size_t)W - 1) / (size_t)W;
    size_t es = dbl ? sizeof(double) : sizeof(float);
    size_t sbytes = ((size_t)vp.nslots * (size_t)W * es + 63) & ~(size_t)63;
    int failed = 0;
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (nblocks > 1)
    {
        size_t wbytes = WIN * (size_t)W * es;
        uint8_t *buf = aligned_alloc(64, sbytes + 2 * 64 + 2 * wbytes);
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
        uint8_t *tc = buf + sbytes, *res = buf + sbytes + 64, *wa = buf + sbytes + 128, *wb = wa + wbytes;
        int32_t oa[16], ob[16];
#pragma omp for schedule(static)
        for (size_t blk = 0; blk < nblocks; blk++) {
            if (!buf)
                continue;
            size_t r0 = blk * (size_t)W, nb = rows - r0 < (size_t)W ? rows - r0 : (size_t)W;
            for (int k = 0; k < W; k++) {
                size_t kk = (size_t)k < nb ? (size_t)k : nb - 1; /* past the end: the last row again */
                oa[k] = (int32_t)(kk * ra);
                ob[k] = (int32_t)(kk * rb);
                if (p->start) {
                    double c = elem((const uint8_t *)in->c.p + (r0 + kk) * in->c.stride * store_bytes[in->c.store],
                                    in->c.store);
                    if (dbl)
                        ((double *)tc)[k] = c;
                    else
                        ((float *)tc)[k] = (float)c; /* exact: a member of fp32 */
                }
            }
            const uint8_t *pa = (const uint8_t *)in->a.p + r0 * ra,
                          *pb = p->dot ? (const uint8_t *)in->b.p + r0 * rb : pa;
            int sa = in->a.store, sb = p->dot ? (int)in->b.store : sa;
            if (dbl) {
                kd(&vp, pa, sa, oa, pb, sb, ob, (const double *)tc, (double *)buf, (double *)res, (double *)wa,
                   (double *)wb, p->n);
                for (size_t k = 0; k < nb; k++)
                    acc[r0 + k] = ((double *)res)[k];
            } else {
                kf(&vp, pa, sa, oa, pb, sb, ob, (const float *)tc, (float *)buf, (float *)res, (float *)wa,
                   (float *)wb, p->n);
                for (size_t k = 0; k < nb; k++)
                    acc[r0 + k] = ((float *)res)[k];
            }
        }
        free(buf);
    }
    vprog_free(&vp);
    return failed ? -1 : 0;
}
