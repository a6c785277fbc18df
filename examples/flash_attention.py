"""Flash-style attention: online softmax over a DYNAMIC sequence, one KV block at a time.

Per batch and query block, the running row max ``m``, row sum ``l`` and output ``acc`` live in
local tensors carried across the KV loop (each iteration reads what the previous one wrote).
The block sizes are compile-time parameters (defaults ``BQ``, ``BK``), so a sweep can tune them
(`notebooks/05_tuning.ipynb`); the cube tiles follow them.
"""
import torch

import pypto

D = 64  # head dim
BQ, BK = 32, 64  # query and key/value block sizes


@pypto.jit
def flash_attention(q: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, D], pypto.DT_FP32),
                    k: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, D], pypto.DT_FP32),
                    v: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, D], pypto.DT_FP32),
                    out: pypto.Tensor([pypto.DYNAMIC, pypto.DYNAMIC, D], pypto.DT_FP32),
                    BQ: int = BQ, BK: int = BK):
    scale = 1.0 / D ** 0.5
    pypto.set_cube_tile_shapes([BQ, BQ], [64, 64], [64, 64])
    for b in pypto.loop(q.shape[0]):
        for i in pypto.loop(pypto.ceildiv(q.shape[1], BQ)):
            qb = pypto.reshape(q[b:b + 1, i * BQ:(i + 1) * BQ, :], [BQ, D])
            m = pypto.tensor([BQ, 1], pypto.DT_FP32, "m")
            l = pypto.tensor([BQ, 1], pypto.DT_FP32, "l")
            acc = pypto.tensor([BQ, D], pypto.DT_FP32, "acc")
            m[:] = pypto.full([BQ, 1], -1e30, pypto.DT_FP32)
            l[:] = pypto.zeros([BQ, 1], pypto.DT_FP32)
            acc[:] = pypto.zeros([BQ, D], pypto.DT_FP32)
            for j in pypto.loop(pypto.ceildiv(k.shape[1], BK)):
                kb = pypto.reshape(k[b:b + 1, j * BK:(j + 1) * BK, :], [BK, D])
                vb = pypto.reshape(v[b:b + 1, j * BK:(j + 1) * BK, :], [BK, D])
                pypto.set_vec_tile_shapes(BQ, BK)
                s = pypto.matmul(qb, kb, pypto.DT_FP32, b_trans=True) * scale     # [BQ, BK]
                m_old = m[:, :]
                m_new = pypto.maximum(m_old, pypto.amax(s, -1, keepdim=True))
                p = pypto.exp(s - m_new)
                pypto.set_vec_tile_shapes(BQ, 1)
                alpha = pypto.exp(m_old - m_new)
                l[:] = l[:, :] * alpha + pypto.sum(p, -1, keepdim=True)
                m[:] = m_new
                pypto.set_vec_tile_shapes(BQ, D)
                acc[:] = acc[:, :] * alpha + pypto.matmul(p, vb, pypto.DT_FP32)
            pypto.set_vec_tile_shapes(BQ, D)
            res = acc[:, :] / l[:, :]
            out[b:b + 1, i * BQ:(i + 1) * BQ, :] = pypto.reshape(res, [1, BQ, D])


def reference(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2) / D ** 0.5, dim=-1) @ v


def check(batch: int = 2, seq: int = 100) -> float:
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(batch, seq, D, generator=g) for _ in range(3))
    out = torch.zeros(batch, seq, D)
    flash_attention(q, k, v, out)
    err = (out - reference(q, k, v)).abs().max().item()
    assert err < 1e-4, err
    return err


if __name__ == "__main__":
    for b, s in ((2, 100), (1, 200)):  # DYNAMIC batch and sequence: one compile
        print(f"batch {b} seq {s}: max |error| {check(b, s):.2e}")
    print(flash_attention.cache_info())
