#!/bin/sh
# cli_model.sh PARITY KERNELS: `parity model` (docs/model.md).  The cpu
# class runs its declared points, so against the exact reference of the
# same points every op, every logits step and every transcript must be
# bit-identical; a planted kernel bug (the device running another split
# count in one gemm op, from a registry copy with that point added) must
# show up as a bit difference first at the planted op and layer, in the
# logits, and, at 40 tokens, as a transcript divergence.  The expected
# counts come from the options (prompts x tokens) and the plant, never
# from parity's output; transcripts are re-checked with `parity transcript`.
set -u
PARITY=$1
KERNELS=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# value of a JSON path (a Python expression on j) in FILE
jv() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }
# the transcripts of a report as two JSONL files, for `parity transcript`
jsonl() {
  python3 -c "
import json,sys
j=json.load(open(sys.argv[1]))
open(sys.argv[2],'w').write(''.join(json.dumps(p['control'])+'\n' for p in j['per_prompt']))
open(sys.argv[3],'w').write(''.join(json.dumps(p['device'])+'\n' for p in j['per_prompt']))" "$1" "$2" "$3"
}
expect_rc() { # WANT WHAT CMD...
  want=$1; what=$2; shift 2
  "$@" > "$T/out" 2> "$T/err"; rc=$?
  [ "$rc" = "$want" ] || { fail "$what: exit $rc, want $want"; cat "$T/out" "$T/err" | head -20; }
}
M="$PARITY model --kernels $KERNELS --class cpu --model llama3-8b"

# ---- help and input errors (exit 2, the message names what is wrong)
expect_rc 0 "--help" $PARITY model --help
grep -q "usage: parity model" "$T/out" || fail "--help prints the usage"
expect_rc 2 "no --class" $PARITY model --model llama3-8b --kernels "$KERNELS"
expect_rc 2 "bad --scale" $M --scale huge
grep -q "huge" "$T/err" || fail "bad --scale is named"
expect_rc 2 "unknown model" $PARITY model --kernels "$KERNELS" --class cpu --model nosuch
expect_rc 2 "an MoE step is not a dense decoder" $PARITY model --kernels "$KERNELS" --class cpu --model mixtral-8x7b
grep -q "dense decoder" "$T/err" || fail "mixtral: the message says the loop runs dense decoders"
expect_rc 2 "bad --plant" $M --plant down_proj
expect_rc 2 "--plant of another family" $M --plant down_proj=rmsnorm.plain
expect_rc 2 "--plant of a layer that does not exist" $M --plant down_proj@2=gemm.seq
expect_rc 2 "--plant of an op outside the families" $M --plant rope=gemm.seq
# the largest seed is written as itself (a seed of 2^64 or more became
# 2^64 - 1, written -1)
expect_rc 0 "--seed 2^63 - 1" $M --prompts 1 --tokens 1 --seed 9223372036854775807 --json "$T/seed.json" \
  --ledger "$T/seed.db"
[ "$(jv "$T/seed.json" "j['seed']")" = 9223372036854775807 ] || fail "--seed 2^63 - 1: the JSON says $(jv "$T/seed.json" "j['seed']")"
expect_rc 2 "--seed 2^64" $M --prompts 1 --tokens 1 --seed 18446744073709551616 --ledger "$T/seed.db"
grep -q "at most 9223372036854775807" "$T/err" || fail "--seed 2^64: $(cat "$T/err")"

# ---- the control: 4 prompts x 32 tokens, every bit equal (exit 0)
expect_rc 0 "tiny 4x32 against the reference" $M --json "$T/a.json" --html "$T/a.html"
grep -q "^Model parity: yes" "$T/out" || fail "4x32: the text says model parity"
grep -q "^First difference in bits: none" "$T/out" || fail "4x32: no op differed"
grep -q "rope .*outside the families" "$T/out" || fail "rope is reported as outside the families"
grep -q "down_proj .*gemm.splitk " "$T/out" || fail "down_proj is lowered to gemm.splitk (FUSIONS.toml, rows [1, 16])"
grep -q "mlp_norm .*rmsnorm.fused_add" "$T/out" || fail "mlp_norm is lowered to rmsnorm.fused_add (its op rule)"
[ "$(jv "$T/a.json" "j['logits_steps'], j['logits_equal'], j['tokens_total'], j['tokens_agreed']")" = "128 128 128 128" ] ||
  fail "4x32: 128 logits steps, all equal, 128 tokens agreed: $(jv "$T/a.json" "j['logits_steps'], j['logits_equal'], j['tokens_total'], j['tokens_agreed']")"
