"""Loading libparity.so and declaring its C ABI (parity/api/parity_api.h).

The library is found, in order, at $PARITY_LIB (a path to the .so), in
$PARITY_BUILD of the source tree this package lives in, in build/ of that
tree, and by the dynamic loader's search (an installed libparity.so.1).
Calls go through ctypes.CDLL, which releases the GIL for the whole call:
other Python threads run while the C library works.
"""

import ctypes
import os

API_VERSION = 1

OK, FAIL, EINPUT, EINTERNAL = 0, 1, 2, 3


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 1024)]

    @property
    def text(self):
        return self.msg.decode("utf-8", "replace")


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_char_p), ("ndim", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


class Probe(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_int), ("dtype", ctypes.c_char_p), ("rows", ctypes.c_size_t),
                ("n", ctypes.c_size_t), ("a", ctypes.c_void_p), ("b", ctypes.c_void_p), ("y", ctypes.c_void_p),
                ("y_dtype", ctypes.c_char_p)]


PROBE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Probe))


class RevealInfo(ctypes.Structure):
    _fields_ = [(k, ctypes.c_size_t) for k in (
        "calls", "probes", "order_calls", "order_probes", "arith_calls", "arith_probes", "confirm_rows",
        "confirm_ok", "alternatives")]


def _candidates():
    env = os.environ.get("PARITY_LIB")
    if env:
        return [env]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = []
    for d in (os.environ.get("PARITY_BUILD"), "build"):
        if d:
            out.append(os.path.join(d if os.path.isabs(d) else os.path.join(root, d), "libparity.so.1"))
    out.append("libparity.so.1")
    return out


def _load():
    tried = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            tried.append(path + " (absent)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("parity: libparity.so.1 not found; build the project (scripts/setup) or set PARITY_LIB. "
                      "Tried: " + "; ".join(tried))


lib = _load()

_P = ctypes.POINTER
_c = ctypes
_sigs = {
    "parity_api_version": (_c.c_int, []),
    "parity_version": (_c.c_char_p, []),
    "parity_free": (None, [_c.c_void_p]),
    "parity_point_parse": (_c.c_int, [_c.c_char_p, _c.c_size_t, _P(_c.c_void_p), _c.c_char_p, _P(Error)]),
    "parity_reduce": (_c.c_int, [_c.c_char_p, _P(Tensor), _P(Tensor), _P(Tensor), _c.c_char_p, _c.c_int,
                                 _c.c_size_t, _c.c_void_p, _c.c_size_t, _P(Error)]),
    "parity_check_numerics": (_c.c_int, [_c.c_char_p, _P(Tensor), _P(Tensor), _P(Tensor), _c.c_char_p,
                                         _c.c_char_p, _c.c_int, _P(_c.c_void_p), _P(Error)]),
    "parity_fit": (_c.c_int, [_c.c_size_t, _P(Tensor), _P(Tensor), _P(Tensor), _c.c_char_p, _c.c_int,
                              _P(_c.c_void_p), _P(_c.c_void_p), _P(Error)]),
    "parity_reveal": (_c.c_int, [PROBE_FN, _c.c_size_t, _c.c_char_p, _c.c_char_p, _c.c_ulonglong,
                                 _P(_c.c_void_p), _P(_c.c_void_p), _P(RevealInfo), _P(Error)]),
    "parity_reveal2": (_c.c_int, [PROBE_FN, _c.c_size_t, _c.c_char_p, _c.c_char_p, _c.c_ulonglong, _c.c_uint,
                                 _P(_c.c_void_p), _P(_c.c_void_p), _P(RevealInfo), _P(Error)]),
    "parity_reveal3": (_c.c_int, [PROBE_FN, _c.c_size_t, _c.c_char_p, _c.c_char_p, _c.c_ulonglong, _c.c_uint,
                                 _c.c_size_t, _c.c_size_t, _P(_c.c_void_p), _P(_c.c_void_p), _P(RevealInfo),
                                 _P(Error)]),
    "parity_reveal4": (_c.c_int, [PROBE_FN, _P(_c.c_size_t), _c.c_size_t, _c.c_char_p, _c.c_char_p, _c.c_ulonglong,
                                 _c.c_uint, _c.c_size_t, _c.c_size_t, _P(_c.c_void_p), _P(_c.c_void_p), _P(RevealInfo),
                                 _P(Error)]),
    "parity_outputs_count": (_c.c_size_t, [_c.c_void_p]),
    "parity_outputs_tensor": (_c.c_int, [_c.c_void_p, _c.c_size_t, _P(_c.c_char_p), _P(_c.c_char_p), _P(_c.c_int),
                                         _P(_P(_c.c_int64)), _P(_c.c_void_p), _P(_c.c_size_t)]),
    "parity_outputs_free": (None, [_c.c_void_p]),
    "parity_reference": (_c.c_int, [_c.c_char_p, _c.c_char_p, _c.c_char_p, _c.c_char_p, _c.c_size_t,
                                    _P(_c.c_char_p), _P(Tensor), _c.c_char_p, _c.c_int, _P(_c.c_void_p), _P(Error)]),
    "parity_check_point": (_c.c_int, [_c.c_char_p, _c.c_char_p, _c.c_char_p, _c.c_char_p, _c.c_size_t,
                                      _P(_c.c_char_p), _P(Tensor), _c.c_size_t, _P(_c.c_char_p), _P(Tensor),
                                      _c.c_char_p, _c.c_char_p, _c.c_char_p, _P(_c.c_void_p), _P(Error)]),
    "parity_diff": (_c.c_int, [_P(Tensor), _P(Tensor), _c.c_char_p, _c.c_char_p, _c.c_size_t, _P(_c.c_void_p),
                               _P(Error)]),
    "parity_capture_begin": (_c.c_void_p, [_c.c_char_p] * 5),
    "parity_capture_device": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_char_p]),
    "parity_capture_device_int": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_longlong]),
    "parity_capture_shape": (_c.c_int, [_c.c_void_p, _c.c_char_p]),
    "parity_capture_params": (_c.c_int, [_c.c_void_p, _c.c_char_p]),
    "parity_capture_seed": (_c.c_int, [_c.c_void_p, _c.c_ulonglong, _c.c_char_p]),
    "parity_capture_mode": (_c.c_int, [_c.c_void_p, _c.c_char_p]),
    "parity_capture_run": (_c.c_int, [_c.c_void_p, _c.c_ulonglong]),
    "parity_capture_batch": (_c.c_int, [_c.c_void_p, _c.c_char_p]),
    "parity_capture_created": (_c.c_int, [_c.c_void_p, _c.c_char_p]),
    "parity_capture_meta": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_char_p]),
    "parity_capture_output": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_char_p, _c.c_int, _P(_c.c_int64),
                                         _c.c_void_p]),
    "parity_capture_input": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_char_p, _c.c_int, _P(_c.c_int64),
                                        _c.c_void_p]),
    "parity_capture_end": (_c.c_int, [_c.c_void_p, _P(Error)]),
    "parity_capture_abort": (None, [_c.c_void_p]),
}
for _name, (_res, _args) in _sigs.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

if lib.parity_api_version() != API_VERSION:
    raise ImportError("parity: libparity.so speaks C ABI %d, this package %d" % (lib.parity_api_version(),
                                                                                 API_VERSION))


def take_string(ptr):
    """A malloc'd char * from the library as str (freed)."""
    if not ptr.value:
        return None
    try:
        return ctypes.string_at(ptr.value).decode("utf-8")
    finally:
        lib.parity_free(ptr.value)
