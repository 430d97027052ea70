"""A served backend that misbehaves on purpose (tests/backends.cmake).

It passes every request through to a well-behaved backend, `parity
backend host libext_gemm.so` (argv[1] the parity executable, argv[2] the
library), and misbehaves on the requests for point "bad" in the way
argv[3] names; "hello_*" modes misbehave at hello.  Standard library only.
"""
import json
import os
import signal
import struct
import subprocess
import sys
import time

parity, lib, mode = sys.argv[1], sys.argv[2], sys.argv[3]
inner = subprocess.Popen([parity, "backend", "host", lib], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out = sys.stdout


def say(obj_or_text):
    text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
    out.write(text + "\n")
    out.flush()


def ask(line):
    inner.stdin.write(line.encode() + b"\n")
    inner.stdin.flush()
    return inner.stdout.readline().decode().rstrip("\n")


def rewrite(path, fn):
    with open(path, "rb") as f:
        data = f.read()
    (hl,) = struct.unpack("<Q", data[:8])
    head = json.loads(data[8:8 + hl])
    body = data[8 + hl:]
    head, body = fn(head, body)
    h = json.dumps(head).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + body)


for line in sys.stdin:
    req = json.loads(line)
    op, rid = req.get("op"), req.get("id")
    if op == "bye":
        break
    if op == "hello":
        if mode == "hello_hang":
            time.sleep(3600)
        if mode == "hello_exit":
            sys.exit(4)
        if mode == "hello_abi":
            say({"id": rid, "ok": True, "abi": 99, "name": "hostile"})
            continue
    bad = op == "run" and req.get("point", {}).get("point") == "bad"
    if not bad:
        say(ask(line.rstrip("\n")))
        continue
    if mode == "hang":
        time.sleep(3600)
    elif mode == "exit":
        os._exit(3)
    elif mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif mode == "garbage":
        say("this is not JSON")
    elif mode == "wrong_id":
        say({"id": rid + 7, "ok": True})
    elif mode == "nul":
        # a valid answer, then a NUL byte and more on the same line
        out.write(json.dumps({"id": rid, "ok": True}) + "\0 and more\n")
        out.flush()
    elif mode == "no_ok":
        say({"id": rid})
    elif mode == "huge":
        out.write("x" * (2 << 20))
        out.flush()
        time.sleep(3600)
    elif mode == "error":
        say({"id": rid, "ok": False, "error": "the device ran out of its scratch memory"})
    elif mode == "no_output":
        say({"id": rid, "ok": True})
    elif mode == "close_stdout":
        os.close(1)
        time.sleep(3600)
    else:
        answer = ask(line.rstrip("\n"))
        path = req["out"]
        if mode == "wrong_name":
            rewrite(path, lambda h, b: ({("z" if k == "y" else k): v for k, v in h.items()}, b))
        elif mode == "wrong_dtype":
            def f32(h, b):
                h["y"]["dtype"] = "F16" if h["y"]["dtype"] != "F16" else "BF16"
                return h, b
            rewrite(path, f32)
        elif mode == "wrong_shape":
            def shape(h, b):
                s = h["y"]["shape"]
                h["y"]["shape"] = [s[1], s[0]] if s[0] != s[1] else [s[0] * s[1], 1]
                return h, b
            rewrite(path, shape)
        elif mode == "partial":
            size = os.path.getsize(path)
            with open(path, "r+b") as f:
                f.truncate(size // 2)
        elif mode == "flip":
            # a silent wrong answer: one bit of y flipped
            def flip(h, b):
                o = h["y"]["data_offsets"][0]
                b = bytearray(b)
                b[o] ^= 1
                return h, bytes(b)
            rewrite(path, flip)
        say(answer)
inner.stdin.close()
inner.wait()
