#!/bin/sh
# check.sh PARITY ST_CRAFT KERNELS: the input errors of `parity check` on
# traces and on .npy outputs, and of `parity check --numerics`, one table
# row each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
cp "$K/../traces/samples/cpu/cpu.gemm.splitk.eager-0.safetensors" tr.st || fail "no sample trace"
head -c 100 tr.st > cut.st
ONE=0000803f
"$CRAFT" raw in.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw i32.st '{"a":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw ab.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2,1],"data_offsets":[16,24]}}' \
  $ONE$ONE$ONE$ONE$ONE$ONE
"$CRAFT" raw y.st '{"y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' $ONE$ONE
"$CRAFT" raw y3.st '{"y":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}' $ONE$ONE$ONE
"$CRAFT" raw yb.st '{"y":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}' 803f803f
# a [2] <f4 .npy (version 1.0, header padded to 64 bytes)
H="{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
{ printf '\223NUMPY\001\000\166\000'; printf '%-117s\n' "$H"; printf '\000\000\200\077\000\000\200\077'; } > y.npy
printf 'garbage' > short.npy
mkdir dir.st
N='--npy y.npy --point gemm.seq --class cpu --shape M=2,N=1,K=4'
PT='{ tree = "seq" }'

errors <<'EOF'
# fragment                                                   | arguments
needs at least one TRACE                                     | check
needs at least one TRACE                                     | check --kernels $K --json w/j.json
unknown option '--bogus'                                     | check --bogus tr.st
option --kernels needs a value                               | check tr.st --kernels
option --reference needs a value                             | check tr.st --kernels $K --reference
option --json needs a value                                  | check tr.st --kernels $K --json
--engine: 'q' is not an engine built into this binary        | check tr.st --kernels $K --engine q --json w/j.json
--json tr.st is the same file as TRACE tr.st                 | check tr.st --kernels $K --json tr.st
--json dir.st: is not a regular file                         | check tr.st --kernels $K --json dir.st
--json nodir/j.json: its directory does not exist         | check tr.st --kernels $K --json nodir/j.json
nodir: cannot open the registry directory                    | check tr.st --kernels nodir --json w/j.json
in.st: not a parity trace: __metadata__ key 'parity.trace' is missing | check in.st --kernels $K --json w/j.json
none.st: cannot open                                         | check tr.st none.st --kernels $K --json w/j.json
cut.st:                                                      | check cut.st --kernels $K --json w/j.json
--reference: family 'gemm' has no point 'nope'               | check tr.st --kernels $K --reference gemm.nope --json w/j.json
--reference: $K: unknown class 'zz'                          | check tr.st --kernels $K --reference gemm.seq --reference-class zz
--npy y.npy needs --point, --class, --shape and --seed       | check --npy y.npy --kernels $K --json w/j.json
--point: 'gemm' is not FAMILY.POINT                          | check --npy y.npy --point gemm --class cpu --shape M=2 --seed 1 --kernels $K
short.npy: byte 7: the file ends inside the 8 bytes          | check --npy short.npy --point gemm.seq --class cpu --shape M=2 --seed 1 --kernels $K
--seed: y.npy: __metadata__ key 'seed' is 'x'                | check $N --seed x --kernels $K --json w/j.json
--mode: y.npy: __metadata__ key 'mode' is 'q'                | check $N --seed 1 --mode q --kernels $K
--dist: y.npy: metadata 'dist': unknown distribution 'q'     | check $N --seed 1 --dist q --kernels $K
--batch: y.npy: __metadata__ key 'batch': 'q'                | check $N --seed 1 --batch q --kernels $K
--shape: y.npy: __metadata__ key 'shape': 'M=x'              | check --npy y.npy --point gemm.seq --class cpu --shape M=x --seed 1 --kernels $K
--kernel: y.npy: __metadata__ key 'kernel' is 'a b'          | check $N --seed 1 --kernel 'a b' --kernels $K
--point/--class: y.npy: metadata 'family'/'point'/'class': $K: unknown class 'zz' | check --npy y.npy --point gemm.seq --class zz --shape M=2,N=1,K=4 --seed 1 --kernels $K
--point/--class: y.npy: metadata 'family'/'point'/'class': family 'gemm' has no point 'zz' | check --npy y.npy --point gemm.zz --class cpu --shape M=2,N=1,K=4 --seed 1 --kernels $K
y.npy: dtype hint 'q' is not a dtype                         | check $N --seed 1 --dtype q --kernels $K
y.npy: output 'y' has dtype F32; the point's output is BF16  | check $N --seed 1 --kernels $K --json w/j.json
--numerics needs --in and --out                              | check --numerics "$PT"
--numerics needs --in and --out                              | check --numerics "$PT" --in in.st --json w/j.json
--numerics needs --in and --out                              | check --numerics "$PT" --out y.st
--numerics: unknown argument '--bogus'                       | check --numerics "$PT" --in in.st --out y.st --bogus
--numerics: unknown argument 'extra'                         | check --numerics "$PT" --in in.st --out y.st extra
option --in needs a value                                    | check --numerics "$PT" --out y.st --in
option --name needs a value                                  | check --numerics "$PT" --in in.st --out y.st --name
option --dtype needs a value                                 | check --numerics "$PT" --in in.st --out y.st --dtype
option --threads needs a value                               | check --numerics "$PT" --in in.st --out y.st --threads
option --json needs a value                                  | check --numerics "$PT" --in in.st --out y.st --json
--engine: unknown engine 'auto' (expected fast or mpfr)      | check --numerics "$PT" --in in.st --out y.st --engine auto --json w/j.json
--threads: 'x' is not an integer in [1, 4096]                | check --numerics "$PT" --in in.st --out y.st --threads x --json w/j.json
--json in.st is the same file as --in in.st                  | check --numerics "$PT" --in in.st --out y.st --json in.st
--json ./y.st is the same file as --out y.st                 | check --numerics "$PT" --in in.st --out y.st --json ./y.st
--json dir.st: is not a regular file                         | check --numerics "$PT" --in in.st --out y.st --json dir.st
--numerics:1:2:                                              | check --numerics '{' --in in.st --out y.st --json w/j.json
--numerics: row classes with an 'atomic' tree (rows[0]      | check --numerics '{ rows = [{ select = "r < 1", tree = "split(2, seq, atomic)" }] }' --in in.st --out y.st --json w/j.json
--numerics: key 'rows[0]': out = "bf16" differs from the point's "fp32" | check --numerics '{ rows = [{ select = "R == 1", out = "bf16" }] }' --in in.st --out y.st --json w/j.json
none.st: cannot open                                         | check --numerics "$PT" --in none.st --out y.st --json w/j.json
none.st: cannot open                                         | check --numerics "$PT" --in in.st --out none.st --json w/j.json
i32.st: tensor 'a': dtype I32 is not a number format         | check --numerics "$PT" --in i32.st --out y.st --json w/j.json
ab.st: tensor 'b' has shape [2, 1] but 'a' has [2, 2]        | check --numerics "$PT" --in ab.st --out y.st --json w/j.json
y3.st: tensor 'y' has shape [3]; in.st has 2 rows            | check --numerics "$PT" --in in.st --out y3.st --json w/j.json
yb.st: tensor 'y' has dtype BF16; the point's out format fp32 is F32 | check --numerics "$PT" --in in.st --out yb.st --json w/j.json
y.st: no tensor 'z'                                          | check --numerics "$PT" --in in.st --out y.st --name z --json w/j.json
short.npy: byte 7: the file ends inside the 8 bytes          | check --numerics "$PT" --in in.st --out short.npy --json w/j.json
EOF

helps <<'EOF'
check --help            | --kernels --reference --reference-class --engine --json --npy --point --class --shape --seed --dist --dtype --name --mode --kernel --batch --numerics
check --numerics --help | --numerics --in --out --name --dtype --engine --threads --json
EOF
finish
