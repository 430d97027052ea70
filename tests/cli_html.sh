#!/bin/sh
# cli_html.sh PARITY ST_CRAFT KERNELS ST_FLIP: --html on diff, check (traces and
# --numerics), campaign and reveal (docs/reports.md).  The page's table is read
# back with Python's own HTML parser and its numbers compared with the same
# run's --json; a diff of two outputs that differ in a known pattern (all of
# column 7 by 1 ulp, [20, 3] by 3 ulp) must draw exactly those cells; a
# file name that is markup stays text; nothing is written on exit 2 and an
# output that is an input is refused.
set -u
PARITY=$1
CRAFT=$2
KERNELS=$3
FLIP=$4
T=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The page's parts: every table as rows of cell texts, the <svg> count,
# the heat map's cells, the histogram bars' tooltips.  Tags balanced.
cat > "$T/page.py" << 'EOF2'
import html.parser, json, sys

class Page(html.parser.HTMLParser):
    VOID = {"meta"}
    def __init__(self):
        super().__init__()
        self.stack, self.tables, self.svg, self.cells, self.bars = [], [], 0, [], []
        self.row = self.cell = None
        self.text = ""
        self.cls = None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag not in self.VOID:
            self.stack.append(tag)
        if tag == "table": self.tables.append([])
        if tag == "tr": self.row = []
        if tag in ("td", "th"): self.cell = ""
        if tag == "svg": self.svg += 1
        if tag == "rect" and a.get("class") in ("cell", "bar"):
            self.cls = a["class"]
        if tag == "title": self.text = ""
    def handle_startendtag(self, tag, attrs):
        if tag == "svg": self.svg += 1
    def handle_endtag(self, tag):
        if tag in self.VOID: return
        if not self.stack or self.stack[-1] != tag:
            raise SystemExit("unbalanced </%s> (open: %s)" % (tag, self.stack[-3:]))
        self.stack.pop()
        if tag in ("td", "th") and self.row is not None: self.row.append(self.cell.strip()); self.cell = None
        if tag == "tr" and self.tables: self.tables[-1].append(self.row); self.row = None
        if tag == "title" and self.cls:
            (self.cells if self.cls == "cell" else self.bars).append(self.text)
        if tag == "rect": self.cls = None
    def handle_data(self, d):
        if self.cell is not None: self.cell += d
        self.text += d

def load(path):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    p.close()
    if p.stack: raise SystemExit("left open: %s" % p.stack)
    return p

def verdict_table(p):
    for t in p.tables:
        if t and t[0][:3] == ["point / trace", "tier", "verdict"]:
            return t[1:]
    raise SystemExit("no verdict table")

what, page = sys.argv[1], load(sys.argv[2])
doc = json.load(open(sys.argv[3])) if len(sys.argv) > 3 else None
rows = verdict_table(page)
if what == "diff":
    assert page.svg == 2, page.svg
    assert len(rows) == len(doc["tensors"]), rows
    r, t = rows[0], doc["tensors"][0]
    assert r[3] == "%d / %d" % (t["mismatched"], t["n"]), (r, t)
    assert r[4] == str(doc["worst"]["ulp"]), (r, doc["worst"])
    bars = sorted(page.bars)
    want = sorted("%s ulp: %d elements" % kv for kv in doc["ulp_histogram"].items())
    assert bars == want, (bars, want)
    print("\n".join(sorted(page.cells)))
elif what == "numerics":
    assert page.svg == 3, page.svg
    c = doc["compare"]
    assert rows == [[doc["output"], "Tier 2", doc["verdict"], "%d / %d" % (c["mismatched"], c["n"]),
                     str(c["max_ulp"]["value"]) if c["max_ulp"] else "-", doc["detail"]]], (rows, doc)
elif what == "campaign":
    pts = doc["points"]
    want = []
    for p in pts:
        for name, ck in p["checks"].items():
            m = n = u = "-"
            if name == "tier2":
                t2 = p["tier2"]
                m = "%d / %d" % (t2["mismatched"], t2["n"])
                u = str(t2["max_ulp"]["value"]) if t2["max_ulp"] else "-"
            want.append([p["id"], name, ck["verdict"], m, u, ck["detail"]])
    assert rows == want, (rows[:3], want[:3])
    # a histogram per point, a heat map per point whose bits differ
    heat = sum(1 for p in pts if p["tier2"]["bits_differ"])
    assert page.svg == len(pts) + heat, (page.svg, len(pts), heat)
    if page.cells:
        print("\n".join(sorted(page.cells)))
