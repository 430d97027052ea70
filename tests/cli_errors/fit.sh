#!/bin/sh
# fit.sh PARITY ST_CRAFT: the input errors of `parity fit`, one table row
# each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
ONE=0000803f
"$CRAFT" raw in.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw ab.st '{"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2,2],"data_offsets":[16,32]}}' \
  $ONE$ONE$ONE$ONE$ONE$ONE$ONE$ONE
"$CRAFT" raw i32.st '{"a":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}' $ONE$ONE$ONE$ONE
"$CRAFT" raw y.st '{"y":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}' $ONE$ONE
"$CRAFT" raw y3.st '{"y":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}' $ONE$ONE$ONE
"$CRAFT" raw yb.st '{"y":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}' 803f803f
"$CRAFT" raw yi.st '{"y":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}' $ONE$ONE
"$CRAFT" raw in0.st '{"a":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]}}' ''
"$CRAFT" raw y0.st '{"y":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}}' ''
printf 'garbage' > short.npy
printf 'seq\nfrob\n' > space.txt
MANY= MANYREF=
for I in $(seq 65); do MANY="$MANY --in in.st" MANYREF="$MANYREF --ref y.st"; done

errors <<'EOF'
# fragment                                                   | arguments
needs --in and --ref in pairs (0 --in, 0 --ref               | fit
needs --in and --ref in pairs (1 --in, 0 --ref               | fit --in in.st
needs --in and --ref in pairs (1 --in, 2 --ref               | fit --in in.st --ref y.st --ref y.st
at most 64 --in files                                        | fit $MANY --ref y.st
at most 64 --ref files                                       | fit --in in.st $MANYREF
option --in needs a value                                    | fit --ref y.st --in
option --ref needs a value                                   | fit --in in.st --ref
option --space needs a value                                 | fit --in in.st --ref y.st --space
option --max needs a value                                   | fit --in in.st --ref y.st --max
option --threads needs a value                               | fit --in in.st --ref y.st --threads
unknown argument '--bogus'                                   | fit --in in.st --ref y.st --bogus
unknown argument 'extra'                                     | fit --in in.st --ref y.st extra
--max: '0' is not an integer in [1, 1073741824]              | fit --in in.st --ref y.st --max 0
--max: 'x' is not an integer                                 | fit --in in.st --ref y.st --max x
--threads: 'x' is not an integer in [1, 4096]                | fit --in in.st --ref y.st --threads x
--threads: '0' is not an integer                             | fit --in in.st --ref y.st --threads 0
--space: line 1: tree:1:1: unknown tree 'frob'               | fit --in in.st --ref y.st --space frob
space.txt: line 2: tree:1:1: unknown tree 'frob'             | fit --in in.st --ref y.st --space space.txt
--space: line 1: point:1:8:                                  | fit --in in.st --ref y.st --space '{ acc = '
--space: no candidates                                       | fit --in in.st --ref y.st --space '# only a comment'
none.st: cannot open                                         | fit --in in.st --ref none.st
none.st: cannot open                                         | fit --in none.st --ref y.st
i32.st: tensor 'a': dtype I32 is not a number format         | fit --in i32.st --ref y.st
yi.st: tensor 'y': dtype I32 is not a number format          | fit --in in.st --ref yi.st
in.st: no tensor 'y' (expected the outputs, shape [2])       | fit --in in.st --ref in.st
y3.st: tensor 'y' has 1 dimension(s) of shape [3...]; in.st has 2 rows | fit --in in.st --ref y3.st
short.npy: byte 7: the file ends inside the 8 bytes          | fit --in in.st --ref short.npy
y.st: y is fp32 but yb.st's is bf16                          | fit --in in.st --ref yb.st --in in.st --ref y.st
ab.st: has 'b' but in.st has not                             | fit --in in.st --ref y.st --in ab.st --ref y.st
# no rows, no evidence: no point is printed (the first candidate was)
pair 1 has no rows (shape [0, 4])                            | fit --in in0.st --ref y0.st
pair 1 has no rows (shape [0, 4])                            | fit --in in0.st --ref y0.st --json
pair 2 has no rows (shape [0, 4])                            | fit --in in.st --ref y.st --in in0.st --ref y0.st
EOF

helps <<'EOF'
fit --help | --in --ref --space --max --threads --json --no-classes
EOF
finish
