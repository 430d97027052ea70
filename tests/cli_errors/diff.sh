#!/bin/sh
# diff.sh PARITY ST_CRAFT: the input errors of `parity diff`, one table row
# each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
ONE=0000803f
"$CRAFT" raw a.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw trunc.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE --cut 40
"$CRAFT" raw r1.st '{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw i32.st '{"a":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw y.st '{"y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' $ONE$ONE
# npy FILE DESCR SHAPE DATA: a version 1.0 .npy file (header padded to 64
# bytes, ending in a newline), DATA as printf octal escapes.
npy() {
  H="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  L=$(( (10 + ${#H} + 1 + 63) / 64 * 64 - 10 ))
  { printf '\223NUMPY\001\000'; printf "\\$(printf %03o $((L % 256)))\\$(printf %03o $((L / 256)))"
    printf '%-*s\n' $((L - 1)) "$H"; printf "$4"; } > "$1"
}
F1='\000\000\200\077'
npy f4.npy '<f4' '(2,)' "$F1$F1"
npy f4x3.npy '<f4' '(3,)' "$F1$F1$F1"
npy u2.npy '<u2' '(2,)' '\200\077\200\077'
npy cut.npy '<f4' '(4,)' "$F1"
npy zz.npy '<zz' '(2,)' "$F1$F1"
printf 'garbage' > short.npy

errors <<'EOF'
# fragment                                                   | arguments
needs two files, A and B                                     | diff
needs two files, A and B                                     | diff a.st --json
more than two files ('a.st')                                 | diff a.st a.st a.st
unknown option '--bogus'                                     | diff a.st a.st --bogus
option --tensor needs a value                                | diff a.st a.st --tensor
option --max-list needs a value                              | diff a.st a.st --max-list
option --dtype-a needs a value                               | diff a.st a.st --dtype-a
option --dtype-b needs a value                               | diff a.st a.st --dtype-b
--max-list: '0' is not an integer in [1, 1000000]            | diff a.st a.st --max-list 0
--max-list: 'x' is not an integer                            | diff a.st a.st --max-list x
a.st: no tensor 'zz' (it holds 'a')                          | diff a.st a.st --tensor zz
none: cannot open                                            | diff a.st none
none: cannot open                                            | diff none a.st
trunc.st: header length 57 (byte 0) runs past                | diff a.st trunc.st
a.st has tensors 'a'; y.st has tensors 'y'                   | diff a.st y.st
shapes differ: a.st: tensor 'a' has shape [2, 2]; r1.st: tensor 'a' has shape [4] | diff a.st r1.st
dtypes differ: a.st: tensor 'a' is F32 [2, 2]; i32.st: tensor 'a' is I32 | diff a.st i32.st
a.st: --dtype applies to a .npy file                         | diff a.st a.st --dtype-a bf16
short.npy: byte 7: the file ends inside the 8 bytes          | diff short.npy a.st
cut.npy: byte 132: data truncated                            | diff f4.npy cut.npy
zz.npy: byte 20: descr '<zz' is not supported                | diff f4.npy zz.npy
shapes differ: f4.npy: tensor 'the array' has shape [2]; f4x3.npy | diff f4.npy f4x3.npy
dtype hint 'qq' is not a dtype                               | diff u2.npy u2.npy --dtype-a bf16 --dtype-b qq
u2.npy: byte 20: descr '<u2' holds 16-bit elements but the dtype hint 'fp32' is F32 | diff u2.npy u2.npy --dtype-a bf16 --dtype-b fp32
f4.npy: byte 20: descr '<f4' is F32 but the dtype hint 'bf16' says BF16 | diff f4.npy f4.npy --dtype-b bf16
EOF

helps <<'EOF'
diff --help | --tensor --json --max-list --dtype-a --dtype-b
EOF
finish