[ "$(jv "$T/a.json" "j['pass'], j['first_difference']['found'], j['dims']['layers'], j['dims']['hidden'], j['dims']['heads'], j['dims']['vocab']")" = "True False 2 256 8 4096" ] ||
  fail "4x32: pass, nothing differed, tiny = 2 layers, hidden 256, 8 heads, vocabulary 4096"
# 4 prompts of 8 tokens then 32 generated: 8 + 31 forward steps each
[ "$(jv "$T/a.json" "j['cost']['steps']")" = 156 ] || fail "4x32: 156 forward steps, got $(jv "$T/a.json" "j['cost']['steps']")"
jsonl "$T/a.json" "$T/ac.jsonl" "$T/ad.jsonl"
expect_rc 0 "parity transcript agrees: identical" $PARITY transcript "$T/ac.jsonl" "$T/ad.jsonl"
python3 - "$T/a.html" <<'EOF' || fail "4x32: the HTML page parses and shows 4 prompts"
import sys
from html.parser import HTMLParser
class P(HTMLParser):
    h3 = 0
    def handle_starttag(self, tag, a):
        if tag == "h3": self.h3 += 1
p = P(); p.feed(open(sys.argv[1]).read()); sys.exit(0 if p.h3 == 4 else 1)
EOF
# ---- batches: the 4 prompts as one batch (the default, every op at C4) and
# one at a time (--batch 1, C1) give the same bits (cpu's kernels are row
# invariant), with 4 times fewer family-op calls in the batch
[ "$(jv "$T/a.json" "j['batch'], j['ops'][2]['shape']")" = "4 M=4,N=384,K=256" ] ||
  fail "default batch: 4 prompts at once, qkv_proj at M=4: $(jv "$T/a.json" "j['batch'], j['ops'][2]")"
# (8 tokens each: the sanitizer build runs this suite too)
expect_rc 0 "--batch 1" $M --batch 1 --tokens 8 --json "$T/a1.json"
expect_rc 0 "--batch 4" $M --tokens 8 --json "$T/a4.json"
[ "$(jv "$T/a1.json" "j['batch'], j['ops'][2]['shape']")" = "1 M=1,N=384,K=256" ] ||
  fail "--batch 1: qkv_proj at M=1: $(jv "$T/a1.json" "j['ops'][2]")"
same='[(p["device"], p["control"]) for p in j["per_prompt"]], j["logits_equal"], j["max_ulp"]'
[ "$(jv "$T/a4.json" "$same")" = "$(jv "$T/a1.json" "$same")" ] || fail "batch 4 and batch 1: transcripts differ"
[ "$(jv "$T/a1.json" "j['cost']['device_calls']")" = "$(( $(jv "$T/a4.json" "j['cost']['device_calls']") * 4 ))" ] ||
  fail "batch 1 makes 4 times the calls of batch 4: $(jv "$T/a1.json" "j['cost']") vs $(jv "$T/a4.json" "j['cost']")"
expect_rc 2 "--batch 3 of 4 prompts" $M --batch 3
grep -q "divide" "$T/err" || fail "--batch 3: the message says it must divide the prompts: $(cat "$T/err")"
expect_rc 2 "32 prompts at once: no cpu rule for attention at C32" $M --prompts 32 --tokens 1 --prompt-len 1
grep -q "at C32.*--batch" "$T/err" || fail "C32: the message names C32 and --batch: $(cat "$T/err")"
expect_rc 0 "32 prompts as two batches of 16" $M --prompts 32 --batch 16 --tokens 1 --prompt-len 1 --json "$T/a16.json"
[ "$(jv "$T/a16.json" "j['ops'][2]['point'], j['ops'][2]['shape']")" = "gemm.splitk M=16,N=384,K=256" ] ||
  fail "batch 16: qkv_proj at M=16 ($(jv "$T/a16.json" "j['ops'][2]"))"

# Tier 3: the metrics written with --metrics meet the sample's bars in parity tier3 too
expect_rc 0 "tier3 on the written metrics" $M --prompts 1 --tokens 4 --metrics "$T/m.json"
expect_rc 0 "parity tier3 reads the metrics against the model's bars" \
  $PARITY tier3 "$T/m.json" "$KERNELS/models/llama3-8b/TIER3.json"
