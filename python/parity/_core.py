"""parity._core: the package's functions over libparity.so (parity/__init__.py
exports them).  parity from Python: exact references, bit-for-bit checks, fit and
reveal of kernels written with numpy, PyTorch, Triton or CUDA extensions.

    import parity
    y = parity.reduce('{ tree = "pairwise" }', a, b)          # the exact reference, bit for bit
    parity.assert_bits(kernel(a, b), point='{ tree = "pairwise" }', a=a, b=b)
    p = parity.reveal(lambda a, b: (a * b).sum(1), n=64, dtype=torch.float32)

Every function runs the code the `parity` command runs, through the C ABI
of libparity.so (parity/api/parity_api.h); arrays are passed without a
copy and the GIL is released while the library works.  docs/python.md.
"""

import ctypes
import operator
import os
import threading

from . import _arrays
from ._arrays import bits
from ._lib import EINPUT, EINTERNAL, FAIL, OK, PROBE_FN, Error, RevealInfo, Tensor, lib, take_string

__all__ = ["Point", "reduce", "reference", "assert_bits", "assert_point", "assert_same_bits", "diff", "fit",
           "reveal", "capture", "bits",
           "NotFound", "ParityError", "version"]

version = lib.parity_version().decode()


class ParityError(RuntimeError):
    """An internal error of the library (the CLI's exit status 3)."""


class NotFound(AssertionError):
    """fit or reveal found no point; .report says what came closest."""

    def __init__(self, msg, report=None):
        super().__init__(msg + ("\n" + report if report else ""))
        self.report = report


# --- the one validation layer before the C ABI ------------------------------
# Every str and int that goes to libparity.so passes here: ctypes cuts a
# string at a NUL byte (a path 'victim\0.safetensors' is the file 'victim')
# and wraps an int to the C type (-1 threads, 2**32 + 1, 2.5 truncated).

_I64 = (-(1 << 63), (1 << 63) - 1)
_U64 = (0, (1 << 64) - 1)


def _cstr(arg, s):
    """s (a str, or bytes) as a NUL-terminated C string, or TypeError /
    ValueError naming arg."""
    if isinstance(s, str):
        if "\0" in s:
            raise ValueError("%s: %r holds a NUL character at %d, which a C string cannot carry" %
                             (arg, s, s.index("\0")))
        return s.encode()
    if isinstance(s, (bytes, bytearray)):
        if b"\0" in s:
            raise ValueError("%s: %r holds a NUL byte at %d, which a C string cannot carry" %
                             (arg, bytes(s), bytes(s).index(b"\0")))
        return bytes(s)
    raise TypeError("%s: expected a str, got %s" % (arg, type(s).__name__))


def _cint(arg, v, lo, hi, what="an int"):
    """v as an int in [lo, hi], or TypeError / ValueError naming arg (no
    bool, no float: 2.5 is not 2)."""
    bad = TypeError("%s: expected %s, got %s %r" % (arg, what, type(v).__name__, v))
    if isinstance(v, bool):
        raise bad
    if not isinstance(v, int):
        try:
            v = operator.index(v)  # numpy and torch integer scalars; never a float
        except TypeError:
            raise bad from None
    if not lo <= v <= hi:
        raise ValueError("%s: %d is not in %d ... %d" % (arg, v, lo, hi))
    return v


def _threads(v):
    return _cint("threads", v, 0, 4096, "an int (0: every core)")


def _raise(err, what):
    msg = err.text
    if err.code == EINPUT:
        raise ValueError("%s: %s" % (what, msg))
    raise ParityError("%s: %s" % (what, msg))


def _text(s, arg):
    if isinstance(s, Point):
        return _cstr(arg, str(s))
    if not isinstance(s, str):
        raise TypeError("%s: expected a numerics point (inline TOML str or parity.Point), got %s" %
                        (arg, type(s).__name__))
    return _cstr(arg, s)


