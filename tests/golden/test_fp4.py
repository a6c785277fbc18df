"""DT_FP4_E2M1 on the emulated Ascend 950: packed arguments (two e2m1 values a byte, the even
element in the low nibble) decoded exactly, and the MX block-scaled matmul with fp4 operands
against a torch reference that decodes the bits by the e2m1 formula."""

from __future__ import annotations

import pytest
import torch

import pypto
from pypto.frontend.fp4 import pack_e2m1, unpack_e2m1

try:
    from tests.golden.helper import assert_matches, check_kernel, rand
except ImportError:  # run without the repo root on sys.path: pytest puts this dir there
    from helper import assert_matches, check_kernel, rand

E8M0 = torch.float8_e8m0fnu


@pytest.fixture
def on_a5():
    before = pypto.get_machine()
    pypto.set_machine("A5")
    yield
    pypto.set_machine(before)


def e2m1_by_bits(code: torch.Tensor) -> torch.Tensor:
    """The value of 4-bit codes from the format's fields: sign bit 3, exponent bits 2..1 (bias 1),
    mantissa bit 0; exponent 0 is subnormal (0 or 0.5)."""
    code = code.to(torch.int64)
    sign = torch.where(code & 8 != 0, -1.0, 1.0)
    exp, man = (code >> 1) & 3, (code & 1).to(torch.float64)
    normal = torch.pow(2.0, (exp - 1).to(torch.float64)) * (1 + man / 2)
    return (sign * torch.where(exp == 0, man / 2, normal)).to(torch.float32)


def unpack_reference(packed: torch.Tensor) -> torch.Tensor:
    lo, hi = e2m1_by_bits(packed & 0x0F), e2m1_by_bits(packed >> 4)
    out = torch.empty(*packed.shape[:-1], packed.shape[-1] * 2)
    out[..., 0::2], out[..., 1::2] = lo, hi
    return out


def random_fp4(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, generator=g, dtype=torch.int64).to(torch.uint8)


def test_every_byte_decodes_to_the_two_e2m1_values_of_its_nibbles():
    every = torch.arange(256, dtype=torch.int64).to(torch.uint8).reshape(16, 16)
    got = unpack_e2m1(every, "x")
    assert got.shape == (16, 32)
    assert torch.equal(got.float(), unpack_reference(every))
    magnitudes = sorted({abs(v) for v in got.flatten().tolist()})
    assert magnitudes == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert torch.signbit(unpack_e2m1(torch.tensor([0x08], dtype=torch.uint8), "x"))[0]  # code 8 is -0
    assert torch.equal(pack_e2m1(got), every)  # and back, bit for bit (both zeros)
    as_torch = every.view(torch.float4_e2m1fn_x2)  # torch's own packed dtype: the same bytes
    assert torch.equal(unpack_e2m1(as_torch, "x"), got)


def test_pack_refuses_a_value_that_is_not_e2m1():
    with pytest.raises(pypto.PyptoError, match="not all e2m1"):
        pack_e2m1(torch.tensor([[1.0, 2.5]]))
    with pytest.raises(pypto.PyptoError, match="even"):
        pack_e2m1(torch.tensor([[1.0, 2.0, 3.0]]))


def _mx_reference(a, b, sa, sb, a_trans=False, b_trans=False, sa_trans=False, sb_trans=False):
    """Upstream's golden for scaled_mm: each 32 elements of K share one e8m0 scale."""
    a, b = unpack_reference(a), unpack_reference(b)
    a, b = (a.T if a_trans else a), (b.T if b_trans else b)
    k = a.shape[1]
    sa = sa.float().permute(1, 0, 2) if sa_trans else sa.float()  # -> [M, KB, 2]
    sb = sb.float() if sb_trans else sb.float().permute(1, 0, 2)  # -> [N, KB, 2]
    sa = sa.reshape(sa.shape[0], -1).repeat_interleave(32, dim=1)[:, :k]
    sb = sb.reshape(sb.shape[0], -1).repeat_interleave(32, dim=1)[:, :k]
    return (a * sa) @ (b * sb.T)


def _scaled_mm_kernel(a_trans, b_trans, sa_trans, sb_trans, out_dt):
    @pypto.jit
    def kernel(a: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP4_E2M1),
               b: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC], pypto.DT_FP4_E2M1),
               sa: pypto.Tensor([pypto.STATIC, pypto.STATIC, pypto.STATIC], pypto.DT_FP8E8M0),
               sb: pypto.Tensor([pypto.STATIC, pypto.STATIC, pypto.STATIC], pypto.DT_FP8E8M0)):
        pypto.set_cube_tile_shapes([32, 32], [64, 128], [32, 32])
        return pypto.scaled_mm(a, b, out_dt, sa, sb, a_trans=a_trans, b_trans=b_trans, scale_a_trans=sa_trans,
                               scale_b_trans=sb_trans)
    return kernel


