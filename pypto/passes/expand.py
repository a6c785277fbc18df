"""ExpandFunction: every tensor op of a root segment becomes tile ops over a grid of tiles.

The tile shape is the one recorded on the op (``set_vec_tile_shapes`` / ``set_cube_tile_shapes``)
or a default sized for the vector buffer. Views fold into operand addressing; tails are the
clipped valid extents of edge tiles; broadcast operands read one tile along broadcast dims; a
reduction whose dim spans several tiles becomes a partial reduction per tile into a GM
workspace plus a combining reduction; matmul becomes one AIC op per output tile. Tiles the
framework picks by itself (a copy of a GM result, a split-K combine) are cut to fit UB.
"""

from __future__ import annotations

from types import MappingProxyType

from ..dtypes import DT_FP32, DT_INT32, DT_INT64
from ..errors import DTypeError, ShapeError
from ..ir import expr as E
from ..ir.graph import Value
from ..ir.tile import Access, TileOp
from ..ops.common import bcast_flags
from ..ops.registry import REGISTRY

DEFAULT_TILE_ELEMENTS = 16384  # 64 KB of fp32: a third of UB, leaving room for double buffering
# what a tile the framework chooses by itself (a copy's, a split-K combine's) may hold in UB
FRAMEWORK_TILE_BYTES = DEFAULT_TILE_ELEMENTS * 4
ELEMENTWISE = {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "gt", "ge", "lt", "le", "neg", "abs",
               "relu", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sigmoid", "tanh", "clip", "where", "cast",
               "clone", "full", "tensor", "expand_clone"}
REDUCTIONS = {"sum", "amax", "amin"}
# ops lowered by `Expander.whole`: one GM->GM instance over whole tensors (data-dependent addressing,
# or values that depend on the global position of an element)
WHOLE = {"reshape", "gather", "index_select", "index_add", "scatter", "scatter_update", "tril", "triu", "arange",
         "uniform", "normal"}
# ops tiled over every dim but the last, which each operand keeps whole
LAST_DIM_WHOLE = {"one_hot", "interleave", "deinterleave"}
ELEMENTWISE |= {"quantize", "dequantize"}  # pypto/ops/quant.py: scale/offset broadcast like a binary op
ELEMENTWISE |= {  # pypto/ops/math.py and bitwise.py
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "cos", "cosh", "erf", "erfc", "exp2", "expm1",
    "floor", "log10", "log1p", "log2", "round", "sign", "signbit", "sin", "sinh", "tan", "trunc", "pow", "fmod",
    "remainder", "floor_div", "ceil_div", "hypot", "atan2", "gcd", "axpy_", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "logical_and", "logical_not",
    "isfinite", "isnan"}
ELEMENTWISE |= {"lrelu", "expand_exp_dif"}  # pypto/ops/activation.py
ELEMENTWISE |= {"copysign"}  # pypto/ops/math.py (issue 9)
REDUCTIONS |= {"prod"}  # pypto/ops/scan.py: partial products per tile, then a combine
# ops whose dims named in attrs "dim"/"dims" stay whole in one tile, the grid running over the
# others (pypto/ops/scan.py; online softmax in activation.py): see `Expander.dim_whole`
WHOLE |= {"pack", "unpack"}  # pypto/ops/pack.py: bytes cross element boundaries
WHOLE |= {"conv"}  # pypto/ops/cube.py: one AIC task over whole tensors (im2col tiling is not modelled)
DIM_WHOLE = {"argmax", "argmin", "var", "cumsum", "cumprod", "argsort", "online_softmax", "online_softmax_update"}
WHOLE |= {"index_put", "fillpad", "gather_in_ub", "gather_in_l1"}  # pypto/ops/more_indexing.py
PAGED_GATHERS = {"gather_in_ub", "gather_in_l1"}  # their first operand is a paged cache's base
LAST_DIM_WHOLE |= {"gathermask"}  # pypto/ops/more_indexing.py: the masked last dim stays whole
LAST_DIM_WHOLE |= {"view_dtype"}  # pypto/ops/shape.py: elements of two sizes share the last dim's bytes


def leading_tile(vec, shape):
    """Upstream's rule for the tile of a rank-R tensor under a vector tile of at least R sizes:
    the first R sizes, each clipped to its dim (a 1-D ``gamma`` under ``(4, 64)`` tiles by 4).
    None when the tile has fewer sizes (the op then takes `default_tile`)."""
    if vec is None or len(vec) < len(shape):
        return None
    return tuple(min(t, s) if isinstance(s, int) and s > 0 else t for t, s in zip(vec, shape))