class Point:
    """A numerics point (docs/numerics.md §3).  str() is the canonical
    inline TOML the CLI prints; Point(str(p)) == p."""

    __slots__ = ("text",)

    def __init__(self, text):
        if isinstance(text, Point):
            self.text = text.text
            return
        canon = ctypes.c_void_p()
        err = Error()
        if lib.parity_point_parse(_text(text, "point"), 0, ctypes.byref(canon), None, ctypes.byref(err)) != OK:
            _raise(err, "point")
        self.text = take_string(canon)

    def out_dtype(self, rows=1):
        """The safetensors dtype reduce writes y in ("F32", "BF16", ...)."""
        buf = ctypes.create_string_buffer(16)
        err = Error()
        rows = _cint("rows", rows, 0, _I64[1])
        if lib.parity_point_parse(self.text.encode(), rows, None, buf, ctypes.byref(err)) != OK:
            _raise(err, "point")
        return buf.value.decode()

    def __str__(self):
        return self.text

    def __repr__(self):
        return "parity.Point(%r)" % self.text

    def __eq__(self, other):
        return isinstance(other, Point) and other.text == self.text

    def __hash__(self):
        return hash(self.text)


def _rows_inputs(a, b, c, prefix=""):
    va = _arrays.view(prefix + "a", a)
    if len(va.shape) != 2:
        raise ValueError("%sa: expected shape [rows, n], got %s" % (prefix, list(va.shape)))
    vb = vc = None
    if b is not None:
        vb = _arrays.view(prefix + "b", b)
        if vb.shape != va.shape:
            raise ValueError("%sb: shape %s differs from a's %s" % (prefix, list(vb.shape), list(va.shape)))
    if c is not None:
        vc = _arrays.view(prefix + "c", c)
        if vc.shape != (va.shape[0],):
            raise ValueError("%sc: expected shape [%d] (one start value per row of a), got %s" %
                             (prefix, va.shape[0], list(vc.shape)))
    return va, vb, vc


def _ref(v):
    return ctypes.byref(v.tensor()) if v is not None else None


def reduce(point, a, b=None, c=None, *, engine="auto", threads=0):
    """`parity reduce`: the point evaluated exactly over the rows of a
    [rows, n] (b: a dot product's second operands; c [rows]: start values).
    Returns y [rows] in the point's out format: a torch tensor when a is
    one, else a numpy array (parity.bits for bf16 / fp8 outputs)."""
    p = _text(point, "point")
    va, vb, vc = _rows_inputs(a, b, c)
    rows = va.shape[0]
    buf = ctypes.create_string_buffer(16)
    err = Error()
    if lib.parity_point_parse(p, rows, None, buf, ctypes.byref(err)) != OK:
        _raise(err, "point")
    y, yptr, ybytes = _arrays.empty_like_kind(va.kind, buf.value.decode(), rows)
    ta, tb, tc = va.tensor(), vb.tensor() if vb else None, vc.tensor() if vc else None
    rc = lib.parity_reduce(p, ctypes.byref(ta), ctypes.byref(tb) if tb else None, ctypes.byref(tc) if tc else None,
                           _cstr("engine", engine), _threads(threads), 0, yptr, ybytes, ctypes.byref(err))
    if rc != OK:
        _raise(err, "reduce")
    return y


def _kernels(kernels):
    """The registry: kernels, else $PARITY_KERNELS, else kernels/ of the
    source tree this package lives in."""
    if kernels is None:
        kernels = os.environ.get("PARITY_KERNELS") or os.path.join(
            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "kernels")
    return _cstr("kernels", os.fspath(kernels) if isinstance(kernels, os.PathLike) else str(kernels))


def _named(arg, tensors):
    if not isinstance(tensors, dict) or not tensors:
        raise TypeError("%s: expected a dict of tensor name -> array, got %s" % (arg, type(tensors).__name__))
    views, names = [], (ctypes.c_char_p * len(tensors))()
    ts = (Tensor * len(tensors))()
    for k, (name, x) in enumerate(tensors.items()):
        if not isinstance(name, str):
            raise TypeError("%s: tensor names are str, got %r" % (arg, name))
        v = _arrays.view("%s[%r]" % (arg, name), x)
        views.append(v)
        names[k] = _cstr("%s name" % arg, name)
        ts[k] = v.tensor()
    return views, names, ts


