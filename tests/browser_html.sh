#!/bin/sh
# browser_html.sh PARITY ST_CRAFT PNG_CHECK KERNELS (label browser;
# `scripts/test --browser` installs Debian's chromium): every kind of
# --html report (docs/reports.md) loaded in headless chromium.  Each page
# must load with no console message and no failed load, its DOM as chromium
# built it must hold the verdict table and the expected <svg> plots, and
# its screenshot must not be blank (png_check: more than 8 distinct
# colours).  Skips (77) without chromium.
set -u
PARITY=$1
CRAFT=$2
PNG=$3
KERNELS=$4
BROWSER=$(command -v chromium || command -v chromium-browser || true)
[ -n "$BROWSER" ] || { echo "browser_html: no chromium (scripts/test --browser installs it): skipped"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
B() { timeout 60 "$BROWSER" --headless --no-sandbox --disable-gpu --user-data-dir="$T/profile" \
        --no-first-run --hide-scrollbars "$@"; }

# The reports: a campaign on the cpu class (small shapes), check of its
# traces, check --numerics, reveal of a simulated kernel, and a diff of two outputs that differ in a
# known pattern (column 7 by 1 ulp, [20, 3] by 3 ulp).
"$PARITY" campaign --class cpu --kernels "$KERNELS" --families rmsnorm,silu_and_mul --no-ledger --quiet \
  --traces "$T/tr" --html "$T/campaign.html" > "$T/out" 2>&1 || fail "campaign: $(tail -3 "$T/out")"
"$PARITY" check --kernels "$KERNELS" "$T"/tr/*.safetensors --html "$T/check.html" > "$T/out" 2>&1 \
  || fail "check: $(tail -3 "$T/out")"
hex() { python3 -c "
import struct, sys
v = [0x3f800000] * 1024
if sys.argv[1] == 'b':
    for r in range(32): v[r * 32 + 7] += 1
    v[20 * 32 + 3] += 3
print(''.join(struct.pack('<I', x).hex() for x in v))" "$1"; }
H='{"y":{"dtype":"F32","shape":[32,32],"data_offsets":[0,4096]}}'
"$CRAFT" raw "$T/a.safetensors" "$H" "$(hex a)" && "$CRAFT" raw "$T/b.safetensors" "$H" "$(hex b)" || fail "st_craft"
"$PARITY" diff "$T/a.safetensors" "$T/b.safetensors" --html "$T/diff.html" > /dev/null
python3 -c "
import struct, random
random.seed(1)
print(''.join(struct.pack('<f', random.uniform(-1, 1)).hex() for _ in range(200 * 64)))" > "$T/inhex"
"$CRAFT" raw "$T/in.safetensors" '{"a":{"dtype":"F32","shape":[200,64],"data_offsets":[0,51200]}}' "$(cat "$T/inhex")" \
  && "$PARITY" reduce --numerics '{ tree = "pairwise" }' --in "$T/in.safetensors" --out "$T/y.safetensors" \
  || fail "reduce"
"$PARITY" check --numerics '{ tree = "seq" }' --in "$T/in.safetensors" --out "$T/y.safetensors" \
  --html "$T/numerics.html" > /dev/null
"$PARITY" reveal --simulate '{ tree = "tile(8, pairwise, seq)" }' --n 32 --confirm 50 --html "$T/reveal.html" \
  > /dev/null || fail "reveal"

# page  <svg> elements at least  what they are
for spec in "campaign 2 histograms" "check 2 histograms" "diff 2 histogram+heat" "numerics 3 histogram+heat+tree" \
            "reveal 1 tree"; do
  set -- $spec
  page=$1 nsvg=$2
  f="$T/$page.html"
  [ -s "$f" ] || { fail "$page: no report"; continue; }
  # self-contained: nothing to fetch (the only URL is the SVG namespace)
  if grep -E -i '(src|href)=|url\(|<script|<link|@import' "$f" > "$T/$page.ext"; then
    fail "$page: refers to something outside the page: $(head -c 200 "$T/$page.ext")"
  fi
  B --enable-logging=stderr --v=0 --dump-dom "file://$f" > "$T/$page.dom" 2> "$T/$page.log"
  [ -s "$T/$page.dom" ] || { fail "$page: chromium gave no DOM: $(tail -3 "$T/$page.log")"; continue; }
  # console messages (a script error, a CSP report), failed loads, network
  if grep -E 'CONSOLE|Uncaught|Failed to load|net::ERR|Refused to' "$T/$page.log" > "$T/$page.bad"; then
    fail "$page: the page logged: $(head -3 "$T/$page.bad")"
  fi
  ns=$(grep -o '<svg' "$T/$page.dom" | wc -l)
  nt=$(grep -o '<table class="verdict"' "$T/$page.dom" | wc -l)
  nr=$(grep -o '<rect class="bar"' "$T/$page.dom" | wc -l)
  [ "$ns" -ge "$nsvg" ] || fail "$page: $ns <svg> in the DOM, want at least $nsvg ($3)"
  [ "$nt" -eq 1 ] || fail "$page: $nt verdict tables in the DOM"
  [ "$page" = reveal ] || [ "$nr" -ge 7 ] || fail "$page: $nr histogram bars in the DOM"
  B --screenshot="$T/$page.png" --window-size=1200,1600 "file://$f" > /dev/null 2>&1
  if info=$("$PNG" "$T/$page.png" 9); then
    echo "$page: $ns svg, $nt table, screenshot $info (width height colours non-white)"
  else
    fail "$page: the screenshot looks blank: $info"
  fi
done
grep -q 'class="cell"' "$T/diff.dom" || fail "diff: no heat map cell in the DOM"
grep -q 'class="node"' "$T/numerics.dom" || fail "numerics: no tree node in the DOM"
grep -q 'class="node"' "$T/reveal.dom" || fail "reveal: no tree node in the DOM"

# png_check must tell a blank page: an empty page's screenshot
printf '<!DOCTYPE html><html><head><title>x</title></head><body></body></html>' > "$T/blank.html"
B --screenshot="$T/blank.png" --window-size=400,300 "file://$T/blank.html" > /dev/null 2>&1
"$PNG" "$T/blank.png" 9 > /dev/null && fail "png_check: a blank page passes"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "browser_html: all passed"
