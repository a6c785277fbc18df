"""Small kernels for the pypto.tune tests (a module file, so Dask workers can load them by source)."""
import pypto

ROWS = pypto.Tensor([pypto.DYNAMIC, 128], pypto.DT_FP32)


@pypto.jit
def exp_rows(x: ROWS, out: ROWS, TILE: int = 32):
    """out = exp(x) + 1 over row blocks of TILE rows: the numbers never depend on TILE."""
    pypto.set_vec_tile_shapes(TILE, 128)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        r = slice(b * TILE, (b + 1) * TILE)
        out[r, :] = pypto.exp(x[r, :]) + 1.0


@pypto.jit
def tile_dependent(x: ROWS, out: ROWS, TILE: int = 32):
    """A kernel whose tile parameter changes its result (out = x + 1/TILE): only the default is right."""
    pypto.set_vec_tile_shapes(TILE, 128)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE)):
        r = slice(b * TILE, (b + 1) * TILE)
        out[r, :] = x[r, :] + 1.0 / TILE


@pypto.jit
def first_rows(x: ROWS, out: ROWS, TILE: int, STEP: int):
    """out = exp(x) + 1 over the first 1/STEP of the rows: STEP > 1 does less work, and is wrong."""
    pypto.set_vec_tile_shapes(TILE, 128)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], TILE * STEP)):
        r = slice(b * TILE, (b + 1) * TILE)
        out[r, :] = pypto.exp(x[r, :]) + 1.0


MAT = pypto.Tensor([256, 256], pypto.DT_FP32)


@pypto.jit
def mm_tiles(a: MAT, b: MAT, out: MAT, M0: int = 64, K0: int = 64, N0: int = 64):
    """out = a @ b with cube tiles of M0 x K0 x N0 (L0 and L1 alike)."""
    pypto.set_cube_tile_shapes([M0, M0], [K0, K0], [N0, N0])
    out[:] = pypto.matmul(a, b, pypto.DT_FP32)