[ "$(jv "$T/m.json" "j['top5_agreement'], j['logprob_gap'], j['match_rate']")" = "1.0 0.0 1.0" ] ||
  fail "bit-identical runs: top-5 agreement 1, log-probability gap 0, match rate 1: $(cat "$T/m.json")"

# ---- --against: cpu2 runs the same points (bits), cpu-split8 another split count
expect_rc 0 "--against cpu2" $M --prompts 2 --tokens 8 --against cpu2 --json "$T/c2.json"
[ "$(jv "$T/c2.json" "j['bit_parity_expected'], j['control'], j['first_difference']['found']")" = "True cpu2 False" ] ||
  fail "--against cpu2: the same points, nothing differs"
$M --prompts 2 --tokens 16 --against cpu-split8 --rtol 0 --atol 0 --json "$T/s8.json" > "$T/out" 2>&1; rc=$?
[ "$(jv "$T/s8.json" "j['bit_parity_expected'], j['ops'][2]['same_point'], j['first_difference']['declared']")" = "False False True" ] ||
  fail "--against cpu-split8: gemm.splitk differs (split 8), and the first difference is a declared one"
# with a zero tolerance the verdict is exactly "every compared logits step bit-identical"
want=$(jv "$T/s8.json" "0 if j['logits_equal'] == j['logits_steps'] else 1")
[ "$rc" = "$want" ] || fail "--against cpu-split8, rtol = atol = 0: exit $rc, want $want"
grep -q "bit parity not expected" "$T/out" || fail "--against cpu-split8: the text says bit parity is not expected"
# declared parity: the logits within the tolerance AND the transcripts at their bar
$M --prompts 2 --tokens 16 --against cpu-split8 --rtol 1 --atol 1 --json "$T/s8b.json" > "$T/out" 2>&1
grep -q "declared parity: yes: logits within the tolerance: yes; transcripts 2 / 2 identical (bar: every transcript identical): yes" "$T/out" ||
  fail "--against cpu-split8: declared parity's two parts not said: $(grep 'Model parity' "$T/out")"
[ "$(jv "$T/s8b.json" "j['logits_within_tolerance'], j['match_rate_bar'], j['match_rate_ok']")" = "True 1.0 True" ] ||
  fail "--against cpu-split8: declared parity in the JSON"
# a bar the transcripts cannot meet (a match rate above 1): declared parity fails on the transcripts alone
cp -r "$KERNELS" "$T/kb"
printf '{ "match_rate": { "min": 1.5 } }\n' > "$T/kb/models/llama3-8b/TIER3.json"
M2=$(echo "$M" | sed "s|--kernels [^ ]*|--kernels $T/kb|")
$M2 --prompts 2 --tokens 16 --against cpu-split8 --rtol 1 --atol 1 > "$T/out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "--against cpu-split8, match_rate bar 1.5: exit $rc, want 1"
grep -q "declared parity: NO: logits within the tolerance: yes; .*(bar: TIER3.json's match_rate >= 1.5): NO" "$T/out" ||
  fail "--against cpu-split8, match_rate bar 1.5: $(grep 'Model parity' "$T/out")"
expect_rc 0 "--against cpu-split8 within a loose tolerance" $M --prompts 2 --tokens 16 --against cpu-split8 --rtol 1 --atol 1
expect_rc 2 "--rtol without --atol" $M --against cpu-split8 --rtol 1
expect_rc 2 "--against a class without a backend here" $M --against nosuch

# the same with the MPFR engine on fewer tokens: the engines give the same bits
expect_rc 0 "MPFR reference" $M --engine mpfr --prompts 1 --prompt-len 2 --tokens 2

# ---- the plant mechanism alone changes nothing: the declared point planted
expect_rc 0 "planting the declared point" $M --prompts 2 --tokens 8 --plant down_proj@0=gemm.splitk

