/* png_check FILE [MIN_COLOURS]: decodes a PNG (8-bit RGB or RGBA, not
 * interlaced: what headless chromium's --screenshot writes) and prints
 * "WIDTH HEIGHT COLOURS NONWHITE": the distinct RGB colours (counted up to
 * 65536) and the pixels that are not white.  Exit 0 when it has at least
 * MIN_COLOURS colours (default 2), 1 when fewer (a blank page), 2 when the
 * file is not such a PNG (the byte is named). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: png_check FILE [MIN_COLOURS]\n");
        return 2;
    }
    long minc = argc > 2 ? strtol(argv[2], NULL, 10) : 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    if (!buf || size < 33 || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read %ld bytes\n", argv[1], size);
        return 2;
    }
    fclose(f);
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (memcmp(buf, sig, 8)) {
        fprintf(stderr, "%s: byte 0: not a PNG signature\n", argv[1]);
        return 2;
    }
    uint32_t w = 0, h = 0;
    int depth = 0, ctype = -1, interlace = 0;
    uint8_t *idat = NULL;
    size_t nidat = 0;
    for (long at = 8; at + 12 <= size;) {
        uint32_t len = be32(buf + at);
        const uint8_t *type = buf + at + 4, *data = buf + at + 8;
        if ((long)len > size - at - 12) {
            fprintf(stderr, "%s: byte %ld: chunk length %u runs past the end\n", argv[1], at, len);
            return 2;
        }
        if (!memcmp(type, "IHDR", 4) && len >= 13) {
            w = be32(data);
            h = be32(data + 4);
            depth = data[8];
            ctype = data[9];
            interlace = data[12];
        } else if (!memcmp(type, "IDAT", 4)) {
            uint8_t *q = realloc(idat, nidat + len);
            if (!q)
                return 2;
            idat = q;
            memcpy(idat + nidat, data, len);
            nidat += len;
        } else if (!memcmp(type, "IEND", 4)) {
            break;
        }
        at += 12 + (long)len;
    }
    if (depth != 8 || (ctype != 2 && ctype != 6) || interlace || !w || !h || w > 20000 || h > 20000) {
        fprintf(stderr, "%s: IHDR: %ux%u depth %d colour type %d interlace %d: not 8-bit RGB(A)\n", argv[1], w, h,
                depth, ctype, interlace);
        return 2;
    }
    size_t bpp = ctype == 6 ? 4 : 3, stride = (size_t)w * bpp;
    uLongf rawn = (uLongf)((stride + 1) * h);
    uint8_t *raw = malloc(rawn);
    if (!raw || uncompress(raw, &rawn, idat, (uLong)nidat) != Z_OK || rawn != (stride + 1) * h) {
        fprintf(stderr, "%s: IDAT: the image data does not inflate to %ux%u pixels\n", argv[1], w, h);
        return 2;
    }
    /* unfilter in place */
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *row = raw + y * (stride + 1), *cur = row + 1, *prev = y ? row - stride : NULL;
        int ft = row[0];
        for (size_t i = 0; i < stride; i++) {
            int a = i >= bpp ? cur[i - bpp] : 0, b = prev ? prev[i] : 0, c = prev && i >= bpp ? prev[i - bpp] : 0;
            int add = ft == 0 ? 0 : ft == 1 ? a : ft == 2 ? b : ft == 3 ? (a + b) / 2 : ft == 4 ? paeth(a, b, c) : -1;
            if (add < 0) {
                fprintf(stderr, "%s: row %u: filter type %d\n", argv[1], y, ft);
                return 2;
            }
            cur[i] = (uint8_t)(cur[i] + add);
        }
    }
    /* distinct colours: an open-addressing set of 24-bit values */
    enum { CAP = 1 << 17, MAXC = 65536 };
    uint32_t *set = calloc(CAP, sizeof *set);
    if (!set)
        return 2;
    size_t ncol = 0, nonwhite = 0;
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *px = raw + y * (stride + 1) + 1;
        for (uint32_t x = 0; x < w; x++, px += bpp) {
            uint32_t c = (uint32_t)px[0] << 16 | (uint32_t)px[1] << 8 | px[2];
            nonwhite += c != 0xffffffu;
            if (ncol >= MAXC)
                continue;
            uint32_t k = (c * 2654435761u) & (CAP - 1);
            while (set[k] && set[k] != c + 1)
                k = (k + 1) & (CAP - 1);
            if (!set[k]) {
                set[k] = c + 1;
                ncol++;
            }
        }
    }
    printf("%u %u %zu %zu\n", w, h, ncol, nonwhite);
    free(set);
    free(raw);
    free(idat);
    free(buf);
    return (long)ncol >= minc ? 0 : 1;
}
