"""The backend kit: Python functions over numpy arrays (or torch tensors)
served as a class backend, docs/backends.md's protocol (version 1).

    import numpy as np
    from parity import backend

    @backend.kernel("gemm", "npu_gemm_seq")
    def gemm(point, inputs, mode, threads):
        a = backend.to_f32(inputs["a"], inputs.dtype("a"))
        b = backend.to_f32(inputs["b"], inputs.dtype("b"))
        return {"y": backend.to_format(a @ b.T, point.params["out"])}

    backend.serve(name="mynpu", threaded=False)

`serve` answers hello, available, describe, supports, check_params, run
and bye on stdin/stdout, one JSON object a line, each answer carrying the
request's id.  `run` maps the input safetensors file (no copy), calls the
kernel and writes its outputs as a safetensors file.  A kernel's exception
is that request's `ok: false`, never the end of the server; whatever a
kernel prints goes to stderr, since stdout carries the protocol only.

This module needs numpy only (torch where a kernel returns tensors); it
does not load libparity.so.  docs/python.md "The backend kit".
"""

import inspect
import json
import mmap
import os
import re
import sys
import traceback

import numpy as np

__all__ = ["kernel", "serve", "Point", "Inputs", "Bits", "read_safetensors", "write_safetensors",
           "bf16_to_f32", "f16_to_f32", "to_f32", "round_bf16", "round_f16", "to_format", "from_torch",
           "as_torch", "parse_point", "PROTOCOL"]

PROTOCOL = 1
_MAX_LINE = 1 << 20

# ------------------------------------------------------------------ formats

# safetensors dtype -> (numpy storage dtype, bytes per element)
_ST = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<u2"), "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"), "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"), "F8_E4M3": np.dtype("u1"), "F8_E5M2": np.dtype("u1"),
}
# numpy dtype -> safetensors dtype, for arrays returned without a Bits wrapper
_NP = {np.dtype("f8"): "F64", np.dtype("f4"): "F32", np.dtype("f2"): "F16", np.dtype("i8"): "I64",
       np.dtype("i4"): "I32", np.dtype("i2"): "I16", np.dtype("i1"): "I8", np.dtype("u8"): "U64",
       np.dtype("u4"): "U32", np.dtype("u2"): "U16", np.dtype("u1"): "U8", np.dtype("?"): "BOOL"}

# format name (docs/numerics.md §1) -> safetensors dtype
_FMT_ST = {"fp64": "F64", "fp32": "F32", "fp16": "F16", "bf16": "BF16", "e4m3": "F8_E4M3", "e5m2": "F8_E5M2"}


class Bits:
    """Bit patterns of a format numpy has no dtype for: `array` (uint16 for
    BF16, uint8 for F8_*) and the safetensors `dtype` they are written as.
    `to_format(x, "bf16")` returns one; `write_safetensors` writes it."""

    __slots__ = ("array", "dtype")

    def __init__(self, array, dtype):
        dtype = _FMT_ST.get(dtype, dtype)
        if dtype not in _ST:
            raise ValueError("Bits: unknown safetensors dtype %r" % (dtype,))
        array = np.asarray(array)
        if array.dtype.itemsize != _ST[dtype].itemsize or array.dtype.kind not in "uif":
            raise TypeError("Bits: %s patterns need a %d-byte integer array, got numpy %s" %
                            (dtype, _ST[dtype].itemsize, array.dtype))
        self.array = array.view(_ST[dtype]) if array.dtype.kind != "f" else array
        self.dtype = dtype

    @property
    def shape(self):
        return self.array.shape

    def to_f32(self):
        return to_f32(self.array, self.dtype)

    def __repr__(self):
        return "Bits(%s, shape=%s)" % (self.dtype, list(self.shape))


def bf16_to_f32(u16):
    """bf16 bit patterns (uint16) -> float32 values, exactly."""
    u16 = np.asarray(u16)
    return (u16.astype(np.uint32) << np.uint32(16)).view(np.float32)


def f16_to_f32(u16):
    """fp16 bit patterns (uint16, or a float16 array) -> float32, exactly."""
    return np.asarray(u16).view(np.float16).astype(np.float32)


