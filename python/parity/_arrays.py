"""Arrays people have, handed to the C library without a copy.

numpy arrays, torch tensors and any object with __array_interface__ or
__dlpack__ are passed by address (ndarray.ctypes.data, Tensor.data_ptr(),
__array_interface__['data'], the DLPack capsule's pointer): the library
reads the caller's memory.
A torch tensor on a GPU is copied to host memory once (docs/python.md).
Nothing is converted: a dtype parity does not read is a TypeError, a
non-contiguous array a ValueError, each naming the argument.  Formats
numpy has no dtype for (bf16, fp8) are passed as their bit patterns:
bits(array_of_uint16, "bf16").
"""

import ctypes

try:
    import numpy as np
except ImportError:  # pragma: no cover - numpy is optional
    np = None
try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

# numpy typestr -> safetensors dtype
_TYPESTR = {"<f8": "F64", "<f4": "F32", "<f2": "F16"}
# ml_dtypes names numpy reports for its extension dtypes
_NP_NAMES = {"bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}
# bit-pattern containers: dtype name -> (safetensors dtype, item size)
_BITS = {"bf16": ("BF16", 2), "fp16": ("F16", 2), "e4m3": ("F8_E4M3", 1), "e5m2": ("F8_E5M2", 1),
         "e8m0": ("F8_E8M0", 1), "fp32": ("F32", 4), "fp64": ("F64", 8)}
for _k, _v in list(_BITS.items()):
    _BITS[_v[0]] = _v


def _torch_dtypes():
    if torch is None:
        return {}
    m = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
    for name, st in (("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"), ("float8_e8m0fnu", "F8_E8M0")):
        if hasattr(torch, name):
            m[getattr(torch, name)] = st
    return m


TORCH_DTYPES = _torch_dtypes()
TORCH_OF = {v: k for k, v in TORCH_DTYPES.items()}
NUMPY_OF = {"F64": "<f8", "F32": "<f4", "F16": "<f2"}
WIDTH = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1}


class bits:
    """An integer array that holds the bit patterns of format `fmt`
    ("bf16", "e4m3", "BF16", ...): uint16 for 16-bit formats, uint8 for
    8-bit ones.  The way to hand numpy bf16 or fp8 data to parity."""

    def __init__(self, array, fmt):
        if fmt not in _BITS:
            raise ValueError("bits: unknown format %r (one of %s)" % (fmt, ", ".join(sorted(_BITS))))
        self.array, (self.dtype, self.width) = array, _BITS[fmt]

    def __repr__(self):
        return "parity.bits(%r, %r)" % (self.array, self.dtype)


class View:
    """What the library reads: address, dtype, shape; keeps the owner alive."""

    __slots__ = ("owner", "ptr", "dtype", "shape", "nbytes", "kind", "_shape_c")

    def __init__(self, owner, ptr, dtype, shape, kind):
        self.owner, self.ptr, self.dtype, self.shape, self.kind = owner, ptr, dtype, tuple(shape), kind
        n = 1
        for d in self.shape:
            n *= d
        self.nbytes = n * WIDTH[dtype]
        self._shape_c = (ctypes.c_int64 * max(1, len(self.shape)))(*self.shape)

    def tensor(self):
        from ._lib import Tensor
        return Tensor(self.ptr, self.dtype.encode(), len(self.shape), self._shape_c)


def _contiguous_np(arg, a):
    if not a.flags["C_CONTIGUOUS"]:
        raise ValueError("%s: the array is not C-contiguous (strides %s); parity reads row-major memory as it "
                         "is: pass np.ascontiguousarray(%s) if a copy is what you want" % (arg, a.strides, arg))


def view(arg, x):
    """x as a View, or TypeError / ValueError naming arg."""
    if isinstance(x, bits):
        inner = view_raw(arg, x.array)
        if inner.kind[1] != x.width:
            raise TypeError("%s: bits(..., %r) needs unsigned integers of %d byte(s), got %s" %
                            (arg, x.dtype, x.width, inner.kind[0]))
        return View(inner.owner, inner.ptr, x.dtype, inner.shape, "bits")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.dtype not in TORCH_DTYPES:
            raise TypeError("%s: torch dtype %s is not a floating-point format parity reads (%s)" %
                            (arg, x.dtype, ", ".join(str(d) for d in TORCH_DTYPES)))
        if x.device.type != "cpu":
            x = x.detach().to("cpu")  # one copy to host memory, said in docs/python.md
        if not x.is_contiguous():
            raise ValueError("%s: the tensor is not contiguous (strides %s); parity reads row-major memory as it "
                             "is: pass %s.contiguous() if a copy is what you want" % (arg, x.stride(), arg))
        return View(x, x.data_ptr(), TORCH_DTYPES[x.dtype], x.shape, "torch")
    if np is not None and isinstance(x, np.ndarray):
        dt = _NP_NAMES.get(x.dtype.name) or _TYPESTR.get(x.dtype.str)
        if dt is None:
            raise TypeError("%s: numpy dtype %s is not a floating-point format parity reads (float64, float32, "
                            "float16; bf16 and fp8 as parity.bits(array, 'bf16'))" % (arg, x.dtype))
        _contiguous_np(arg, x)
        return View(x, x.ctypes.data, dt, x.shape, "numpy")
    ai = getattr(x, "__array_interface__", None)
    if isinstance(ai, dict):
        dt = _TYPESTR.get(ai.get("typestr"))
        if dt is None:
            raise TypeError("%s: __array_interface__ typestr %r is not a format parity reads" %
                            (arg, ai.get("typestr")))
        if ai.get("strides") is not None:
            raise ValueError("%s: __array_interface__ has strides; parity reads C-contiguous memory" % arg)
        return View(x, ai["data"][0], dt, ai["shape"], "interface")
    if hasattr(x, "__dlpack__"):
        # DLPack (JAX, CuPy, ...): viewed through torch (which has bf16) or
        # numpy, without a copy for host memory
        if torch is not None:
            return view(arg, torch.utils.dlpack.from_dlpack(x))
        if np is not None and hasattr(np, "from_dlpack"):
            return view(arg, np.from_dlpack(x))
    raise TypeError("%s: expected a numpy array, a torch tensor or an object with __array_interface__ or "
                    "__dlpack__, got %s" % (arg, type(x).__name__))