# ---- a planted bug: down_proj at layer 0 runs split_k = 2, declared 4
R=$T/k
cp -r "$KERNELS" "$R"
python3 - "$R/cpu/common/KERNEL_FAMILIES.toml" <<'EOF'
import sys
p = sys.argv[1]; s = open(p).read()
pt = '''[[family.point]]
id = "splitk2"
kernel = "cpu_gemm_splitk"
description = "split-K over 2 slices: a neighbour of splitk (split_k = 4)"
params = { split_k = 2 }
[family.point.numerics.k]
acc = "fp32"
tree = "split({split_k}, stride({vec}, seq, pairwise), seq)"
out = "fp32"

'''
i = s.index('[[family.evidence]]')  # the gemm family's first evidence row: its points end here
open(p, 'w').write(s[:i] + pt + s[i:])
EOF
expect_rc 1 "planted split_k = 2 in down_proj at layer 0" $PARITY model --kernels "$R" --class cpu --model llama3-8b \
  --plant down_proj@0=gemm.splitk2 --tokens 40 --json "$T/b.json" --html "$T/b.html"
[ "$(jv "$T/b.json" "j['first_difference']['op'], j['first_difference']['layer']")" = "down_proj 0" ] ||
  fail "planted: the first op to differ is down_proj at layer 0, got $(jv "$T/b.json" "j['first_difference']")"
# every op before the planted one ran on bit-identical inputs, so in every
# prompt where anything differs the first op to differ is the planted one
[ "$(jv "$T/b.json" "sorted(set((p['first_difference']['op'], p['first_difference']['layer']) for p in j['per_prompt'] if p['first_difference']))")" = "[('down_proj', 0)]" ] ||
  fail "planted: per prompt, the first op to differ is down_proj at layer 0: $(jv "$T/b.json" "[p['first_difference'] for p in j['per_prompt']]")"
grep -q "^First difference in bits: op 'down_proj' (down projection, layer 0)" "$T/out" ||
  fail "planted: the text names down_proj at layer 0"
grep -q "^Model parity: NO" "$T/out" || fail "planted: the text says no model parity"
[ "$(jv "$T/b.json" "j['logits_equal'] < j['logits_steps']")" = True ] || fail "planted: some logits differ in bits"
[ "$(jv "$T/b.json" "j['prompts_identical'] < 4")" = True ] || fail "planted, 40 tokens: a transcript diverges"
jsonl "$T/b.json" "$T/bc.jsonl" "$T/bd.jsonl"
expect_rc 1 "parity transcript agrees: diverged" $PARITY transcript "$T/bc.jsonl" "$T/bd.jsonl"
grep -q "first divergence" "$T/b.html" || fail "planted: the HTML page marks the first divergence"

# ---- checkpoints: the Philox weights saved and read back give the same
# transcripts; a checkpoint written here (F32, other names and dims) runs
expect_rc 0 "--save-weights" $M --prompts 2 --tokens 8 --save-weights "$T/w.safetensors" --json "$T/w1.json"
expect_rc 0 "--weights (read back)" $M --prompts 2 --tokens 8 --weights "$T/w.safetensors" --json "$T/w2.json"
[ "$(jv "$T/w1.json" "[p['control'] for p in j['per_prompt']]")" = "$(jv "$T/w2.json" "[p['control'] for p in j['per_prompt']]")" ] ||
  fail "a saved and re-read checkpoint gives the transcripts of the Philox weights"
cat > "$T/names.toml" <<'EOF'
rope_base = 10000
[dims]
layers = 1
hidden = 64
heads = 4
kv_heads = 2
head_dim = 16
mlp = 128
vocab = 512
[names]
embed = "tok.w"
lm_head = "out.w"
final_norm = "norm.w"
wq = "l{L}.q"
wk = "l{L}.k"
wv = "l{L}.v"
wo = "l{L}.o"
w_gate = "l{L}.g"
w_up = "l{L}.u"
w_down = "l{L}.d"
attn_norm = "l{L}.n1"
mlp_norm = "l{L}.n2"
EOF
python3 - "$T/c.safetensors" <<'EOF'
import json, random, struct, sys
random.seed(5)
H, A, KV, M, V = 64, 64, 32, 128, 512
shapes = {"tok.w": [V, H], "out.w": [V, H], "norm.w": [H], "l0.q": [A, H], "l0.k": [KV, H], "l0.v": [KV, H],
          "l0.o": [H, A], "l0.g": [M, H], "l0.u": [M, H], "l0.d": [H, M], "l0.n1": [H], "l0.n2": [H]}