def default_tile(shape, budget: int = DEFAULT_TILE_ELEMENTS) -> tuple:
    """A tile of at most ``budget`` elements: the whole last dim when it fits, then leading dims."""
    tile = [1] * len(shape)
    for d in range(len(shape) - 1, -1, -1):
        s = shape[d]
        want = s if isinstance(s, int) else 256
        t = max(1, min(want, budget))
        tile[d] = t
        budget = max(1, budget // t)
    return tuple(tile)


def default_budget(op) -> int:
    """Elements per default tile of ``op``: DEFAULT_TILE_ELEMENTS, fewer when the tiles of all its
    operands and results at that size would not fit UB together (``where(c, a, b)`` in fp32 has
    four), so that a default never makes a valid op overflow."""
    from ..runtime.machine import current_machine

    operands = (*getattr(op, "inputs", ()), *getattr(op, "outputs", ()))  # a _FakeOp has none
    per_element = sum(v.dtype.itemsize for v in operands if isinstance(v, Value))
    return max(1, min(DEFAULT_TILE_ELEMENTS, current_machine().capacity("UB") // max(1, per_element)))


def fit_tile(tile, itemsize: int, budget: int = FRAMEWORK_TILE_BYTES) -> tuple:
    """``tile`` with its leading dims cut down until it holds at most ``budget`` bytes (the last
    dim is cut only when one row alone is too big). Symbolic sizes are left alone."""
    tile = list(tile)
    for d in range(len(tile)):
        if any(not isinstance(t, int) for t in tile):
            break
        rest = itemsize
        for t in tile[d + 1:]:
            rest *= t
        if rest * tile[d] <= budget:
            break
        tile[d] = max(1, budget // rest)
    return tuple(tile)


class Expander:
    """Builds the tile ops of one segment. ``views`` maps a view's value id to its view op."""

    def __init__(self, views: dict, new_id, new_value):
        self.views = views
        self.new_id = new_id
        self.new_value = new_value
        self.ops: list[TileOp] = []
        self.out_access: dict = {}  # value id -> Access the producing tile op writes (logical)
        self.gm_results: set = set()  # ids of values written whole, GM to GM (`whole`): no UB tile

    # ---- helpers -------------------------------------------------------------------------------
    def resolve(self, v: Value):
        """(storage value, base offsets, valid extent) of ``v``, following view chains."""
        extent = v.valid_shape
        base = (0,) * v.rank
        while v.id in self.views:
            op = self.views[v.id]
            base = tuple(E.simplify_dim(E.add(b, o)) for b, o in zip(base, op.attrs["offsets"]))
            v = op.inputs[0]
        return v, base, extent

    def tile_of(self, op, shape) -> tuple:
        """The tile of a tensor of ``shape`` under the op's vector tile (`leading_tile`), else a default."""
        tile = leading_tile(op.tiles.vec, shape)
        if tile is not None:
            return tile
        budget = default_budget(op)
        return tuple(min(t, s) if isinstance(s, int) and s > 0 else t
                     for t, s in zip(default_tile(shape, budget), shape))

    @staticmethod
    def grid_of(shape, tile) -> tuple:
        # a tile that is its whole dim is one tile, also when the dim is 0 at a call (ceildiv(s, s)
        # would divide by the size)
        return tuple(E.simplify_dim(E.ceildiv(s, t)) if not ((isinstance(s, int) and s <= t) or s == t) else 1
                     for s, t in zip(shape, tile))

    def access(self, v: Value, tile, axes, grid, *, extent=None, base_shift=None) -> Access:
        """Logical access of value ``v`` (views resolved) with ``tile`` and grid axis per dim."""
        storage, base, ext = self.resolve(v)
        if base_shift is not None:
            base = tuple(E.simplify_dim(E.add(b, s)) for b, s in zip(base, base_shift))
        axis = tuple(None if a is None or (isinstance(grid[a], int) and grid[a] == 1) else a for a in axes)
        return Access(storage, None, tuple(tile), base, axis, tuple(extent if extent is not None else ext))

    def emit(self, kind, inputs, outputs, grid, attrs, src_op, core="AIV"):
        op = TileOp(self.new_id(), kind, tuple(inputs), tuple(outputs), tuple(grid),
                    attrs if isinstance(attrs, MappingProxyType) else MappingProxyType(dict(attrs)),
                    src_op.id, core, src_op.loc, src_op.scope)
        self.ops.append(op)
        for a in outputs:
            if a.value.kind == "op" or a.value.kind == "workspace":
                self.out_access.setdefault(a.value.id, a)
        return op

    # ---- per op kind ---------------------------------------------------------------------------
    def expand(self, op):
        kind = op.kind
        if kind == "view" or kind == "tensor":  # a local tensor is zeroed memory (runtime/memory.py)
            return
        if kind in ELEMENTWISE:
            return self.elementwise(op)
        if kind in REDUCTIONS:
            return self.reduce(op)
        if kind == "softmax":
            return self.softmax(op)
        if kind == "assemble":
            return self.assemble(op.inputs[0], op.inputs[1], op.attrs["offsets"], op)
        if kind in ("matmul", "scaled_mm"):  # scaled_mm: pypto/ops/cube.py
            return self.matmul(op)
        if kind == "transpose":
            return self.transpose(op)
        if kind == "topk":
            return self.topk(op)
        if kind == "concat":
            return self.concat(op)
        if kind in WHOLE:
            return self.whole(op)
        if kind in LAST_DIM_WHOLE:
            return self.last_dim_whole(op)
        if kind == "permute":
            return self.permute(op)
        if kind in DIM_WHOLE:
            return self.dim_whole(op)
        if kind == "prelu":
            return self.prelu(op)
        raise ShapeError(f"internal: no tile expansion for op {kind}", loc=op.loc)

    def elementwise(self, op):
        out = op.outputs[0]
        tile = self.tile_of(op, out.shape)
        grid = self.grid_of(out.shape, tile)
        R = out.rank
        ins = []
        for v in op.inputs:
            r = v.rank
            shp, axes = [], []
            for k in range(r):
                d = k + R - r
                bcast = isinstance(v.shape[k], int) and v.shape[k] == 1 and not (
                    isinstance(out.shape[d], int) and out.shape[d] == 1)
                shp.append(1 if bcast else tile[d])
                axes.append(None if bcast else d)
            ins.append(self.access(v, shp, axes, grid))
        outs = [self.access(out, tile, range(R), grid)]
        self.emit(op.kind, ins, outs, grid, op.attrs, op)

    def reduce(self, op, kind=None, x=None, out=None):
        kind = kind or op.kind
        x = x or op.inputs[0]
        out = out or op.outputs[0]
        d, keep = op.attrs["dim"], op.attrs["keepdim"]
        tile = self.tile_of(op, x.shape)
        grid = self.grid_of(x.shape, tile)
        R = x.rank
        inp = self.access(x, tile, range(R), grid)
        out_axes = [a for a in range(R) if keep or a != d]
        out_tile = [1 if a == d else tile[a] for a in out_axes]
        if isinstance(grid[d], int) and grid[d] == 1:  # the reduced dim fits in one tile
            acc = self.access(out, out_tile, [None if a == d else a for a in out_axes], grid)
            self.emit(kind, [inp], [acc], grid, {"dim": d, "keepdim": keep}, op)
            return
        # partial reduction per tile into a workspace [.., tiles along d, ..], then combine
        pdt = DT_FP32 if x.dtype.is_float else (DT_INT64 if x.dtype in (DT_INT32, DT_INT64) else x.dtype)
        pshape = tuple(grid[a] if a == d else x.shape[a] for a in range(R))
        # only tiles holding valid elements of x have a partial, and only x's valid rows (columns
        # ...) of it: the combine (and whatever the leaf fuses after it) never reads the rest
        pvalid = tuple(E.simplify_dim(E.ceildiv(x.valid_shape[a], tile[a])) if a == d else x.valid_shape[a]
                       for a in range(R))
        part = self.new_value(pdt, pshape, pvalid, f"{out.name}_partial")
        ptile = [1 if a == d else tile[a] for a in range(R)]
        pacc = Access(part, None, tuple(ptile), (0,) * R, tuple(self.access(x, tile, range(R), grid).axis),
                      pvalid)
        self.emit(kind, [inp], [pacc], grid, {"dim": d, "keepdim": True}, op)
        part, pvalid = self.combine_groups(op, kind, part, pvalid, pacc.axis, tile, grid, d)
        cgrid = tuple(1 if a == d else g for a, g in enumerate(grid))
        cin = Access(part, None, tuple(part.shape[a] if a == d else tile[a] for a in range(R)), (0,) * R,
                     tuple(None if a == d else pacc.axis[a] for a in range(R)), pvalid)
        cout = self.access(out, out_tile, [None if a == d else a for a in out_axes], cgrid)
        self.emit(kind, [cin], [cout], cgrid, {"dim": d, "keepdim": keep, "combine": True}, op)

    def combine_groups(self, op, kind, part, pvalid, axes, tile, grid, d):
        """The partials of a split reduction, combined in groups (each group's tile fitting
        FRAMEWORK_TILE_BYTES) into fewer partials until the final combine's tile fits too: one
        tile holding every partial of a long dim would not fit UB. Returns (partials, valid)."""
        row = part.dtype.itemsize
        for a, t in enumerate(tile):
            if a != d:
                if not isinstance(t, int):
                    return part, pvalid
                row *= t
        group = max(2, FRAMEWORK_TILE_BYTES // row)
        R = len(tile)
        while isinstance(part.shape[d], int) and part.shape[d] > group:
            n = -(-part.shape[d] // group)
            valid = tuple(E.simplify_dim(E.ceildiv(pvalid[a], group)) if a == d else pvalid[a] for a in range(R))
            merged = self.new_value(part.dtype, tuple(n if a == d else s for a, s in enumerate(part.shape)), valid,
                                    f"{part.name}_group")
            ggrid = tuple(n if a == d else g for a, g in enumerate(grid))
            gin = Access(part, None, tuple(group if a == d else tile[a] for a in range(R)), (0,) * R, axes, pvalid)
            gout = Access(merged, None, tuple(1 if a == d else tile[a] for a in range(R)), (0,) * R, axes, valid)
            self.emit(kind, [gin], [gout], ggrid, {"dim": d, "keepdim": True, "combine": True}, op)
            part, pvalid = merged, valid
        return part, pvalid

    def softmax(self, op):
        x, out = op.inputs[0], op.outputs[0]
        d = op.attrs["dim"]
        tile = self.tile_of(op, x.shape)
        grid = self.grid_of(x.shape, tile)
        if isinstance(grid[d], int) and grid[d] == 1:
            return self.elementwise_like(op, "softmax", tile, grid)
        # split across tiles: max, exp(x - max), sum, divide, with fp32 intermediates
        keep = tuple(1 if a == d else s for a, s in enumerate(x.shape))
        keep_valid = tuple(1 if a == d else s for a, s in enumerate(x.valid_shape))
        # the intermediates are as valid as x: a tail tile's rows past the valid ones are never
        # computed, so nothing downstream (a fused reduction over them) may read them
        f32 = lambda name, shape=x.shape, valid=x.valid_shape: self.new_value(  # noqa: E731
            DT_FP32, shape, valid, f"{out.name}_{name}")
        # fp32 operands need no cast: the input is read directly and the quotient is the output
        xf = x if x.dtype is DT_FP32 else f32("x")
        m, z, e = f32("max", keep, keep_valid), f32("shifted"), f32("exp")
        s, y = f32("sum", keep, keep_valid), (out if out.dtype is DT_FP32 else f32("div"))
        fake = _FakeOp(op)
        if xf is not x:
            self.unary_like(fake, "cast", x, xf, tile, grid, {"dtype": DT_FP32, "mode": 0, "satmode": 0})
        fake.attrs = {"dim": d, "keepdim": True}
        self.reduce(fake, "amax", xf, m)
        self.binary_like(fake, "sub", xf, m, z, tile, grid)
        self.unary_like(fake, "exp", z, e, tile, grid, {})
        self.reduce(fake, "sum", e, s)
        self.binary_like(fake, "div", e, s, y, tile, grid)
        if y is not out:
            self.unary_like(fake, "cast", y, out, tile, grid, {"dtype": out.dtype, "mode": 0, "satmode": 0})

    def elementwise_like(self, op, kind, tile, grid):
        x, out = op.inputs[0], op.outputs[0]
        R = x.rank
        self.emit(kind, [self.access(x, tile, range(R), grid)], [self.access(out, tile, range(R), grid)], grid,
                  op.attrs, op)

    def unary_like(self, op, kind, x, out, tile, grid, attrs):
        R = x.rank
        self.emit(kind, [self.access(x, tile, range(R), grid)], [self.access(out, tile, range(R), grid)], grid,
                  attrs, op)

    def binary_like(self, op, kind, a, b, out, tile, grid):
        R = a.rank
        bt = [1 if (isinstance(s, int) and s == 1) else t for s, t in zip(b.shape, tile)]
        bx = [None if (isinstance(s, int) and s == 1) else k for k, s in enumerate(b.shape)]
        flags = (tuple(False for _ in range(R)), tuple(x is None for x in bx))
        self.emit(kind, [self.access(a, tile, range(R), grid), self.access(b, bt, bx, grid)],
                  [self.access(out, tile, range(R), grid)], grid, {"bcast": flags}, op)

    def assemble(self, src, dst, offsets, op, tile=None):
        prod = self.out_access.get(src.id)
        # a copy of a tiled result moves the producer's tiles (and fuses with it); a result written
        # GM to GM by a whole-tensor op has no tile to follow
        if tile is None and prod is not None and src.id not in self.views and src.id not in self.gm_results:
            tile = prod.shape
        if tile is None or any(not isinstance(t, int) for t in tile):
            vec = op.tiles.vec
            # a copy tiles its source like upstream's assemble: dims past the tile's sizes take its last size
            tile = tuple(vec[min(d, len(vec) - 1)] for d in range(src.rank)) if vec else default_tile(src.shape)
            tile = tuple(min(t, s) if isinstance(s, int) and s > 0 else t for t, s in zip(tile, src.shape))
            tile = fit_tile(tile, src.dtype.itemsize)
        grid = self.grid_of(src.shape, tile)
        R = src.rank
        inp = self.access(src, tile, range(R), grid)
        _, dbase, dext = self.resolve(dst)
        # only the valid part of src is written, clipped at dst's edge
        ext = tuple(E.simplify_dim(E.emin(sv, E.emax(E.sub(de, o), 0)))
                    for sv, de, o in zip(src.valid_shape, dext, offsets))
        outp = self.access(dst, tile, range(R), grid, extent=ext, base_shift=offsets)
        self.emit("copy_out", [inp], [outp], grid, {}, op)

    def matmul(self, op):
        a, b = op.inputs[0], op.inputs[1]
        out = op.outputs[0]
        R = out.rank
        at, bt = op.attrs["a_trans"], op.attrs["b_trans"]
        M, N = out.shape[-2], out.shape[-1]
        cube = op.tiles.cube
        mt = cube[0][0] if cube else 128
        nt = cube[2][0] if cube else 128
        mt = min(mt, M) if isinstance(M, int) else mt
        nt = min(nt, N) if isinstance(N, int) else nt
        tile = (1,) * (R - 2) + (mt, nt)
        grid = self.grid_of(out.shape, tile)
        K = a.shape[-2] if at else a.shape[-1]

        def operand(v, row_axis, rows, trans, is_a):
            shp, axes = [], []
            for k in range(R - 2):
                bcast = isinstance(v.shape[k], int) and v.shape[k] == 1 and not (
                    isinstance(out.shape[k], int) and out.shape[k] == 1)
                shp.append(1)
                axes.append(None if bcast else k)
            mn = [rows, K] if (is_a and not trans) or (not is_a and trans) else [K, rows]
            ax = [row_axis, None] if (is_a and not trans) or (not is_a and trans) else [None, row_axis]
            return self.access(v, shp + mn, axes + ax, grid)

        attrs = dict(op.attrs)
        attrs["k_tile"] = cube[1][0] if cube else 64
        attrs["k_l1"] = cube[1][1] if cube else 256
        attrs["k_dims"] = (-2 if at else -1, -1 if bt else -2)  # where K sits in each operand
        if cube and cube[3] and op.kind == "matmul" and not (isinstance(K, int) and K <= attrs["k_l1"]):
            epilogue = [k for k in ("scale", "scale_tensor", "relu") if k in attrs]
            if epilogue:  # the partial products meet in GM: the cube's output path never sees the sum
                raise DTypeError("pypto.matmul: fixpipe (scale, scale_tensor) and ReLU are not supported with "
                                 "split-K (enable_split_k: GM accumulation)", expected="no " + ", ".join(epilogue),
                                 got=", ".join(epilogue), param="extend_params", loc=op.loc)
            return self.matmul_split_k(op, operand, grid, tile, K, attrs)
        ins = [operand(a, R - 2, mt, at, True), operand(b, R - 1, nt, bt, False)]
        if op.kind == "scaled_mm":  # block scales: the rows (columns) of this tile, every K block
            sa, sb = op.inputs[2], op.inputs[3]
            kb = sa.shape[0] if op.attrs["scale_a_trans"] else sa.shape[1]
            ins.append(self.access(sa, [kb, mt, 2] if op.attrs["scale_a_trans"] else [mt, kb, 2],
                                   [None, R - 2, None] if op.attrs["scale_a_trans"] else [R - 2, None, None], grid))
            ins.append(self.access(sb, [nt, kb, 2] if op.attrs["scale_b_trans"] else [kb, nt, 2],
                                   [R - 1, None, None] if op.attrs["scale_b_trans"] else [None, R - 1, None], grid))
        for key in ("bias", "scale_tensor"):
            if key in op.attrs:
                ins.append(self.column_access(op.inputs[op.attrs[key]], out, nt, grid))
        self.emit(op.kind, ins, [self.access(out, tile, range(R), grid)], grid, attrs, op, core="AIC")

    def column_access(self, v, out, nt, grid):
        """A per-column epilogue operand ([N], [1, N], [.., 1, N]) of a matmul tile: the tile's
        columns, the tile's batch entry along batch dims v has (size > 1), one row."""
        R = out.rank
        shp, axes = [], []
        for k in range(v.rank):
            d = k + R - v.rank
            if d == R - 1:
                shp.append(nt)
                axes.append(R - 1)
            else:
                shp.append(1)
                axes.append(d if d < R - 2 and not (isinstance(v.shape[k], int) and v.shape[k] == 1) else None)
        return self.access(v, shp, axes, grid)

    def matmul_split_k(self, op, operand, grid, tile, K, attrs):
        """enable_split_k: one cube task per (output tile, K chunk of kL1) writes a partial product
        to a GM workspace; a vector task per output tile sums the chunks (then adds the bias)."""
        a, b, out = op.inputs[0], op.inputs[1], op.outputs[0]
        R = out.rank
        kl1 = attrs["k_l1"]
        kt = E.simplify_dim(E.ceildiv(K, kl1))
        kgrid = (*grid, kt)
        ka, kb = operand(a, R - 2, tile[-2], attrs["a_trans"], True), operand(b, R - 1, tile[-1], attrs["b_trans"],
                                                                                False)

        def chunk(acc, kdim):
            shape, axis = list(acc.shape), list(acc.axis)
            shape[kdim], axis[kdim] = kl1, R  # K advances with the new last grid axis
            return Access(acc.value, None, tuple(shape), acc.base, tuple(axis), acc.extent)

        pdt = DT_INT32 if a.dtype.is_int else DT_FP32
        # the partial products are as valid as the output: what a fused op after the combining
        # sum reads must have been written
        part = self.new_value(pdt, (kt, *out.shape), (kt, *out.valid_shape), f"{out.name}_splitk")
        pacc = Access(part, None, (1, *tile), (0,) * (R + 1), (R, *range(R)), part.valid_shape)
        pattrs = {k: v for k, v in attrs.items() if k not in ("bias", "same_dtype")}  # fp32 partial sums
        self.emit("matmul", [chunk(ka, attrs["k_dims"][0]), chunk(kb, attrs["k_dims"][1])], [pacc], kgrid,
                  pattrs, op, core="AIC")
        # the combine loads every chunk of its tile at once: fewer rows per tile when they would not fit
        if isinstance(kt, int):
            tile = fit_tile(tile, pdt.itemsize, max(pdt.itemsize, FRAMEWORK_TILE_BYTES // kt))
            grid = self.grid_of(out.shape, tile)
        cin = Access(part, None, (kt, *tile), (0,) * (R + 1), (None, *range(R)), part.valid_shape)
        target = out
        if "bias" in op.attrs:
            target = self.new_value(pdt, out.shape, out.valid_shape, f"{out.name}_acc")
        self.emit("sum", [cin], [self.access(target, tile, range(R), grid)], grid,
                  {"dim": 0, "keepdim": False, "combine": True}, op)
        if "bias" in op.attrs:
            bacc = self.column_access(op.inputs[op.attrs["bias"]], out, tile[-1], grid)
            flags = (tuple(False for _ in range(R)), bcast_flags(op.inputs[op.attrs["bias"]].shape, out.shape))
            self.emit("add", [self.access(target, tile, range(R), grid), bacc], [self.access(out, tile, range(R), grid)],
                      grid, {"bcast": flags}, op)

    def transpose(self, op):
        """The vector tile follows the input's dims (as upstream); the output tile swaps two sizes."""
        x, out = op.inputs[0], op.outputs[0]
        d0, d1 = op.attrs["dims"]
        perm = list(range(out.rank))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        itile = self.tile_of(op, x.shape)
        tile = tuple(itile[perm[j]] for j in range(out.rank))
        grid = self.grid_of(out.shape, tile)
        self.emit("transpose", [self.access(x, itile, perm, grid)], [self.access(out, tile, range(out.rank), grid)],
                  grid, op.attrs, op)

    def topk(self, op):
        x = op.inputs[0]
        d = op.attrs["dim"]
        tile = list(self.tile_of(op, x.shape))
        if isinstance(x.shape[d], int) and isinstance(tile[d], int) and tile[d] < x.shape[d]:
            return self.tiled_topk(op, tile)
        tile[d] = x.shape[d]  # the sorted dim stays whole
        grid = self.grid_of(x.shape, tile)
        R = x.rank
        otile = [op.attrs["k"] if a == d else t for a, t in enumerate(tile)]
        outs = [self.access(v, otile, range(R), grid) for v in op.outputs]
        self.emit("topk", [self.access(x, tile, range(R), grid)], outs, grid, op.attrs, op)

    def tiled_topk(self, op, tile):
        """topk along a dim longer than its tile: each tile's sorted top-k candidates (indices
        offset by the tile's start, an arange of tile starts) into a workspace, then merges of
        groups of candidate lists, as many as fit a framework tile, until one list is left."""
        x = op.inputs[0]
        d, k, largest = op.attrs["dim"], op.attrs["k"], op.attrs["largest"]
        R = x.rank
        T = tile[d]
        n = -(-x.shape[d] // T)
        kc = min(k, T)
        grid = self.grid_of(x.shape, tile)
        starts = self.new_value(DT_INT32, (n,), (n,), f"{op.outputs[0].name}_tile_start")
        self.emit("arange", [], [Access(starts, None, (n,), (0,), (None,), (n,))], (),
                  {"start": 0, "step": T, "n": n, "dtype": DT_INT32}, op)
        self.gm_results.add(starts.id)
        nvalid = E.simplify_dim(E.ceildiv(x.valid_shape[d], T))

        def lists(count, per, valid_count, name):
            """Workspaces of ``count`` candidate lists of ``per`` along d (values, indices)."""
            shape = tuple(count * per if a == d else s for a, s in enumerate(x.shape))
            valid = tuple(E.simplify_dim(E.mul(valid_count, per)) if a == d else s
                          for a, s in enumerate(x.valid_shape))
            return [self.new_value(dt, shape, valid, f"{op.outputs[0].name}_{name}") for dt in (x.dtype, DT_INT32)]

        cand = lists(n, kc, nvalid, "candidates")
        ltile = [kc if a == d else t for a, t in enumerate(tile)]
        self.emit("topk_partial", [self.access(x, tile, range(R), grid), self.access(starts, [1], [d], grid)],
                  [self.access(v, ltile, range(R), grid) for v in cand], grid,
                  {"k": kc, "dim": d, "largest": largest}, op)
        rows = 1
        for a, t in enumerate(tile):
            rows *= t if a != d and isinstance(t, int) else 1
        while True:
            group = max(2, FRAMEWORK_TILE_BYTES // (rows * kc * (x.dtype.itemsize + 4)))
            final = n <= group
            group = n if final else group
            groups = -(-n // group)
            knext = k if final else min(k, group * kc)
            mgrid = tuple(groups if a == d else g for a, g in enumerate(grid))
            itile = [group * kc if a == d else t for a, t in enumerate(tile)]
            otile = [knext if a == d else t for a, t in enumerate(tile)]
            nvalid = E.simplify_dim(E.ceildiv(nvalid, group))
            outs = list(op.outputs) if final else lists(groups, knext, nvalid, "merged")
            self.emit("topk_merge", [self.access(v, itile, range(R), mgrid) for v in cand],
                      [self.access(v, otile, range(R), mgrid) for v in outs], mgrid,
                      {"k": knext, "dim": d, "largest": largest, "final": final}, op)
            if final:
                return
            cand, n, kc = outs, groups, knext

    def concat(self, op):
        out = op.outputs[0]
        d = op.attrs["dim"]
        offset = 0
        for v in op.inputs:
            offs = tuple(offset if a == d else 0 for a in range(out.rank))
            self.assemble(v, out, offs, op)
            offset = E.simplify_dim(E.add(offset, v.shape[d]))

    def whole(self, op):
        """An op applied to whole tensors in one tile (reshape, gather ...): GM to GM on one core."""
        ins = [self.access(v, v.shape, [None] * v.rank, ()) for v in op.inputs]
        if op.kind in PAGED_GATHERS:
            ins[0] = self.cache_from(op.inputs[0])
        outs = [self.access(v, v.shape, [None] * v.rank, ()) for v in op.outputs]
        core = "AIC" if REGISTRY[op.kind].kind == "cube" else "AIV"  # conv runs on the cube
        self.emit(op.kind, ins, outs, (), op.attrs, op, core=core)
        self.gm_results.update(v.id for v in op.outputs)

    def cache_from(self, v):
        """The paged cache a gather reads through ``v``: every row of the storage from the view's
        first row on (the hardware takes the view as the cache's base address; block tables
        address rows past the view's own extent), the view's columns."""
        storage, base, ext = self.resolve(v)
        rows = E.simplify_dim(E.sub(storage.shape[0], base[0]))
        valid = E.simplify_dim(E.sub(storage.valid_shape[0], base[0]))
        return Access(storage, None, (rows, *v.shape[1:]), base, (None,) * v.rank, (valid, *ext[1:]))

    def last_dim_whole(self, op):
        """Tiles over the output's leading dims; every operand keeps its last dim whole (one_hot's
        classes, the interleaved rows). A lower-rank operand lines up with the leading dims."""
        out = op.outputs[0]
        R = out.rank
        tile = list(self.tile_of(op, out.shape))
        tile[-1] = out.shape[-1]
        grid = self.grid_of(out.shape, tile)

        def acc(v):
            if v.rank < R:
                return self.access(v, tile[:v.rank], range(v.rank), grid)
            return self.access(v, tile[:-1] + [v.shape[-1]], range(R), grid)

        self.emit(op.kind, [acc(v) for v in op.inputs], [acc(v) for v in op.outputs], grid, op.attrs, op)

    def permute(self, op):
        """Output tiles; input dim k moves with output dim j where dims[j] == k. The vector tile
        follows the input's dims (as upstream): output dim j is tiled by the size of input dim dims[j]."""
        x, out = op.inputs[0], op.outputs[0]
        perm = op.attrs["dims"]
        itile = self.tile_of(op, x.shape)
        tile = tuple(itile[perm[j]] for j in range(out.rank))
        grid = self.grid_of(out.shape, tile)
        inv = [perm.index(k) for k in range(out.rank)]
        self.emit("permute", [self.access(x, [tile[inv[k]] for k in range(x.rank)], inv, grid)],
                  [self.access(out, tile, range(out.rank), grid)], grid, op.attrs, op)


    def dim_whole(self, op):
        """Tiles over every dim but those in ``attrs['dim']``/``attrs['dims']``, which each operand
        keeps whole (scans, argsort, argmax/argmin, var, online softmax). Operands of the first
        input's rank line up dim by dim (a size-1 reduced dim stays 1); a lower-rank operand
        (keepdim=False) lines up with the kept dims."""
        x = op.inputs[0]
        R = x.rank
        dims = tuple(op.attrs["dims"]) if "dims" in op.attrs else (op.attrs["dim"],)
        tile = self.whole_dims_tile(op, x.shape, dims)
        grid = self.grid_of(x.shape, tile)

        def acc(v):
            axes = list(range(R)) if v.rank == R else [a for a in range(R) if a not in dims]
            shp = [v.shape[k] if a in dims else tile[a] for k, a in enumerate(axes)]
            return self.access(v, shp, [None if a in dims else a for a in axes], grid)

        self.emit(op.kind, [acc(v) for v in op.inputs], [acc(v) for v in op.outputs], grid, op.attrs, op)

    def whole_dims_tile(self, op, shape, dims) -> list:
        """The op's vec tile (or a default within DEFAULT_TILE_ELEMENTS) with ``dims`` whole."""
        tile = leading_tile(op.tiles.vec, shape)
        if tile is not None:
            tile = list(tile)
        else:
            budget = DEFAULT_TILE_ELEMENTS
            for d in dims:
                budget //= shape[d] if isinstance(shape[d], int) and shape[d] > 0 else 256
            tile = [1] * len(shape)
            for d in range(len(shape) - 1, -1, -1):
                if d in dims:
                    continue
                want = shape[d] if isinstance(shape[d], int) else 256
                tile[d] = max(1, min(want, max(1, budget)))
                budget = max(1, budget // tile[d])
        for d in dims:
            tile[d] = shape[d]
        return tile

    def prelu(self, op):
        """Elementwise tiles of the input; the 1-D weight moves with the channel dim (dim 1), or is
        the single weight of a 1-D input."""
        x, w = op.inputs
        out = op.outputs[0]
        R = out.rank
        tile = self.tile_of(op, out.shape)
        grid = self.grid_of(out.shape, tile)
        wacc = self.access(w, [1], [None], grid) if R == 1 else self.access(w, [tile[1]], [1], grid)
        self.emit("prelu", [self.access(x, tile, range(R), grid), wacc], [self.access(out, tile, range(R), grid)],
                  grid, op.attrs, op)


class _FakeOp:
    """Carries a tensor op's id, tiles and location for ops synthesised from it."""

    def __init__(self, op):
        self.id, self.tiles, self.loc, self.kind, self.scope = op.id, op.tiles, op.loc, op.kind, op.scope
        self.attrs = dict(op.attrs)


def expand_segment(ops, views, new_id, new_value) -> list:
    ex = Expander(views, new_id, new_value)
    for op in ops:
        ex.expand(op)
    return ex.ops


def is_move(kind: str) -> bool:
    return REGISTRY.get(kind) is not None and REGISTRY[kind].kind == "move"
