"""The backend kit (python/parity/backend.py): its roundings against bit
patterns worked by hand, its safetensors files read back by `parity
inspect`, and its server driven over the protocol (docs/backends.md) as a
subprocess: answers echo ids, a malformed request and a kernel's exception
are `ok: false` answers from a server that keeps serving, and nothing but
protocol lines reaches stdout."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from parity import backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = sys.executable


def _cli():
    cli = os.environ.get("PARITY_CLI")
    if cli:
        return cli
    build = os.environ.get("PARITY_BUILD", "build")
    return os.path.join(build if os.path.isabs(build) else os.path.join(ROOT, build), "parity")


def f32(*hexes):
    return np.array([float.fromhex(h) for h in hexes], dtype=np.float32)


# ------------------------------------------------------------------ roundings

def test_round_bf16_hand_patterns():
    x = f32("0x1.01p+0",      # 1 + 2^-8: a tie, to the even 1
            "0x1.03p+0",      # 1 + 3 * 2^-8: a tie, to the even 1 + 2^-6
            "0x1.0101p+0",    # just above the tie: up
            "-0x1.01p+0",     # the tie, negative
            "0x1.fffffep+127",  # fp32's largest: above bf16's, rounds to inf
            "0x1.fep+127",    # bf16's largest finite
            "0x1p-133",       # bf16's least subnormal
            "0x1p-134",       # half of it: a tie, to +0
            "0x1.8p-133",     # 1.5 quanta: a tie, to 2 quanta
            "-0x1p-140")      # below half a quantum: -0
    got = backend.round_bf16(x)
    want = np.array([0x3F80, 0x3F82, 0x3F81, 0xBF80, 0x7F80, 0x7F7F, 0x0001, 0x0000, 0x0002, 0x8000],
                    dtype=np.uint16)
    assert [hex(v) for v in got] == [hex(v) for v in want]


def test_round_bf16_specials_and_f64_once():
    x = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0], dtype=np.float32)
    assert [hex(v) for v in backend.round_bf16(x)] == ["0x7f80", "0xff80", "0x7fc0", "0x8000", "0x0"]
    # 1 + 2^-8 + 2^-40 in fp64 rounds up to 0x3f81; through fp32 it would be
    # the tie 1 + 2^-8 and round to the even 0x3f80 (double rounding)
    d = np.array([1 + 2.0 ** -8 + 2.0 ** -40], dtype=np.float64)
    assert hex(backend.round_bf16(d)[0]) == "0x3f81"
    assert hex(backend.round_bf16(d.astype(np.float32))[0]) == "0x3f80"


def test_round_f16_hand_patterns():
    x = np.array([65519.0, 65520.0, -65520.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -14,
                  1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, np.nan, -0.0], dtype=np.float64)
    want = [0x7BFF, 0x7C00, 0xFC00, 0x0001, 0x0000, 0x0002, 0x0400, 0x3C00, 0x3C02, 0x7E00, 0x8000]
    assert [hex(v) for v in backend.round_f16(x)] == [hex(v) for v in want]


def test_bf16_f16_decode_exact():
    u = np.array([0x3F80, 0x0001, 0x7F7F, 0xFF80, 0x8000], dtype=np.uint16)
    assert backend.bf16_to_f32(u).view(np.uint32).tolist() == [0x3F800000, 0x00010000, 0x7F7F0000, 0xFF800000,
                                                                0x80000000]
    h = np.array([0x0001, 0x7BFF, 0x3C00], dtype=np.uint16)
    assert backend.f16_to_f32(h).tolist() == [2.0 ** -24, 65504.0, 1.0]


def test_round_bf16_matches_torch_on_random_patterns():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2 ** 32, size=200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = x[~np.isnan(x)]
    t = torch.from_numpy(x.copy()).bfloat16().view(torch.int16).numpy().view(np.uint16)
    assert np.array_equal(backend.round_bf16(x), t)
    assert np.array_equal(backend.round_bf16(x.astype(np.float64)), t)


# ------------------------------------------------------------------ safetensors

def test_safetensors_round_trip_and_inspect(tmp_path):
    p = str(tmp_path / "o.safetensors")
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    backend.write_safetensors(p, {"y": y, "b": backend.to_format(y, "bf16"), "h": backend.to_format(y, "fp16"),
                                  "i": np.array([1, 2, 3], dtype=np.int32)})
    raw = open(p, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0 and raw[8 + n - 1:8 + n] in (b" ", b"}")
    head = json.loads(raw[8:8 + n])
    assert head["y"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert head["b"]["dtype"] == "BF16" and head["h"]["dtype"] == "F16" and head["i"]["dtype"] == "I32"
    back = backend.read_safetensors(p)
    assert np.array_equal(back["y"], y)
    assert back.dtype("b") == "BF16" and np.array_equal(backend.bf16_to_f32(back["b"]), y)
    cli = _cli()
    if not os.path.exists(cli):
        pytest.skip("no parity CLI at %s" % cli)
    r = subprocess.run([cli, "inspect", p], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "tensor y: F32 [2, 3]" in r.stdout and "tensor b: BF16 [2, 3]" in r.stdout, r.stdout


def test_read_is_a_mapping_not_a_copy(tmp_path):
    p = str(tmp_path / "big.safetensors")
    backend.write_safetensors(p, {"a": np.ones((1024, 1024), dtype=np.float32)})
    t = backend.read_safetensors(p)
    a = t["a"]
    assert not a.flags.owndata and a.base is not None
    a[0, 0] = 5.0            # a private mapping: writable, the file untouched
    assert backend.read_safetensors(p)["a"][0, 0] == 1.0


# ------------------------------------------------------------------ the server

SERVER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {python!r})
    import numpy as np
    from parity import backend

    @backend.kernel("gemm", "kit_gemm")
    def gemm(point, inputs, mode, threads):
        print("a stray print of the kernel")          # must not reach the protocol
        a, b = inputs.f32("a"), inputs.f32("b")
        return {{"y": backend.to_format(a.astype(np.float64) @ b.T.astype(np.float64), point.params["out"])}}

    @backend.kernel("gemm", "kit_boom")
    def boom(point, inputs):
        raise RuntimeError("the kernel failed\\non two lines")

    @backend.kernel("softmax", "kit_softmax", nondeterministic=True, supports=lambda p: p.point == "plain",
                    check_params=lambda p: None if p.params.get("out") != "fp16" else "out: fp16 is refused")
    def sm(point, inputs):
        return {{"y": np.zeros(1, dtype=np.float32)}}

    # y in the format of the point's reduction k (its numerics' out), as a
    # gemv's y is; no kernel for a result format it cannot write
    @backend.kernel("gemv_w4a16", "kit_gemv", supports=lambda p: p.out("k") in ("fp16", "fp32"))
    def gemv(point, inputs):
        a, b = inputs.f32("a"), inputs.f32("b")
        return {{"y": backend.to_format(a.astype(np.float64) @ b.T.astype(np.float64), point.numerics["k"]["out"])}}

    backend.serve(name="kit-test", threaded=False, describe={{"sku": "test"}})
""")