def _shape_text(shape):
    if isinstance(shape, dict):
        return ",".join("%s=%d" % kv for kv in shape.items())
    if shape is not None and not isinstance(shape, str):
        raise TypeError("shape: expected \"M=16,N=64,K=256\" or a dict, got %s" % type(shape).__name__)
    return shape


def reference(family_point, inputs, *, shape, cls="cpu", kernels=None, engine=None, threads=0):
    """`parity ref`: the exact reference outputs of a family point
    ("gemm.splitk") of class cls at shape on inputs (a dict of name ->
    array, the tensors `parity gen` writes: "a", "b", ...).  Returns a dict
    of name -> array: torch tensors when the inputs are torch tensors,
    else numpy arrays (parity.bits for bf16 and fp8)."""
    views, names, ts = _named("inputs", inputs)
    kind = "torch" if any(v.kind == "torch" for v in views) else "numpy"
    out = ctypes.c_void_p()
    err = Error()
    if not isinstance(family_point, str):
        raise TypeError("family_point: expected \"FAMILY.POINT\", got %s" % type(family_point).__name__)
    sh = _shape_text(shape)
    rc = lib.parity_reference(_kernels(kernels), _cstr("family_point", family_point), _cstr("cls", cls),
                              _cstr("shape", sh) if sh else None, len(views), names, ts,
                              _cstr("engine", engine) if engine else None, _threads(threads),
                              ctypes.byref(out), ctypes.byref(err))
    if rc != OK:
        _raise(err, "reference")
    try:
        res = {}
        for i in range(lib.parity_outputs_count(out)):
            name, dt, nd = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
            sh, data, nb = ctypes.POINTER(ctypes.c_int64)(), ctypes.c_void_p(), ctypes.c_size_t()
            lib.parity_outputs_tensor(out, i, ctypes.byref(name), ctypes.byref(dt), ctypes.byref(nd),
                                      ctypes.byref(sh), ctypes.byref(data), ctypes.byref(nb))
            dims = tuple(sh[d] for d in range(nd.value))
            arr = _arrays.copy_from(data.value or 0, dt.value.decode(), dims, nb.value, kind)
            res[name.value.decode()] = arr
        return res
    finally:
        lib.parity_outputs_free(out)


def assert_point(kernel_output, family_point, inputs, *, shape, cls="cpu", kernels=None, name="actual",
                 kernel="python", engine=None):
    """`parity check` of a kernel's outputs as a trace of a family point:
    Tier 2 against the point's exact reference on inputs, judged as the
    campaign judges (bit for bit where the device runs the reference's
    point, else the declared tolerance or the derived bound).
    kernel_output: the main output array ("y"), or a dict of name ->
    array.  Raises AssertionError with the verdict `parity check` prints."""
    outs = kernel_output if isinstance(kernel_output, dict) else {"y": kernel_output}
    iv, inames, its = _named("inputs", inputs)
    ov, onames, ots = _named("kernel_output", outs)
    if not isinstance(family_point, str):
        raise TypeError("family_point: expected \"FAMILY.POINT\", got %s" % type(family_point).__name__)
    verdict = ctypes.c_void_p()
    err = Error()
    rc = lib.parity_check_point(_kernels(kernels), _cstr("family_point", family_point), _cstr("cls", cls),
                                _cstr("shape", _shape_text(shape) or ""), len(iv), inames, its, len(ov), onames,
                                ots, _cstr("kernel", kernel), _cstr("name", name),
                                _cstr("engine", engine) if engine else None,
                                ctypes.byref(verdict), ctypes.byref(err))
    text = take_string(verdict)
    if rc == FAIL:
        raise AssertionError(text.rstrip("\n"))
    if rc != OK:
        _raise(err, "assert_point")
    return text


