/* report.h: campaign reports: the terminal table, JSON and JUnit XML. */
#ifndef PARITY_REPORT_H
#define PARITY_REPORT_H

#include <stdio.h>

#include "campaign.h"

typedef struct report_meta {
    const char *class_name;
    const char *backend;
    const char *device_json;
    const char *preset;
    unsigned long long seed;
    const char *dist;
    const char *engine;
    int repeats, threads;
    double seconds;
    const char *against;   /* --against class, or NULL: no parity column */
} report_meta;

/* Prints text with every line indented. */
void report_indent(FILE *f, const char *text, int indent);
void report_table(FILE *f, const camp_result *r, size_t n, const report_meta *m);
nx_status report_json(const char *path, const camp_result *r, size_t n, const report_meta *m, nx_err *err);
nx_status report_junit(const char *path, const camp_result *r, size_t n, const report_meta *m, nx_err *err);


#endif
