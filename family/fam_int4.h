/* fam_int4.h: how the kernel families store 4-bit integers (int4 weights,
 * uint4 zero points; docs/families.md, "Sub-byte integer storage").
 *
 * A tensor of 4-bit integers is a `U8` tensor in one of two layouts, chosen
 * by the point's `packed` param:
 *   unpacked  one value per byte (0 ... 15), the last dimension as it is;
 *   packed    two values per byte, element 2i in the low nibble (bits 0-3)
 *             and element 2i + 1 in the high nibble, each row of the last
 *             dimension starting on a byte of its own (an odd row ends in a
 *             padding nibble, which must be 0).
 * Readers address a row by fam_u4_row and an element by fam_u4_at, so the
 * same loop reads both layouts. */
#ifndef PARITY_FAM_INT4_H
#define PARITY_FAM_INT4_H

#include <stddef.h>
#include <stdint.h>

/* Bytes that hold one row of n values. */
static inline size_t fam_u4_bytes(size_t n, int packed)
{
    return packed ? (n + 1) / 2 : n;
}

/* Row r of a tensor whose rows hold n values each. */
static inline const uint8_t *fam_u4_row(const uint8_t *data, size_t r, size_t n, int packed)
{
    return data + r * fam_u4_bytes(n, packed);
}

/* Value i of a row. */
static inline unsigned fam_u4_at(const uint8_t *row, size_t i, int packed)
{
    return packed ? (unsigned)(row[i >> 1] >> ((i & 1u) << 2)) & 15u : row[i];
}

#endif