def to_f32(x, dtype=None):
    """An input tensor as float32 values: BF16 and F16 patterns decoded
    exactly, F32 as it is, F64 rounded (rne), integers converted."""
    if isinstance(x, Bits):
        x, dtype = x.array, x.dtype
    x = np.asarray(x)
    if dtype == "BF16":
        return bf16_to_f32(x)
    if dtype == "F16" or x.dtype == np.float16:
        return f16_to_f32(x)
    if x.dtype == np.float32:
        return x
    if dtype in ("F8_E4M3", "F8_E5M2"):
        raise ValueError("to_f32: %s inputs are not decoded by the kit" % dtype)
    return x.astype(np.float32)


# (precision p, emin, max finite) of the formats the kit rounds to
_ROUND = {"bf16": (8, -126, float.fromhex("0x1.fep127")), "fp16": (11, -14, 65504.0),
          "fp32": (24, -126, float.fromhex("0x1.fffffep127"))}


def _round_rne(x, fmt):
    """float32/float64 values rounded once to `fmt` in round-to-nearest-even
    (docs/numerics.md §2: the grid of the binade, subnormals on the grid of
    emin, overflow to inf, signed zeros kept); returns float64 values that
    the format holds exactly, NaN as NaN."""
    p, emin, maxf = _ROUND[fmt]
    with np.errstate(all="ignore"):
        x = np.asarray(x, dtype=np.float64)
        fin = np.isfinite(x) & (x != 0)
        _, e2 = np.frexp(np.where(fin, x, 1.0))
        e = np.maximum(e2.astype(np.int64) - 1, emin)  # floor(log2 |x|), at least emin
        sh = e - p + 1                                 # the grid's quantum 2^sh
        r = np.ldexp(np.rint(np.ldexp(x, -sh)), sh)    # x / 2^sh is exact; rint ties to even
        r = np.where(np.abs(r) > maxf, np.copysign(np.inf, x), r)
        return np.where(fin, r, x)                     # zeros, infinities and NaN unchanged


def round_bf16(x):
    """float32 or float64 values -> bf16 bit patterns (uint16), one rne
    rounding of the exact value (a float64 is not rounded through fp32),
    subnormals, signed zeros and overflow to inf as IEEE; NaN -> 0x7fc0."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        if x.dtype == np.float32:
            u = x.view(np.uint32)
            r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
        else:
            v = _round_rne(x, "bf16").astype(np.float32)  # exact: v is a bf16 value
            r = (v.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        return np.where(np.isnan(x), np.uint16(0x7FC0), r).astype(np.uint16)


def round_f16(x):
    """float32 or float64 values -> fp16 bit patterns (uint16): one rne
    rounding, gradual underflow, overflow to inf (65520 and above), NaN ->
    0x7e00."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        v = _round_rne(x, "fp16").astype(np.float16)  # exact: v is an fp16 value (or inf)
        return np.where(np.isnan(x), np.uint16(0x7E00), v.view(np.uint16)).astype(np.uint16)


def to_format(x, fmt):
    """Values (numpy or torch, any float dtype) rounded once (rne) to the
    format named as a family param (`fp32`, `bf16`, `fp16`, `fp64`) or as a
    safetensors dtype (`F32`, `BF16`, ...), ready to return from a kernel:
    a float32/float64 array, or Bits for bf16 and fp16."""
    x = from_torch(x)
    if isinstance(x, Bits):
        x = x.to_f32()
    x = np.asarray(x)
    fmt = {"F32": "fp32", "F64": "fp64", "F16": "fp16", "BF16": "bf16"}.get(fmt, fmt)
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    if fmt == "fp64":
        return np.ascontiguousarray(x, dtype=np.float64)
    if fmt == "fp32":
        if x.dtype == np.float32:
            return np.ascontiguousarray(x)
        return np.ascontiguousarray(x.astype(np.float64).astype(np.float32))  # numpy's cast is rne
    if fmt == "bf16":
        return Bits(round_bf16(x), "BF16")
    if fmt == "fp16":
        return Bits(round_f16(x), "F16")
    raise ValueError("to_format: the kit rounds to fp64, fp32, bf16 and fp16, not %r" % (fmt,))


# ------------------------------------------------------------------ torch

