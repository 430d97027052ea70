#!/bin/sh
# campaign.sh PARITY ST_CRAFT KERNELS: the input errors of `parity
# campaign`, one table row each (lib.sh).  No row passes --no-ledger: the
# default ledger (out/ledger.sqlite under the working directory, $T) must
# not appear either.
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
mkdir dir.json w/old
printf 'not a database\n' > bad.db
sqlite3 foreign.db 'CREATE TABLE x(a);' || fail "sqlite3"
# a registry whose class x reaches no backend (its chain is x alone)
mkdir -p reg/x/common
printf 'class = "x"\n' > reg/x/HARDWARE.toml
: > reg/DEVICES.toml
printf '[[family]]\nid = "f"\nkernels = ["k"]\n' > reg/x/common/KERNEL_FAMILIES.toml
C="campaign --class cpu --kernels $K"

errors <<'EOF'
# fragment                                                   | arguments
needs --class C                                              | campaign --kernels $K --json w/j.json
option --class needs a value                                 | campaign --class
unknown argument '--bogus'                                   | $C --bogus
unknown argument 'extra'                                     | $C extra
option --kernels needs a value                               | campaign --class cpu --kernels
option --families needs a value                              | $C --families
option --shapes needs a value                                | $C --shapes
option --json needs a value                                  | $C --json
option --junit needs a value                                 | $C --junit
option --traces needs a value                                | $C --traces
option --repeats needs a value                               | $C --repeats
option --threads needs a value                               | $C --threads
option --seed needs a value                                  | $C --seed
option --dist needs a value                                  | $C --dist
option --engine needs a value                                | $C --engine
option --against needs a value                               | $C --against
option --against-traces needs a value                        | $C --against-traces
option --ledger needs a value                                | $C --ledger
option --model needs a value                                 | $C --model
option --kernel-src needs a value                            | $C --kernel-src
option --shard needs a value                                 | $C --shard
--shapes: unknown preset 'big' (expected small, 8b-layer or model:M)  | $C --shapes big --json w/j.json
--repeats: '1' is not an integer in [2, 1000]                | $C --repeats 1 --json w/j.json
--repeats: 'x' is not an integer                             | $C --repeats x --traces w/tr
--repeats: '1001' is not an integer                          | $C --repeats 1001
--threads: '0' is not an integer in [1, 4096]                | $C --threads 0 --junit w/j.xml
--threads: 'many' is not an integer                          | $C --threads many
--seed: 'x' is not an unsigned integer                       | $C --seed x --json w/j.json
--seed: '-1' is not an unsigned integer                      | $C --seed -1 --json w/j.json
--seed: ' 1' is not an unsigned integer                      | $C --seed ' 1'
--seed: '0x' is not an unsigned integer                      | $C --seed 0x
--seed: '18446744073709551616' is not an unsigned integer    | $C --seed 18446744073709551616
--dist: unknown distribution 'q'                             | $C --dist q --json w/j.json
--engine: 'q' is not an engine built into this binary        | $C --engine q --json w/j.json
--json dir.json: is not a regular file                       | $C --json dir.json
--junit dir.json: is not a regular file                      | $C --junit dir.json
--json w/j and --junit w/j are the same file                 | $C --json w/j --junit w/j
$K: unknown class 'zz'                                       | campaign --class zz --kernels $K --json w/j.json --traces w/tr
nodir: cannot open the registry directory                    | campaign --class cpu --kernels nodir --json w/j.json --traces w/tr
--shard: '3/2' is not i/N with 1 <= i <= N                   | $C --shard 3/2 --json w/j.json --traces w/tr
--shard: 'x'                                                 | $C --shard x --json w/j.json
--against-traces needs --against D                           | $C --against-traces . --json w/j.json --traces w/tr
--against: class 'zz' is not in the registry $K              | $C --against zz --json w/j.json --traces w/tr
--against-traces: 'nodir' is not a directory                 | $C --against cpu2 --against-traces nodir --json w/j.json --traces w/tr
--families: no point of class cpu belongs to 'nope'          | $C --families nope --json w/j.json --junit w/j.xml --traces w/tr
--traces: cannot create 'nodir/tr'                           | $C --families gemm --traces nodir/tr --json w/j.json
class 'x' has no backend in this build                       | campaign --class x --kernels reg --json w/j.json --traces w/tr
none of the 6 points of class cpu in 'gemm' is dealt to --shard 900/1000 | $C --families gemm --shard 900/1000 --json w/j.json --traces w/tr
# a ledger found bad after the --traces folder was made and locked: neither
# a new folder nor a lock file in an existing one stays
ledger bad.db: not an SQLite database                        | $C --families gemm --ledger bad.db --traces w/tr --json w/j.json --quiet
ledger bad.db: not an SQLite database                        | $C --families gemm --ledger bad.db --traces w/old --quiet
ledger foreign.db: not a parity ledger                       | $C --families gemm --ledger foreign.db --traces w/tr --quiet
EOF

# without CUDA (the default build), a class of the cuda backend cannot run
if "$PARITY" campaign --class cpu --kernels "$K" --against sm90 --families nope --no-ledger 2>&1 |
    grep -q 'built without CUDA'; then
  errors <<'EOF'
--against sm90: its backend cannot run here                  | $C --against sm90 --json w/j.json --traces w/tr
EOF
fi

helps <<'EOF'
campaign --help | --class --kernels --families --shapes --json --junit --traces --repeats --threads --seed --dist --engine --against --against-traces --quiet --model --ledger --no-ledger --kernel-src --shard
EOF
finish
