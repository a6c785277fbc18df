"""FFN: matmul -> SiLU -> matmul over a DYNAMIC batch, in bf16 with fp32 accumulation."""
import torch

import pypto

H, F = 128, 256  # hidden and intermediate sizes
TILE = 32


@pypto.jit
def ffn(x: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_BF16),
        w1: pypto.Tensor([H, F], pypto.DT_BF16),
        w2: pypto.Tensor([F, H], pypto.DT_BF16),
        out: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_BF16)):
    pypto.set_cube_tile_shapes([32, 32], [64, 128], [64, 128])
    pypto.set_vec_tile_shapes(TILE, F)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        rows = slice(b * TILE, (b + 1) * TILE)
        h = pypto.matmul(x[rows, :], w1, pypto.DT_FP32)      # AIC: [TILE, F] in fp32
        act = h * pypto.sigmoid(h)                           # AIV: SiLU
        y = pypto.matmul(pypto.cast(act, pypto.DT_BF16), w2, pypto.DT_BF16)
        out[rows, :] = y


def reference(x, w1, w2):
    h = x.float() @ w1.float()
    act = (h * torch.sigmoid(h)).bfloat16()
    return (act.float() @ w2.float()).bfloat16()


def check(batch: int = 70) -> float:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, H, generator=g).bfloat16()
    w1 = (torch.randn(H, F, generator=g) / H ** 0.5).bfloat16()
    w2 = (torch.randn(F, H, generator=g) / F ** 0.5).bfloat16()
    out = torch.zeros(batch, H, dtype=torch.bfloat16)
    ffn(x, w1, w2, out)
    err = (out.float() - reference(x, w1, w2).float()).abs().max().item()
    assert err < 0.05, err
    return err


if __name__ == "__main__":
    print("max |error| vs torch:", check())
    print(ffn.last_run.timeline)
