/* nx_sha256.h: SHA-256 (FIPS 180-4), for the canonical hash of a numerics
 * point at a shape. */
#ifndef NX_SHA256_H
#define NX_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct nx_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t nbuf;
} nx_sha256;

void nx_sha256_init(nx_sha256 *s);
void nx_sha256_update(nx_sha256 *s, const void *data, size_t n);
void nx_sha256_final(nx_sha256 *s, uint8_t out[32]);

#endif