@pytest.mark.parametrize("a_trans, b_trans, sa_trans, sb_trans",
                         [(False, False, False, False), (False, True, True, False), (True, True, True, True)])
def test_an_mx_fp4_scaled_mm_matches_the_decoded_block_scaled_product(on_a5, a_trans, b_trans, sa_trans, sb_trans):
    m, k, n = 40, 160, 48  # K not a multiple of 64: the last scale block is partial
    kb = (k + 63) // 64
    a = random_fp4((k, m // 2) if a_trans else (m, k // 2), 1)
    b = random_fp4((n, k // 2) if b_trans else (k, n // 2), 2)
    sa = rand((kb, m, 2) if sa_trans else (m, kb, 2), torch.float32, lo=0.05, hi=4, seed=3).to(E8M0)
    sb = rand((n, kb, 2) if sb_trans else (kb, n, 2), torch.float32, lo=0.05, hi=4, seed=4).to(E8M0)
    want = _mx_reference(a, b, sa, sb, a_trans, b_trans, sa_trans, sb_trans)
    check_kernel(_scaled_mm_kernel(a_trans, b_trans, sa_trans, sb_trans, pypto.DT_FP32), [a, b, sa, sb], want)
    check_kernel(_scaled_mm_kernel(a_trans, b_trans, sa_trans, sb_trans, pypto.DT_FP16), [a, b, sa, sb],
                 want.half())


def test_the_kernel_sees_the_logical_shape_and_torch_float4_bytes_work_too(on_a5):
    seen = {}

    @pypto.jit
    def kernel(a: pypto.Tensor([], pypto.DT_FP4_E2M1), b: pypto.Tensor([], pypto.DT_FP4_E2M1),
               sa: pypto.Tensor([], pypto.DT_FP8E8M0), sb: pypto.Tensor([], pypto.DT_FP8E8M0)):
        seen["a"], seen["dtype"] = list(a.shape), a.dtype
        return pypto.scaled_mm(a, b, pypto.DT_FP32, sa, sb, b_trans=True)

    a, b = random_fp4((16, 32), 5), random_fp4((24, 32), 6)
    sa = rand((16, 1, 2), torch.float32, lo=0.5, hi=2, seed=7).to(E8M0)
    sb = rand((1, 24, 2), torch.float32, lo=0.5, hi=2, seed=8).to(E8M0)
    got = kernel(a.view(torch.float4_e2m1fn_x2), b, sa, sb)
    assert seen == {"a": [16, 64], "dtype": pypto.DT_FP4_E2M1}
    assert_matches(got, _mx_reference(a, b, sa, sb, b_trans=True))


def test_fp4_is_refused_where_this_build_cannot_give_upstreams_numbers(on_a5):
    @pypto.jit
    def exp(x: pypto.Tensor([], pypto.DT_FP4_E2M1)):
        return pypto.exp(x)

    packed = random_fp4((8, 16), 9)
    with pytest.raises(pypto.DTypeError, match="exp does not accept dtype DT_FP4_E2M1"):
        exp(packed)
    with pytest.raises(pypto.ArgumentTypeError) as info:  # not bytes: no packed fp4 in it
        exp(torch.zeros(8, 32))
    assert "'x'" in str(info.value) and "torch.uint8" in str(info.value) and "float32" in str(info.value)

    @pypto.jit
    def copy(x: pypto.Tensor([8, 32], pypto.DT_FP4_E2M1), out: pypto.Tensor([8, 32], pypto.DT_FP4_E2M1)):
        pypto.assemble(pypto.view(x, [8, 32], [0, 0]), [0, 0], out)

    with pytest.raises(pypto.ArgumentValueError, match="'out' is DT_FP4_E2M1 and written"):
        copy(packed, torch.zeros(8, 16, dtype=torch.uint8))  # a write to a decoded copy would be lost

    a, sa = random_fp4((16, 32), 10), torch.ones(16, 1, 2).to(E8M0)
    kernel = _scaled_mm_kernel(False, True, False, True, pypto.DT_FP32)
    pypto.set_machine("A2A3")
    with pytest.raises(pypto.DTypeError, match="A5"):
        kernel(a, a, sa, sa)