def assert_bits(actual, *, point, a, b=None, name="actual", engine="fast", threads=0):
    """`parity check --numerics`: actual (one value per row, in the
    point's out format) must have the bits of the point's exact reference
    on a (and b).  Raises AssertionError with the verdict `parity check`
    prints (rows that differ, first and worst mismatch with both bit
    patterns, the ulp histogram)."""
    p = _text(point, "point")
    va, vb, _ = _rows_inputs(a, b, None)
    vy = _arrays.view(name, actual)
    verdict = ctypes.c_void_p()
    err = Error()
    ty = vy.tensor()
    rc = lib.parity_check_numerics(p, ctypes.byref(va.tensor()), _ref(vb), ctypes.byref(ty), _cstr("name", name),
                                   _cstr("engine", engine), _threads(threads), ctypes.byref(verdict),
                                   ctypes.byref(err))
    text = take_string(verdict)
    if rc == FAIL:
        raise AssertionError(text.rstrip("\n"))
    if rc != OK:
        _raise(err, "assert_bits")
    return text


def diff(a, b, *, names=("a", "b"), max_list=10):
    """`parity diff` of two outputs of one dtype and shape: (same, text),
    text the report the CLI prints (mismatched elements, ulp histogram,
    first and worst element with both bit patterns, which rows and columns
    differ and their pattern)."""
    va, vb = _arrays.view(names[0], a), _arrays.view(names[1], b)
    text = ctypes.c_void_p()
    err = Error()
    rc = lib.parity_diff(ctypes.byref(va.tensor()), ctypes.byref(vb.tensor()), _cstr("names[0]", names[0]),
                         _cstr("names[1]", names[1]), _cint("max_list", max_list, 0, (1 << 31) - 1),
                         ctypes.byref(text), ctypes.byref(err))
    t = take_string(text)
    if rc not in (OK, FAIL):
        _raise(err, "diff")
    return rc == OK, t


def assert_same_bits(actual, expected, *, names=("actual", "expected")):
    """actual must have the bits of expected (two runs, two kernels, a
    batch and a row alone); raises AssertionError with `parity diff`'s
    report."""
    same, text = diff(actual, expected, names=names)
    if not same:
        raise AssertionError(text.rstrip("\n"))


def _pairs(inputs, outputs):
    """inputs: (a, b), {'a':..., 'b':...} or a list of them; outputs: y or a
    list."""
    def one(x, k):
        if isinstance(x, dict):
            unknown = set(x) - {"a", "b"}
            if unknown or "a" not in x:
                raise ValueError("inputs[%d]: expected keys 'a' and optionally 'b', got %s" % (k, sorted(x)))
            return x["a"], x.get("b")
        if isinstance(x, tuple) and len(x) in (1, 2):
            return x[0], x[1] if len(x) == 2 else None
        return x, None
    if isinstance(inputs, list):
        if not isinstance(outputs, list) or len(outputs) != len(inputs):
            raise ValueError("outputs: %d input pair(s) need a list of %d outputs" % (len(inputs), len(inputs)))
        return [one(x, k) for k, x in enumerate(inputs)], outputs
    return [one(inputs, 0)], [outputs]


def fit(inputs, outputs, space=None, *, threads=0):
    """`parity fit`: the numerics point whose exact evaluation reproduces
    every output bit for bit.  inputs: (a, b) for a dot product, a for a
    sum, or a list of them (lengths whose remainders differ show a kernel's
    tail); outputs: y [rows] or a list.  space: `--space` text.  Raises
    NotFound (an AssertionError) listing the closest candidates."""
    ins, outs = _pairs(inputs, outputs)
    keep, ta, tb, ty = [], (Tensor * len(ins))(), (Tensor * len(ins))(), (Tensor * len(ins))()
    for k, ((a, b), y) in enumerate(zip(ins, outs)):
        va, vb, _ = _rows_inputs(a, b, None, "inputs[%d]." % k)
        vy = _arrays.view("outputs[%d]" % k, y)
        if vy.shape != (va.shape[0],):
            raise ValueError("outputs[%d]: expected shape [%d] (one value per row), got %s" %
                             (k, va.shape[0], list(vy.shape)))
        keep += [va, vb, vy]
        ta[k], ty[k] = va.tensor(), vy.tensor()
        if vb is not None:
            tb[k] = vb.tensor()
    point, report = ctypes.c_void_p(), ctypes.c_void_p()
    err = Error()
    rc = lib.parity_fit(len(ins), ta, tb, ty, _cstr("space", space) if space else None, _threads(threads),
                        ctypes.byref(point),
                        ctypes.byref(report), ctypes.byref(err))
    p, r = take_string(point), take_string(report)
    if rc == FAIL:
        raise NotFound("fit: no point of the space reproduces every row", r)
    if rc != OK:
        _raise(err, "fit")
    return Point(p)


