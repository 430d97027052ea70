/* st_craft.c: writes safetensors files for the CLI tests, valid or broken
 * on purpose, byte by byte (it does not use the library under test).
 *
 *   st_craft raw OUT 'HEADER' DATAHEX [--len N] [--cut K]
 *       8-byte little-endian header length (N, default the header's length),
 *       the header text, the data bytes; --cut K keeps only the first K bytes.
 *   st_craft rand OUT DTYPE ROWS N SEED [DTYPE_B [--shared-b]]
 *       tensor a [ROWS, N] (and b of DTYPE_B when given) of random finite
 *       values: F32, F16, BF16 or F64, from a fixed generator; with
 *       --shared-b every row of b is the first (a gemv's x). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int write_all(const char *path, const unsigned char *buf, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

static uint64_t state = 1;
static uint64_t next(void)
{
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random finite pattern of the dtype: sign, an exponent near the bias,
 * random mantissa bits. */
static void rand_elem(const char *dt, unsigned char *p)
{
    uint64_t r = next();
    if (!strcmp(dt, "F32")) {
        uint32_t v = (uint32_t)(r & 0x807fffff) | (uint32_t)(120 + (r >> 40) % 14) << 23;
        memcpy(p, &v, 4);
    } else if (!strcmp(dt, "BF16")) {
        uint16_t v = (uint16_t)((r & 0x807f) | (uint16_t)((120 + (r >> 40) % 14) << 7));
        memcpy(p, &v, 2);
    } else if (!strcmp(dt, "F16")) {
        uint16_t v = (uint16_t)((r & 0x83ff) | (uint16_t)((8 + (r >> 40) % 14) << 10));
        memcpy(p, &v, 2);
    } else {
        uint64_t v = (r & 0x800fffffffffffffull) | (uint64_t)(1016 + (r >> 40) % 14) << 52;
        memcpy(p, &v, 8);
    }
}

static size_t dsize(const char *dt)
{
    return !strcmp(dt, "F32") ? 4 : !strcmp(dt, "F64") ? 8 : 2;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && !strcmp(argv[1], "raw")) {
        const char *hdr = argv[3], *hex = argv[4];
        size_t hl = strlen(hdr), dl = strlen(hex) / 2;
        uint64_t len = hl;
        long cut = -1;
        for (int i = 5; i + 1 < argc; i += 2) {
            if (!strcmp(argv[i], "--len")) len = strtoull(argv[i + 1], NULL, 10);
            else if (!strcmp(argv[i], "--cut")) cut = strtol(argv[i + 1], NULL, 10);
        }
        unsigned char *buf = malloc(8 + hl + dl + 1);
        for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(len >> (8 * i));
        memcpy(buf + 8, hdr, hl);
        for (size_t i = 0; i < dl; i++) {
            int h = hexval(hex[2 * i]), l = hexval(hex[2 * i + 1]);
            if (h < 0 || l < 0) { fprintf(stderr, "st_craft: bad hex\n"); return 2; }
            buf[8 + hl + i] = (unsigned char)(h << 4 | l);
        }
        size_t n = 8 + hl + dl;
        if (cut >= 0 && (size_t)cut < n) n = (size_t)cut;
        int rc = write_all(argv[2], buf, n);
        free(buf);
        return rc;
    }
    if (argc >= 7 && !strcmp(argv[1], "rand")) {
        const char *dta = argv[3], *dtb = argc > 7 ? argv[7] : NULL;
        int shared = argc > 8 && !strcmp(argv[8], "--shared-b");
        long rows = atol(argv[4]), n = atol(argv[5]);
        state = strtoull(argv[6], NULL, 10);
        size_t na = (size_t)(rows * n) * dsize(dta), nb = dtb ? (size_t)(rows * n) * dsize(dtb) : 0;
        char hdr[512];
        int hl;
        if (dtb)
            hl = snprintf(hdr, sizeof hdr,
                          "{\"a\":{\"dtype\":\"%s\",\"shape\":[%ld,%ld],\"data_offsets\":[0,%zu]},"
                          "\"b\":{\"dtype\":\"%s\",\"shape\":[%ld,%ld],\"data_offsets\":[%zu,%zu]}}",
                          dta, rows, n, na, dtb, rows, n, na, na + nb);
        else
            hl = snprintf(hdr, sizeof hdr, "{\"a\":{\"dtype\":\"%s\",\"shape\":[%ld,%ld],\"data_offsets\":[0,%zu]}}",
                          dta, rows, n, na);
        while (hl % 8) hdr[hl++] = ' ';
        hdr[hl] = 0;
        unsigned char *buf = malloc(8 + (size_t)hl + na + nb);
        for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
        memcpy(buf + 8, hdr, (size_t)hl);
        unsigned char *p = buf + 8 + hl;
        for (long i = 0; i < rows * n; i++, p += dsize(dta)) rand_elem(dta, p);
        for (long i = 0; dtb && i < rows * n; i++, p += dsize(dtb)) {
            if (shared && i >= n)
                memcpy(p, p - (size_t)n * dsize(dtb), dsize(dtb));
            else
                rand_elem(dtb, p);
        }
        int rc = write_all(argv[2], buf, 8 + (size_t)hl + na + nb);
        free(buf);
        return rc;
    }
    fprintf(stderr, "usage: st_craft raw OUT HEADER DATAHEX [--len N] [--cut K]\n"
                    "       st_craft rand OUT DTYPE ROWS N SEED [DTYPE_B [--shared-b]]\n");
    return 2;
}
