#!/bin/sh
# gate.sh PARITY ST_CRAFT KERNELS: the input errors of `parity gate`, one
# table row each (lib.sh).  Every row fails before a campaign runs.
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
mkdir dir.json
G="gate --before $K --after $K --class cpu"

errors <<'EOF'
# fragment                                                   | arguments
needs --before A --after B                                   | gate
needs --before A --after B                                   | gate --before $K --json w/j.json
needs --before A --after B                                   | gate --before $K --class cpu
needs --before A --after B                                   | gate --after $K --class cpu
unknown argument '--bogus'                                   | $G --bogus
unknown argument 'extra'                                     | $G extra
option --before needs a value                                | gate --before
option --after needs a value                                 | gate --before $K --after
option --class needs a value                                 | gate --before $K --after $K --class
option --shapes needs a value                                | $G --shapes
option --families needs a value                              | $G --families
option --seed needs a value                                  | $G --seed
option --dist needs a value                                  | $G --dist
option --engine needs a value                                | $G --engine
option --repeats needs a value                               | $G --repeats
option --threads needs a value                               | $G --threads
option --traces needs a value                                | $G --traces
option --json needs a value                                  | $G --json
option --slack needs a value                                 | $G --slack
option --false-alarm needs a value                           | $G --false-alarm
option --pairs needs a value                                 | $G --pairs
option --registry-path needs a value                         | $G --registry-path
--shapes: unknown preset 'big'                               | $G --shapes big --json w/j.json
--json dir.json: is not a regular file                       | $G --json dir.json --traces w/tr
--json nodir/j.json: its directory does not exist            | $G --json nodir/j.json --traces w/tr
--repeats: '1' is not an integer in [2, 1000]                | $G --repeats 1 --json w/j.json
--threads: '0' is not an integer in [1, 4096]                | $G --threads 0 --json w/j.json
--seed: 'x' is not an unsigned integer                       | $G --seed x --json w/j.json
--seed: '-1' is not an unsigned integer                      | $G --seed -1 --json w/j.json
--dist: unknown distribution 'q'                             | $G --dist q --json w/j.json
--engine: 'q' is not an engine built into this binary        | $G --engine q --json w/j.json
--slack: 'x' is not a number in [0, 1e9]                     | $G --slack x --json w/j.json
--slack: '1e10' is not a number in [0, 1e9]                  | $G --slack 1e10 --json w/j.json
--false-alarm: '-1' is not a number in [0, 1e9]              | $G --false-alarm -1 --json w/j.json
--false-alarm: 'nan' is not a number in [0, 1e9]             | $G --false-alarm nan --json w/j.json
--false-alarm: '0' is not a probability in (0, 1)            | $G --false-alarm 0 --json w/j.json
--pairs: '10' is not an integer in [11, 1001]                | $G --pairs 10 --json w/j.json
--before: 'nodir' is neither a directory nor a git revision  | gate --before nodir --after $K --class cpu --json w/j.json --traces w/tr
--after: 'nodir' is neither a directory nor a git revision   | gate --before $K --after nodir --class cpu --json w/j.json --traces w/tr
class 'zz' has no backend in this build                      | gate --before $K --after $K --class zz --json w/j.json --traces w/tr
--families: no point of class cpu belongs to 'nope'          | $G --families nope --json w/j.json --traces w/tr
EOF

# without CUDA (the default build), a class of the cuda backend cannot run
if "$PARITY" gate --before "$K" --after "$K" --class sm90 --families nope 2>&1 | grep -q 'built without CUDA'; then
  errors <<'EOF'
class sm90: its backend cuda cannot run here                 | gate --before $K --after $K --class sm90 --json w/j.json --traces w/tr
EOF
fi

helps <<'EOF'
gate --help | --before --after --class --shapes --families --seed --dist --engine --repeats --threads --traces --json --no-bench --slack --false-alarm --pairs --quiet --registry-path --allow-lint-errors
EOF
finish