def from_torch(x):
    """A torch tensor as what the kit writes (numpy, or Bits for bfloat16);
    anything else unchanged.  torch is imported only when x is a tensor."""
    mod = type(x).__module__
    if not mod.startswith("torch"):
        return x
    import torch
    if not isinstance(x, torch.Tensor):
        return x
    t = x.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return Bits(t.view(torch.int16).numpy().view(np.uint16), "BF16")
    if t.dtype == torch.float16:
        return Bits(t.view(torch.int16).numpy().view(np.uint16), "F16")
    return t.numpy()


def as_torch(x, dtype=None):
    """An input array as a torch tensor without a copy: BF16 and F16
    patterns as torch.bfloat16 / torch.float16, the rest by numpy dtype."""
    import torch
    if isinstance(x, Bits):
        x, dtype = x.array, x.dtype
    x = np.asarray(x)
    if dtype in ("BF16", "F16"):
        t = torch.from_numpy(x.view(np.int16))
        return t.view(torch.bfloat16 if dtype == "BF16" else torch.float16)
    return torch.from_numpy(x)


# ------------------------------------------------------------------ safetensors

class Inputs(dict):
    """name -> numpy array (BF16/F16 as uint16 patterns), each viewing the
    mapped file; `.dtype(name)` is its safetensors dtype."""

    def __init__(self, arrays, dtypes, keep=None):
        super().__init__(arrays)
        self.dtypes = dict(dtypes)
        self._keep = keep

    def dtype(self, name):
        return self.dtypes[name]

    def f32(self, name):
        return to_f32(self[name], self.dtypes[name])

    def torch(self, name):
        return as_torch(self[name], self.dtypes[name])


def _header(buf, path):
    if len(buf) < 8:
        raise ValueError("%s: not safetensors: %d bytes, fewer than the 8 of the header length" % (path, len(buf)))
    n = int.from_bytes(bytes(buf[:8]), "little")
    if n > len(buf) - 8:
        raise ValueError("%s: not safetensors: the header length %d exceeds the file" % (path, n))
    try:
        h = json.loads(bytes(buf[8:8 + n]).decode("utf-8"))
    except ValueError as e:
        raise ValueError("%s: not safetensors: the header is not JSON (%s)" % (path, e))
    if not isinstance(h, dict):
        raise ValueError("%s: not safetensors: the header is not a JSON object" % path)
    return h, 8 + n


