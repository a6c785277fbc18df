"""RMSNorm and LayerNorm in bf16 over a DYNAMIC batch (statistics in fp32)."""
import torch

import pypto

H = 256
TILE = 16
EPS = 1e-6


@pypto.jit
def rms_norm(x: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_BF16), gamma: pypto.Tensor([H], pypto.DT_BF16),
             out: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_BF16)):
    pypto.set_vec_tile_shapes(H)
    g32 = pypto.cast(gamma, pypto.DT_FP32)
    pypto.set_vec_tile_shapes(TILE, H)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        rows = slice(b * TILE, (b + 1) * TILE)
        xf = pypto.cast(x[rows, :], pypto.DT_FP32)
        ms = pypto.sum(xf * xf, -1, keepdim=True) * (1.0 / H)
        y = xf * pypto.rsqrt(ms + EPS) * g32
        out[rows, :] = pypto.cast(y, pypto.DT_BF16)


@pypto.jit
def layer_norm(x: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_BF16), weight: pypto.Tensor([H], pypto.DT_BF16),
               bias: pypto.Tensor([H], pypto.DT_BF16), out: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_BF16)):
    pypto.set_vec_tile_shapes(H)
    w32, b32 = pypto.cast(weight, pypto.DT_FP32), pypto.cast(bias, pypto.DT_FP32)
    pypto.set_vec_tile_shapes(TILE, H)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        rows = slice(b * TILE, (b + 1) * TILE)
        xf = pypto.cast(x[rows, :], pypto.DT_FP32)
        mean = pypto.sum(xf, -1, keepdim=True) * (1.0 / H)
        xc = xf - mean
        var = pypto.sum(xc * xc, -1, keepdim=True) * (1.0 / H)
        y = xc * pypto.rsqrt(var + EPS) * w32 + b32
        out[rows, :] = pypto.cast(y, pypto.DT_BF16)


def check(batch: int = 37) -> tuple:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(batch, H, generator=g).bfloat16()
    gamma, beta = torch.randn(H, generator=g).bfloat16(), torch.randn(H, generator=g).bfloat16()
    out = torch.zeros(batch, H, dtype=torch.bfloat16)
    rms_norm(x, gamma, out)
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * gamma.float()).bfloat16()
    err_rms = (out.float() - ref.float()).abs().max().item()
    layer_norm(x, gamma, beta, out)
    ref = torch.nn.functional.layer_norm(xf, (H,), gamma.float(), beta.float(), EPS).bfloat16()
    err_ln = (out.float() - ref.float()).abs().max().item()
    assert err_rms < 0.05 and err_ln < 0.05, (err_rms, err_ln)
    return err_rms, err_ln


if __name__ == "__main__":
    print("max |error| RMSNorm, LayerNorm:", check())