_DTYPE_NAMES = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16",
                "F32": "F32", "F64": "F64", "F16": "F16", "BF16": "BF16",
                "fp32": "F32", "fp64": "F64", "fp16": "F16", "bf16": "BF16"}
_reveal_lock = threading.Lock()  # the library runs one reveal at a time
_reveal_state = threading.local()


def _reveal_dtype(dtype):
    """(safetensors name, 'torch' or 'numpy')."""
    t = _arrays.torch
    if t is not None and isinstance(dtype, t.dtype):
        if _arrays.TORCH_DTYPES.get(dtype) not in ("F32", "F64", "F16", "BF16"):
            raise TypeError("dtype: %s is not one of torch.float32, float64, float16, bfloat16" % dtype)
        return _arrays.TORCH_DTYPES[dtype], "torch"
    np = _arrays.np
    name = None
    if isinstance(dtype, str):
        name = dtype
    elif np is not None:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if name not in _DTYPE_NAMES:
        raise TypeError("dtype: expected a torch or numpy float dtype or a name (F32, BF16, F16, F64), got %r" %
                        (dtype,))
    return _DTYPE_NAMES[name], "numpy"


def _probe_copy(ptr, dt, shape, kind):
    """A probe array of reveal's call, copied out of the library's buffer
    (freed or reused once the call returns) into memory Python owns: a
    callable that keeps it and reads it later reads its own copy.  numpy:
    read-only (over bytes); torch: a tensor of its own storage."""
    count = shape[0] * shape[1]
    w = _arrays.WIDTH[dt]
    raw = ctypes.string_at(ptr, count * w) if count else b""
    if kind == "torch":
        torch = _arrays.torch
        tdt = _arrays.TORCH_OF[dt]
        if not count:
            return torch.empty(shape, dtype=tdt)
        return torch.frombuffer(bytearray(raw), dtype=tdt).view(*shape)
    np = _arrays.np
    ndt = np.dtype(_arrays.NUMPY_OF[dt]) if dt in _arrays.NUMPY_OF else (np.uint16 if w == 2 else np.uint8)
    return np.frombuffer(raw, dtype=ndt, count=count).reshape(shape)


