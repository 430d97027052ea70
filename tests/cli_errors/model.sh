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
EOF

helps <<'EOF'
model --help | --class --model --scale --prompts --prompt-len --tokens --seed --threads --engine --kernels --against --rtol --atol --plant --json --html --metrics --ledger
EOF
finish
