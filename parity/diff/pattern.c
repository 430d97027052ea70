/* pattern.c: what the differing indices of one axis have in common: a
 * range, a stride, the edges of power-of-two tiles, the partial last tile,
 * whole aligned blocks (diff.h). */
#include "diff.h"

#include <stdio.h>
#include <string.h>

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void diff_pattern_find(const uint8_t *hit, int64_t L, diff_pattern *p)
{
    memset(p, 0, sizeof *p);
    p->extent = L;
    p->lo = p->hi = -1;
    for (int64_t i = 0; i < L; i++)
        if (hit[i]) {
            if (p->lo < 0)
                p->lo = i;
            p->hi = i;
            p->ndiff++;
        }
    if (!p->ndiff)
        return;
    p->contiguous = (size_t)(p->hi - p->lo + 1) == p->ndiff;
    if (p->ndiff >= 2) {
        int64_t g = 0;
        for (int64_t i = p->lo + 1; i <= p->hi; i++)
            if (hit[i])
                g = gcd64(g, i - p->lo);
        if (g >= 2) {
            p->stride = g;
            p->offset = p->lo % g;
            p->stride_complete = (size_t)((L - 1 - p->offset) / g + 1) == p->ndiff;
        }
    }
    /* edges of power-of-two tiles */
    for (int64_t T = 4; T < L; T *= 2) {
        int start = 1, end = 1, edges = 1, some_start = 0, some_end = 0;
        for (int64_t i = p->lo; i <= p->hi; i++) {
            if (!hit[i])
                continue;
            int s = i % T == 0, e = i % T == T - 1 || i == L - 1;
            start &= s;
            end &= e;
            edges &= s || e;
            some_start |= s && i > 0;
            some_end |= i % T == T - 1 && i < L - 1;
        }
        if (start && some_start)
            p->tile_start = T;
        if (end && some_end)
            p->tile_end = T;
        if (edges && !start && !end && some_start && some_end)
            p->tile_edges = T;
    }
    /* the partial last tile */
    if (p->contiguous && p->hi == L - 1)
        for (int k = 1; k < 63 && ((int64_t)1 << k) <= L; k++) {
            int64_t T = (int64_t)1 << k;
            if (L % T && (size_t)(L % T) == p->ndiff)
                p->remainder_tiles |= 1ull << k;
        }
    /* whole aligned blocks, the largest size first */
    if (p->ndiff < (size_t)L) {
        int64_t B = 1;
        while (B * 2 < L)
            B *= 2;
        for (; B >= 2 && !p->block; B /= 2) {
            if (p->ndiff < (size_t)B)
                continue;
            int ok = 1;
            for (int64_t j = 0; j < L && ok; j += B) {
                int64_t end = j + B < L ? j + B : L;
                uint8_t h0 = hit[j] != 0;
                for (int64_t i = j + 1; i < end && ok; i++)
                    ok = (hit[i] != 0) == h0;
            }
            if (ok)
                p->block = B;
        }
    }
}

static const char *ordinal_suffix(int64_t k)
{
    if (k % 100 >= 11 && k % 100 <= 13)
        return "th";
    switch (k % 10) {
    case 1: return "st";
    case 2: return "nd";
    case 3: return "rd";
    default: return "th";
    }
}

#define ADD(...)                                                                                                       \
    do {                                                                                                               \
        int w_ = snprintf(k < cap ? buf + k : NULL, k < cap ? cap - k : 0, __VA_ARGS__);                              \
        if (w_ > 0)                                                                                                    \
            k += (size_t)w_;                                                                                           \
    } while (0)
#define SEP() ADD("%s", k ? "; " : "")