def view_raw(arg, x):
    """An unsigned integer array (for bits): its address, shape and (kind, width)."""
    if torch is not None and isinstance(x, torch.Tensor):
        ok = {torch.uint8: 1, torch.int16: 2}
        if x.dtype not in ok:
            raise TypeError("%s: bits() of a torch tensor needs uint8 or int16, got %s" % (arg, x.dtype))
        if x.device.type != "cpu":
            x = x.detach().to("cpu")
        if not x.is_contiguous():
            raise ValueError("%s: the tensor is not contiguous" % arg)
        v = View.__new__(View)
        v.owner, v.ptr, v.shape, v.kind = x, x.data_ptr(), tuple(x.shape), (str(x.dtype), ok[x.dtype])
        return v
    if np is not None and isinstance(x, np.ndarray):
        if x.dtype.kind not in "ui":
            raise TypeError("%s: bits() needs an integer array, got %s" % (arg, x.dtype))
        _contiguous_np(arg, x)
        v = View.__new__(View)
        v.owner, v.ptr, v.shape, v.kind = x, x.ctypes.data, tuple(x.shape), (str(x.dtype), x.dtype.itemsize)
        return v
    raise TypeError("%s: bits() needs a numpy integer array or a torch uint8/int16 tensor, got %s" %
                    (arg, type(x).__name__))


def empty_like_kind(kind, dtype, rows):
    """An output array of rows elements of safetensors dtype, of the kind
    the inputs were (torch -> torch; else numpy, bits for formats numpy
    lacks); returns (array, address, nbytes)."""
    if kind == "torch" and dtype in TORCH_OF:
        y = torch.empty(rows, dtype=TORCH_OF[dtype])
        return y, y.data_ptr(), rows * WIDTH[dtype]
    if dtype in NUMPY_OF:
        y = np.empty(rows, dtype=np.dtype(NUMPY_OF[dtype]))
        return y, y.ctypes.data, y.nbytes
    w = WIDTH[dtype]
    y = np.empty(rows, dtype=np.uint16 if w == 2 else np.uint8)
    return bits(y, dtype), y.ctypes.data, y.nbytes


def from_address(ptr, dtype, shape, kind):
    """Memory the library owns for the duration of a call, as an array of
    kind ("torch" or "numpy") without a copy."""
    count = 1
    for d in shape:
        count *= d
    nbytes = count * WIDTH[dtype]
    buf = (ctypes.c_char * max(1, nbytes)).from_address(ptr)
    if kind == "torch":
        t = torch.frombuffer(buf, dtype=TORCH_OF[dtype], count=count) if count else torch.empty(0, dtype=TORCH_OF[dtype])
        return t.view(*shape)
    if dtype in NUMPY_OF:
        return np.frombuffer(buf, dtype=np.dtype(NUMPY_OF[dtype]), count=count).reshape(shape)
    w = WIDTH[dtype]
    return np.frombuffer(buf, dtype=np.uint16 if w == 2 else np.uint8, count=count).reshape(shape)


def copy_from(ptr, dtype, shape, nbytes, kind):
    """A copy of memory the library owns (its results), as an array of
    kind: torch for torch inputs, else numpy (bits for bf16 / fp8)."""
    raw = ctypes.string_at(ptr, nbytes) if nbytes else b""
    if dtype not in WIDTH:  # integer outputs (indices, tokens): numpy's own
        n = {"I32": "<i4", "I64": "<i8", "U8": "u1", "I8": "i1", "U32": "<u4", "U64": "<u8", "I16": "<i2",
             "U16": "<u2", "BOOL": "?"}[dtype]
        a = np.frombuffer(raw, dtype=np.dtype(n)).reshape(shape).copy()
        return torch.from_numpy(a) if kind == "torch" else a
    if kind == "torch" and dtype in TORCH_OF:
        return torch.frombuffer(bytearray(raw), dtype=TORCH_OF[dtype]).reshape(shape) if raw else \
            torch.empty(shape, dtype=TORCH_OF[dtype])
    if dtype in NUMPY_OF:
        return np.frombuffer(raw, dtype=np.dtype(NUMPY_OF[dtype])).reshape(shape).copy()
    w = WIDTH[dtype]
    return bits(np.frombuffer(raw, dtype=np.uint16 if w == 2 else np.uint8).reshape(shape).copy(), dtype)
