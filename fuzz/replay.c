/* replay.c: runs files (or every file of folders) through one fuzz
 * target's LLVMFuzzerTestOneInput without libFuzzer, so that the default
 * test suite replays each target's corpus (fuzz/corpus/<target>/, the
 * inputs that once crashed included) under the ordinary build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replayed;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf)
        abort();
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                abort();
            buf = nb;
        }
    }
    fclose(f);
    /* a copy of exactly len bytes, so that a read past the end is caught by
     * the sanitizers where the build has them */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact)
        abort();
    memcpy(exact, buf, len);
    free(buf);
    if (getenv("PARITY_FUZZ_VERBOSE"))
        fprintf(stderr, "replay: %s\n", path);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    replayed++;
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: %s: cannot open the folder\n", dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names)))
            abort();
        if (!(names[n++] = strdup(e->d_name)))
            abort();
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(dir) + strlen(names[i]) + 2;
        char *p = malloc(l);
        if (!p)
            abort();
        snprintf(p, l, "%s/%s", dir, names[i]);
        bad |= run_file(p);
        free(p);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help")) {
        fprintf(argc < 2 ? stderr : stdout, "usage: %s FILE|FOLDER...\n"
                "Runs each file (each file of a folder) through the fuzz target once.\n", argv[0]);
        return argc < 2 ? 2 : 0;
    }
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
            return 2;
        }
        bad |= S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
    }
    printf("replayed %ld inputs\n", replayed);
    return bad ? 2 : 0;
}
