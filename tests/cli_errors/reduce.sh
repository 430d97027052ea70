#!/bin/sh
# reduce.sh PARITY ST_CRAFT: the input errors of `parity reduce`, one table
# row each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
# 1.0f = 0000803f (little-endian).  a [2, 2] F32; broken variants.
ONE=0000803f
"$CRAFT" raw good.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw trunc.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE --cut 40
"$CRAFT" raw i32.st '{"a":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw r1.st '{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw noa.st '{"q":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw ab.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2,1],"data_offsets":[16,24]}}' \
  $ONE$ONE$ONE$ONE$ONE$ONE
"$CRAFT" raw c3.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"c":{"dtype":"F32","shape":[3],"data_offsets":[16,28]}}' \
  $ONE$ONE$ONE$ONE$ONE$ONE$ONE
mkdir dir.st

errors <<'EOF'
# fragment                                                   | arguments
needs --numerics, --in and --out                             | reduce
needs --numerics, --in and --out                             | reduce --in good.st --out w/y.st
needs --numerics, --in and --out                             | reduce --numerics '{}' --out w/y.st
needs --numerics, --in and --out                             | reduce --numerics '{}' --in good.st
option --numerics needs a value                              | reduce --in good.st --out w/y.st --numerics
option --in needs a value                                    | reduce --numerics '{}' --out w/y.st --in
option --out needs a value                                   | reduce --numerics '{}' --in good.st --out
option --engine needs a value                                | reduce --numerics '{}' --in good.st --out w/y.st --engine
option --threads needs a value                               | reduce --numerics '{}' --in good.st --out w/y.st --threads
column 10: expected a number, a name or '(' at the end       | reduce --numerics '{ tree = "seq", rows = [{ select = "r %(2 != ", fma = false }] }' --in good.st --out w/y.st
option --check needs a value                                 | reduce --numerics '{}' --in good.st --out w/y.st --check
option --report needs a value                                | reduce --numerics '{}' --in good.st --out w/y.st --report
unknown argument '--bogus'                                   | reduce --numerics '{}' --in good.st --out w/y.st --bogus
unknown argument 'extra'                                     | reduce --numerics '{}' --in good.st --out w/y.st extra
--engine: unknown engine 'q' (expected auto, fast or mpfr)   | reduce --numerics '{}' --in good.st --out w/y.st --engine q
--threads: '0' is not an integer in [1, 4096]                | reduce --numerics '{}' --in good.st --out w/y.st --threads 0
--threads: 'x' is not an integer                             | reduce --numerics '{}' --in good.st --out w/y.st --threads x
--threads: '4097' is not an integer                          | reduce --numerics '{}' --in good.st --out w/y.st --threads 4097
--check: 'x' is not an integer in [1, 1073741824]            | reduce --numerics '{}' --in good.st --out w/y.st --check x
--check: '0' is not an integer                               | reduce --numerics '{}' --in good.st --out w/y.st --check 0
--check applies to --engine auto only                        | reduce --numerics '{}' --in good.st --out w/y.st --check 2 --engine fast
--out good.st is the same file as --in good.st               | reduce --numerics '{}' --in good.st --out good.st
--report ./good.st is the same file as --in good.st          | reduce --numerics '{}' --in good.st --out w/y.st --report ./good.st
--out w/y.st and --report w/y.st are the same file           | reduce --numerics '{}' --in good.st --out w/y.st --report w/y.st
--out dir.st: is not a regular file                          | reduce --numerics '{}' --in good.st --out dir.st
--out nodir/y.st: its directory does not exist             | reduce --numerics '{}' --in good.st --out nodir/y.st
--report nodir/r.json: its directory does not exist        | reduce --numerics '{}' --in good.st --out w/y.st --report nodir/r.json
--numerics:1:2:                                              | reduce --numerics '{' --in good.st --out w/y.st
--numerics:1:25: Error while parsing value: could not determine value type | reduce --numerics '{ tree = "seq", rows = [} }' --in good.st --out w/y.st
--numerics:1:9: key 'acc': unknown format 'q'                | reduce --numerics '{ acc = "q" }' --in good.st --out w/y.st
--numerics:1:3: unknown key 'bogus'                          | reduce --numerics '{ bogus = 1 }' --in good.st --out w/y.st
tree:1:1: unknown tree 'frob'                                | reduce --numerics '{ tree = "frob" }' --in good.st --out w/y.st
none.st: cannot open                                         | reduce --numerics '{}' --in none.st --out w/y.st
dir.st: not a regular file                                   | reduce --numerics '{}' --in dir.st --out w/y.st
trunc.st: header length 57 (byte 0) runs past                | reduce --numerics '{}' --in trunc.st --out w/y.st
i32.st: tensor 'a': dtype I32 is not a number format         | reduce --numerics '{}' --in i32.st --out w/y.st
r1.st: tensor 'a' has 1 dimensions; expected 2               | reduce --numerics '{}' --in r1.st --out w/y.st
noa.st: unexpected tensor 'q'                                | reduce --numerics '{}' --in noa.st --out w/y.st
ab.st: tensor 'b' has shape [2, 1] but 'a' has [2, 2]        | reduce --numerics '{}' --in ab.st --out w/y.st --report w/r.json
c3.st: tensor 'c' has shape [3]; expected [2]                | reduce --numerics '{}' --in c3.st --out w/y.st
EOF

helps <<'EOF'
reduce --help | --numerics --in --out --engine --check --report --threads
EOF
finish
