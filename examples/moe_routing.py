"""Top-k routing for a mixture of experts: gate logits (matmul), softmax, top-k, renormalise."""
import torch

import pypto

H, E, K = 64, 16, 4  # hidden size, experts, experts per token
TILE = 32


@pypto.jit
def route(x: pypto.Tensor([pypto.DYNAMIC, H], pypto.DT_FP32), w_gate: pypto.Tensor([H, E], pypto.DT_FP32),
          weights: pypto.Tensor([pypto.DYNAMIC, K], pypto.DT_FP32),
          experts: pypto.Tensor([pypto.DYNAMIC, K], pypto.DT_INT32)):
    pypto.set_cube_tile_shapes([32, 32], [64, 64], [16, 16])
    pypto.set_vec_tile_shapes(TILE, E)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        rows = slice(b * TILE, (b + 1) * TILE)
        probs = pypto.softmax(pypto.matmul(x[rows, :], w_gate, pypto.DT_FP32), -1)
        top, idx = pypto.topk(probs, K, -1)
        pypto.set_vec_tile_shapes(TILE, K)
        weights[rows, :] = top / pypto.sum(top, -1, keepdim=True)
        experts[rows, :] = idx


def check(tokens: int = 50) -> float:
    g = torch.Generator().manual_seed(3)
    x, w = torch.randn(tokens, H, generator=g), torch.randn(H, E, generator=g)
    weights, experts = torch.zeros(tokens, K), torch.zeros(tokens, K, dtype=torch.int32)
    route(x, w, weights, experts)
    top, idx = torch.topk(torch.softmax(x @ w, -1), K, -1)
    assert torch.equal(experts, idx.int())
    err = (weights - top / top.sum(-1, keepdim=True)).abs().max().item()
    assert err < 1e-5, err
    return err


if __name__ == "__main__":
    print("experts match, max |weight error|:", check())
