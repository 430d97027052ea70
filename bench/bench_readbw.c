/* bench_readbw.c: the read-bandwidth floor of the reference benchmark
 * (scripts/bench reference): reads FILE once through a 1 MiB buffer, as a
 * process that reads its input must, after one untimed pass that warms the
 * page cache; prints the bytes, the seconds and the bandwidth.
 *
 *   bench_readbw FILE        prints "BYTES SECONDS BYTES_PER_SECOND"
 *
 * Exit: 0 ok, 2 usage or an unreadable file. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One pass; returns the bytes read, or -1.  The words are summed so that
 * the data is really touched. */
static long long pass(const char *path, unsigned char *buf, size_t cap, uint64_t *sum)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    long long total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, cap);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        for (ssize_t i = 0; i + 8 <= r; i += 64) {
            uint64_t w;
            memcpy(&w, buf + i, 8);
            *sum += w;
        }
        total += r;
    }
    close(fd);
    return total;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "--help")) {
        fprintf(argc == 2 ? stdout : stderr, "usage: bench_readbw FILE\n");
        return argc == 2 ? 0 : 2;
    }
    size_t cap = (size_t)1 << 20;
    unsigned char *buf = malloc(cap);
    uint64_t sum = 0;
    if (!buf || pass(argv[1], buf, cap, &sum) < 0) {
        fprintf(stderr, "bench_readbw: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    double t0 = now();
    long long bytes = pass(argv[1], buf, cap, &sum);
    double t = now() - t0;
    if (bytes < 0) {
        fprintf(stderr, "bench_readbw: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    printf("%lld %.6f %.6g\n", bytes, t, t > 0 ? (double)bytes / t : 0.0);
    fprintf(stderr, "(checksum %llx)\n", (unsigned long long)sum);
    free(buf);
    return 0;
}
