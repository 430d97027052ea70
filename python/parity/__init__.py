"""parity from Python: exact references, bit-for-bit checks, fit and
reveal of kernels written with numpy, PyTorch, Triton or CUDA extensions.

    import parity
    y = parity.reduce('{ tree = "pairwise" }', a, b)          # the exact reference, bit for bit
    parity.assert_bits(kernel(a, b), point='{ tree = "pairwise" }', a=a, b=b)
    p = parity.reveal(lambda a, b: (a * b).sum(1), n=64, dtype=torch.float32)

Every function runs the code the `parity` command runs, through the C ABI
of libparity.so (parity/api/parity_api.h, here in parity._core); arrays are
passed without a copy and the GIL is released while the library works.
docs/python.md.

parity.backend, the kit that serves a class backend (docs/backends.md),
needs numpy only: `from parity import backend` works where libparity.so
is not built, and then every other name of the package says why it is
missing.
"""

try:
    from . import _core
except ImportError as _e:  # libparity.so absent, or of another C ABI
    _CORE_ERROR = str(_e)

    def __getattr__(name):
        # an AttributeError, so that `from parity import backend` still finds
        # the submodule; its message says what is missing and why
        raise AttributeError("parity.%s needs libparity.so: %s" % (name, _CORE_ERROR))
else:
    globals().update({k: v for k, v in vars(_core).items() if k == "__all__" or not k.startswith("__")})
