#!/bin/sh
# ledger.sh PARITY ST_CRAFT KERNELS: the input errors of `parity ttbp` and
# `parity ledger merge|runs`, one table row each (lib.sh).  A ledger is
# only read by these: an unreadable, foreign or newer one is refused and
# left as it was (the tree's sizes are compared, and the foreign one's
# bytes below).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
printf 'not a database\n' > bad.db
mkdir dir.db
# another program's SQLite database, and a ledger of a newer schema
sqlite3 foreign.db 'CREATE TABLE x(a); INSERT INTO x VALUES (1);' || fail "sqlite3"
sqlite3 newer.db 'PRAGMA user_version = 99;' || fail "sqlite3"
# a negative schema version is a version, read, and no parity ledger's
sqlite3 neg.db 'PRAGMA user_version = -1;' || fail "sqlite3"
sqlite3 neg5.db 'CREATE TABLE x(a); PRAGMA user_version = -5;' || fail "sqlite3"
cp foreign.db foreign.orig

errors <<'EOF'
# fragment                                                   | arguments
needs --class C                                              | ttbp --ledger bad.db --json w/t.json
option --class needs a value                                 | ttbp --class
option --model needs a value                                 | ttbp --class cpu --model
option --ledger needs a value                                | ttbp --class cpu --ledger
option --json needs a value                                  | ttbp --class cpu --ledger bad.db --json
unknown argument '--bogus'                                   | ttbp --class cpu --bogus
unknown argument 'extra'                                     | ttbp --class cpu extra
ledger none.db: No such file or directory                    | ttbp --class cpu --ledger none.db --json w/t.json
ledger bad.db: not an SQLite database                        | ttbp --class cpu --ledger bad.db --json w/t.json
ledger dir.db: cannot open                                   | ttbp --class cpu --ledger dir.db --json w/t.json
ledger foreign.db: not a parity ledger                       | ttbp --class cpu --ledger foreign.db --json w/t.json
ledger newer.db: schema version 99 is newer                  | ttbp --class cpu --ledger newer.db --json w/t.json
--json bad.db is the same file as --ledger bad.db            | ttbp --class cpu --ledger bad.db --json bad.db
--json dir.db: is not a regular file                         | ttbp --class cpu --ledger bad.db --json dir.db
--json nodir/t.json: its directory does not exist            | ttbp --class cpu --ledger bad.db --json nodir/t.json
usage: parity ledger merge                                   | ledger
unknown subcommand 'frob' (expected merge or runs            | ledger frob
needs --out OUT and at least one input ledger                | ledger merge
needs --out OUT and at least one input ledger                | ledger merge --out w/m.db
needs --out OUT and at least one input ledger                | ledger merge bad.db
option --out needs a value                                   | ledger merge bad.db --out
unknown argument '--bogus'                                   | ledger merge --out w/m.db --bogus bad.db
ledger none.db: No such file or directory                    | ledger merge --out w/m.db none.db
ledger bad.db: not an SQLite database                        | ledger merge --out w/m.db bad.db
ledger foreign.db: not a parity ledger                       | ledger merge --out w/m.db foreign.db
ledger newer.db: schema version 99 is newer                  | ledger merge --out w/m.db newer.db
--out bad.db is the same file as IN bad.db                   | ledger merge --out bad.db bad.db
--out dir.db: is not a regular file                          | ledger merge --out dir.db bad.db
ledger bad.db: not an SQLite database                        | ledger merge --out nodir/m.db bad.db
ledger out/ledger.sqlite: No such file or directory          | ledger runs
option --ledger needs a value                                | ledger runs --ledger
option --class needs a value                                 | ledger runs --ledger bad.db --class
unknown argument '--bogus'                                   | ledger runs --ledger bad.db --bogus
unknown argument 'x'                                         | ledger runs --ledger bad.db x
ledger none.db: No such file or directory                    | ledger runs --ledger none.db
ledger bad.db: not an SQLite database                        | ledger runs --ledger bad.db
ledger foreign.db: not a parity ledger                       | ledger runs --ledger foreign.db
ledger newer.db: schema version 99 is newer                  | ledger runs --ledger newer.db
ledger neg.db: not a parity ledger (an SQLite database of schema version -1; | ttbp --class cpu --ledger neg.db --json w/t.json
ledger neg.db: not a parity ledger (an SQLite database of schema version -1; | ledger merge --out w/m.db neg.db
ledger neg.db: not a parity ledger (an SQLite database of schema version -1; | ledger runs --ledger neg.db
ledger neg5.db: not a parity ledger (an SQLite database of schema version -5; | ledger runs --ledger neg5.db
ledger neg.db: not a parity ledger (an SQLite database of schema version -1; | lkb --class cpu --ledger neg.db --kernels $K
EOF
cmp -s foreign.db foreign.orig || fail "the foreign database was changed"

helps <<'EOF'
ttbp --help         | --class --model --ledger --json
ledger --help       | merge runs --out --ledger --class
ledger merge --help | --out
ledger runs --help  | --ledger --class
EOF
finish
