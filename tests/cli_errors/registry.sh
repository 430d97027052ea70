#!/bin/sh
# registry.sh PARITY ST_CRAFT KERNELS: the input errors of `parity registry`
# lint, list, show and compare, one table row each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
# bad: a family file cut inside an array; dup: a family declared twice.
for R in bad dup; do
  mkdir -p $R/x/common
  printf 'class = "x"\n' > $R/x/HARDWARE.toml
  : > $R/DEVICES.toml
done
printf '[[family]]\nid = "f"\nkernels = [1\n' > bad/x/common/KERNEL_FAMILIES.toml
printf '[[family]]\nid = "f"\nkernels = ["k"]\n[[family]]\nid = "f"\nkernels = ["k"]\n' > dup/x/common/KERNEL_FAMILIES.toml

errors <<'EOF'
# fragment                                                   | arguments
usage: parity registry lint                                  | registry
unknown subcommand 'frob' (expected lint, list, show or compare) | registry frob
lint: unknown option '--bogus'                               | registry lint --bogus
lint: unexpected argument 'b'                                | registry lint a b
lint: DIR given twice ('$K' and --kernels $K)                | registry lint $K --kernels $K
option --kernels needs a value                               | registry lint --kernels
nodir: cannot open the registry directory                    | registry lint nodir
bad/x/HARDWARE.toml: cannot open the registry directory: Not a directory | registry lint bad/x/HARDWARE.toml
bad/x/common/KERNEL_FAMILIES.toml:3:14:                      | registry lint bad
stdout:dup/x/common/KERNEL_FAMILIES.toml:5:1: error: family 'f' is declared twice | registry lint dup
list: unknown option '--shape'                               | registry list --shape M=1 $K
list: unexpected argument 'b'                                | registry list a b
option --class needs a value                                 | registry list $K --class
unknown class 'zz'                                           | registry list --class zz $K
nodir: cannot open the registry directory                    | registry list nodir
bad/x/common/KERNEL_FAMILIES.toml:3:14:                      | registry list bad
show needs FAMILY.POINT and --class C                        | registry show gemm.seq $K
show needs FAMILY.POINT and --class C                        | registry show --class cpu --kernels $K
show: unexpected argument 'c'                                | registry show gemm.seq a c --class cpu
show: unknown option '--bogus'                               | registry show gemm.seq --class cpu --bogus $K
option --shape needs a value                                 | registry show gemm.seq --class cpu --kernels $K --shape
--shape: 'M=x' is not NAME=INTEGER                           | registry show gemm.seq --class cpu --kernels $K --shape M=x
--shape: family 'gemm' has no dimension 'Z'                  | registry show gemm.seq --class cpu --kernels $K --shape Z=1
family 'gemm' has no point 'nope' at class 'cpu'             | registry show gemm.nope --class cpu --kernels $K
'gemm' is not FAMILY.POINT                                   | registry show gemm --class cpu --kernels $K
unknown class 'zz'                                           | registry show gemm.seq --class zz --kernels $K
nodir: cannot open the registry directory                    | registry show gemm.seq --class cpu nodir
compare needs two points A B                                 | registry compare cpu:gemm.seq --kernels $K
compare needs two points A B                                 | registry compare --kernels $K
compare: unknown option '--class'                            | registry compare cpu:gemm.seq cpu:gemm.seq --class cpu $K
'gemm.seq' is not CLASS:FAMILY.POINT                         | registry compare cpu:gemm.seq gemm.seq --kernels $K
cpu:gemm.nope: family 'gemm' has no point 'nope'             | registry compare cpu:gemm.seq cpu:gemm.nope --kernels $K
zz:gemm.seq: $K: unknown class 'zz'                          | registry compare cpu:gemm.seq zz:gemm.seq --kernels $K
cpu:gemm.seq: --shape: 'M=x' is not NAME=INTEGER             | registry compare cpu:gemm.seq cpu:gemm.seq --shape M=x $K
nodir: cannot open the registry directory                    | registry compare cpu:gemm.seq cpu:gemm.seq nodir
EOF

helps <<'EOF'
registry --help         | lint list show compare --kernels
registry lint --help    | lint
registry list --help    | list --class
registry show --help    | show --class --shape
registry compare --help | compare --shape
EOF
finish