elif what == "check":
    tr = doc["traces"]
    # a histogram per trace, a heat map per trace whose bits differ
    heat = sum(1 for t in tr if t["compare"]["bits_differ"])
    assert page.svg == len(tr) + heat, (page.svg, len(tr), heat)
    for r, t in zip(rows, tr):
        c = t["compare"]
        assert r[0] == "%s (%s, class %s)" % (t["trace"], t["point"], t["class"]), r
        assert r[2:4] == [t["verdict"], "%d / %d" % (c["mismatched"], c["n"])], (r, t)
        assert r[5] == t["detail"], r
    assert len(rows) == len(tr) + len(doc["tier1"]) + len(doc["parity"]), len(rows)
    print(len(rows))
EOF2

hex() { python3 -c "
import struct, sys
v = [0x3f800000] * 1024
if sys.argv[1] == 'b':
    for r in range(32): v[r * 32 + 7] += 1
    v[20 * 32 + 3] += 3
print(''.join(struct.pack('<I', x).hex() for x in v))" "$1"; }
H='{"y":{"dtype":"F32","shape":[32,32],"data_offsets":[0,4096]}}'
"$CRAFT" raw "$T/a.safetensors" "$H" "$(hex a)" || fail "st_craft a"
"$CRAFT" raw "$T/b.safetensors" "$H" "$(hex b)" || fail "st_craft b"

# diff: 33 elements, column 7 and [20, 3]; one heat cell per element (no
# binning at 32 x 32), and the table's numbers are the JSON's
"$PARITY" diff "$T/a.safetensors" "$T/b.safetensors" --html "$T/d.html" --json > "$T/d.json"; rc=$?
[ $rc -eq 1 ] || fail "diff: exit $rc, want 1"
grep -q '"mismatched": 33,' "$T/d.json" || fail "diff: json: $(head -30 "$T/d.json")"
python3 "$T/page.py" diff "$T/d.html" "$T/d.json" > "$T/cells" || fail "diff: the page does not match its JSON"
{ for r in $(seq 0 31); do echo "rows $r-$r, columns 7-7: 1"; done; echo "rows 20-20, columns 3-3: 1"; } | sort > "$T/want"
cmp -s "$T/cells" "$T/want" || fail "diff: heat map cells: $(diff "$T/want" "$T/cells" | head)"
grep -q "<td class=\"num\">33 / 1024</td><td class=\"num\">3</td>" "$T/d.html" || fail "diff: the table's numbers"

# identical files: exit 0, a page with no heat cell
"$PARITY" diff "$T/a.safetensors" "$T/a.safetensors" --html "$T/same.html" > /dev/null; rc=$?
[ $rc -eq 0 ] || fail "identical: exit $rc"
grep -q 'class="cell"' "$T/same.html" && fail "identical: a heat map cell"
grep -q 'pass: identical' "$T/same.html" || fail "identical: no verdict"

# a file name that is markup is text on the page
M="$T/<img src=x onerror=alert(1)>'\"&.safetensors"
cp "$T/b.safetensors" "$M"
"$PARITY" diff "$T/a.safetensors" "$M" --html "$T/m.html" > /dev/null 2>&1
grep -q '<img' "$T/m.html" && fail "hostile name: an <img> element"
grep -qF '&lt;img src=x onerror=alert(1)&gt;&#39;&quot;&amp;.safetensors' "$T/m.html" || fail "hostile name: not escaped"

# exit 2 writes nothing; an existing page is left as it was
echo keep > "$T/old.html"
"$PARITY" diff "$T/a.safetensors" "$T/missing.safetensors" --html "$T/old.html" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "missing input: exit $rc"
[ "$(cat "$T/old.html")" = keep ] || fail "missing input: the old page was replaced"
"$PARITY" diff "$T/a.safetensors" "$T/missing.safetensors" --html "$T/new.html" > /dev/null 2>&1
[ -e "$T/new.html" ] && fail "missing input: a page was written"
# an output that is an input
cp "$T/b.safetensors" "$T/b2.safetensors"
"$PARITY" diff "$T/a.safetensors" "$T/b2.safetensors" --html "$T/b2.safetensors" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "--html B: exit $rc"
grep -q -- '--html' "$T/err" || fail "--html B: the option is not named: $(cat "$T/err")"
cmp -s "$T/b.safetensors" "$T/b2.safetensors" || fail "--html B: B was changed"
"$PARITY" check --numerics '{ tree = "seq" }' --in "$T/a.safetensors" --out "$T/b.safetensors" \
  --html "$T/x.html" --json "$T/x.html" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "check --numerics: --json and --html the same file: exit $rc"

# check --numerics: 200 rows of 64 terms reduced pairwise, checked against seq
python3 -c "
import struct, random
random.seed(1)
print(''.join(struct.pack('<f', random.uniform(-1, 1)).hex() for _ in range(200 * 64)))" > "$T/inhex"
"$CRAFT" raw "$T/in.safetensors" '{"a":{"dtype":"F32","shape":[200,64],"data_offsets":[0,51200]}}' "$(cat "$T/inhex")" \
  || fail "st_craft in"
"$PARITY" reduce --numerics '{ tree = "pairwise" }' --in "$T/in.safetensors" --out "$T/y.safetensors" || fail "reduce"
"$PARITY" check --numerics '{ tree = "seq" }' --in "$T/in.safetensors" --out "$T/y.safetensors" \
  --html "$T/n.html" --json "$T/n.json" > /dev/null; rc=$?
[ $rc -eq 1 ] || fail "check --numerics: exit $rc, want 1"
python3 "$T/page.py" numerics "$T/n.html" "$T/n.json" || fail "check --numerics: the page does not match its JSON"
grep -q 'class="collapsed"' "$T/n.html" || fail "check --numerics: a 64-term seq is drawn without a collapsed subtree"

# campaign on the cpu class, then check of its traces; every output is
# bit-exact, so the page has no heat map and says why
"$PARITY" campaign --class cpu --kernels "$KERNELS" --families rmsnorm,silu_and_mul --no-ledger --quiet \
  --traces "$T/tr" --json "$T/c.json" --html "$T/c.html" > "$T/c.out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "campaign: exit $rc: $(tail -5 "$T/c.out")"
python3 "$T/page.py" campaign "$T/c.html" "$T/c.json" > "$T/c.cells" || fail "campaign: the page does not match its JSON"
[ -s "$T/c.cells" ] && fail "campaign without mismatches: heat map cells: $(head -3 "$T/c.cells")"
grep -q "No heat map: no point&#39;s Tier 2 output differs from its reference in any bit." "$T/c.html" \
  || fail "campaign without mismatches: the page does not say why there is no heat map"

# campaign of gemm: the row-invariance control gemm.batch_split runs split-K
# below 8 rows, so its Tier 2 output [4, 24] differs from the reference
# (split_k = 1) in some elements.  The heat map (4 x 24: one cell per
# element) must hold exactly the elements whose bits differ between its
# trace and a reference made apart, by `parity gen` + `parity ref`, counted
# here in Python and by `parity diff --json`.
"$PARITY" campaign --class cpu --kernels "$KERNELS" --families gemm --no-ledger --quiet \
  --traces "$T/tg" --json "$T/g.json" --html "$T/g.html" > "$T/g.out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "campaign gemm: exit $rc: $(tail -5 "$T/g.out")"
python3 "$T/page.py" campaign "$T/g.html" "$T/g.json" > "$T/g.cells" || fail "campaign gemm: the page does not match its JSON"
S=M=4,N=24,K=200
"$PARITY" gen gemm.batch_split --class cpu --kernels "$KERNELS" --shape $S --seed 1 --dist normal -o "$T/gin.safetensors" \
  && "$PARITY" ref gemm.batch_split --class cpu --kernels "$KERNELS" --shape $S --in "$T/gin.safetensors" \
       -o "$T/gref.safetensors" || fail "gen + ref of gemm.batch_split"
"$PARITY" diff "$T/tg/cpu.gemm.batch_split.graphed-0.safetensors" "$T/gref.safetensors" --json > "$T/gd.json"
python3 - "$T/tg/cpu.gemm.batch_split.graphed-0.safetensors" "$T/gref.safetensors" "$T/gd.json" > "$T/g.want" << 'EOF3' \
  || fail "gemm.batch_split: the independent count"
import json, struct, sys
def y(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    t = json.loads(b[8:8 + n])["y"]
    assert t["dtype"] == "F32" and t["shape"] == [4, 24], t
    s, e = t["data_offsets"]
    return struct.unpack("<96I", b[8 + n + s:8 + n + e])
a, r = y(sys.argv[1]), y(sys.argv[2])
diff = [i for i in range(96) if a[i] != r[i]]
assert 0 < len(diff) < 96, len(diff)
assert json.load(open(sys.argv[3]))["mismatched"] == len(diff), "parity diff --json disagrees"
print("\n".join(sorted("rows %d-%d, columns %d-%d: 1" % (i // 24, i // 24, i % 24, i % 24) for i in diff)))
EOF3
[ -s "$T/g.want" ] && cmp -s "$T/g.cells" "$T/g.want" \
  || fail "campaign gemm: heat map cells: $(diff "$T/g.want" "$T/g.cells" | head)"
grep -q 'gemm.batch_split: output y, M=4,N=24,K=200: elements whose bits differ from the reference' "$T/g.html" \
  || fail "campaign gemm: the heat map is not titled with its point"
grep -q 'No heat map' "$T/g.html" && fail "campaign gemm: says there is no heat map"
set -- "$T"/tr/*.safetensors
"$PARITY" check --kernels "$KERNELS" "$@" --json "$T/k.json" --html "$T/k.html" > "$T/k.out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "check: exit $rc: $(tail -5 "$T/k.out")"
python3 "$T/page.py" check "$T/k.html" "$T/k.json" > /dev/null || fail "check: the page does not match its JSON"
# one bit of one trace flipped: y [4, 160] element 325 = [2, 5]; 160
# columns are binned in pairs (160 / 128 rounded up), so the one cell is
# row 2, columns 4-5
f="$T/tr/cpu.rmsnorm.plain.eager-0.safetensors"
"$FLIP" "$f" y 325 0 || fail "st_flip"
"$PARITY" check --kernels "$KERNELS" "$f" --json "$T/f.json" --html "$T/f.html" > "$T/f.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "check of a flipped trace: exit $rc: $(tail -3 "$T/f.out")"
python3 "$T/page.py" check "$T/f.html" "$T/f.json" > /dev/null || fail "check (flipped): the page does not match its JSON"
[ "$(grep -o '<title>rows [^<]*</title>' "$T/f.html")" = "<title>rows 2-2, columns 4-5: 1</title>" ] \
  || fail "check (flipped): heat map: $(grep -o '<title>rows [^<]*</title>' "$T/f.html")"
# --html that is one of the traces
"$PARITY" check --kernels "$KERNELS" "$1" --html "$1" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "check --html TRACE: exit $rc"

# bad input writes no page: a --families that selects nothing, a trace
# that is not one, an unknown point
"$PARITY" campaign --class cpu --kernels "$KERNELS" --families nosuch --no-ledger --quiet --html "$T/bad1.html" \
  > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "campaign --families nosuch: exit $rc"
"$PARITY" check --kernels "$KERNELS" "$T/a.safetensors" --html "$T/bad2.html" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "check of a plain file: exit $rc"
"$PARITY" check --numerics '{ tree = "nosuch" }' --in "$T/in.safetensors" --out "$T/y.safetensors" \
  --html "$T/bad3.html" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "check --numerics of a bad point: exit $rc"
for b in bad1 bad2 bad3; do [ -e "$T/$b.html" ] && fail "$b: a page was written on exit 2"; done

# reveal: a simulated kernel of a known order; the page names the point
# and draws its program: split(4, pairwise, seq) at n = 32 is +0, four
# pairwise groups of 8 (7 additions each) added in sequence (4 additions):
# 32 additions, 33 leaves
"$PARITY" reveal --simulate '{ tree = "split(4, pairwise, seq)" }' --n 32 --confirm 50 --html "$T/r.html" > "$T/r.out"; rc=$?
[ $rc -eq 0 ] || fail "reveal: exit $rc: $(tail -3 "$T/r.out")"
grep -qF 'tree = &quot;split(4, pairwise, seq)&quot;' "$T/r.html" || fail "reveal: the point is not on the page"
[ "$(grep -o '>+</text>' "$T/r.html" | wc -l)" -eq 32 ] || fail "reveal: $(grep -o '>+</text>' "$T/r.html" | wc -l) additions drawn, want 32"
[ "$(grep -o '<g class="node">' "$T/r.html" | wc -l)" -eq 65 ] || fail "reveal: want 65 nodes"
grep -q '<td class="num">0 / 50</td>' "$T/r.html" || fail "reveal: the confirmation rows"
# row classes: a table of selector, rows and order, and the class's tree
# drawn (at n = 8 stride(4, seq, halving) has the order of halving; the
# induction length, 11, names it)
"$PARITY" reveal --simulate '{ tree = "stride(4, seq, halving)", rows = [{ select = "r >= R - R % 4", tree = "seq" }] }' \
  --n 8 --order-only --html "$T/rc.html" > "$T/rc.out"; rc=$?
[ $rc -eq 0 ] || fail "reveal, row classes: exit $rc: $(tail -3 "$T/rc.out")"
grep -qF '<tr><td>1</td><td>r &gt;= R - R % 4</td><td>3 of 255</td><td>seq</td></tr>' "$T/rc.html" ||
  fail "reveal, row classes: no row of the class table"
grep -qF '<tr><td>0</td><td>(every other row: the point&#39;s own tree)</td><td>252 of 255</td><td>stride(4, seq, halving)</td></tr>' "$T/rc.html" ||
  fail "reveal, row classes: no row of the main class"
grep -qF 'class 1 (r &gt;= R - R % 4): seq' "$T/rc.html" || fail "reveal, row classes: the class's tree is not drawn"
"$PARITY" reveal --simulate '{ tree = "seq" }' --n 4 --html "$T" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "reveal --html DIR: exit $rc"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_html: all passed"
