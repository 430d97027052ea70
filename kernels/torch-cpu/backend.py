"""The torch-cpu class's backend: PyTorch CPU operators served to parity
(docs/backends.md's protocol, through the kit python/parity/backend.py).

Run by HARDWARE.toml's `serve` command in this folder, with the Debian
interpreter that has torch (/usr/bin/python3).  Every kernel computes with
torch ops on tensors that view the mapped input file; `threads` is
torch.set_num_threads, `graphed` runs the kernel's dense part as a
torch.jit.trace graph cached per shape, dtype and params, `eager` the same
ops one by one.  The numerics each kernel realises, and how they were
found, are in common/KERNEL_FAMILIES.toml and docs/torch-cpu.md.
"""

import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KIT = os.path.join(HERE, "..", "..", "python", "parity", "backend.py")


def _kit():
    # the kit alone, not the parity package (which loads libparity.so)
    spec = importlib.util.spec_from_file_location("parity_backend_kit", KIT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


backend = _kit()

try:
    import torch
    import torch.nn.functional as F
    _TORCH_ERR = None
except Exception as e:  # noqa: BLE001 - said by `available`
    torch = F = None
    _TORCH_ERR = "%s cannot import torch: %s" % (sys.executable, e)

DEFAULT_THREADS = max(1, os.cpu_count() or 1)


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("flags"):
                    return set(ln.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# torch 1.13 hands a bf16 mm to oneDNN where mkldnn_bf16_device_check()
# holds (AVX-512 BW, VL, DQ); the point gemm.mm_bf16 declares is oneDNN's
# kernel with VDPBF16PS (AVX-512 BF16).  Elsewhere the same call is another
# kernel (ATen's own gemm, or oneDNN's bf16 emulation): not this point.
_ONEDNN_BF16 = {"avx512bw", "avx512vl", "avx512dq", "avx512_bf16"} <= _cpu_flags()
_DT = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64"}


def tdtype(fmt):
    return getattr(torch, _DT[fmt])


def arg(inputs, name):
    """An input as a torch tensor, viewing the mapped file (no copy)."""
    return backend.as_torch(inputs[name], inputs.dtype(name))


_graphs = {}


def graph(mode, key, fn, *tensors):
    """fn(*tensors) eagerly, or as a torch.jit.trace graph (graphed mode),
    traced once per key (kernel, params) and the tensors' shapes and dtypes."""
    if mode != "graphed":
        return fn(*tensors)
    k = (key, tuple((tuple(t.shape), t.dtype) for t in tensors))
    g = _graphs.get(k)
    if g is None:
        with torch.jit.optimized_execution(True):
            g = torch.jit.trace(fn, tensors, check_trace=False)
        _graphs[k] = g
    return g(*tensors)


def threads_of(threads):
    torch.set_num_threads(threads if threads > 0 else DEFAULT_THREADS)


def params_key(point):
    return tuple(sorted(point.params.items()))


# ------------------------------------------------------------------ the point's formats
#
# A request's point carries each reduction's whole numerics point
# (point.numerics[name]: acc, fma, tree, out, out_rounding, saturate, ...).
# The campaign's power variants keep the trees and change formats: the
# params `in` and `out` and a reduction's own `out`.  A kernel honours a
# reduction's `out` where its family rounds that result (docs/families.md)
# by rounding there with torch's .to() (round to nearest even, overflow to
# inf, never saturating), and answers `supports` false for a variant its
# torch operator does not run at the declared point.  It never fakes one:
# torch's numerics depend on the dtype (torch.mm on bf16 tensors is
# oneDNN's bf16 matmul, on fp32 tensors the BLAS's sgemm), so a variant
# that would need another dtype of the same op is another kernel.

_TORCH_FMTS = ("bf16", "fp16", "fp32")


def red_out(point, red, default):
    """The format reduction `red`'s result is rounded to."""
    return point.out(red, default)


def rounds_as_torch(point, red):
    """Whether reduction `red`'s result rounding is the one torch's .to()
    does (rne, not saturating)."""
    nx = point.numerics.get(red, {})
    return nx.get("out_rounding", "rne") == "rne" and not nx.get("saturate", False)


def fp32_result(point, *reds):
    """Each of `reds` declared with an fp32 result, rounded as torch rounds:
    the reductions whose result the kernel keeps in fp32."""
    return all(red_out(point, r, "fp32") == "fp32" and rounds_as_torch(point, r) for r in reds)


# ------------------------------------------------------------------ gemm

def gemm_epilogue(point, inputs, acc):
    """families.md's fp32 epilogue: alpha, beta * c, bias, then the output
    format, each one torch fp32 op (rne)."""
    alpha, beta = float(point.get("alpha", "1")), float(point.get("beta", "0"))
    t = acc.float()
    if alpha != 1.0:
        t = t * torch.tensor(alpha, dtype=torch.float32)
    if beta != 0.0:
        t = t + torch.tensor(beta, dtype=torch.float32) * arg(inputs, "c").float()
    if point.flag("bias"):
        t = t + arg(inputs, "bias").float()
    return t


def _gemm(point, inputs, mode, threads, op, native):
    threads_of(threads)
    a, b = arg(inputs, "a"), arg(inputs, "b")
    out = point.get("out", "bf16")
    if native:
        # torch.mm on the bf16 tensors: oneDNN's matmul writes y in bf16
        # itself (supports_native: only in = out = bf16, no epilogue)
        if a.dtype != torch.bfloat16 or b.dtype != torch.bfloat16 or out != "bf16":
            raise ValueError("%s runs bf16 a, b and y only (the point's in, out: %s, %s)"
                             % (point.kernel, point.get("in"), out))
        return {"y": graph(mode, (op, native), OPS[op], a, b)}
    a, b = a.float(), b.float()   # exact: every bf16/fp16 value is an fp32 value
    y = graph(mode, (op, native), OPS[op], a, b)
    return {"y": gemm_epilogue(point, inputs, y).to(tdtype(out))}


def _unit(text, one):
    try:
        return float(text) == one
    except ValueError:
        return False


def supports_mm(point):
    """torch.mm on fp32 operands: bf16, fp16 and fp32 inputs widen exactly,
    the sum is the BLAS's whatever the input format, and y is rounded once
    from the fp32 epilogue to any torch format.  The family's `k` result is
    fp32 (docs/families.md), y rounded as torch's .to() rounds."""
    return point.get("in", "bf16") in _TORCH_FMTS and point.get("out", "bf16") in _TORCH_FMTS and \
        fp32_result(point, "k")


def supports_native(point):
    """torch.mm on bf16 tensors is another operator than on fp32 ones:
    ATen hands it to oneDNN's bf16 matmul (brgemm, vdpbf16ps on AVX-512
    BF16), which takes bf16 a and b and writes bf16 y.  fp32 inputs would
    go to the BLAS's sgemm (gemm.mm's point, not this one); fp32 or fp16
    outputs, or an alpha, beta or bias applied after it, would round the
    bf16 y again.  oneDNN blocks K by 1024 (the declared tile) beyond 1024
    terms but by 512 at 512 < K <= 1024: another point, which a registry
    point cannot hold beside this one yet (no size classes).  On a host
    without AVX-512 BF16 the call is another kernel.  Those variants are
    not this kernel: false."""
    k = point.int("K", 0)
    return _ONEDNN_BF16 and torch is not None and torch.backends.mkldnn.is_available() and \
        point.get("in", "bf16") == "bf16" and point.get("out", "bf16") == "bf16" and \
        not 512 < k <= 1024 and \
        fp32_result(point, "k") and rounds_as_torch(point, "k") and \
        _unit(point.get("alpha", "1"), 1.0) and _unit(point.get("beta", "0"), 0.0) and not point.flag("bias")


OPS = {
    "mm": lambda a, b: torch.mm(a, b.t()),
    "linear": lambda a, b: F.linear(a, b),
    "matmul": lambda a, b: torch.matmul(a, b.t()),
}


@backend.kernel("gemm", "torch_gemm_mm", supports=supports_mm)
def gemm_mm(point, inputs, mode, threads):
    return _gemm(point, inputs, mode, threads, "mm", native=False)


@backend.kernel("gemm", "torch_gemm_mm_legacy", supports=supports_mm)
def gemm_mm_legacy(point, inputs, mode, threads):
    return _gemm(point, inputs, mode, threads, "linear", native=False)


@backend.kernel("gemm", "torch_gemm_native", supports=supports_native)
def gemm_native(point, inputs, mode, threads):
    return _gemm(point, inputs, mode, threads, "mm", native=True)


@backend.kernel("gemm", "torch_gemm_native_legacy", supports=supports_native)
def gemm_native_legacy(point, inputs, mode, threads):
    return _gemm(point, inputs, mode, threads, "matmul", native=True)


# ------------------------------------------------------------------ rmsnorm

def _rms_core(eps):
    def core(x, w):
        x32 = x.float()
        r = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
        return (x32 * r) * w.float()
    return core


def _rmsnorm(point, inputs, mode, threads, residual):
    threads_of(threads)
    x, w = arg(inputs, "x"), arg(inputs, "weight")
    fin = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[x.dtype]
    out = point.get("out", fin)
    outs = {}
    if residual:
        x = x + arg(inputs, "residual")      # torch's add in x's format: fp32, then one rounding
        outs["residual_out"] = x
    eps = torch.tensor(float(point.get("eps", "1e-6")), dtype=torch.float32)
    y = graph(mode, ("rmsnorm", params_key(point)), _rms_core(eps), x, w)
    outs = {"y": y.to(tdtype(out)), **outs}
    return outs


def supports_rmsnorm(point):
    """ss is x.pow(2).mean's fp32 sum: sumsq's result fp32; y any torch format."""
    return point.get("in", "bf16") in _TORCH_FMTS and point.get("out", point.get("in", "bf16")) in _TORCH_FMTS \
        and fp32_result(point, "sumsq")


@backend.kernel("rmsnorm", "torch_rmsnorm", supports=supports_rmsnorm)
def rmsnorm(point, inputs, mode, threads):
    return _rmsnorm(point, inputs, mode, threads, residual=point.flag("residual"))


@backend.kernel("rmsnorm", "torch_fused_add_rmsnorm", supports=supports_rmsnorm)
def fused_add_rmsnorm(point, inputs, mode, threads):
    return _rmsnorm(point, inputs, mode, threads, residual=True)


# ------------------------------------------------------------------ softmax

def _softmax(point, inputs, mode, threads, op):
    threads_of(threads)
    x = arg(inputs, "x")
    out = point.get("out", point.get("in", "bf16"))
    y = graph(mode, (op,), SOFTMAX[op], x)
    return {"y": y.to(tdtype(out))}


SOFTMAX = {
    "softmax": lambda x: torch.softmax(x.float(), -1),
    "functional": lambda x: F.softmax(x.float(), dim=-1),
}


def supports_softmax(point):
    """torch.softmax's fp32 kernel: its sum's result fp32; y any torch format."""
    return point.get("in", "bf16") in _TORCH_FMTS and point.get("out", point.get("in", "bf16")) in _TORCH_FMTS \
        and fp32_result(point, "sum")


@backend.kernel("softmax", "torch_softmax", supports=supports_softmax)
def softmax(point, inputs, mode, threads):
    return _softmax(point, inputs, mode, threads, "softmax")


@backend.kernel("softmax", "torch_softmax_legacy", supports=supports_softmax)
def softmax_legacy(point, inputs, mode, threads):
    return _softmax(point, inputs, mode, threads, "functional")


# ------------------------------------------------------------------ silu_and_mul

def _silu_mul(x):
    h = x.shape[-1] // 2
    g, u = x[:, :h].float(), x[:, h:].float()
    return F.silu(g) * u


def supports_silu(point):
    return point.get("in", "bf16") in _TORCH_FMTS and point.get("out", point.get("in", "bf16")) in _TORCH_FMTS


@backend.kernel("silu_and_mul", "torch_silu_and_mul", supports=supports_silu)
def silu_and_mul(point, inputs, mode, threads):
    threads_of(threads)
    x = arg(inputs, "x")
    out = point.get("out", point.get("in", "bf16"))
    return {"y": graph(mode, ("silu",), _silu_mul, x).to(tdtype(out))}


# ------------------------------------------------------------------ gemv_w4a16

def _nibbles(t, k):
    """U8 [R, ceil(k/2)] two per byte, low nibble first -> [R, k] int."""
    t = t.to(torch.int32)
    return torch.stack([t & 15, t >> 4], -1).reshape(t.shape[0], -1)[:, :k]


def _gemv_core(x, w):
    # one gemv per activation row: torch.mv on the fp32 weights
    return torch.stack([torch.mv(w, x[i]) for i in range(x.shape[0])])


def supports_gemv(point):
    """per element only (the weights dequantised first); y is torch.mv's
    fp32 result rounded once to the `k` point's out."""
    return point.get("scale_apply", "per_element") == "per_element" and \
        red_out(point, "k", "fp16") in _TORCH_FMTS and rounds_as_torch(point, "k")


@backend.kernel("gemv_w4a16", "torch_gemv_w4a16_dequant", supports=supports_gemv)
def gemv_w4a16(point, inputs, mode, threads):
    threads_of(threads)
    if point.get("scale_apply", "per_element") != "per_element":
        raise ValueError("torch_gemv_w4a16_dequant dequantises per element only")
    x, s = arg(inputs, "x"), arg(inputs, "scales")
    k = x.shape[1]
    group = point.int("group", 128)
    packed = point.flag("packed")
    q = arg(inputs, "qweight")
    q = _nibbles(q, k) if packed else q.to(torch.int32)
    if point.flag("zero_points"):
        z = arg(inputs, "zeros")
        z = _nibbles(z, k // group) if packed else z.to(torch.int32)
    else:
        z = torch.full((q.shape[0], k // group), 8, dtype=torch.int32)
    zf = z.repeat_interleave(group, 1)
    sf = s.float().repeat_interleave(group, 1)
    w = ((q - zf).float() * sf).half()   # exact (4 bits times 11), then one rne to fp16
    y = graph(mode, ("gemv",), _gemv_core, x.float(), w.float())
    # y in the `k` point's format (families.md): torch.mv's fp32 result, one .to()
    return {"y": y.to(tdtype(red_out(point, "k", "fp16")))}


# ------------------------------------------------------------------ moe_grouped_gemm

def _moe_expert(fmt):
    """torch.mm in fp32 (the BLAS), h rounded to the `k` point's out."""
    if fmt == "fp32":
        return lambda x, w: torch.mm(x, w.t())
    dt = tdtype(fmt)
    return lambda x, w: torch.mm(x, w.t()).to(dt).float()


def _moe_combine(tw, *hs):
    y = torch.zeros_like(hs[0])
    for j, h in enumerate(hs):
        y = y + tw[:, j:j + 1] * h
    return y


def supports_moe(point):
    """x and w of a torch format (widened exactly to fp32, the BLAS's
    sgemm); h and y each rounded once with .to() to their points' out."""
    return point.get("in", "bf16") in _TORCH_FMTS and all(
        red_out(point, r, "bf16") in _TORCH_FMTS and rounds_as_torch(point, r) for r in ("k", "combine"))


@backend.kernel("moe_grouped_gemm", "torch_moe_grouped", supports=supports_moe)
def moe_grouped(point, inputs, mode, threads):
    threads_of(threads)
    x, w = arg(inputs, "x"), arg(inputs, "w")
    # h_j in the `k` point's out, y in the `combine` point's (families.md)
    hfmt, yfmt = red_out(point, "k", "bf16"), red_out(point, "combine", "bf16")
    expert = _moe_expert(hfmt)
    x, w = x.float(), w.float()
    ids, tw = arg(inputs, "topk_ids").long(), arg(inputs, "topk_weights").float()
    t, topk = ids.shape
    n = w.shape[1]
    hs = [torch.zeros(t, n) for _ in range(topk)]
    for e in torch.unique(ids).tolist():
        tok, slot = (ids == e).nonzero(as_tuple=True)
        h = graph(mode, ("moe_k", hfmt), expert, x[tok].contiguous(), w[e])
        for j in range(topk):
            sel = slot == j
            if bool(sel.any()):
                hs[j][tok[sel]] = h[sel]
    y = graph(mode, ("moe_combine",), _moe_combine, tw, *hs)
    return {"y": y.to(tdtype(yfmt))}



# ------------------------------------------------------------------ paged_decode_attention

def _attn_core(q, k, v, scale):
    # q [G, D] (the query heads of one KV head), k, v [L, D]
    s = torch.mm(q, k.t()) * scale
    m = s.max(-1, keepdim=True).values
    p = torch.exp(s - m)
    l = p.sum(-1, keepdim=True)
    o = torch.mm(p, v)
    return o / l


def supports_attention(point):
    """split = 0 only (no combine); qk, the sum and o stay fp32 torch
    tensors; y any torch format."""
    return point.int("split", 0) == 0 and point.get("in", "bf16") in _TORCH_FMTS and \
        point.get("out", point.get("in", "bf16")) in _TORCH_FMTS and fp32_result(point, "qk", "softmax_sum", "pv")


@backend.kernel("paged_decode_attention", "torch_paged_attention", supports=supports_attention)
def paged_attention(point, inputs, mode, threads):
    threads_of(threads)
    if point.int("split", 0) != 0:
        raise ValueError("torch_paged_attention runs split = 0 only")
    q = arg(inputs, "q").float()
    kc, vc = arg(inputs, "k_cache"), arg(inputs, "v_cache")
    bt, lens = arg(inputs, "block_table").long(), arg(inputs, "context_lens").tolist()
    nb, hq, d = q.shape
    psz, hkv = kc.shape[1], kc.shape[2]
    g = hq // hkv
    sc = point.get("scale")
    scale = torch.tensor(float(sc) if sc else 1.0 / d ** 0.5, dtype=torch.float32)
    if not sc:   # fp32(1/sqrt(D)) correctly rounded
        scale = torch.tensor(1.0 / (d ** 0.5), dtype=torch.float64).float()
    y = torch.empty(nb, hq, d)
    for b in range(nb):
        pos = torch.arange(lens[b])
        pages, slots = bt[b][pos // psz], pos % psz
        kb, vb = kc[pages, slots].float(), vc[pages, slots].float()   # [L, HKV, D]
        for h in range(hkv):
            y[b, h * g:(h + 1) * g] = graph(mode, ("attn",), _attn_core, q[b, h * g:(h + 1) * g].contiguous(),
                                            kb[:, h].contiguous(), vb[:, h].contiguous(), scale)
    out = point.get("out", point.get("in", "bf16"))
    return {"y": y.to(tdtype(out))}


# ------------------------------------------------------------------ serve

def available():
    if _TORCH_ERR:
        return False, _TORCH_ERR
    return True


def describe():
    if torch is None:
        return {}
    cfg = torch.__config__.show()
    # the capability ATen dispatches to (ATEN_CPU_CAPABILITY lowers it)
    cap = [ln.split(":", 1)[1].strip() for ln in cfg.splitlines() if "CPU capability usage" in ln]
    cap = cap[0] if cap else ""
    blas = [s.split("=", 1)[1] for s in cfg.replace(",", " ").split() if s.startswith("BLAS_INFO=")]
    return {"sku": "torch-cpu", "torch": torch.__version__, "aten_cpu_capability": cap or "",
            "aten_cpu_capability_env": os.environ.get("ATEN_CPU_CAPABILITY", ""),
            "blas": blas[0] if blas else "", "threads_default": DEFAULT_THREADS,
            "mkldnn": bool(torch.backends.mkldnn.is_available()), "onednn_bf16_mm": _ONEDNN_BF16,
            "onednn": (re.findall(r"MKL-DNN (v[0-9.]+)", cfg) or [""])[0]}


if __name__ == "__main__":
    backend.serve(name="torch-cpu", threaded=True, describe=describe, available=available)