def reveal(fn, n, dtype="F32", *, space=None, seed=0, shared_b=False, grid=None, info=None):
    """`parity reveal` of a Python callable: fn(a, b) -> y, a and b [rows, n]
    (torch tensors for a torch dtype, else numpy arrays; bf16 in numpy as
    uint16 patterns), y [rows] of float32 / float64 / float16 / bfloat16.
    Probes come batched, one call per round, in process: the arrays are
    copies of the library's probes (numpy ones read-only), the callable's
    own to keep: the library's buffers are reused and freed after the
    call, and a view of them kept past it crashed the interpreter.  Returns the
    revealed Point; raises NotFound when the order or the arithmetic is
    not found.  shared_b: the kernel takes one b for all the rows of a call
    (a gemv's x, the rows being its outputs; `parity reveal --shared-b`):
    every call's rows share row 0's b; F32, BF16 or F64.  grid=(M, N): fn
    is a gemm, fn(A, B) -> C with A [M, n], B [n, N], C [M, N] (views of
    those copies), each call one M x N output; row classes are named over
    the output's row i and column j and the point holds grid = [M, N]
    (`parity reveal --grid M,N`).  info: a dict that receives the call and
    probe counts."""
    if not callable(fn):
        raise TypeError("fn: expected a callable fn(a, b) -> y, got %s" % type(fn).__name__)
    lens = list(n) if isinstance(n, (list, tuple, range)) else [n]
    if (not 1 <= len(lens) <= 16 or len(set(lens)) != len(lens) or
            any(not isinstance(x, int) or isinstance(x, bool) or not 2 <= x <= 65536 for x in lens)):
        raise ValueError("n: expected an int in 2 .. 65536 (the probes cost about n^1.8), or a list of 1 to 16 "
                         "such lengths, none twice, got %r" % (n,))
    if not isinstance(shared_b, bool):
        raise TypeError("shared_b: expected True or False, got %s" % type(shared_b).__name__)
    gm = gn = 0
    if grid is not None:
        if (not isinstance(grid, (tuple, list)) or len(grid) != 2 or
                any(not isinstance(x, int) or isinstance(x, bool) or x < 1 for x in grid)):
            raise ValueError("grid: expected (M, N), two positive ints, got %r" % (grid,))
        gm, gn = grid
        if gm * gn < 2:
            raise ValueError("grid: %d x %d is one output; a grid has 2 or more" % (gm, gn))
    dt, kind = _reveal_dtype(dtype)
    seed = _cint("seed", seed, *_U64)
    sp = _cstr("space", space) if space else None
    failure = []

    def probe(pp):
        p = pp.contents
        try:
            a = _probe_copy(p.a, dt, (p.rows, p.n), kind)
            b = _probe_copy(p.b, dt, (p.rows, p.n), kind)
            if gm:
                # one gemm: A's row i is row i * N, B's column j is row j
                c = fn(a[0::gn], b[0:gn].T)
                shape = tuple(c.shape)
                if shape != (gm, gn):
                    raise ValueError("fn's result: expected shape [%d, %d] (C = A B), got %s" % (gm, gn, list(shape)))
                y = c.reshape(-1)
            else:
                y = fn(a, b)
            vy = _arrays.view("fn's result", y)
            if vy.shape != (p.rows,):
                raise ValueError("fn's result: expected shape [%d] (one value per row), got %s" %
                                 (p.rows, list(vy.shape)))
            if vy.dtype not in ("F32", "F64", "F16", "BF16"):
                raise TypeError("fn's result: dtype %s; expected float32, float64, float16 or bfloat16" % vy.dtype)
            ctypes.memmove(p.y, vy.ptr, vy.nbytes)
            p.y_dtype = _YD[vy.dtype]
            return 0
        except BaseException as e:  # handed back to the caller after the C call
            failure.append(e)
            return 1

    cb = PROBE_FN(probe)
    point, order = ctypes.c_void_p(), ctypes.c_void_p()
    ri = RevealInfo()
    err = Error()
    if getattr(_reveal_state, "active", False):
        raise RuntimeError("reveal: called from inside a kernel that reveal is probing")
    with _reveal_lock:
        _reveal_state.active = True
        try:
            cl = (ctypes.c_size_t * len(lens))(*lens)
            rc = lib.parity_reveal4(cb, cl, len(lens), dt.encode(), sp, seed,
                                    1 if shared_b else 0, gm, gn, ctypes.byref(point), ctypes.byref(order),
                                    ctypes.byref(ri), ctypes.byref(err))
        finally:
            _reveal_state.active = False
    p, o = take_string(point), take_string(order)
    if info is not None:
        info.update({k: getattr(ri, k) for k, _ in RevealInfo._fields_})
        info["order"] = o
    if failure:
        raise failure[0]
    if rc == FAIL:
        raise NotFound("reveal: %s" % err.text, "order: %s" % o if o else None)
    if rc != OK:
        _raise(err, "reveal")
    return Point(p)


# constant C strings for y_dtype (kept alive for the process)
_YD = {k: ctypes.c_char_p(k.encode()).value for k in ("F32", "F64", "F16", "BF16")}


