/* test_registry.c: the family registry (parity/registry/registry.h, docs/registry.md):
 * resolution along class chains, template filling, the canonical hash,
 * compare, and every lint rule on crafted registries written into a
 * temporary directory.  Expected lines are counted by hand from the texts
 * below; nothing is taken from the code under test. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "registry.h"

/* ---- temporary registries --------------------------------------------- */

static void rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            rm_rf(sub);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void mkdir_p(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(tmp, 0755);
            *p = '/';
        }
    mkdir(tmp, 0755);
}

/* A registry in a fresh directory: pairs of (relative path, text), NULL-ended. */
typedef struct tmpreg {
    char dir[512];
} tmpreg;

static void reg_write(tmpreg *t, ...)
{
    const char *base = getenv("TMPDIR");
    snprintf(t->dir, sizeof t->dir, "%s/test_registry_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(t->dir))
        fail_msg("mkdtemp failed");
    va_list ap;
    va_start(ap, t);
    const char *rel;
    while ((rel = va_arg(ap, const char *))) {
        const char *text = va_arg(ap, const char *);
        char path[1024], parent[1024];
        snprintf(path, sizeof path, "%s/%s", t->dir, rel);
        snprintf(parent, sizeof parent, "%s", path);
        *strrchr(parent, '/') = 0;
        mkdir_p(parent);
        FILE *f = fopen(path, "w");
        if (!f)
            fail_msg("cannot write %s", path);
        fputs(text, f);
        fclose(f);
    }
    va_end(ap);
}

static reg_registry *load_ok(const tmpreg *t)
{
    reg_registry *r = NULL;
    nx_err err = {0};
    if (reg_load(t->dir, &r, &err) != NX_OK)
        fail_msg("reg_load(%s): %s", t->dir, err.msg);
    return r;
}

static fam_spec resolve_ok(const reg_registry *r, const char *cls, const char *fp, const char *shape)
{
    fam_spec s;
    nx_err err = {0};
    if (reg_resolve(r, cls, fp, shape, &s, &err) != NX_OK)
        fail_msg("reg_resolve(%s, %s, %s): %s", cls, fp, shape ? shape : "-", err.msg);
    return s;
}

static const char *tree_of(const fam_spec *s, const char *red)
{
    const fam_reduction *r = fam_reduction_get(s, red);
    if (!r)
        fail_msg("%s.%s has no reduction '%s'", s->family, s->point, red);
    return r->tree_text;
}

#define assert_str(got, want)                                                                       \
    do {                                                                                            \
        const char *g_ = (got), *w_ = (want);                                                       \
        if (!g_ || strcmp(g_, w_) != 0)                                                             \
            fail_msg("got '%s', want '%s'", g_ ? g_ : "(null)", w_);                                \
    } while (0)

#define assert_contains(hay, needle)                                                                \
    do {                                                                                            \
        const char *h_ = (hay), *n_ = (needle);                                                     \
        if (!h_ || !strstr(h_, n_))                                                                 \
            fail_msg("'%s' not found in:\n%s", n_, h_ ? h_ : "(null)");                             \
    } while (0)

/* ---- a good registry: a chain of three (a <- b <- c) and a lone root ---- */

/* a/common/KERNEL_FAMILIES.toml, lines counted by hand:
 *  1 [[family]]   5 kernels   8 [[family.param]] split   13 tile  17 vec
 * 21 threads   26 mode   31 split_k   35 [[family.point]] p1 (kernel k1)
 * 41 p2   50 p3   56 p4   63 family cmp ... */
static const char *A_KF =
    "[[family]]\n"                                           /* 1 */
    "id = \"fam\"\n"                                         /* 2 */
    "shape = [\"M\", \"K\"]\n"                               /* 3 */
    "reductions = [\"k\"]\n"                                 /* 4 */
    "kernels = [\"k1\", \"k2\", \"k3\", \"k4\"]\n"           /* 5 */
    "compute = { unit = \"tensor_core\", atom = \"sm80.mma.bf16\" }\n" /* 6 */
    "elementwise = [\"exp\"]\n"                              /* 7 */
    "[[family.param]]\n"                                     /* 8 */
    "name = \"split\"\n"                                     /* 9 */
    "kind = \"numerics\"\n"                                  /* 10 */
    "default = 2\n"                                          /* 11 */
    "\n"                                                     /* 12 */
    "[[family.param]]\n"                                     /* 13 */
    "name = \"tile\"\n"                                      /* 14 */
    "kind = \"compile\"\n"                                   /* 15 */
    "\n"                                                     /* 16 */
    "[[family.param]]\n"                                     /* 17 */
    "name = \"vec\"\n"                                       /* 18 */
    "kind = \"compile\"\n"                                   /* 19 */
    "\n"                                                     /* 20 */
    "[[family.param]]\n"                                     /* 21 */
    "name = \"threads\"\n"                                   /* 22 */
    "kind = \"runtime\"\n"                                   /* 23 */
    "default = 4\n"                                          /* 24 */
    "\n"                                                     /* 25 */
    "[[family.param]]\n"                                     /* 26 */
    "name = \"mode\"\n"                                      /* 27 */
    "kind = \"policy\"\n"                                    /* 28 */
    "default = \"x\"\n"                                      /* 29 */
    "\n"                                                     /* 30 */
    "[[family.param]]\n"                                     /* 31 */
    "name = \"eps\"\n"                                       /* 32 */
    "kind = \"numerics\"\n"                                  /* 33 */
    "default = 1e-6\n"                                       /* 34 */
    "[[family.point]]\n"                                     /* 35 */
    "id = \"p1\"\n"                                          /* 36 */
    "kernel = \"k1\"\n"                                      /* 37 */
    "[family.point.numerics.k]\n"                            /* 38 */
    "tree = \"split({split}, seq, seq)\"\n"                  /* 39 */
    "\n"                                                     /* 40 */
    "[[family.point]]\n"                                     /* 41 */
    "id = \"p2\"\n"                                          /* 42 */
    "kernel = \"k2\"\n"                                      /* 43 */
    "params = { split = 4 }\n"                               /* 44 */
    "[family.point.numerics.k]\n"                            /* 45 */
    "tree = \"split({split}, stride({vec}, seq, pairwise), seq, align={tile})\"\n" /* 46 */
    "[family.point.tolerance]\n"                             /* 47 */
    "ulp = 3\n"                                              /* 48 */
    "\n"                                                     /* 49 */
    "[[family.point]]\n"                                     /* 50 */
    "id = \"p3\"\n"                                          /* 51 */
    "[family.point.numerics.k]\n"                            /* 52 */
    "tree = \"tile({K}, seq, seq)\"\n"                       /* 53 */
    "out = \"bf16\"\n"                                       /* 54 */
    "\n"                                                     /* 55 */
    "[[family.point]]\n"                                     /* 56 */
    "id = \"p4\"\n"                                          /* 57 */
    "kernel = \"k4\"\n"                                      /* 58 */
    "[family.point.numerics.k]\n"                            /* 59 */
    "tree = \"split({split}, chain(8), seq)\"\n"             /* 60 */
    "atom = \"sm80.mma.bf16\"\n"                             /* 61 */
    "\n"                                                     /* 62 */
    "[[family]]\n"                                           /* 63 */
    "id = \"cmp\"\n"
    "shape = [\"K\"]\n"
    "reductions = [\"k\"]\n"
    "elementwise = [\"exp\"]\n"
    "[[family.param]]\n"
    "name = \"split_k\"\n"
    "kind = \"numerics\"\n"
    "[[family.param]]\n"
    "name = \"threads\"\n"
    "kind = \"runtime\"\n"
    "default = 1\n"
    "[[family.point]]\n"
    "id = \"q4\"\n"
    "params = { split_k = 4 }\n"
    "[family.point.numerics.k]\n"
    "tree = \"split({split_k}, chain(8), seq)\"\n"
    "atom = \"sm80.mma.bf16\"\n"
    "[[family.point]]\n"
    "id = \"q8\"\n"
    "params = { split_k = 8 }\n"
    "[family.point.numerics.k]\n"
    "tree = \"split({split_k}, chain(8), seq)\"\n"
    "atom = \"sm80.mma.bf16\"\n"
    "[[family.point]]\n"
    "id = \"f25\"\n"
    "params = { split_k = 4 }\n"
    "[family.point.numerics.k]\n"
    "tree = \"split(4, chain(8), seq)\"\n"
    "atom = { preset = \"sm80.mma.bf16\", frac_bits = 25 }\n"
    "[[family.point]]\n"
    "id = \"explicit\"\n"
    "params = { split_k = 4, threads = 64 }\n"
    "[family.point.numerics.k]\n"
    "acc = \"fp32\"\n"
    "rounding = \"rne\"\n"
    "tree = \"split(4,chain(8),seq)\"\n"
    "atom = { frac_bits = 24, term_round = \"rz\", round = \"rz\", acc = \"fp32\" }\n"
    "[family.point.elementwise]\n"
    "exp = \"cr\"\n"
    "[[family.point]]\n"
    "id = \"approx\"\n"
    "params = { split_k = 4 }\n"
    "[family.point.numerics.k]\n"
    "tree = \"split({split_k}, chain(8), seq)\"\n"
    "atom = \"sm80.mma.bf16\"\n"
    "[family.point.elementwise]\n"
    "exp = { approx = \"ex2.approx.ftz.f32\", ulp = 2 }\n";

/* b/common/KERNEL_FAMILIES.toml */
static const char *B_KF =
    "[[family]]\n"                                 /* 1 */
    "id = \"fam\"\n"                               /* 2 */
    "[[family.point]]\n"                           /* 3 */
    "id = \"p1\"\n"                                /* 4 */
    "[family.point.numerics.k]\n"                  /* 5 */
    "tree = \"split({split}, seq, pairwise)\"\n"   /* 6 */
    "[[family.point]]\n"                           /* 7 */
    "id = \"p2\"\n"                                /* 8 */
    "kernel = \"k3\"\n"                            /* 9 */
    "[[family.point]]\n"                           /* 10 */
    "id = \"p5\"\n"                                /* 11 */
    "[family.point.numerics.k]\n"                  /* 12 */
    "tree = \"pairwise\"\n"                        /* 13 */
    "[[family.evidence]]\n"                        /* 14 */
    "class = \"b\"\n"                              /* 15 */
    "point = \"p1\"\n"                             /* 16 */
    "rows = [1, 8]\n"                              /* 17 */
    "measurement = \"m-b-1\"\n";                   /* 18 */

/* c/common/KERNEL_FAMILIES.toml: overrides p4 with the wgmma atom. */
static const char *C_KF =
    "[[family]]\n"
    "id = \"fam\"\n"
    "[[family.point]]\n"
    "id = \"p4\"\n"
    "[family.point.numerics.k]\n"
    "tree = \"split({split}, chain(16), seq)\"\n"
    "atom = \"sm90.wgmma.bf16\"\n"
    "[[family.evidence]]\n"
    "class = \"c\"\n"
    "point = \"p2\"\n"
    "measurement = \"m-c-1\"\n";

static tmpreg g_good;

static int setup_good(void **state)
{
    (void)state;
    reg_write(&g_good,
              "DEVICES.toml", "[[device]]\nsku = \"X1\"\nclass = \"c\"\n",
              "a/HARDWARE.toml", "class = \"a\"\natoms = [\"sm80.mma.bf16\"]\n[defaults]\ntile = 32\nvec = 4\n",
              "a/common/KERNEL_FAMILIES.toml", A_KF,
              "b/HARDWARE.toml", "class = \"b\"\nparent = \"a\"\n[defaults]\nvec = 8\n",
              "b/common/KERNEL_FAMILIES.toml", B_KF,
              "c/HARDWARE.toml", "class = \"c\"\nparent = \"b\"\natoms = [\"sm90.wgmma.bf16\"]\n[defaults]\ntile = 64\n",
              "c/common/KERNEL_FAMILIES.toml", C_KF,
              "d/HARDWARE.toml", "class = \"d\"\nparent = \"a\"\n",
              (const char *)NULL);
    return 0;
}

static int teardown_good(void **state)
{
    (void)state;
    rm_rf(g_good.dir);
    return 0;
}

/* ---- resolution ------------------------------------------------------- */

static void test_good_lints_clean(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    char *report = NULL;
    size_t n = reg_lint(r, &report);
    if (n != 0)
        fail_msg("expected a clean lint, got %zu errors:\n%s", n, report);
    /* Warnings are allowed, none expected here. */
    assert_string_equal(report, "");
    free(report);
    assert_int_equal(reg_class_count(r), 4);
    assert_str(reg_class_name(r, 0), "a");
    assert_str(reg_class_parent(r, "c"), "b");
    assert_null(reg_class_parent(r, "a"));
    reg_free(r);
}

static void test_override_by_id(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    fam_spec s = resolve_ok(r, "a", "fam.p1", NULL);
    assert_str(tree_of(&s, "k"), "split(2, seq, seq)");
    assert_str(s.kernel, "k1");
    fam_spec_free(&s);
    /* b replaces p1's numerics.k ... */
    s = resolve_ok(r, "b", "fam.p1", NULL);
    assert_str(tree_of(&s, "k"), "split(2, seq, pairwise)");
    /* ... and keeps the fields it does not write (kernel from a). */
    assert_str(s.kernel, "k1");
    fam_spec_free(&s);
    /* d's parent is a: it never sees b's override. */
    s = resolve_ok(r, "d", "fam.p1", NULL);
    assert_str(tree_of(&s, "k"), "split(2, seq, seq)");
    fam_spec_free(&s);
    /* New ids are added: p5 is visible from b and c, not a or d. */
    char **ids;
    size_t n;
    nx_err err = {0};
    assert_int_equal(reg_list_points(r, "b", &ids, &n, &err), NX_OK);
    int has_p5 = 0;
    for (size_t i = 0; i < n; i++) {
        has_p5 |= strcmp(ids[i], "fam.p5") == 0;
        free(ids[i]);
    }
    free(ids);
    assert_true(has_p5);
    assert_int_not_equal(reg_resolve(r, "a", "fam.p5", NULL, &s, &err), NX_OK);
    assert_contains(err.msg, "no point 'p5'");
    reg_free(r);
}

static void test_field_override(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    /* At a: kernel k2, vec = 4 and tile = 32 from a's defaults. */
    fam_spec s = resolve_ok(r, "a", "fam.p2", NULL);
    assert_str(s.kernel, "k2");
    assert_str(tree_of(&s, "k"), "split(4, stride(4, seq, pairwise), seq, align=32)");
    assert_true(s.tol.has_ulp);
    assert_true(s.tol.ulp == 3);
    fam_spec_free(&s);
    /* At b only the kernel is overridden; numerics and tolerance come from
     * a, filled with b's class default vec = 8. */
    s = resolve_ok(r, "b", "fam.p2", NULL);
    assert_str(s.kernel, "k3");
    assert_str(tree_of(&s, "k"), "split(4, stride(8, seq, pairwise), seq, align=32)");
    assert_true(s.tol.has_ulp && s.tol.ulp == 3);
    fam_spec_free(&s);
    /* Where each came from. */
    char **src;
    size_t n;
    nx_err err = {0};
    assert_int_equal(reg_point_sources(r, "b", "fam.p2", &src, &n, &err), NX_OK);
    assert_int_equal(n, 2);
    char want[1200];
    snprintf(want, sizeof want, "%s/a/common/KERNEL_FAMILIES.toml:41", g_good.dir);
    assert_str(src[0], want);
    snprintf(want, sizeof want, "%s/b/common/KERNEL_FAMILIES.toml:7", g_good.dir);
    assert_str(src[1], want);
    for (size_t i = 0; i < n; i++)
        free(src[i]);
    free(src);
    reg_free(r);
}

static void test_chain_of_three(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    /* c sees b's override of p1, b's new p5, its own override of p4, and
     * takes tile = 64 from its own defaults, vec = 8 from b's. */
    fam_spec s = resolve_ok(r, "c", "fam.p1", NULL);
    assert_str(tree_of(&s, "k"), "split(2, seq, pairwise)");
    fam_spec_free(&s);
    s = resolve_ok(r, "c", "fam.p5", NULL);
    assert_str(tree_of(&s, "k"), "pairwise");
    fam_spec_free(&s);
    s = resolve_ok(r, "c", "fam.p2", NULL);
    assert_str(tree_of(&s, "k"), "split(4, stride(8, seq, pairwise), seq, align=64)");
    assert_str(s.kernel, "k3");
    fam_spec_free(&s);
    s = resolve_ok(r, "c", "fam.p4", NULL);
    assert_str(tree_of(&s, "k"), "split(2, chain(16), seq)");
    assert_int_equal(fam_reduction_get(&s, "k")->point.atom.frac_bits, 25);
    assert_str(s.kernel, "k4");
    fam_spec_free(&s);
    s = resolve_ok(r, "b", "fam.p4", NULL);
    assert_str(tree_of(&s, "k"), "split(2, chain(8), seq)");
    assert_int_equal(fam_reduction_get(&s, "k")->point.atom.frac_bits, 24);
    /* Params: family defaults and class defaults, as text. */
    assert_str(fam_param_get(&s, "threads"), "4");
    assert_str(fam_param_get(&s, "mode"), "x");
    assert_str(fam_param_get(&s, "split"), "2");
    assert_str(fam_param_get(&s, "tile"), "32");
    assert_str(fam_param_get(&s, "vec"), "8");
    double eps;
    nx_err err = {0};
    assert_int_equal(fam_param_double(&s, "eps", &eps, &err), NX_OK);
    assert_true(eps == 1e-6);
    fam_spec_free(&s);
    reg_free(r);
}

static void test_evidence_only_on_its_class(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    struct { const char *cls, *fp; size_t want; } cases[] = {
        {"b", "fam.p1", 1}, {"a", "fam.p1", 0}, {"c", "fam.p1", 0}, /* b measured p1: not its parent, not its child */
        {"c", "fam.p2", 1}, {"b", "fam.p2", 0}, {"a", "fam.p2", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char **items;
        size_t n;
        nx_err err = {0};
        if (reg_evidence(r, cases[i].cls, cases[i].fp, &items, &n, &err) != NX_OK)
            fail_msg("%s %s: %s", cases[i].cls, cases[i].fp, err.msg);
        if (n != cases[i].want)
            fail_msg("evidence of %s at %s: %zu entries, want %zu", cases[i].fp, cases[i].cls, n, cases[i].want);
        if (n)
            assert_contains(items[0], cases[i].cls[0] == 'b' ? "m-b-1" : "m-c-1");
        for (size_t j = 0; j < n; j++)
            free(items[j]);
        free(items);
    }
    reg_free(r);
}

static void test_template_shape(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    fam_spec s = resolve_ok(r, "a", "fam.p3", "M=2,K=64");
    assert_str(tree_of(&s, "k"), "tile(64, seq, seq)");
    assert_str(fam_param_get(&s, "K"), "64");
    assert_str(fam_param_get(&s, "M"), "2");
    /* The shape does not enter the hash (both sides of a comparison share
     * it), but the filled tree does. */
    fam_spec s2 = resolve_ok(r, "a", "fam.p3", "M=3,K=64");
    assert_str(s.hash, s2.hash);
    fam_spec_free(&s2);
    s2 = resolve_ok(r, "a", "fam.p3", "M=2,K=32");
    assert_string_not_equal(s.hash, s2.hash);
    fam_spec_free(&s2);
    fam_spec_free(&s);

    nx_err err = {0};
    char want[1200];
    assert_int_equal(reg_resolve(r, "a", "fam.p3", NULL, &s, &err), NX_EINVAL);
    snprintf(want, sizeof want, "%s/a/common/KERNEL_FAMILIES.toml:53:", g_good.dir);
    assert_contains(err.msg, want);
    assert_contains(err.msg, "template {K} has no value");
    assert_int_equal(reg_resolve(r, "a", "fam.p3", "K=4,Q=1", &s, &err), NX_EINVAL);
    assert_contains(err.msg, "no dimension 'Q'");
    assert_int_equal(reg_resolve(r, "a", "fam.p3", "K=four", &s, &err), NX_EINVAL);
    assert_int_equal(reg_resolve(r, "zz", "fam.p3", "K=4", &s, &err), NX_EINVAL);
    assert_contains(err.msg, "unknown class 'zz'");
    assert_int_equal(reg_resolve(r, "a", "nofam.p3", "K=4", &s, &err), NX_EINVAL);
    assert_int_equal(reg_resolve(r, "a", "famp3", "K=4", &s, &err), NX_EINVAL);
    reg_free(r);
}

static void test_hash_canonical(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    /* q4 names the preset and a template; `explicit` spells the same atom
     * out, writes the tree without spaces, declares exp = "cr" (the default)
     * and a different runtime param: the same bits, the same hash. */
    fam_spec q4 = resolve_ok(r, "a", "cmp.q4", NULL), ex = resolve_ok(r, "a", "cmp.explicit", NULL);
    assert_str(q4.hash, ex.hash);
    assert_int_equal(strlen(q4.hash), 64);
    /* The same point seen from another class: same hash. */
    fam_spec q4c = resolve_ok(r, "c", "cmp.q4", NULL);
    assert_str(q4.hash, q4c.hash);
    /* Differences that change bits change the hash: split count, frac_bits,
     * an approximate exp. */
    const char *others[] = {"cmp.q8", "cmp.f25", "cmp.approx"};
    for (size_t i = 0; i < 3; i++) {
        fam_spec o = resolve_ok(r, "a", others[i], NULL);
        if (strcmp(o.hash, q4.hash) == 0)
            fail_msg("%s has the hash of cmp.q4", others[i]);
        fam_spec_free(&o);
    }
    const fam_elem *e = NULL;
    fam_spec ap = resolve_ok(r, "a", "cmp.approx", NULL);
    e = fam_elem_get(&ap, "exp");
    assert_non_null(e);
    assert_int_equal(e->impl, FAM_ELEM_APPROX);
    assert_str(e->approx, "ex2.approx.ftz.f32");
    assert_true(e->ulp == 2);
    fam_spec_free(&ap);
    fam_spec_free(&q4);
    fam_spec_free(&ex);
    fam_spec_free(&q4c);
    reg_free(r);
}

static void test_compare(void **state)
{
    (void)state;
    reg_registry *r = load_ok(&g_good);
    char *text = NULL;
    int parity = -1;
    nx_err err = {0};
    /* Split count 4 vs 8 (and the param that sets it). */
    assert_int_equal(reg_compare(r, "a:cmp.q4", "a:cmp.q8", "K=64", &text, &parity, &err), NX_OK);
    assert_int_equal(parity, 0);
    assert_contains(text, "split count: 4 vs 8");
    assert_contains(text, "param split_k: 4 vs 8");
    assert_null(strstr(text, "frac_bits"));
    assert_null(strstr(text, "bit parity expected"));
    assert_contains(text, "applies: the derived bound");
    free(text);
    /* Atom frac_bits 24 vs 25 and nothing else. */
    assert_int_equal(reg_compare(r, "a:cmp.q4", "a:cmp.f25", "K=64", &text, &parity, &err), NX_OK);
    assert_int_equal(parity, 0);
    assert_contains(text, "atom frac_bits: 24 vs 25");
    assert_null(strstr(text, "split count"));
    assert_null(strstr(text, "tree:"));
    assert_contains(text, "bits may differ: 1 difference\n");
    free(text);
    /* Equal hashes: parity expected. */
    assert_int_equal(reg_compare(r, "a:cmp.q4", "c:cmp.explicit", "K=64", &text, &parity, &err), NX_OK);
    assert_int_equal(parity, 1);
    assert_contains(text, "bit parity expected");
    free(text);
    /* A declared tolerance applies when the points differ. */
    assert_int_equal(reg_compare(r, "a:fam.p2", "b:fam.p2", "M=1,K=64", &text, &parity, &err), NX_OK);
    assert_int_equal(parity, 0);
    assert_contains(text, "stride lanes: 4 vs 8");
    assert_contains(text, "applies: ulp = 3");
    free(text);
    /* An elementwise difference. */
    assert_int_equal(reg_compare(r, "a:cmp.q4", "a:cmp.approx", NULL, &text, &parity, &err), NX_OK);
    assert_contains(text, "elementwise exp: cr (default) vs approx ex2.approx.ftz.f32 (2 ulp)");
    free(text);
    assert_int_equal(reg_compare(r, "cmp.q4", "a:cmp.q8", NULL, &text, &parity, &err), NX_EINVAL);
    assert_contains(err.msg, "not CLASS:FAMILY.POINT");
    reg_free(r);
}

/* ---- lint: one crafted registry per rule ------------------------------ */

/* A minimal valid class x: the base of the cases below. */
static const char *X_HW = "class = \"x\"\n";
static const char *X_KF =
    "[[family]]\n"                          /* 1 */
    "id = \"f\"\n"                          /* 2 */
    "shape = [\"K\"]\n"                     /* 3 */
    "reductions = [\"k\"]\n"                /* 4 */
    "kernels = [\"k1\"]\n"                  /* 5 */
    "[[family.param]]\n"                    /* 6 */
    "name = \"s\"\n"                        /* 7 */
    "kind = \"numerics\"\n"                 /* 8 */
    "default = 2\n"                         /* 9 */
    "[[family.point]]\n"                    /* 10 */
    "id = \"p\"\n"                          /* 11 */
    "kernel = \"k1\"\n"                     /* 12 */
    "[family.point.numerics.k]\n"           /* 13 */
    "tree = \"split({s}, seq, seq)\"\n";    /* 14 */

typedef struct lint_case {
    const char *name;
    const char *files[10]; /* path, text pairs */
    const char *file;      /* the file of the expected finding */
    int line;
    const char *msg;       /* a part of the message */
} lint_case;

static void run_lint_case(const lint_case *c)
{
    tmpreg t;
    reg_write(&t, c->files[0], c->files[1], c->files[2], c->files[3], c->files[4], c->files[5], c->files[6],
              c->files[7], c->files[8], c->files[9], (const char *)NULL);
    reg_registry *r = NULL;
    nx_err err = {0};
    if (reg_load(t.dir, &r, &err) != NX_OK) {
        rm_rf(t.dir);
        fail_msg("%s: the registry should load (lint's job): %s", c->name, err.msg);
    }
    char *report = NULL;
    size_t n = reg_lint(r, &report);
    char where[1200];
    snprintf(where, sizeof where, "%s/%s:%d:", t.dir, c->file, c->line);
    /* The finding: one line that holds both the place and the message. */
    int found = 0;
    for (char *line = report; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[2048];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        if (strncmp(buf, where, strlen(where)) == 0 && strstr(buf, c->msg) && strstr(buf, ": error: "))
            found = 1;
        line = nl ? nl + 1 : NULL;
    }
    if (n == 0 || !found) {
        char copy[8192];
        snprintf(copy, sizeof copy, "%s", report ? report : "(null)");
        free(report);
        reg_free(r);
        rm_rf(t.dir);
        fail_msg("%s: want an error at %s with '%s'; got %zu errors:\n%s", c->name, where, c->msg, n, copy);
    }
    free(report);
    reg_free(r);
    rm_rf(t.dir);
}

#define KF "x/common/KERNEL_FAMILIES.toml"
#define HW "x/HARDWARE.toml"

static void test_lint_rules(void **state)
{
    (void)state;
    const lint_case cases[] = {
        {"unknown key in a family",
         {HW, "class = \"x\"\n", KF,
          "[[family]]\nid = \"f\"\nkernals = [\"k1\"]\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\n"
          "tree = \"seq\"\n"},
         KF, 3, "unknown key 'kernals' in [[family]] 'f' (did you mean 'kernels'?)"},
        {"unknown key in a numerics point",
         {HW, "class = \"x\"\n", KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntreee = \"seq\"\n"},
         KF, 6, "unknown key 'treee' in numerics point f.p.k"},
        {"unknown key in a point's atom",
         {HW, "class = \"x\"\n", KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"chain(8)\"\n"
          "atom = { preset = \"sm80.mma.bf16\", frac_bit = 3 }\n"},
         KF, 7, "unknown key 'frac_bit' in atom"},
        {"unknown key in HARDWARE.toml", {HW, "class = \"x\"\ndescripton = \"d\"\n", KF, X_KF}, HW, 2,
         "unknown key 'descripton'"},
        {"unknown key in DEVICES.toml",
         {HW, X_HW, KF, X_KF, "DEVICES.toml", "[[device]]\nsku = \"s\"\nclass = \"x\"\nnmae = \"n\"\n"},
         "DEVICES.toml", 4, "unknown key 'nmae' in [[device]]"},
        {"unknown key in a tolerance",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"seq\"\n"
          "[family.point.tolerance]\nulps = 2\n"},
         KF, 8, "unknown key 'ulps' in tolerance"},
        {"a point without numerics",
         {HW, X_HW, KF, "[[family]]\nid = \"f\"\nreductions = [\"k\"]\n\n[[family.point]]\nid = \"p\"\n"}, KF, 5,
         "point 'p' of family 'f' has no numerics"},
        {"a point without numerics (no reductions declared)",
         {HW, X_HW, KF, "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\nkernel = \"k\"\n"}, KF, 3,
         "has no numerics"},
        {"a kernel in two families",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\nkernels = [\"k1\", \"k2\"]\n[[family.point]]\nid = \"p\"\n"
          "[family.point.numerics.k]\ntree = \"seq\"\n"
          "[[family]]\nid = \"g\"\nkernels = [\"k3\",\n  \"k2\"]\n[[family.point]]\nid = \"p\"\n"
          "[family.point.numerics.k]\ntree = \"seq\"\n"},
         KF, 11, "kernel 'k2' is listed in two families, 'f' and 'g'"},
        {"a runtime param in a tree",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.param]]\nname = \"threads\"\nkind = \"runtime\"\ndefault = 4\n"
          "[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"stride({threads}, seq, seq)\"\n"},
         KF, 10, "runtime param 'threads' is used in numerics 'k' of f.p"},
        {"a template param without a value",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\nshape = [\"K\"]\n[[family.param]]\nname = \"s\"\nkind = \"numerics\"\n"
          "[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"split({s}, seq, seq, align={K})\"\n"},
         KF, 10, "template {s} in numerics 'k' of f.p has no value at class 'x'"},
        {"a template naming no param",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\n"
          "tree = \"split({nope}, seq, seq)\"\n"},
         KF, 6, "template {nope} in numerics 'k' of f.p names no param"},
        {"a malformed template",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\n"
          "tree = \"split({s, seq, seq)\"\n"},
         KF, 6, "malformed template"},
        {"a tree that does not parse",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.param]]\nname = \"s\"\nkind = \"compile\"\ndefault = 4\n"
          "[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\n\ntree = \"split({s} seq, seq)\"\n"},
         KF, 11, "expected ',' after the split count"},
        {"chain without an atom",
         {HW, X_HW, KF, "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\n"
                        "tree = \"chain(8)\"\n"},
         KF, 5, "chain(N) needs an atom"},
        {"an unknown atom in a point",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"chain(8)\"\n"
          "atom = \"sm80.mma.bf17\"\n"},
         KF, 7, "unknown atom 'sm80.mma.bf17'"},
        {"an unknown atom in compute",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[family.compute]\nunit = \"tensor_core\"\natom = \"sm99.mma\"\n"
          "[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"seq\"\n"},
         KF, 5, "unknown atom 'sm99.mma' in compute"},
        {"an unknown atom in HARDWARE.toml", {HW, "class = \"x\"\natoms = [\n  \"sm80.mma.bf16\",\n  \"hmma\"]\n", KF, X_KF},
         HW, 4, "unknown atom 'hmma' in atoms"},
        {"a copy without a reason",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\nhow = \"copy\"\n[family.point.numerics.k]\n"
          "tree = \"seq\"\n"},
         KF, 5, "point 'p' is a copy without a reason"},
        {"a parent cycle",
         {HW, "class = \"x\"\nparent = \"y\"\n", KF, X_KF, "y/HARDWARE.toml", "class = \"y\"\n\nparent = \"x\"\n"},
         "y/HARDWARE.toml", 3, "parent cycle: y -> x -> y"},
        {"a parent cycle (the other end)",
         {HW, "class = \"x\"\nparent = \"y\"\n", KF, X_KF, "y/HARDWARE.toml", "class = \"y\"\n\nparent = \"x\"\n"},
         HW, 2, "parent cycle: x -> y -> x"},
        {"a parent that does not exist", {HW, "class = \"x\"\nparent = \"sm70\"\n", KF, X_KF}, HW, 2,
         "parent 'sm70' does not exist"},
        {"a DEVICES class that does not exist",
         {HW, X_HW, KF, X_KF, "DEVICES.toml", "[[device]]\nsku = \"a\"\nclass = \"x\"\n\n[[device]]\nsku = \"b\"\nclass = \"sm95\"\n"},
         "DEVICES.toml", 7, "device 'b': class 'sm95' does not exist"},
        {"evidence naming an unknown point",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"seq\"\n"
          "[[family.evidence]]\nclass = \"x\"\npoint = \"q\"\nmeasurement = \"m\"\n"},
         KF, 9, "evidence names point 'q', which family 'f' does not have at class 'x'"},
        {"evidence naming an unknown class",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"seq\"\n"
          "[[family.evidence]]\nclass = \"z\"\npoint = \"p\"\nmeasurement = \"m\"\n"},
         KF, 8, "evidence names class 'z'"},
        {"a kernel the family does not list",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\nkernels = [\"k1\"]\n[[family.point]]\nid = \"p\"\nkernel = \"k9\"\n"
          "[family.point.numerics.k]\ntree = \"seq\"\n"},
         KF, 6, "kernel 'k9' is not one of family 'f''s kernels"},
        {"an undeclared param at a point",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\nparams = { splitk = 2 }\n[family.point.numerics.k]\n"
          "tree = \"seq\"\n"},
         KF, 5, "param 'splitk' of point 'p' is not declared by family 'f'"},
        {"an unknown reduction",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\nreductions = [\"k\"]\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\n"
          "tree = \"seq\"\n[family.point.numerics.kk]\ntree = \"seq\"\n"},
         KF, 8, "family 'f' has no reduction 'kk'"},
        {"a bad param kind",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.param]]\nname = \"s\"\nkind = \"launch\"\n[[family.point]]\nid = \"p\"\n"
          "[family.point.numerics.k]\ntree = \"seq\"\n"},
         KF, 5, "kind = \"launch\""},
        {"a bad elementwise value",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.elementwise]\nexp = \"fast\"\n"},
         KF, 6, "elementwise 'exp' = \"fast\""},
        {"HARDWARE class differs from its directory", {HW, "class = \"y\"\n", KF, X_KF}, HW, 1,
         "class = \"y\", but the directory is 'x'"},
        {"a duplicate point id",
         {HW, X_HW, KF,
          "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"seq\"\n"
          "[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\ntree = \"seq\"\n"},
         KF, 8, "point 'p' is declared twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_lint_case(&cases[i]);
}

