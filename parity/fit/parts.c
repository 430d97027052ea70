/* parts.c: the parts of a tree text that may take settings of their own
 * (docs/numerics.md §4.2, `X[...]`), shared by fit's per-part search
 * (docs/fit.md "Per-part arithmetic") and reveal's (docs/reveal.md
 * "Per-part arithmetic"). */
#include "fit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The next top-level argument of a node's list from t[*at] (just past its
 * '(' or a ','): its text, blanks trimmed, is [*b, *z); *at moves past the
 * ',' or ')' that ends it, *last says which.  0 at the end of the text. */
int fit_next_arg(const char *t, size_t *at, size_t *b, size_t *z, int *last)
{
    int depth = 0;
    for (size_t i = *at; t[i]; i++) {
        char c = t[i];
        if (c == '(' || c == '[')
            depth++;
        else if ((c == ')' || c == ']') && depth > 0)
            depth--;
        else if (depth == 0 && (c == ',' || c == ')')) {
            size_t x = *at, y = i;
            while (t[x] == ' ')
                x++;
            while (y > x && t[y - 1] == ' ')
                y--;
            *b = x;
            *z = y;
            *at = i + 1;
            *last = c == ')';
            return 1;
        }
    }
    return 0;
}

/* The subtrees of a tree text that may take settings: every argument of a
 * node that is a tree (starts with a letter, holds no `=`, `@` or `[` of
 * its own at its top level, is not `carry`), at any depth, by where its
 * text ends, outermost first; at most max.  The count. */
void fit_tree_args(const char *t, size_t from, size_t to, size_t *begins, size_t *ends, size_t *n, size_t max)
{
    /* the node's name, then its arguments between the parentheses */
    size_t open = from;
    while (open < to && t[open] != '(')
        open++;
    if (open >= to || t[to - 1] != ')')
        return;
    size_t at = open + 1, b, z;
    int last = 0;
    while (!last && at < to && fit_next_arg(t, &at, &b, &z, &last)) {
        int is_tree = z > b && t[b] >= 'a' && t[b] <= 'z' && !(z - b == 5 && !strncmp(t + b, "carry", 5));
        int d2 = 0;
        for (size_t q = b; q < z && is_tree; q++) {
            if (t[q] == '(')
                d2++;
            else if (t[q] == ')')
                d2--;
            else if (d2 == 0 && (t[q] == '=' || t[q] == '@' || t[q] == '['))
                is_tree = 0;
        }
        if (is_tree && *n < max) {
            begins[*n] = b;
            ends[(*n)++] = z;
            fit_tree_args(t, b, z, begins, ends, n, max);
        }
    }
}

/* The tree text with br[q] (NULL or "": nothing) written as "[br[q]]"
 * right after part q, which ends at ends[q]; parts ending at one place (a
 * node and its last argument) take the inner one, listed later, first.
 * Malloc'd. */
char *fit_with_settings(const char *tree, const size_t *ends, size_t np, char *const *br)
{
    size_t cap = strlen(tree) + 1;
    for (size_t q = 0; q < np; q++)
        cap += br[q] ? strlen(br[q]) + 2 : 0;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    size_t len = 0, at = 0;
    for (;;) {
        size_t best = SIZE_MAX;
        for (size_t q = 0; q < np; q++)
            if (br[q] && *br[q] && ends[q] > at && ends[q] < best)
                best = ends[q];
        if (best == SIZE_MAX)
            break;
        memcpy(t + len, tree + at, best - at);
        len += best - at;
        for (size_t q = np; q-- > 0;)
            if (br[q] && *br[q] && ends[q] == best)
                len += (size_t)snprintf(t + len, cap - len, "[%s]", br[q]);
        at = best;
    }
    snprintf(t + len, cap - len, "%s", tree + at);
    return t;
}

