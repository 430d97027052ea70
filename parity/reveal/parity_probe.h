/* parity_probe.h: the probe protocol of `parity reveal` (docs/reveal.md),
 * for a kernel written in any language that C can call.  Header only; no
 * other file of parity is needed.
 *
 * In process (`parity reveal --dlopen LIB.so:SYMBOL`): LIB exports
 *
 *     int SYMBOL(parity_probe *p);
 *
 * which computes, for each of p->rows rows r, the kernel's reduction of the
 * terms a[r, i] * b[r, i], i = 0 ... n-1, into y[r], sets p->y_dtype to the
 * dtype it wrote ("F32", "F64", "BF16" or "F16"; NULL means the input
 * dtype) and returns 0 (nonzero: the kernel failed; reveal stops with exit
 * status 3).  a and b are row-major [rows, n] in p->dtype; y has room for
 * 8 bytes per row.  Elements of BF16 and F16 are uint16_t patterns.
 *
 * As a program (`parity reveal --exec 'CMD {in} {out}'` or `--serve CMD`):
 * define PARITY_PROBE_MAIN in one file before including this header and
 * call parity_probe_main(argc, argv, fn) from main().  `PROG IN OUT` serves
 * one file of probes (IN: safetensors with `a`, `b` [rows, n]; OUT receives
 * `y` [rows]); `PROG --serve` serves lines "IN OUT" read from stdin in a
 * loop, answering "ok" (or "error: ...") on stdout after each, so that a
 * CUDA program initialises its device once for thousands of probes. */
#ifndef PARITY_PROBE_H
#define PARITY_PROBE_H

#include <stddef.h>

#define PARITY_PROBE_ABI 1

typedef struct parity_probe {
    int abi;              /* PARITY_PROBE_ABI */
    const char *dtype;    /* of a and b: "F32", "F64", "BF16", "F16" */
    size_t rows, n;
    const void *a, *b;    /* [rows, n], row-major */
    void *y;              /* [rows]; room for 8 bytes per row */
    const char *y_dtype;  /* set by the kernel: the dtype of y (NULL: dtype) */
} parity_probe;

typedef int (*parity_probe_fn)(parity_probe *p);

#ifdef PARITY_PROBE_MAIN
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parity_probe_width(const char *dt)
{
    if (!strcmp(dt, "F32")) return 4;
    if (!strcmp(dt, "F64")) return 8;
    if (!strcmp(dt, "BF16") || !strcmp(dt, "F16")) return 2;
    return 0;
}

/* Finds tensor `name` in a safetensors header: dtype, shape [rows, n] and
 * the data offsets.  Returns 0 on success. */
static int parity_probe_find(const char *hdr, const char *name, char dt[8], size_t *rows, size_t *n, size_t *b0,
                             size_t *b1)
{
    char key[16];
    snprintf(key, sizeof key, "\"%s\"", name);
    const char *p = strstr(hdr, key), *q;
    if (!p) return -1;
    if (!(q = strstr(p, "\"dtype\"")) || !(q = strchr(q + 7, '"'))) return -1;
    size_t k = 0;
    for (q++; *q && *q != '"' && k < 7; q++) dt[k++] = *q;
    dt[k] = 0;
    if (!(q = strstr(p, "\"shape\"")) || !(q = strchr(q, '['))) return -1;
    if (sscanf(q, "[%zu,%zu]", rows, n) != 2 && sscanf(q, "[ %zu , %zu ]", rows, n) != 2) return -1;
    if (!(q = strstr(p, "\"data_offsets\"")) || !(q = strchr(q, '['))) return -1;
    if (sscanf(q, "[%zu,%zu]", b0, b1) != 2 && sscanf(q, "[ %zu , %zu ]", b0, b1) != 2) return -1;
    return 0;
}

/* Serves one file of probes; returns 0, or -1 after printing why. */
static int parity_probe_file(const char *in, const char *out, parity_probe_fn fn)
{
    FILE *f = fopen(in, "rb");
    if (!f) { fprintf(stderr, "probe: cannot open %s\n", in); return -1; }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = (unsigned char *)malloc(len > 0 ? (size_t)len + 1 : 1);
    if (!buf || len < 8 || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f); free(buf); fprintf(stderr, "probe: cannot read %s\n", in); return -1;
    }
    fclose(f);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | buf[i];
    if (hl > (uint64_t)len - 8) { free(buf); fprintf(stderr, "probe: %s: bad header\n", in); return -1; }
    char *hdr = (char *)malloc(hl + 1);
    memcpy(hdr, buf + 8, hl);
    hdr[hl] = 0;
    char da[8], db[8];
    size_t ra, na, a0, a1, rb, nb, b0, b1;
    if (parity_probe_find(hdr, "a", da, &ra, &na, &a0, &a1) || parity_probe_find(hdr, "b", db, &rb, &nb, &b0, &b1) ||
        strcmp(da, db) || ra != rb || na != nb || !parity_probe_width(da)) {
        free(hdr); free(buf); fprintf(stderr, "probe: %s: needs a and b [rows, n] of one dtype\n", in); return -1;
    }
    free(hdr);
    unsigned char *y = (unsigned char *)calloc(ra ? ra : 1, 8);
    parity_probe p = {PARITY_PROBE_ABI, da, ra, na, buf + 8 + hl + a0, buf + 8 + hl + b0, y, NULL};
    if (fn(&p) != 0) { free(y); free(buf); fprintf(stderr, "probe: the kernel failed\n"); return -1; }
    const char *yd = p.y_dtype ? p.y_dtype : da;
    size_t w = parity_probe_width(yd);
    if (!w) { free(y); free(buf); fprintf(stderr, "probe: y dtype %s\n", yd); return -1; }
    char h[256];
    int k = snprintf(h, sizeof h, "{\"y\":{\"dtype\":\"%s\",\"shape\":[%zu],\"data_offsets\":[0,%zu]}}", yd, ra, ra * w);
    while (k % 8) h[k++] = ' ';
    FILE *o = fopen(out, "wb");
    unsigned char l8[8];
    for (int i = 0; i < 8; i++) l8[i] = (unsigned char)((uint64_t)k >> (8 * i));
    int bad = !o || fwrite(l8, 1, 8, o) != 8 || fwrite(h, 1, (size_t)k, o) != (size_t)k ||
              fwrite(y, 1, ra * w, o) != ra * w;
    if (o && fclose(o)) bad = 1;
    free(y);
    free(buf);
    if (bad) { fprintf(stderr, "probe: cannot write %s\n", out); return -1; }
    return 0;
}

static int parity_probe_main(int argc, char **argv, parity_probe_fn fn)
{
    if (argc == 2 && !strcmp(argv[1], "--serve")) {
        char line[8192], in[4096], out[4096];
        while (fgets(line, sizeof line, stdin)) {
            if (sscanf(line, "%4095s %4095s", in, out) != 2) { printf("error: expected IN OUT\n"); fflush(stdout); continue; }
            printf(parity_probe_file(in, out, fn) ? "error: see stderr\n" : "ok\n");
            fflush(stdout);
        }
        return 0;
    }
    if (argc != 3) { fprintf(stderr, "usage: %s IN OUT | --serve\n", argv[0]); return 2; }
    return parity_probe_file(argv[1], argv[2], fn) ? 1 : 0;
}
#endif /* PARITY_PROBE_MAIN */

#endif
