#!/bin/sh
# model.sh PARITY ST_CRAFT KERNELS: the input errors of `parity model`
# (docs/model.md), one table row each (lib.sh): exit 2, the message names
# what is wrong, nothing written (no --json, --html, --metrics, ledger).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
cp -r "$K" reg
printf 'not a database\n' > bad.db
# an op id of 77 characters: refused whole, never cut to 63 in the reports
cp -r "$K" longid
LONGID=o_proj_$(printf 'x%.0s' $(seq 70))
sed -i "s/^id = \"o_proj\"/id = \"$LONGID\"/" longid/models/llama3-8b/STEP.toml
mkdir dir.json
# a TIER3.json that does not parse: read at the end of the run, after the
# weights were written (--save-weights was left in place)
cp -r "$K" badbars
printf '{ "bars": \n' > badbars/models/llama3-8b/TIER3.json
# a STEP.toml whose attention declares HQ = HKV = D = 2^40: (HQ + 2*HKV)*D
# overflowed 64 bits and was said to be "= 0"
cp -r "$K" hugestep
awk '/^id = "attention"/ { a = 1 }
     a && /^shape/ { print "shape = \"B=C,HQ=1099511627776,HKV=1099511627776,D=1099511627776,P=16,NP=1024,MAXP=256\""; next }
     a && /^flops/ { print "flops = \"0\""; next }
     a && /^bytes/ { print "bytes = \"0\""; a = 0; next } { print }' \
  "$K/models/llama3-8b/STEP.toml" > hugestep/models/llama3-8b/STEP.toml
# names maps: dims whose products pass 2^63 (the qkv rows were written
# N=-4611686018427387904), a KV pool of 4 TiB (allocated, then "out of
# memory" exit 3), 2^20 layers of width 2 (hours of op calls)
printf '[dims]\nhidden = 64\nheads = 2147483648\nkv_heads = 2147483648\nhead_dim = 2147483648\n' > wrap.toml
printf '[dims]\nlayers = 1\nhidden = 64\nheads = 4\nkv_heads = 2\nhead_dim = 2048\nmlp = 128\nvocab = 512\n' > kv.toml
printf '[dims]\nlayers = 1048576\nhidden = 2\nheads = 1\nkv_heads = 1\nhead_dim = 2\nmlp = 1\nvocab = 2\n' > layers.toml
M="model --class cpu --model llama3-8b --kernels reg --prompts 1 --tokens 1"

