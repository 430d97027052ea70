#!/bin/sh
# genref.sh PARITY ST_CRAFT KERNELS: the input errors of `parity gen` and
# `parity ref`, one table row each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
S=M=3,N=5,K=40
"$PARITY" gen gemm.seq --kernels "$K" --shape $S --seed 1 -o a.st || fail "gen gemm.seq"
"$PARITY" gen rmsnorm.plain --kernels "$K" --shape T=3,H=40 --seed 1 -o rms.st || fail "gen rmsnorm.plain"
# a gemm input without metadata, in the wrong dtype (F32; a is BF16)
ONE=0000803f
"$CRAFT" raw f32.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw trunc.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE --cut 40
mkdir reg
# a copy of the registry, to aim outputs into (gen and ref read it whole)
cp -r "$K" kc

errors <<'EOF'
# fragment                                                   | arguments
needs FAMILY.POINT, --seed and -o                            | gen
needs FAMILY.POINT, --seed and -o                            | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 -o w/x.st
needs FAMILY.POINT, --seed and -o                            | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1
needs FAMILY.POINT, --seed and -o                            | gen --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st
option --seed needs a value                                  | gen gemm.seq --kernels $K -o w/x.st --seed
option -o needs a value                                      | gen gemm.seq --kernels $K --seed 1 -o
option --out needs a value                                   | gen gemm.seq --kernels $K --seed 1 --out
option --shape needs a value                                 | gen gemm.seq --kernels $K --seed 1 -o w/x.st --shape
option --class needs a value                                 | gen gemm.seq --kernels $K --seed 1 -o w/x.st --class
option --dist needs a value                                  | gen gemm.seq --kernels $K --seed 1 -o w/x.st --dist
option --kernels needs a value                               | gen gemm.seq --seed 1 -o w/x.st --kernels
option --threads needs a value                               | gen gemm.seq --kernels $K --seed 1 -o w/x.st --threads
unexpected argument 'x'                                      | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st x
unexpected argument '--bogus'                                | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st --bogus
--seed: '-3' is not an unsigned 64-bit integer               | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed -3 -o w/x.st
--seed: '0x' is not an unsigned 64-bit integer               | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 0x -o w/x.st
--seed: '99999999999999999999' is not an unsigned 64-bit     | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 99999999999999999999 -o w/x.st
--dist: unknown distribution 'gauss'                         | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 --dist gauss -o w/x.st
--specials goes with --dist adversarial                      | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 --specials -o w/x.st
--threads: '0' is not an integer in [1, 4096]                | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st --threads 0
--threads: '99999' is not an integer                         | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st --threads 99999
--shape: 'M=x' is not NAME=INTEGER                           | gen gemm.seq --kernels $K --shape M=x --seed 1 -o w/x.st
--shape: family 'gemm' has no dimension 'Z'                  | gen gemm.seq --kernels $K --shape M=3,N=5,K=40,Z=1 --seed 1 -o w/x.st
dimension M = 0 is outside [1, 2^30]                         | gen gemm.seq --kernels $K --shape M=0,N=5,K=40 --seed 1 -o w/x.st
dimension 'M' has no value (give it with --shape M=...)      | gen gemm.seq --kernels $K --seed 1 -o w/x.st
unknown class 'nope'                                         | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st --class nope
'gemm' is not FAMILY.POINT                                   | gen gemm --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st
family 'gemm' has no point 'nope' at class 'cpu'             | gen gemm.nope --kernels $K --shape M=3,N=5,K=40 --seed 1 -o w/x.st
nodir: cannot open the registry directory                    | gen gemm.seq --kernels nodir --shape M=3,N=5,K=40 --seed 1 -o w/x.st
--out reg: is not a regular file                             | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 -o reg
--out nodir/x.st: its directory does not exist             | gen gemm.seq --kernels $K --shape M=3,N=5,K=40 --seed 1 -o nodir/x.st
needs FAMILY.POINT, --in and -o                              | ref
is inside --kernels kc, which this command reads             | gen gemm.seq --kernels kc --shape M=3,N=5,K=40 --seed 1 -o kc/cpu/common/KERNEL_FAMILIES.toml
is inside --kernels kc, which this command reads             | gen gemm.seq --kernels kc --shape M=3,N=5,K=40 --seed 1 -o kc/new.st
is inside --kernels kc, which this command reads             | ref gemm.seq --kernels kc --in a.st -o kc/cpu/HARDWARE.toml
needs FAMILY.POINT, --in and -o                              | ref gemm.seq --kernels $K --in a.st
needs FAMILY.POINT, --in and -o                              | ref gemm.seq --kernels $K -o w/x.st
needs FAMILY.POINT, --in and -o                              | ref --kernels $K --in a.st -o w/x.st
option --in needs a value                                    | ref gemm.seq --kernels $K -o w/x.st --in
option --engine needs a value                                | ref gemm.seq --kernels $K --in a.st -o w/x.st --engine
option --threads needs a value                               | ref gemm.seq --kernels $K --in a.st -o w/x.st --threads
unexpected argument 'x'                                      | ref gemm.seq --kernels $K --in a.st -o w/x.st x
unexpected argument '--bogus'                                | ref gemm.seq --kernels $K --in a.st -o w/x.st --bogus
--engine: unknown engine 'gpu' (expected mpfr or fast)       | ref gemm.seq --kernels $K --in a.st -o w/x.st --engine gpu
--threads: 'x' is not an integer in [1, 4096]                | ref gemm.seq --kernels $K --in a.st -o w/x.st --threads x
--out a.st is the same file as --in a.st                     | ref gemm.seq --kernels $K --in a.st -o a.st
--out reg: is not a regular file                             | ref gemm.seq --kernels $K --in a.st -o reg
--out nodir/x.st: its directory does not exist             | ref gemm.seq --kernels $K --in a.st -o nodir/x.st
none.st: cannot open                                         | ref gemm.seq --kernels $K --in none.st -o w/x.st
trunc.st: header length 57 (byte 0) runs past                | ref gemm.seq --kernels $K --in trunc.st -o w/x.st
unknown class 'nope'                                         | ref gemm.seq --kernels $K --in a.st -o w/x.st --class nope
nodir: cannot open the registry directory                    | ref gemm.seq --kernels nodir --in a.st -o w/x.st
family 'gemm' has no point 'nope' at class 'cpu'             | ref gemm.nope --kernels $K --in a.st -o w/x.st
rms.st holds inputs of family 'rmsnorm', not 'gemm'          | ref gemm.seq --kernels $K --in rms.st -o w/x.st --shape M=3,N=5,K=40
input tensor 'a' has dtype F32; expected BF16                | ref gemm.seq --kernels $K --in f32.st -o w/x.st --shape M=3,N=5,K=40
input tensor 'a' has shape [3, 40]; expected [M, K] = [3, 41] | ref gemm.seq --kernels $K --in a.st -o w/x.st --shape M=3,N=5,K=41
--shape: family 'gemm' has no dimension 'Q'                  | ref gemm.seq --kernels $K --in a.st -o w/x.st --shape M=3,N=5,K=40,Q=2
EOF

helps <<'EOF'
gen --help | --shape --seed -o --class --dist --specials --kernels --threads
ref --help | --in -o --class --shape --engine --kernels --threads --time
EOF
finish