def read_safetensors(path):
    """The tensors of a safetensors file as an Inputs dict of numpy arrays
    that view a private mapping of the file (no copy; writable, the file
    untouched)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) if size else b""
    h, base = _header(buf, path)
    arrays, dtypes = {}, {}
    for name, t in h.items():
        if name == "__metadata__":
            continue
        try:
            dt, shape, (s, e) = t["dtype"], [int(d) for d in t["shape"]], t["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise ValueError("%s: tensor %r: needs dtype, shape and data_offsets" % (path, name))
        if dt not in _ST:
            raise ValueError("%s: tensor %r: dtype %s is not read by the kit" % (path, name, dt))
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if e - s != count * _ST[dt].itemsize or base + e > len(buf) or s < 0:
            raise ValueError("%s: tensor %r: data_offsets [%d, %d] do not hold %s %s" % (path, name, s, e, dt, shape))
        a = np.frombuffer(buf, dtype=_ST[dt], count=count, offset=base + s) if count else np.empty(0, _ST[dt])
        arrays[name] = a.reshape(shape)
        dtypes[name] = dt
    return Inputs(arrays, dtypes, keep=buf)


def _as_output(name, v):
    v = from_torch(v)
    if isinstance(v, Bits):
        return np.ascontiguousarray(v.array), v.dtype
    a = np.asarray(v)
    base = a.dtype.newbyteorder("=") if a.dtype.byteorder in "<>" else a.dtype
    if base not in _NP:
        raise TypeError("output %r: numpy dtype %s has no safetensors dtype (return float32, float16, "
                        "float64, an integer array, or backend.Bits / to_format for bf16)" % (name, a.dtype))
    if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and sys.byteorder == "big"):
        a = a.astype(a.dtype.newbyteorder("<"))
    return np.ascontiguousarray(a), _NP[base]


def write_safetensors(path, tensors, metadata=None):
    """Writes name -> array (numpy, torch, Bits) as a safetensors file: the
    8-byte little-endian header length, the JSON header padded with spaces
    to a multiple of 8, the data in order."""
    items, off = [], 0
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, v in tensors.items():
        if not isinstance(name, str) or not name:
            raise TypeError("output names must be non-empty strings, got %r" % (name,))
        a, dt = _as_output(name, v)
        header[name] = {"dtype": dt, "shape": [int(d) for d in a.shape], "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        items.append(a)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for a in items:
            if a.nbytes:
                f.write(memoryview(a.reshape(-1)).cast("B"))


# ------------------------------------------------------------------ registration

# ------------------------------------------------------------------ numerics points

_ESC = {'"': '"', "\\": "\\", "b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}
_NUM = re.compile(r"[+-]?(?:inf|nan|(?:0x[0-9a-fA-F_]+|[0-9][0-9_]*)(?:\.[0-9_]+)?(?:[eE][+-]?[0-9_]+)?)")
_KEY = re.compile(r"[A-Za-z0-9_-]+")


class _Toml:
    """A TOML value in the inline form a numerics point is printed in
    (docs/registry.md): an inline table, arrays, basic strings, booleans,
    integers and floats.  No dependency on tomllib (Python 3.11)."""

    def __init__(self, text):
        self.s, self.i = text, 0

    def fail(self, what):
        raise ValueError("%s at column %d of %r" % (what, self.i + 1, self.s))

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def eat(self, c):
        self.ws()
        if self.s.startswith(c, self.i):
            self.i += len(c)
            return True
        return False

    def string(self):
        out = []
        self.i += 1
        while self.i < len(self.s):
            c = self.s[self.i]
            self.i += 1
            if c == '"':
                return "".join(out)
            if c == "\\":
                e = self.s[self.i:self.i + 1]
                self.i += 1
                if e in _ESC:
                    out.append(_ESC[e])
                elif e in ("u", "U"):
                    w = 4 if e == "u" else 8
                    h = self.s[self.i:self.i + w]
                    if len(h) != w or not all(x in "0123456789abcdefABCDEF" for x in h):
                        self.fail("a bad \\%s escape" % e)
                    out.append(chr(int(h, 16)))
                    self.i += w
                else:
                    self.fail("an unknown escape")
            else:
                out.append(c)
        self.fail("an unterminated string")

    def value(self):
        self.ws()
        c = self.s[self.i:self.i + 1]
        if c == '"':
            return self.string()
        if c == "{":
            self.i += 1
            t = {}
            if self.eat("}"):
                return t
            while True:
                self.ws()
                if self.s[self.i:self.i + 1] == '"':
                    k = self.string()
                else:
                    m = _KEY.match(self.s, self.i)
                    if not m:
                        self.fail("a key expected")
                    k, self.i = m.group(0), m.end()
                if k in t:
                    self.fail("key %r given twice" % k)
                if not self.eat("="):
                    self.fail("'=' expected")
                t[k] = self.value()
                if self.eat("}"):
                    return t
                if not self.eat(","):
                    self.fail("',' or '}' expected")
        if c == "[":
            self.i += 1
            a = []
            while True:
                if self.eat("]"):
                    return a
                a.append(self.value())
                if self.eat("]"):
                    return a
                if not self.eat(","):
                    self.fail("',' or ']' expected")
        for word, v in (("true", True), ("false", False)):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return v
        m = _NUM.match(self.s, self.i)
        if not m:
            self.fail("a value expected")
        self.i = m.end()
        t = m.group(0).replace("_", "")
        if t.lstrip("+-") in ("inf", "nan"):
            return float(t)
        if "0x" in t:
            return int(t, 16)
        return float(t) if any(x in t for x in ".eE") else int(t)


def parse_point(text):
    """A numerics point's canonical text (`{ acc = "fp32", ..., tree = "seq",
    out = "fp32", ... }`) -> a dict; ValueError where it is not one."""
    if not isinstance(text, str):
        raise ValueError("a numerics point must be text, got %s" % type(text).__name__)
    p = _Toml(text)
    p.ws()
    if p.s[p.i:p.i + 1] != "{":
        p.fail("'{' expected")
    v = p.value()
    p.ws()
    if p.i != len(p.s):
        p.fail("text after the point")
    return v


class Point:
    """The resolved family point of a request (docs/backends.md): family,
    point, cls (the class), kernel (the point's kernel id), hash, params
    (name -> text: the point's params, then the shape), reductions
    (name -> the declared tree, filled) and numerics (name -> the
    reduction's whole point as a dict: acc, fma, product, tree, out,
    out_rounding, saturate, ...; power's variants change `out`)."""

    __slots__ = ("family", "point", "cls", "kernel", "hash", "params", "reductions", "numerics", "raw")

    def __init__(self, obj):
        if not isinstance(obj, dict):
            raise ValueError("point: expected a JSON object, got %s" % type(obj).__name__)
        if not isinstance(obj.get("family"), str) or not obj["family"]:
            raise ValueError("point: no family")
        self.raw = obj
        self.family = obj["family"]
        self.point = str(obj.get("point") or "")
        self.cls = str(obj.get("class") or "")
        self.kernel = obj.get("kernel") if isinstance(obj.get("kernel"), str) else None
        self.hash = str(obj.get("hash") or "")
        params = obj.get("params") or {}
        reds = obj.get("reductions") or {}
        if not isinstance(params, dict) or not isinstance(reds, dict):
            raise ValueError("point: params and reductions must be JSON objects")
        self.params = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}
        self.reductions = {str(k): str(v) for k, v in reds.items()}
        nums = obj.get("numerics") or {}
        if not isinstance(nums, dict):
            raise ValueError("point: numerics must be a JSON object")
        self.numerics = {}
        for k, v in nums.items():
            try:
                self.numerics[str(k)] = parse_point(v)
            except ValueError as e:
                raise ValueError("point: numerics of %s: %s" % (k, e))

    @property
    def id(self):
        return "%s.%s" % (self.family, self.point)

    def int(self, name, default=None):
        """A param as an integer (a shape dimension, split_k)."""
        v = self.params.get(name)
        if v is None:
            if default is None:
                raise KeyError("point %s has no param %r" % (self.id, name))
            return default
        return int(v)

    def get(self, name, default=None):
        return self.params.get(name, default)

    def out(self, reduction, default=None):
        """The format a reduction's result is rounded to (its point's
        `out`); default where the request carries no numerics for it."""
        return self.numerics.get(reduction, {}).get("out", default)

    def flag(self, name, default=False):
        v = self.params.get(name)
        return default if v is None else v.strip().lower() == "true"

    def __repr__(self):
        return "Point(%s, kernel=%s)" % (self.id, self.kernel)


class Kernel:
    __slots__ = ("family", "id", "fn", "nondeterministic", "supports", "check_params", "nargs")

    def __init__(self, family, kid, fn, nondeterministic, supports, check_params):
        self.family, self.id, self.fn = family, kid, fn
        self.nondeterministic, self.supports, self.check_params = nondeterministic, supports, check_params
        self.nargs = max(2, _arity(fn, 4))


_kernels = {}


def kernel(family, kernel_id, nondeterministic=False, supports=None, check_params=None):
    """Registers `fn(point, inputs[, mode[, threads]]) -> {name: array}` as
    the kernel `kernel_id` of `family`.

    - nondeterministic: True, or a callable(point) -> bool: the kernel is
      nondeterministic on purpose (answered with `supports`).
    - supports: None (every point of the family), or a callable(point) ->
      bool, or a collection of point ids ("splitk") the kernel runs.
    - check_params: None, or a callable(point) returning None when the
      kernel takes the point's params, else the message naming the param
      it refuses (raising ValueError says the same)."""
    if not isinstance(family, str) or not isinstance(kernel_id, str) or not family or not kernel_id:
        raise TypeError("kernel(family, kernel_id): two non-empty strings")

    def deco(fn):
        if kernel_id in _kernels and _kernels[kernel_id].family != family:
            raise ValueError("kernel %r is already a kernel of family %r" % (kernel_id, _kernels[kernel_id].family))
        _kernels[kernel_id] = Kernel(family, kernel_id, fn, nondeterministic, supports, check_params)
        return fn
    return deco


def kernels():
    """The registered kernels: id -> family."""
    return {k: v.family for k, v in _kernels.items()}


# ------------------------------------------------------------------ the loop

class _Refused(Exception):
    """An answer ok:false with this message (a bad request)."""


def _one_line(s):
    s = " ".join(str(s).split())
    return s if len(s) <= 2000 else s[:1997] + "..."


def _exc_line(e):
    msg = str(e)
    return _one_line("%s: %s" % (type(e).__name__, msg) if msg else type(e).__name__)


def _arity(f, most):
    """How many positional arguments f takes, at most `most`."""
    try:
        ps = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return most
    if any(p.kind == p.VAR_POSITIONAL for p in ps):
        return most
    return min(most, sum(1 for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)))


def _call(f, *args):
    """f called with as many of args as it takes (a hook may take the point
    alone, or the point and the kernel id)."""
    return f(*args[:max(1, _arity(f, len(args)))])


class Server:
    def __init__(self, name, threaded, describe, available, rin, rout):
        self.name, self.threaded = name, bool(threaded)
        self.describe_, self.available_ = describe, available
        self.rin, self.rout = rin, rout
        self.log = sys.stderr

    # --- requests
    def _point(self, req):
        if "point" not in req:
            raise _Refused("%s: no point" % req.get("op"))
        try:
            return Point(req["point"])
        except ValueError as e:
            raise _Refused(str(e))

    def _kernel(self, req, point):
        kid = req.get("kernel")
        if kid is not None and not isinstance(kid, str):
            raise _Refused("kernel: expected a string or null, got %s" % type(kid).__name__)
        kid = kid or point.kernel
        if not kid:
            return None, None
        k = _kernels.get(kid)
        if k is None or k.family != point.family:
            return kid, None
        return kid, k

    def _supported(self, k, point):
        s = k.supports
        if s is None:
            return True
        if callable(s):
            return bool(_call(s, point, k.id))
        return point.point in s or point.id in s

    def op_hello(self, req):
        v = req.get("parity_backend")
        if v != PROTOCOL:
            raise _Refused("protocol version %r not spoken: this backend speaks version %d" % (v, PROTOCOL))
        return {"abi": PROTOCOL, "name": self.name, "threaded": self.threaded}

    def op_available(self, req):
        a = self.available_
        if a is None:
            return {"available": True}
        try:
            r = a() if callable(a) else a
        except Exception as e:  # noqa: BLE001 - the reason is the answer
            return {"available": False, "why": _exc_line(e)}
        if isinstance(r, tuple):
            ok, why = bool(r[0]), (r[1] if len(r) > 1 else "")
        elif isinstance(r, str):
            ok, why = False, r
        else:
            ok, why = bool(r), ""
        return {"available": True} if ok else {"available": False, "why": _one_line(why or "not available")}

    def op_describe(self, req):
        d = {"backend": self.name, "kit": "parity.backend %d" % PROTOCOL,
             "python": "%d.%d.%d" % sys.version_info[:3], "numpy": np.__version__}
        if "torch" in sys.modules:
            d["torch"] = getattr(sys.modules["torch"], "__version__", "")
        extra = self.describe_() if callable(self.describe_) else self.describe_
        if extra:
            if not isinstance(extra, dict):
                raise _Refused("describe: the backend's description is not a dict")
            d.update(extra)
        json.dumps(d)
        return {"device": d}

    def op_supports(self, req):
        point = self._point(req)
        kid, k = self._kernel(req, point)
        if k is None or not self._supported(k, point):
            return {"supports": False, "nondeterministic": False}
        nd = k.nondeterministic
        nd = bool(_call(nd, point, k.id)) if callable(nd) else bool(nd)
        return {"supports": True, "nondeterministic": nd}

    def op_check_params(self, req):
        point = self._point(req)
        kid, k = self._kernel(req, point)
        if k is None or k.check_params is None:
            return {}
        try:
            why = _call(k.check_params, point, k.id)
        except ValueError as e:
            raise _Refused(_one_line(str(e)))
        if why:
            raise _Refused(_one_line(why))
        return {}

    def op_run(self, req):
        point = self._point(req)
        kid, k = self._kernel(req, point)
        if kid is None:
            raise _Refused("run: no kernel named, and the point names none")
        if k is None:
            raise _Refused("run: no kernel '%s' of family %s in backend %s" % (kid, point.family, self.name))
        mode = req.get("mode", "eager")
        if mode not in ("eager", "graphed"):
            raise _Refused("run: mode must be \"eager\" or \"graphed\", got %s" % json.dumps(mode))
        threads = req.get("threads", 0)
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise _Refused("run: threads must be an integer >= 0, got %s" % json.dumps(threads))
        pin, pout = req.get("in"), req.get("out")
        if not isinstance(pin, str) or not isinstance(pout, str) or not pin or not pout:
            raise _Refused("run: in and out must be paths")
        try:
            inputs = read_safetensors(pin)
        except (OSError, ValueError) as e:
            raise _Refused("input: %s" % _exc_line(e))
        args = (point, inputs, mode, threads)[:k.nargs]
        try:
            outs = k.fn(*args)
        except Exception as e:  # noqa: BLE001 - a kernel's failure is this request's error
            traceback.print_exc(file=self.log)
            raise _Refused("%s: %s" % (kid, _exc_line(e)))
        finally:
            self.log.flush()
        del inputs
        if not isinstance(outs, dict) or not outs:
            raise _Refused("%s: the kernel returned %s, not a dict of output tensors" % (kid, type(outs).__name__))
        try:
            write_safetensors(pout, outs)
        except (TypeError, ValueError, OSError) as e:
            raise _Refused("%s: writing the outputs: %s" % (kid, _exc_line(e)))
        return {}

    def op_bye(self, req):
        return {}

    # --- the loop
    def answer(self, line):
        """One request line -> (the answer object, whether to stop)."""
        rid = None
        try:
            if len(line) > _MAX_LINE:
                raise _Refused("request of %d bytes, over the 1 MiB limit" % len(line))
            try:
                req = json.loads(line.decode("utf-8") if isinstance(line, bytes) else line)
            except (ValueError, UnicodeDecodeError) as e:
                raise _Refused("request is not JSON: %s" % _one_line(e))
            if not isinstance(req, dict):
                raise _Refused("request is not a JSON object")
            rid = req.get("id")
            if isinstance(rid, bool) or not isinstance(rid, int):
                bad, rid = rid, (rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) else None)
                raise _Refused("request id must be an integer, got %s" % json.dumps(bad))
            op = req.get("op")
            f = getattr(self, "op_" + op, None) if isinstance(op, str) else None
            if f is None:
                raise _Refused("unknown op %s" % json.dumps(op))
            out = f(req)
            ans = {"id": rid, "ok": True}
            ans.update(out)
            return ans, op == "bye"
        except _Refused as e:
            return {"id": rid, "ok": False, "error": _one_line(e)}, False
        except Exception as e:  # noqa: BLE001 - never a dead server
            traceback.print_exc(file=self.log)
            return {"id": rid, "ok": False, "error": _exc_line(e)}, False

    def loop(self):
        while True:
            line = self.rin.readline(_MAX_LINE + 2)
            if not line:
                return
            if len(line) > _MAX_LINE and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # drop the rest of the long line
                    line = self.rin.readline(_MAX_LINE)
                line = b"x" * (_MAX_LINE + 1)
            if not line.strip():
                continue
            ans, stop = self.answer(line.rstrip(b"\r\n"))
            try:
                self.rout.write(json.dumps(ans, separators=(",", ":")).encode() + b"\n")
                self.rout.flush()
            except (BrokenPipeError, ConnectionResetError):
                return          # parity has gone (after bye it need not read the answer)
            if stop:
                return


def serve(name, threaded=False, describe=None, available=None, stdin=None, stdout=None):
    """Serves the registered kernels on the protocol until bye or the end
    of stdin.  name: the backend's name (hello); threaded: whether the
    thread count of a run changes how a kernel may run (the campaign then
    reruns at other thread counts); describe: a dict (or a callable
    returning one) merged into the device description; available: None,
    a bool, or a callable returning a bool, (bool, why) or a reason string.

    The protocol keeps the process's real stdin and stdout; file
    descriptors 0 and 1 are pointed at /dev/null and stderr, so that
    nothing a kernel (or a library under it) prints reaches parity."""
    if stdin is None and stdout is None:
        fin, fout = os.dup(0), os.dup(1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        stdin, stdout = os.fdopen(fin, "rb", buffering=0), os.fdopen(fout, "wb", buffering=0)
        rin = os.fdopen(os.dup(stdin.fileno()), "rb")
        stdin.close()
    else:
        rin = stdin
    Server(name, threaded, describe, available, rin, stdout).loop()
