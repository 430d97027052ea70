#!/bin/sh
# inspect.sh PARITY ST_CRAFT: the input errors of `parity inspect` and of
# `parity atoms`, one table row each (harness: lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

# 1.0f = 0000803f (little-endian); a [2, 2] F32 file and broken variants.
H='{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
D=0000803f0000803f0000803f0000803f
"$CRAFT" raw "$T/good.st" "$H" $D
"$CRAFT" raw "$T/trunc.st" "$H" $D --cut 40
"$CRAFT" raw "$T/json.st" '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]' $D
"$CRAFT" raw "$T/offs.st" '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}' $D
"$CRAFT" raw "$T/dtype.st" '{"a":{"dtype":"Q9","shape":[2,2],"data_offsets":[0,16]}}' $D
: > "$T/empty.st"

errors <<'EOF'
# fragment                                              | arguments
needs a FILE                                            | inspect
needs a FILE                                            | inspect --limit 3
option --limit needs a value                            | inspect $T/good.st --limit
--limit: 'x' is not an integer                          | inspect $T/good.st --limit x
--limit: '-1' is not an integer                         | inspect $T/good.st --limit -1
--limit: '3q' is not an integer                         | inspect $T/good.st --limit 3q
--limit: '99999999999999999999' is not an integer       | inspect $T/good.st --limit 99999999999999999999
unexpected argument '--bogus'                           | inspect $T/good.st --bogus
unexpected argument '$T/good.st'                        | inspect $T/good.st $T/good.st
$T/none: cannot open                                    | inspect $T/none
$T: not a regular file                                  | inspect $T
$T/good.st/x: cannot open                               | inspect $T/good.st/x
$T/empty.st: file is 0 bytes, too short                | inspect $T/empty.st
$T/trunc.st: header length 57 (byte 0) runs past        | inspect $T/trunc.st
$T/json.st: header is invalid JSON at byte              | inspect $T/json.st
tensor 'a': data_offsets [0, 12] give 12 bytes         | inspect $T/offs.st
$T/dtype.st: tensor 'a': unknown dtype 'Q9'            | inspect $T/dtype.st
unexpected argument 'x'                                 | atoms x
unexpected argument '--bogus'                           | atoms --bogus
EOF

helps <<'EOF'
inspect --help | inspect --limit
inspect -h     | --limit
atoms --help   | atoms
EOF
finish
