/* fuzz_tree.c: the tree language (numerics/nx_tree.c, docs/numerics.md §4)
 * on any text: parse; the canonical print must parse again and print the
 * same; the tree expanded at a small n (the first byte) into a program of
 * an fp32 point (with an atom where it has a chain), whose hash and
 * expansion text are taken. */
#include "fuzz_util.h"

#include "nx_limits.h"
#include "nx_point.h"
#include "nx_program.h"
#include "nx_tree.h"

#define FZ_MAX_TEXT 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static int limited;
    if (!limited) { /* small expansions only: every input stays fast */
        nx_limits l = *nx_limits_get();
        l.max_ops = 1u << 16;
        l.max_bytes = 64u << 20;
        nx_limits_set(&l);
        limited = 1;
    }
    size_t n = data[0] % 33;
    char *text = fz_str(data + 1, size - 1, FZ_MAX_TEXT);
    nx_tree *t = NULL;
    nx_err err = {0};
    if (nx_tree_parse(text, "tree", &t, &err) == NX_OK) {
        char *p1 = nx_tree_print(t);
        if (!p1)
            abort();
        nx_tree *t2 = NULL;
        nx_err e2 = {0};
        if (nx_tree_parse(p1, "printed", &t2, &e2) != NX_OK) {
            fprintf(stderr, "canonical print does not parse: %s\n  input: %s\n  print: %s\n", e2.msg, text, p1);
            abort();
        }
        char *p2 = nx_tree_print(t2);
        if (!p2 || strcmp(p1, p2) != 0) {
            fprintf(stderr, "canonical print not stable:\n  input: %s\n  print: %s\n  again: %s\n", text, p1,
                    p2 ? p2 : "(null)");
            abort();
        }
        free(p2);
        nx_tree_free(t2);

        nx_point pt;
        if (nx_point_init(&pt, &err) != NX_OK)
            abort();
        if (nx_point_set_tree(&pt, p1, "tree", &err) == NX_OK) {
            if (nx_tree_uses(pt.tree, NX_T_CHAIN))
                nx_atom_from_preset(&pt.atom, nx_atom_preset_find("sm90.wgmma.bf16"));
            nx_program *prog = NULL;
            if (nx_point_validate(&pt, &err) == NX_OK && nx_program_build(&pt, n, data[0] & 0x80, &prog, &err) == NX_OK) {
                char hex[65];
                (void)nx_program_hash(prog, hex, &err);
                free(nx_program_expansion(prog));
                nx_program_free(prog);
            }
        }
        nx_point_free(&pt);
        free(p1);
        nx_tree_free(t);
    }
    free(text);
    return 0;
}