def capture(path, *, family, point, cls, kernel, outputs, inputs=None, shape, batch, seed=None, dist=None,
            mode="eager", run=0, params=None, device=None, created=None, meta=None):
    """Writes a trace (docs/traces.md) that `parity check` reads, through the
    capture API (traces/capture.h): outputs and inputs are dicts of name ->
    array (inputs stored as 'in.NAME'), shape "M=16,N=4096,K=4096" or a
    dict, batch "rows=0..15" (the rows of the family's batch dimension this
    run computed) or range(0, 16).  Raises TypeError naming an argument of
    the wrong type, ValueError naming the call at fault; nothing is written
    then."""
    def b(s, arg="capture"):
        return _cstr(arg, s)

    def text(name, v, what="a str"):
        if not isinstance(v, str):
            raise TypeError("capture: %s must be %s, not %s" % (name, what, type(v).__name__))
        return v
    path = os.fspath(path) if isinstance(path, os.PathLike) else path
    for name, v in (("path", path), ("family", family), ("point", point), ("cls", cls), ("kernel", kernel),
                    ("mode", mode)):
        text(name, v)
    if isinstance(batch, range) and batch.step == 1 and len(batch):
        batch = "rows=%d..%d" % (batch.start, batch.stop - 1)
    text("batch", batch, 'a str such as "rows=0..15" (the rows this run computed) or a range')
    if not isinstance(shape, dict):
        text("shape", shape, 'a str such as "M=16,N=4096,K=4096" or a dict')
    for name, v in (("dist", dist), ("created", created)):
        if v is not None:
            text(name, v)
    for k, v in (meta or {}).items():
        text("meta[%r]" % (k,), v)
    # every value checked and converted before the capture begins: nothing
    # is written for a call that is refused
    if isinstance(shape, dict):
        shape = ",".join("%s=%d" % kv for kv in shape.items())
    if isinstance(params, dict):
        params = ",".join("%s=%s" % kv for kv in params.items())
    c = {name: b(v, "capture: " + name) for name, v in (
        ("path", path), ("family", family), ("point", point), ("cls", cls), ("kernel", kernel), ("mode", mode),
        ("batch", batch), ("shape", shape))}
    c_params = b(params, "capture: params") if params is not None else None
    c_dist = b(dist, "capture: dist") if dist else None
    c_created = b(created, "capture: created") if created else None
    c_seed = _cint("capture: seed", seed, *_U64) if seed is not None else None
    c_run = _cint("capture: run", run, 0, _I64[1])
    c_device = []
    for k, v in (device or {}).items():
        ck = b(k, "capture: device key %r" % (k,))
        if isinstance(v, int) and not isinstance(v, bool):
            c_device.append((ck, _cint("capture: device[%r]" % (k,), v, *_I64), True))
        else:
            c_device.append((ck, b(str(v), "capture: device[%r]" % (k,)), False))
    c_meta = [(b(k, "capture: meta key %r" % (k,)), b(v, "capture: meta[%r]" % (k,))) for k, v in (meta or {}).items()]
    c_names = {}
    for what, group in (("outputs", outputs), ("inputs", inputs or {})):
        for name in group:
            c_names[(what, name)] = b(name, "capture: %s name %r" % (what, name))
    cap = lib.parity_capture_begin(c["path"], c["family"], c["point"], c["cls"], c["kernel"])
    keep = []
    try:
        for ck, cv, is_int in c_device:
            if is_int:
                lib.parity_capture_device_int(cap, ck, cv)
            else:
                lib.parity_capture_device(cap, ck, cv)
        lib.parity_capture_shape(cap, c["shape"])
        if c_params is not None:
            lib.parity_capture_params(cap, c_params)
        if c_seed is not None:
            lib.parity_capture_seed(cap, c_seed, c_dist)
        lib.parity_capture_mode(cap, c["mode"])
        lib.parity_capture_run(cap, c_run)
        lib.parity_capture_batch(cap, c["batch"])
        if c_created:
            lib.parity_capture_created(cap, c_created)
        for ck, cv in c_meta:
            lib.parity_capture_meta(cap, ck, cv)
        for fn, group, what in ((lib.parity_capture_output, outputs, "outputs"),
                                (lib.parity_capture_input, inputs or {}, "inputs")):
            for name, arr in group.items():
                v = _arrays.view("%s[%r]" % (what, name), arr)
                keep.append(v)
                sh = (ctypes.c_int64 * max(1, len(v.shape)))(*v.shape)
                fn(cap, c_names[(what, name)], v.dtype.encode(), len(v.shape), sh, v.ptr)
    except BaseException:
        lib.parity_capture_abort(cap)
        raise
    err = Error()
    if lib.parity_capture_end(cap, ctypes.byref(err)) != OK:
        raise ValueError("capture: %s" % err.text)
    return path