errors <<'EOF'
# fragment                                                   | arguments
needs --class C and --model M                                | model --kernels reg
needs --class C and --model M                                | model --class cpu --kernels reg
option --class needs a value                                 | model --class
option --plant needs a value                                 | $M --plant
unknown argument '--bogus'                                   | $M --bogus
--scale 'huge': expected tiny, small or full                 | $M --scale huge --json w/j.json
--prompts: '0' is not an integer                             | $M --prompts 0 --json w/j.json
--tokens: 'x' is not an integer                              | $M --tokens x --json w/j.json
--prompt-len: '-1' is not an integer                         | $M --prompt-len -1 --json w/j.json
--threads: '0' is not an integer                             | $M --threads 0 --json w/j.json
--seed '-1': expected an unsigned integer                    | $M --seed -1 --json w/j.json
# not saturated at 2^64 - 1, nor written as a negative number in the JSON
--seed '18446744073709551616': expected an unsigned integer at most 9223372036854775807 | $M --seed 18446744073709551616 --json w/j.json
--seed '99999999999999999999999': expected an unsigned integer at most | $M --seed 99999999999999999999999 --json w/j.json
--seed '18446744073709551615': expected an unsigned integer at most | $M --seed 18446744073709551615 --json w/j.json
--seed '9223372036854775808': expected an unsigned integer at most | $M --seed 9223372036854775808 --json w/j.json
--seed ' 5': expected an unsigned integer                    | $M --seed ' 5' --json w/j.json
--seed '+5': expected an unsigned integer                    | $M --seed +5 --json w/j.json
--engine 'x': expected fast or mpfr                          | $M --engine x --json w/j.json
longid/models/llama3-8b/STEP.toml:47: op id 'o_proj_xxx | model --class cpu --model llama3-8b --kernels longid --prompts 1 --tokens 1 --json w/j.json --ledger w/l.db
is 77 characters; the model loop takes at most 63          | model --class cpu --model llama3-8b --kernels longid --prompts 1 --tokens 1 --json w/j.json --ledger w/l.db
# a layer is decimal digits (these were all layer 0)
--plant 'down_proj@=gemm.splitk': the layer '' is not a layer number | $M --plant down_proj@=gemm.splitk --json w/j.json
--plant 'down_proj@ 0=gemm.splitk': the layer ' 0' is not a layer number | $M --plant 'down_proj@ 0=gemm.splitk' --json w/j.json
--plant 'down_proj@+0=gemm.splitk': the layer '+0' is not a layer number | $M --plant down_proj@+0=gemm.splitk --json w/j.json
--plant 'down_proj@-0=gemm.splitk': the layer '-0' is not a layer number | $M --plant down_proj@-0=gemm.splitk --json w/j.json
--plant 'down_proj@0x0=gemm.splitk': the layer '0x0' is not a layer number | $M --plant down_proj@0x0=gemm.splitk --json w/j.json
--plant 'down_proj@99999999999999999999=gemm.splitk': layer must be 0 ... 1 | $M --plant down_proj@99999999999999999999=gemm.splitk --json w/j.json
--rtol and --atol go together                                | $M --rtol 1 --json w/j.json
--rtol 'x': expected a finite number >= 0                   | $M --rtol x --atol 1 --json w/j.json
--rtol '-1': expected a finite number >= 0                  | $M --rtol -1 --atol 1 --json w/j.json
--atol 'inf': expected a finite number >= 0                 | $M --rtol 1e308 --atol inf --json w/j.json
--atol 'nan': expected a finite number >= 0                 | $M --rtol 0 --atol nan --json w/j.json
--rtol '1e400': expected a finite number >= 0               | $M --rtol 1e400 --atol 0 --json w/j.json
class 'zz' has no backend                                    | model --class zz --model llama3-8b --kernels reg --json w/j.json
--against 'zz': no backend                                   | $M --against zz --json w/j.json
reg/models/nope/STEP.toml: cannot open                       | model --class cpu --model nope --kernels reg --json w/j.json
the decode loop runs dense decoders                          | model --class cpu --model mixtral-8x7b --kernels reg --json w/j.json
nodir: cannot open the registry directory                    | model --class cpu --model llama3-8b --kernels nodir --json w/j.json
--plant 'down_proj': expected OP[@LAYER]=FAMILY.POINT        | $M --plant down_proj --json w/j.json
--plant 'down_proj=rmsnorm.plain': op 'down_proj' is served by family gemm | $M --plant down_proj=rmsnorm.plain --json w/j.json
--plant 'down_proj@2=gemm.seq': layer must be 0 ... 1        | $M --plant down_proj@2=gemm.seq --json w/j.json
--plant 'rope=gemm.seq': op 'rope' is outside the families   | $M --plant rope=gemm.seq --json w/j.json
--plant 'lm_head@0=gemm.seq': op 'lm_head' runs once per step | $M --plant lm_head@0=gemm.seq --json w/j.json
--plant 'nope=gemm.seq': the step has no op 'nope'           | $M --plant nope=gemm.seq --json w/j.json
family 'gemm' has no point 'zz' at class 'cpu'               | $M --plant down_proj=gemm.zz --json w/j.json
--json dir.json: is not a regular file                       | $M --json dir.json
--html nodir/p.html: its directory does not exist            | $M --html nodir/p.html
--json w/j.json and --metrics w/j.json are the same file     | $M --json w/j.json --metrics w/j.json
is inside --kernels reg                                      | $M --json reg/j.json
ledger bad.db: not an SQLite database                        | $M --ledger bad.db
# a planted point of another output dtype is named, not the declared
# point (gemm.splitk), and --save-weights is committed only by a good run
point gemm.batch_split gives output 'y' F32 of 256 elements  | $M --plant down_proj@0=gemm.batch_split --save-weights w/w.safetensors --json w/j.json
op 'down_proj' (gemm.batch_split, planted with --plant) on the device | $M --plant down_proj@0=gemm.batch_split --json w/j.json
badbars/models/llama3-8b/TIER3.json:2:0: unexpected token    | model --class cpu --model llama3-8b --kernels badbars --prompts 1 --tokens 1 --save-weights w/bars.safetensors --metrics w/m.json
# dimensions: each at most 2^31, every product checked before any use
the step's HQ is 1099511627776, more than the decode loop's limit of 2^31 | model --class cpu --model llama3-8b --kernels hugestep --json w/j.json
heads 2147483648, kv_heads 2147483648, head_dim 2147483648   | $M --names wrap.toml --json w/j.json
needs more than 2^64 bytes                                   | $M --names wrap.toml --json w/j.json
# the bytes a run needs, before anything is allocated (--max-bytes)
a KV pool of 8388608 pages of 16): needs                     | $M --names kv.toml --prompts 64 --batch 1 --prompt-len 1048576 --tokens 1048576 --json w/j.json
the KV cache 4398046511104                                   | $M --names kv.toml --prompts 64 --batch 1 --prompt-len 1048576 --tokens 1048576 --json w/j.json
more than the limit of 8589934592 (raise it with --max-bytes) | $M --names kv.toml --prompts 64 --batch 1 --prompt-len 1048576 --tokens 1048576 --json w/j.json
more than the limit of 1048576 (raise it with --max-bytes)   | --max-bytes 1M $M --json w/j.json
# the work a run does (--max-work)
2 runs x 1048576 forward steps                               | $M --prompt-len 1 --tokens 1048576 --json w/j.json
more than the limit of 274877906944 (64 x --max-work; raise it with --max-work) | $M --prompt-len 1 --tokens 1048576 --json w/j.json
(layers 1048576, hidden 2                                    | $M --names layers.toml --json w/j.json
more than the limit of 274877906944 (64 x --max-work; raise it with --max-work) | $M --names layers.toml --json w/j.json
more than the limit of 6400000 (64 x --max-work; raise it with --max-work) | --max-work 100000 $M --json w/j.json
EOF

helps <<'EOF'
model --help | --class --model --scale --prompts --prompt-len --tokens --seed --threads --engine --kernels --against --rtol --atol --plant --json --html --metrics --ledger
EOF
finish
