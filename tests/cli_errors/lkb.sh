#!/bin/sh
# lkb.sh PARITY ST_CRAFT KERNELS: the input errors of `parity lkb` and
# `parity bench`, one table row each (lib.sh).  bench records into the
# registry (CLASS/MEASUREMENTS.toml) and the ledger: the rows run on a copy
# of the sample registry, and the harness sees that nothing in it changed.
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
cp -r "$K" reg
printf 'not a database\n' > bad.db
mkdir dir.json
B="bench --class cpu --point gemm.seq --kernels reg"

errors <<'EOF'
# fragment                                                   | arguments
needs --class C                                              | lkb --kernels reg --json w/j.json
option --class needs a value                                 | lkb --class
option --model needs a value                                 | lkb --class cpu --model
option --kernels needs a value                               | lkb --class cpu --kernels
option --json needs a value                                  | lkb --class cpu --kernels reg --json
option --ledger needs a value                                | lkb --class cpu --kernels reg --ledger
option --before needs a value                                | lkb --class cpu --kernels reg --before
option --registry-path needs a value                         | lkb --class cpu --kernels reg --registry-path
unknown argument '--bogus'                                   | lkb --class cpu --kernels reg --bogus
unknown argument 'extra'                                     | lkb --class cpu --kernels reg extra
registry reg: no class 'zz'                                  | lkb --class zz --kernels reg --json w/j.json
nodir: cannot open the registry directory                    | lkb --class cpu --kernels nodir --json w/j.json
nodir: cannot open the registry directory                    | lkb --lint --kernels nodir
reg/models/nope/STEP.toml: cannot open                       | lkb --class cpu --kernels reg --model nope --json w/j.json
--json dir.json: is not a regular file                       | lkb --class cpu --kernels reg --json dir.json
--json nodir/j.json: its directory does not exist            | lkb --class cpu --kernels reg --json nodir/j.json
--json bad.db is the same file as --ledger bad.db            | lkb --class cpu --kernels reg --ledger bad.db --json bad.db
--before: 'nodir' is neither a directory nor a git revision  | lkb --class cpu --kernels reg --before nodir --json w/j.json
needs --class C, --point FAMILY.POINT and --rows R           | bench
needs --class C, --point FAMILY.POINT and --rows R           | $B
needs --class C, --point FAMILY.POINT and --rows R           | bench --class cpu --kernels reg --rows 1
needs --class C, --point FAMILY.POINT and --rows R           | bench --point gemm.seq --kernels reg --rows 1
option --class needs a value                                 | bench --class
option --point needs a value                                 | bench --class cpu --point
option --shapes needs a value                                | $B --rows 1 --shapes
option --shape needs a value                                 | $B --rows 1 --shape
option --ledger needs a value                                | $B --rows 1 --ledger
option --baseline-class needs a value                        | $B --rows 1 --baseline-class
option --warmup needs a value                                | $B --rows 1 --warmup
option --repeats needs a value                               | $B --rows 1 --repeats
option --threads needs a value                               | $B --rows 1 --threads
option --seed needs a value                                  | $B --rows 1 --seed
unknown argument '--bogus'                                   | $B --rows 1 --bogus
--rows: '0' is not an integer in [1, 1073741824]             | $B --rows 0
--rows: 'x' is not an integer                                | $B --rows x
--rows: at most 64 row counts                                | $B --rows $(seq -s ' ' 1 65)
--shapes: unknown preset 'big' (expected 8b-layer or small)  | $B --rows 1 --shapes big
--shape gives one whole shape: give one --rows value         | $B --rows 1 2 --shape M=1,N=8,K=8
--warmup: '-1' is not an integer in [0, 1000]                | $B --rows 1 --warmup -1
--repeats: '1' is not an integer in [2, 100000]              | $B --rows 1 --repeats 1
--threads: 'x' is not an integer in [0, 4096]                | $B --rows 1 --threads x
--seed: '-1' is not an integer in [0, 2147483647]            | $B --rows 1 --seed -1
nodir: cannot open the registry directory                    | bench --class cpu --point gemm.seq --kernels nodir --rows 1
--class zz: no backend runs this class                       | bench --class zz --point gemm.seq --kernels reg --rows 1
--class sm90: the cuda backend cannot run here               | bench --class sm90 --point gemm.seq --kernels reg --rows 1
'gemm' is not FAMILY.POINT                                   | bench --class cpu --point gemm --kernels reg --rows 1 --ledger w/l.db
family 'gemm' has no point 'zz' at class 'cpu'               | bench --class cpu --point gemm.zz --kernels reg --rows 1 --ledger w/l.db
--shape: 'M=x' is not NAME=INTEGER                           | $B --rows 1 --shape M=x --ledger w/l.db
--shape: family 'gemm' has no dimension 'Z'                  | $B --rows 1 --shape Z=1 --ledger w/l.db
reg: unknown class 'zz'                                      | $B --rows 1 --baseline-class zz --ledger w/l.db
--ledger dir.json: is not a regular file                     | $B --rows 1 --ledger dir.json
ledger bad.db: not an SQLite database                        | $B --rows 1 --ledger bad.db --repeats 2 --warmup 0
EOF

helps <<'EOF'
lkb --help   | --class --model --kernels --json --ledger --before --registry-path --lint
bench --help | --class --point --rows --kernels --shapes --shape --warmup --repeats --threads --baseline-class --seed --ledger --no-ledger --no-record
EOF
finish
