#!/bin/sh
# tier.sh PARITY: the input errors of `parity transcript` and `parity
# tier3`, one table row each (lib.sh).
. "$(dirname "$0")/lib.sh" "$@"

cd "$T" || exit 1
printf '[1,2,3]\n[4,5]\n' > c.jsonl
printf '[1,2,3]\n[4,\n' > bad.jsonl
printf '[1,2,3]\n{"prompt": 1}\n' > nokey.jsonl
printf '[1,"a"]\n' > str.jsonl
printf '{"prompt":1,"tokens":[1]}\n{"prompt":1,"tokens":[2]}\n' > dup.jsonl
printf '{"x":1.5}' > m.json
printf '{"x":{"min":1}}' > b.json
printf '{"x":"a"}' > mstr.json
printf '{"x":{"mn":1}}' > bkey.json
printf '{"x":' > trunc.json
printf '[1]' > arr.json

errors <<'EOF'
# fragment                                              | arguments
needs CONTROL and CANDIDATE files                       | transcript
needs CONTROL and CANDIDATE files                       | transcript c.jsonl --json w/t.json
unexpected argument 'c.jsonl'                           | transcript c.jsonl c.jsonl c.jsonl
unexpected argument '--bogus'                           | transcript c.jsonl c.jsonl --bogus
option --min-rate needs a value                         | transcript c.jsonl c.jsonl --min-rate
option --json needs a value                             | transcript c.jsonl c.jsonl --json
--min-rate: 'x' is not a number in [0, 1]               | transcript c.jsonl c.jsonl --min-rate x --json w/t.json
--min-rate: '1.5' is not a number in [0, 1]             | transcript c.jsonl c.jsonl --min-rate 1.5 --json w/t.json
--min-rate: '-0.1' is not a number in [0, 1]            | transcript c.jsonl c.jsonl --min-rate -0.1
--min-rate: 'nan' is not a number in [0, 1]             | transcript c.jsonl c.jsonl --min-rate nan
--min-rate: '0.5x' is not a number in [0, 1]            | transcript c.jsonl c.jsonl --min-rate 0.5x
none: cannot open                                       | transcript c.jsonl none --json w/t.json
none: cannot open                                       | transcript none c.jsonl
bad.jsonl:2:3:                                          | transcript bad.jsonl c.jsonl --json w/t.json
nokey.jsonl:2: the object has no "tokens"               | transcript c.jsonl nokey.jsonl --json w/t.json
str.jsonl:1: token 1 is a string, not an integer        | transcript c.jsonl str.jsonl
dup.jsonl:2: prompt 1 repeats line 1                    | transcript dup.jsonl dup.jsonl --json w/t.json
--json c.jsonl is the same file as CONTROL c.jsonl      | transcript c.jsonl b.json --json c.jsonl
--json $T: is not a regular file                        | transcript c.jsonl c.jsonl --json $T
--json nodir/t.json: its directory does not exist      | transcript c.jsonl c.jsonl --json nodir/t.json
needs METRICS and BARS files                            | tier3
needs METRICS and BARS files                            | tier3 m.json --json w/t.json
unexpected argument 'x'                                 | tier3 m.json b.json x
unexpected argument '--bogus'                           | tier3 --bogus m.json b.json
option --json needs a value                             | tier3 m.json b.json --json
none: unable to open none                               | tier3 none b.json --json w/t.json
none: unable to open none                               | tier3 m.json none --json w/t.json
mstr.json: key "x": the metric is a string              | tier3 mstr.json b.json --json w/t.json
bkey.json: key "x": unknown bar key "mn"                | tier3 m.json bkey.json --json w/t.json
trunc.json:1:5:                                         | tier3 trunc.json b.json --json w/t.json
arr.json: the metrics are an array                      | tier3 arr.json b.json --json w/t.json
arr.json: the bars are an array                         | tier3 m.json arr.json --json w/t.json
--json m.json is the same file as METRICS m.json        | tier3 m.json b.json --json m.json
--json ./b.json is the same file as BARS b.json         | tier3 m.json b.json --json ./b.json
--json nodir/t.json: its directory does not exist      | tier3 m.json b.json --json nodir/t.json
EOF

helps <<'EOF'
transcript --help  | --min-rate --json
tier3 --help       | --json
EOF
finish
