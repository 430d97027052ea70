#!/bin/sh
# tree.sh PARITY: the input errors of `parity tree show` and of the global
# options and command dispatch (main.c), one table row each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

errors <<'EOF'
# fragment                                              | arguments
usage: parity <command>                                 |
unknown command 'frob'                                  | frob
option --max-bytes needs a value                        | --max-bytes
--max-bytes: 'x' is not a size                          | --max-bytes x atoms
--max-terms: '0' is not a size                          | --max-terms 0 atoms
--max-ops: '5Q' is not a size                           | --max-ops=5Q atoms
--max-bytes: '99999999T' is not a size                  | --max-bytes 99999999T atoms
usage: parity <command>                                 | --max-bytes 1K
usage: parity tree show                                 | tree
unknown subcommand 'bogus' (expected show)              | tree bogus
show needs a TREE and --n N                             | tree show
show needs a TREE and --n N                             | tree show seq
show needs a TREE and --n N                             | tree show --n 3
option --n needs a value                                | tree show seq --n
option --numerics needs a value                         | tree show seq --n 3 --numerics
--n: 'x' is not an integer in [0, 1048576]              | tree show seq --n x
--n: '-1' is not an integer                             | tree show seq --n -1
--n: '1048577' is not an integer in [0, 1048576]        | tree show seq --n 1048577
unknown option '--bogus'                                | tree show seq --n 3 --bogus
unexpected argument 'halving' (one tree at a time)      | tree show seq halving --n 3
tree:1:1: unknown tree 'frob'                           | tree show frob --n 3
tree:1:7: the split count must be at least 1            | tree show 'split(0, seq, seq)' --n 4
# the tree language's integers are decimal digits (docs/numerics.md §4): a
# hex or float spelling is named whole, never read as its leading 0
tree:1:6: the head modulus: '0x4' is not an integer     | tree show 'head(0x4, seq, seq)' --n 8
tree:1:7: the group size: '0x10' is not an integer      | tree show 'chain(0x10)' --n 8 --numerics '{ atom = {} }'
tree:1:7: the split count: '1e3' is not an integer      | tree show 'split(1e3, seq, seq)' --n 8
tree:1:8: the lane count: '4.0' is not an integer       | tree show 'stride(4.0, seq, seq)' --n 8
--numerics:1:10: key 'tree': tree:1:6: the head modulus: '0x4' is not an integer | tree show seq --n 8 --numerics '{ tree = "head(0x4, seq, seq)" }'
n = 100 terms is more than the limit of 10 operations   | --max-ops 10 tree show seq --n 100
--numerics:1:9: key 'acc': unknown format 'q'           | tree show seq --n 3 --numerics '{ acc = "q" }'
--numerics:1:2:                                         | tree show seq --n 3 --numerics '{'
--numerics:1:10: key 'atom': unknown atom preset 'zz'   | tree show 'chain(4)' --n 3 --numerics '{ atom = "zz" }'
--numerics:1:3: unknown key 'bogus'                     | tree show seq --n 3 --numerics '{ bogus = 1 }'
EOF

helps <<'EOF'
--help             | campaign check transcript tier3 reduce tree atoms inspect registry gen ref ttbp gate ledger diff fit lkb bench --max-bytes --max-terms --max-ops
help               | campaign
tree --help        | show --n --numerics --dot --verbose
tree show --help   | --n --numerics --dot --verbose
EOF
finish