static void test_lint_clean_base(void **state)
{
    (void)state;
    /* The base of the lint cases is itself clean: each case's error comes
     * from what the case changed. */
    tmpreg t;
    reg_write(&t, HW, X_HW, KF, X_KF, (const char *)NULL);
    reg_registry *r = load_ok(&t);
    char *report = NULL;
    size_t n = reg_lint(r, &report);
    if (n)
        fail_msg("base registry not clean:\n%s", report);
    free(report);
    size_t nc, nf, np;
    reg_counts(r, &nc, &nf, &np);
    assert_int_equal(nc, 1);
    assert_int_equal(nf, 1);
    assert_int_equal(np, 1);
    reg_free(r);
    rm_rf(t.dir);
}

static void test_lint_warning_is_not_an_error(void **state)
{
    (void)state;
    /* chain(16) with an 8-term preset: a warning; the lint stays clean. */
    tmpreg t;
    reg_write(&t, HW, "class = \"x\"\natoms = [\"sm80.mma.bf16\"]\n", KF,
              "[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics.k]\n"
              "tree = \"chain(16)\"\natom = \"sm80.mma.bf16\"\n",
              (const char *)NULL);
    reg_registry *r = load_ok(&t);
    char *report = NULL;
    assert_int_equal(reg_lint(r, &report), 0);
    char want[1200];
    snprintf(want, sizeof want, "%s/%s:5:%s", t.dir, KF, "");
    assert_contains(report, want);
    snprintf(want, sizeof want, "warning: numerics 'k' of f.p: chain(16), but atom 'sm80.mma.bf16' adds groups of 8");
    assert_contains(report, want);
    free(report);
    reg_free(r);
    rm_rf(t.dir);
}

