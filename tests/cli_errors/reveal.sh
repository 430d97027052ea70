#!/bin/sh
# reveal.sh PARITY ST_CRAFT KERNELS: the input errors of `parity reveal`,
# one table row each (lib.sh).  Every row fails before a kernel is probed.
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
S="reveal --simulate {}"

errors <<'EOF'
# fragment                                                   | arguments
give exactly one of --exec, --serve, --dlopen, --simulate    | reveal
give exactly one of --exec, --serve, --dlopen, --simulate    | reveal --n 8
give exactly one of --exec, --serve, --dlopen, --simulate    | $S --exec 'cp {in} {out}' --n 8
--n is required                                              | $S
option --n needs a value                                     | $S --n
option --simulate needs a value                              | reveal --n 8 --simulate
option --exec needs a value                                  | reveal --n 8 --exec
option --dtype needs a value                                 | $S --n 8 --dtype
option --seed needs a value                                  | $S --n 8 --seed
unknown option '--bogus'                                     | $S --n 8 --bogus
--n: '1' is not an integer in [2, 65536]                      | $S --n 1
--n: 1048577 is above the limit 65536                        | $S --n 1048577
--n: 'x' is not an integer                                   | $S --n x
--rows: '0' is not an integer in [1, 1048576]                | $S --n 8 --rows 0
--confirm: 'x' is not an integer in [1, 1048576]             | $S --n 8 --confirm x
--seed: '-1' is not an unsigned integer                      | $S --n 8 --seed -1
--seed: 'x' is not an unsigned integer                       | $S --n 8 --seed x
--seed: '18446744073709551616' is not an unsigned integer    | $S --n 8 --seed 18446744073709551616
--dtype: 'Q' is not one of F32, BF16, F16, F64               | $S --n 8 --dtype Q
--simulate:1:2:                                              | reveal --simulate '{' --n 8
--simulate:1:10: key 'tree': tree:1:1: unknown tree 'frob'   | reveal --simulate '{ tree = "frob" }' --n 8
--dlopen: expected LIB.so:SYMBOL, got "nolib"                | reveal --dlopen nolib --n 8
--dlopen: ./nolib.so: cannot open shared object file         | reveal --dlopen ./nolib.so:f --n 8
# a symbol that is data is never called as a function (it was: SIGSEGV)
--dlopen: symbol environ is not a function (ELF symbol type STT_OBJECT: data) | reveal --dlopen libc.so.6:environ --n 8
--dlopen: symbol stdout is not a function (ELF symbol type STT_OBJECT: data) | reveal --dlopen libc.so.6:stdout --n 8
--dlopen: symbol signgam is not a function                   | reveal --dlopen libm.so.6:signgam --n 8
--dlopen: symbol errno is not a function                     | reveal --dlopen libc.so.6:errno --n 8
option --grid needs a value                                  | $S --n 8 --grid
--grid: '6' is not M,N                                       | $S --n 8 --grid 6
--grid: '6,' is not M,N                                      | $S --n 8 --grid 6,
--grid: '6,10,2' is not M,N                                  | $S --n 8 --grid 6,10,2
--grid: 0 x 10 is not a grid                                 | $S --n 8 --grid 0,10
--grid: '-6,10' is not M,N                                   | $S --n 8 --grid -6,10
--grid: 1 x 1 is not a grid                                  | $S --n 8 --grid 1,1
--grid: 2048 x 1024 is not a grid                            | $S --n 8 --grid 2048,1024
--grid: '70000,2' is not M,N                                 | $S --n 8 --grid 70000,2
--grid: a grid and one b for every row (shared b) together  | $S --n 8 --grid 6,10 --shared-b
--rows 64: a grid kernel's batch is its M x N = 60 outputs   | $S --n 8 --grid 6,10 --rows 64
--grid: 1024 x 1024 outputs of n = 64 terms: one call would hold 67108864 terms | $S --n 64 --grid 1024,1024
--grid: 512 x 512 outputs of n = 65 terms                    | $S --n 64,65 --grid 512,512
EOF

helps <<'EOF'
reveal --help | --exec --serve --dlopen --simulate --n --dtype --order-only --grid --rows --confirm --seed -v
EOF
finish