size_t diff_pattern_text(const diff_pattern *p, const char *unit, const char *units, char *buf, size_t cap)
{
    size_t k = 0;
    if (cap)
        buf[0] = 0;
    if (!p->ndiff)
        return 0;
    int64_t L = p->extent;
    if (p->ndiff == (size_t)L && L > 1)
        ADD("all %lld %s", (long long)L, units);
    else if (p->ndiff == 1)
        ADD("%s %lld%s", unit, (long long)p->lo,
            L == 1 ? "" : p->lo == L - 1 ? " (the last)" : p->lo == 0 ? " (the first)" : "");
    else if (p->contiguous)
        ADD("%s %lld..%lld%s", units, (long long)p->lo, (long long)p->hi,
            p->hi == L - 1 ? " (the last ones)" : p->lo == 0 ? " (the first ones)" : " (contiguous)");
    else
        ADD("%zu of %lld %s, %lld..%lld", p->ndiff, (long long)L, units, (long long)p->lo, (long long)p->hi);
    if (p->stride && p->stride_complete) {
        SEP();
        ADD("every %lld%s %s from %s %lld", (long long)p->stride, ordinal_suffix(p->stride), unit, unit,
            (long long)p->offset);
    } else if (p->stride && p->ndiff >= 3) {
        SEP();
        ADD("only %s = %lld mod %lld (%zu of the %lld such)", units, (long long)p->offset, (long long)p->stride,
            p->ndiff, (long long)((L - 1 - p->offset) / p->stride + 1));
    }
    if (p->tile_end) {
        SEP();
        ADD("at the end of %lld-%s tiles (the last %s of a tile)", (long long)p->tile_end, unit, unit);
    }
    if (p->tile_start) {
        SEP();
        ADD("at the start of %lld-%s tiles (the first %s of a tile)", (long long)p->tile_start, unit, unit);
    }
    if (p->tile_edges) {
        SEP();
        ADD("at the edges of %lld-%s tiles (first or last %s of a tile)", (long long)p->tile_edges, unit, unit);
    }
    if (p->remainder_tiles) {
        SEP();
        ADD("the partial last tile (%lld %s) when tiled by", (long long)p->ndiff, p->ndiff == 1 ? unit : units);
        int first = 1;
        for (int b = 1; b < 63; b++)
            if (p->remainder_tiles >> b & 1) {
                ADD("%s %lld", first ? "" : ",", (long long)1 << b);
                first = 0;
            }
    }
    if (p->block) {
        SEP();
        ADD("whole aligned blocks of %lld %s: %lld of %lld", (long long)p->block, units,
            (long long)((int64_t)p->ndiff + p->block - 1) / p->block, (long long)((L + p->block - 1) / p->block));
    }
    return k;
}

json_t *diff_pattern_json(const diff_pattern *p)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "extent", json_integer(p->extent));
    json_object_set_new(o, "differing", json_integer((json_int_t)p->ndiff));
    if (p->ndiff) {
        json_object_set_new(o, "first", json_integer(p->lo));
        json_object_set_new(o, "last", json_integer(p->hi));
    }
    json_object_set_new(o, "all", json_boolean(p->ndiff && p->ndiff == (size_t)p->extent));
    json_object_set_new(o, "contiguous", json_boolean(p->contiguous));
    json_object_set_new(o, "includes_last", json_boolean(p->ndiff && p->hi == p->extent - 1));
    if (p->stride) {
        json_t *s = json_object();
        json_object_set_new(s, "every", json_integer(p->stride));
        json_object_set_new(s, "offset", json_integer(p->offset));
        json_object_set_new(s, "complete", json_boolean(p->stride_complete));
        json_object_set_new(o, "stride", s);
    }
    if (p->tile_start)
        json_object_set_new(o, "tile_start", json_integer(p->tile_start));
    if (p->tile_end)
        json_object_set_new(o, "tile_end", json_integer(p->tile_end));
    if (p->tile_edges)
        json_object_set_new(o, "tile_edges", json_integer(p->tile_edges));
    if (p->remainder_tiles) {
        json_t *a = json_array();
        for (int b = 1; b < 63; b++)
            if (p->remainder_tiles >> b & 1)
                json_array_append_new(a, json_integer((json_int_t)1 << b));
        json_object_set_new(o, "partial_last_tile_of", a);
    }
    if (p->block)
        json_object_set_new(o, "whole_blocks", json_integer(p->block));
    return o;
}