static void test_load_errors(void **state)
{
    (void)state;
    struct { const char *kf; int line; const char *msg; } cases[] = {
        {"[[family]]\nid = \"f\"\nkernels = \"k1\"\n", 3, "key 'kernels' must be an array of strings, found string"},
        {"[[family]]\nid = 3\n", 2, "key 'id' must be a string"},
        {"[[family]]\nkernels = [\"k\"]\n", 1, "missing key 'id'"},
        {"[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\nparams = { s = [1] }\n", 5,
         "must be a string, integer, float or boolean"},
        {"[[family]]\nid = \"f\"\n[[family.point]]\nid = \"p\"\n[family.point.numerics]\nk = \"seq\"\n", 6,
         "key 'k' must be a table"},
        {"[[family]\n", 1, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tmpreg t;
        reg_write(&t, HW, X_HW, KF, cases[i].kf, (const char *)NULL);
        reg_registry *r = NULL;
        nx_err err = {0};
        nx_status st = reg_load(t.dir, &r, &err);
        char want[1200];
        snprintf(want, sizeof want, "%s/%s:%d:", t.dir, KF, cases[i].line);
        rm_rf(t.dir);
        if (st == NX_OK) {
            reg_free(r);
            fail_msg("case %zu: loaded, want an error", i);
        }
        assert_null(r);
        assert_contains(err.msg, want);
        assert_contains(err.msg, cases[i].msg);
    }
    nx_err err = {0};
    reg_registry *r = NULL;
    assert_int_equal(reg_load("/nonexistent/registry", &r, &err), NX_EIO);
    /* A directory without any class. */
    tmpreg t;
    reg_write(&t, "README", "no classes here\n", (const char *)NULL);
    assert_int_equal(reg_load(t.dir, &r, &err), NX_EINVAL);
    assert_contains(err.msg, "no classes");
    rm_rf(t.dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_lints_clean),
        cmocka_unit_test(test_override_by_id),
        cmocka_unit_test(test_field_override),
        cmocka_unit_test(test_chain_of_three),
        cmocka_unit_test(test_evidence_only_on_its_class),
        cmocka_unit_test(test_template_shape),
        cmocka_unit_test(test_hash_canonical),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_lint_rules),
        cmocka_unit_test(test_lint_clean_base),
        cmocka_unit_test(test_lint_warning_is_not_an_error),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, setup_good, teardown_good);
}