@pytest.fixture
def server(tmp_path):
    src = tmp_path / "srv.py"
    src.write_text(SERVER.format(python=os.path.join(ROOT, "python")))
    env = dict(os.environ)
    p = subprocess.Popen([PY, str(src)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
    yield p
    if p.poll() is None:
        p.kill()
    p.wait()


def _ask(p, line):
    p.stdin.write((line if isinstance(line, bytes) else line.encode()) + b"\n")
    p.stdin.flush()
    ans = p.stdout.readline()
    assert ans, "the server closed stdout (exit %s): %s" % (p.poll(), p.stderr.read().decode()[-2000:])
    return json.loads(ans)


def _req(p, rid, op, **kw):
    kw.update(id=rid, op=op)
    return _ask(p, json.dumps(kw))


def _nx(out="fp32", tree="seq"):
    """A reduction's canonical numerics text, as parity sends it."""
    return ('{ acc = "fp32", rounding = "rne", fma = false, product = "exact", tree = "%s", out = "%s", '
            'out_rounding = "rne", saturate = false }' % (tree, out))


def _point(family="gemm", point="seq", kernel="kit_gemm", numerics=None, **params):
    return {"family": family, "point": point, "class": "kit-test", "kernel": kernel, "hash": "00",
            "params": params, "reductions": {"k": "seq"}, "numerics": {"k": numerics or _nx()}}


def test_hello_available_describe(server):
    a = _req(server, 1, "hello", parity_backend=1)
    assert a == {"id": 1, "ok": True, "abi": 1, "name": "kit-test", "threaded": False}
    assert _req(server, 2, "available") == {"id": 2, "ok": True, "available": True}
    d = _req(server, 3, "describe")
    assert d["id"] == 3 and d["ok"] and d["device"]["sku"] == "test"
    bad = _req(server, 4, "hello", parity_backend=2)
    assert bad["id"] == 4 and bad["ok"] is False and "version" in bad["error"]


def test_supports_and_check_params(server):
    assert _req(server, 1, "supports", point=_point(), kernel=None) == \
        {"id": 1, "ok": True, "supports": True, "nondeterministic": False}
    assert _req(server, 2, "supports", point=_point(), kernel="no_such")["supports"] is False
    assert _req(server, 3, "supports", point=_point("softmax", "plain", "kit_softmax"), kernel=None) == \
        {"id": 3, "ok": True, "supports": True, "nondeterministic": True}
    assert _req(server, 4, "supports", point=_point("softmax", "libm", "kit_softmax"), kernel=None)["supports"] is False
    # a kernel of another family is not this point's
    assert _req(server, 5, "supports", point=_point("softmax", "plain", "kit_gemm"), kernel=None)["supports"] is False
    assert _req(server, 6, "check_params", point=_point("softmax", "plain", "kit_softmax", out="bf16"),
                kernel=None) == {"id": 6, "ok": True}
    r = _req(server, 7, "check_params", point=_point("softmax", "plain", "kit_softmax", out="fp16"), kernel=None)
    assert r["ok"] is False and r["error"] == "out: fp16 is refused"


def _gemm_input(tmp_path):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal((5, 8)).astype(np.float32)
    pin = str(tmp_path / "in.safetensors")
    backend.write_safetensors(pin, {"a": backend.to_format(a, "bf16"), "b": backend.to_format(b, "bf16")})
    return pin, str(tmp_path / "out.safetensors")


def test_run_writes_outputs_and_stdout_stays_clean(server, tmp_path):
    pin, pout = _gemm_input(tmp_path)
    a = _req(server, 1, "run", point=_point(M="3", N="5", K="8", out="bf16"), kernel=None, mode="graphed",
             threads=0, **{"in": pin, "out": pout})
    assert a == {"id": 1, "ok": True}
    y = backend.read_safetensors(pout)
    assert y.dtype("y") == "BF16" and y["y"].shape == (3, 5)
    ins = backend.read_safetensors(pin)
    want = backend.round_bf16(ins.f32("a").astype(np.float64) @ ins.f32("b").T.astype(np.float64))
    assert np.array_equal(y["y"], want)
    assert _req(server, 2, "bye") == {"id": 2, "ok": True}
    server.stdin.close()
    rest = server.stdout.read()
    assert rest == b"", rest          # the kernel's print went to stderr
    assert server.wait(timeout=10) == 0
    assert b"a stray print of the kernel" in server.stderr.read()


def test_malformed_requests_answered_not_fatal(server, tmp_path):
    r = _ask(server, "this is not json")
    assert r["ok"] is False and r["id"] is None and "not JSON" in r["error"]
    r = _ask(server, "[1, 2]")
    assert r["ok"] is False and "object" in r["error"]
    r = _req(server, 3, "frobnicate")
    assert r == {"id": 3, "ok": False, "error": 'unknown op "frobnicate"'}
    r = _req(server, 4, "run", point=_point(), kernel=None, mode="sideways", threads=0, **{"in": "x", "out": "y"})
    assert r["id"] == 4 and r["ok"] is False and "mode" in r["error"]
    r = _req(server, 5, "run", point=_point(), kernel=None, mode="eager", threads=0,
             **{"in": str(tmp_path / "absent"), "out": str(tmp_path / "o")})
    assert r["id"] == 5 and r["ok"] is False and r["error"].startswith("input:")
    r = _req(server, 6, "supports", kernel=None)
    assert r["id"] == 6 and r["ok"] is False and "point" in r["error"]
    assert _req(server, 7, "hello", parity_backend=1)["ok"] is True   # still serving


def test_kernel_exception_is_an_answer(server, tmp_path):
    pin, pout = _gemm_input(tmp_path)
    r = _req(server, 1, "run", point=_point(kernel="kit_gemm"), kernel="kit_boom", mode="eager", threads=1,
             **{"in": pin, "out": pout})
    assert r["id"] == 1 and r["ok"] is False
    assert r["error"] == "kit_boom: RuntimeError: the kernel failed on two lines"   # one line
    r = _req(server, 2, "run", point=_point(M="3", N="5", K="8", out="fp32"), kernel=None, mode="eager",
             threads=1, **{"in": pin, "out": pout})
    assert r == {"id": 2, "ok": True}                                               # the next run runs
    assert backend.read_safetensors(pout).dtype("y") == "F32"


# ------------------------------------------------------------------ numerics points

CANONICAL = [
    _nx("bf16", "order([1, 0], seq)"),
    '{ acc = "fp32", rounding = "rne", in = "bf16", in_rounding = "rz", fma = true, product = "exact", '
    'tree = "split(4, chain(8), seq, align=16)", atom = { frac_bits = 24, term_round = "rz", round = "rne", '
    'acc = "fp32", align = "max" }, out = "fp16", out_rounding = "rne", saturate = true, grid = [4, 24], '
    'rows = [{ select = "i >= M - M % 4 || R == 1", acc = "fp32", tree = "seq", out = "fp16" }] }',
    '{ s = "a \\"quoted\\" \\\\ \\u00e9", n = -12, f = 1.5e-3, h = 0x1F, e = {}, l = [] }',
]


@pytest.mark.parametrize("text", CANONICAL)
def test_parse_point_as_toml_reads_it(text):
    p = backend.parse_point(text)
    assert isinstance(p, dict)
    try:
        import tomllib
    except ImportError:        # Python < 3.11: the parser stands alone
        return
    assert p == tomllib.loads("p = " + text)["p"]


def test_parse_point_fields():
    p = backend.parse_point(CANONICAL[1])
    assert p["out"] == "fp16" and p["saturate"] is True and p["fma"] is True
    assert p["atom"]["frac_bits"] == 24 and p["grid"] == [4, 24]
    assert p["rows"][0]["select"] == "i >= M - M % 4 || R == 1"
    assert p["tree"] == "split(4, chain(8), seq, align=16)"


@pytest.mark.parametrize("bad", ['{ a = 1', '{ a = 1 } x', 'a = 1', '{ a = 1, a = 2 }', '{ a = "x }',
                                 '{ a = }', '{ a = "\\q" }', '', '{ a = [1, }'])
def test_parse_point_refuses_what_is_not_a_point(bad):
    with pytest.raises(ValueError):
        backend.parse_point(bad)


def test_point_numerics_and_out():
    pt = backend.Point(_point(numerics=_nx("bf16", "order([1, 0], seq)")))
    assert pt.numerics["k"]["out"] == "bf16" and pt.numerics["k"]["tree"] == "order([1, 0], seq)"
    assert pt.out("k") == "bf16" and pt.out("combine") is None and pt.out("combine", "fp32") == "fp32"
    old = _point()
    del old["numerics"]                     # a request without numerics: none known
    assert backend.Point(old).numerics == {} and backend.Point(old).out("k", "fp16") == "fp16"
    with pytest.raises(ValueError, match="numerics of k"):
        backend.Point(_point(numerics="{ out = "))


def test_supports_and_run_follow_the_reductions_out(server, tmp_path):
    pin, pout = _gemm_input(tmp_path)
    g = dict(family="gemv_w4a16", point="per_element", kernel="kit_gemv", M="3", N="5", K="8")
    for rid, out, dt in ((1, "fp32", "F32"), (2, "fp16", "F16")):
        assert _req(server, rid, "supports", point=_point(numerics=_nx(out), **g), kernel=None)["supports"] is True
        r = _req(server, 10 + rid, "run", point=_point(numerics=_nx(out), **g), kernel=None, mode="eager",
                 threads=1, **{"in": pin, "out": pout})
        assert r == {"id": 10 + rid, "ok": True}
        assert backend.read_safetensors(pout).dtype("y") == dt
    assert _req(server, 3, "supports", point=_point(numerics=_nx("bf16"), **g), kernel=None)["supports"] is False
    r = _req(server, 4, "supports", point=_point(numerics="{ out = ", **g), kernel=None)
    assert r["ok"] is False and "numerics of k" in r["error"]
