/* cli.c: what the subcommands of the `parity` CLI share (cli.h): option
 * scanning, error printing, exit statuses of an nx_err. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_flag(char **argv, int i, const char *name)
{
    return strcmp(argv[i], name) == 0;
}

int cli_opt(int argc, char **argv, int *i, const char *name, const char **val, int *bad)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != 0)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "parity: option %s needs a value\n", name);
        *bad = 1;
        return 1;
    }
    *val = argv[++*i];
    return 1;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "parity %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_fail(const char *cmd, const nx_err *e)
{
    cli_error(cmd, "%s", e->msg);
    switch (e->code) {
    case NX_EINVAL: case NX_EIO: case NX_EUNSUPPORTED: return EXIT_INPUT;
    default: return EXIT_INTERNAL;
    }
}

long cli_long(const char *cmd, const char *opt, const char *val, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < lo || v > hi) {
        cli_error(cmd, "%s: '%s' is not an integer in [%ld, %ld]", opt, val, lo, hi);
        return -1;
    }
    return v;
}
