"""The Python API with what only a GPU machine's torch has: CUDA tensors
(copied to host once, docs/python.md) and torch's fp8 dtypes.  Skipped
where torch sees no CUDA device or has no float8 dtypes (Debian's torch);
run on an NVIDIA H200 with torch 2.11: every test passed."""
import numpy as np
import pytest
import torch

import parity

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="torch sees no CUDA device")
P = '{ acc = "fp32", tree = "pairwise", fma = true }'


def u32(x):
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32)).view(np.uint32)


def rand(rows, n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, n, generator=g), torch.randn(rows, n, generator=g)


@needs_cuda
def test_cuda_tensors_read_as_their_host_values():
    a, b = rand(64, 300, 1)
    assert np.array_equal(u32(parity.reduce(P, a, b)), u32(parity.reduce(P, a.cuda(), b.cuda())))


@needs_cuda
def test_assert_bits_on_cuda_outputs():
    a, b = rand(64, 300, 2)
    y = torch.as_tensor(parity.reduce(P, a, b)).cuda()
    parity.assert_bits(y, point=P, a=a.cuda(), b=b.cuda())
    with pytest.raises(AssertionError, match="rows differ"):
        parity.assert_bits(y, point='{ acc = "fp32", tree = "seq", fma = true }', a=a.cuda(), b=b.cuda())


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_torch_fp8_inputs_read_as_their_values(name):
    dt = getattr(torch, name, None)
    if dt is None:
        pytest.skip("this torch has no %s" % name)
    a, b = rand(32, 128, 3)
    a8, b8 = (a * 4).to(dt), (b * 4).to(dt)
    # every fp8 value is exact in fp32: the same values, the same bits
    y8 = parity.reduce(P, a8, b8)
    assert np.array_equal(u32(y8), u32(parity.reduce(P, a8.float(), b8.float())))
    if CUDA:
        assert np.array_equal(u32(y8), u32(parity.reduce(P, a8.cuda(), b8.cuda())))


@needs_cuda
def test_a_gpu_library_kernel_checked_in_place():
    # cuBLAS's fp32 bmm on small integers: every partial sum is exact, so
    # any order gives the bits of the declared one
    g = torch.Generator().manual_seed(4)
    a = torch.randint(-8, 8, (16, 256), generator=g).float().cuda()
    b = torch.randint(-8, 8, (16, 256), generator=g).float().cuda()
    y = torch.bmm(a[:, None, :], b[:, :, None])[:, 0, 0]
    parity.assert_bits(y, point=P, a=a, b=b)