hdr, data, off = {}, b"", 0
for name, sh in shapes.items():
    n = 1
    for x in sh: n *= x
    std = 1.0 if name == "tok.w" else 0.1 if len(sh) == 1 else sh[1] ** -0.5
    mean = 1.0 if len(sh) == 1 else 0.0
    b = struct.pack("<%df" % n, *[random.gauss(mean, std) for _ in range(n)])
    hdr[name] = {"dtype": "F32", "shape": sh, "data_offsets": [off, off + len(b)]}
    data += b; off += len(b)
h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
EOF
expect_rc 0 "a checkpoint with its own names and dims" $M --prompts 2 --tokens 8 --weights "$T/c.safetensors" \
  --names "$T/names.toml" --json "$T/c.json"
[ "$(jv "$T/c.json" "j['dims']['layers'], j['dims']['hidden'], j['dims']['heads'], j['dims']['vocab'], j['ops'][4]['shape']")" = \
  "1 64 4 512 B=2,HQ=4,HKV=2,D=16,P=16,NP=2,MAXP=1" ] || fail "the map's dims: $(jv "$T/c.json" "j['dims'], j['ops'][4]")"
sed 's/^hidden = 64/hidden = 32/' "$T/names.toml" > "$T/names2.toml"
expect_rc 2 "a tensor of another shape" $M --prompts 1 --tokens 1 --weights "$T/c.safetensors" --names "$T/names2.toml"
grep -q "tensor 'tok.w' must be \[512, 32\]" "$T/err" || fail "the misshaped tensor is named with the shape it must have"

# ---- the ledger: a failing model run, then a passing one a day later:
# parity ttbp --model gives the model point a TTBP of exactly one day
L=$T/ledger.sqlite
PARITY_LEDGER_CLOCK=2026-01-01T00:00:00Z expect_rc 1 "a planted run recorded" \
  $PARITY model --kernels "$R" --class cpu --model llama3-8b --plant down_proj@0=gemm.splitk2 --prompts 3 --tokens 1 --ledger "$L"
PARITY_LEDGER_CLOCK=2026-01-02T00:00:00Z expect_rc 0 "a parity run recorded" $M --prompts 2 --tokens 8 --ledger "$L"
# (the step's family points have no campaign at --shapes model:llama3-8b
# here: they count, not run, so the model has not reached parity: exit 1)
expect_rc 1 "ttbp of the model" $PARITY ttbp --class cpu --model llama3-8b --kernels "$R" --ledger "$L" --json "$T/ttbp.json"
[ "$(jv "$T/ttbp.json" "[(p['id'], p['ttbp_s']) for p in j['points'] if p['reached']]")" = "[('model.llama3-8b', 86400)]" ] ||
  fail "ttbp: model.llama3-8b reached parity 86400 s after the first run: $(cat "$T/ttbp.json")"
[ "$(sqlite3 -batch -noheader "$L" "SELECT group_concat(v, ' ') FROM (SELECT tier2 || '/' || coalesce(tier2_basis, '-') AS v FROM point ORDER BY run_id)" 2>/dev/null)" = "fail/- pass/bits" ] ||
  fail "ledger: the two model points are fail, then pass by bits"

# ---- Tier 3 bars the run misses, or cannot read
printf '{"top5_agreement": 1.5}\n' > "$R/models/llama3-8b/TIER3.json"
expect_rc 1 "a Tier 3 bar missed" $PARITY model --kernels "$R" --class cpu --model llama3-8b --prompts 1 --tokens 2
grep -q "FAIL top5_agreement" "$T/out" || fail "a missed bar is named"
printf '{"top5_agreement": }\n' > "$R/models/llama3-8b/TIER3.json"
expect_rc 2 "malformed TIER3.json" $PARITY model --kernels "$R" --class cpu --model llama3-8b --prompts 1 --tokens 2
grep -q "TIER3.json" "$T/err" || fail "a malformed bars file is named"
# a FIFO as the bars file is refused at once, never waited on
rm -f "$R/models/llama3-8b/TIER3.json" && mkfifo "$R/models/llama3-8b/TIER3.json"
expect_rc 2 "TIER3.json a FIFO" timeout 60 $PARITY model --kernels "$R" --class cpu --model llama3-8b --prompts 1 --tokens 2
grep -q "not a regular file (a FIFO)" "$T/err" || fail "a FIFO bars file: $(cat "$T/err")"

[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_model: ok"
