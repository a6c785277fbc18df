"""Hello world: a tiled add over a DYNAMIC batch, checked against torch."""
import torch

import pypto


@pypto.jit
def add(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] + y[rows, :]


if __name__ == "__main__":
    for batch in (3, 100):                      # the batch is DYNAMIC: one compile
        x, y = torch.randn(batch, 64), torch.randn(batch, 64)
        out = torch.empty(batch, 64)
        add(x, y, out)
        print(batch, torch.allclose(out, x + y))
    print(add.cache_info())
    print(add.inspect(x, y, out).text())
