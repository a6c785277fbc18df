"""pypto: a pure-Python PyPTO with a CPU simulator that computes the real numbers.

Write a kernel with ``@pypto.jit`` and annotated tensor parameters, call it with torch tensors,
and inspect every stage with ``kernel.inspect(...)``, ``kernel.cache_info()`` and
``kernel.last_run``.
"""

from . import frontend
from .dtypes import *  # noqa: F401,F403 - DT_* names
from .dtypes import DataType, DType, bytes_of
from .element import Element, element
from .enums import *  # noqa: F401,F403 - CastMode, TileOpFormat, OpType, ROUND_UP ...
from .errors import (AnnotationError, ArgumentTypeError, ArgumentValueError, BackendUnavailableError, DTypeError,
                     KernelRuntimeError, KernelSyntaxError, OptionError, PyptoError, ShapeError,
                     UnsupportedDTypeError)
from .frontend.recording import function
from .frontend.host_tensor import from_torch
from .frontend.control import (cond, get_cube_tile_shapes, get_vec_tile_shapes, is_loop_begin, is_loop_end, loop,
                               loop_unroll, set_cube_tile_shapes, set_vec_tile_shapes)
from .frontend.jit import JitFunction, jit
from .frontend.scalar import SymbolicScalar, SymInt, ceildiv
from .ir.solver import SatStatus
from .element import Element, element
from .frontend.scalar import sym_max as max  # noqa: A001 - upstream names
from .frontend.scalar import sym_min as min  # noqa: A001
from .frontend.signature import DYN, DYNAMIC, STATIC, StatusType
from .frontend.tensor import Tensor
from .ops import *  # noqa: F401,F403 - the operators
from . import experimental  # noqa: E402 - pypto.experimental.online_softmax ...
from .options import (CompStage, RunMode, get_codegen_options, get_debug_options, get_host_options,
                      get_pass_options, get_runtime_options, get_verify_options, options, reset_options,
                      set_codegen_options, set_debug_options, set_host_options, set_options, set_pass_options,
                      set_runtime_options, set_verify_options)
from .record import CacheInfo, CompiledKernel, PassSnapshot, RunRecord
from .runtime.machine import MachineModel, current_machine as get_machine, set_machine
from . import error, pypto_impl, runtime  # noqa: E402 - upstream's pypto.error and pypto.runtime._device_* names
from . import _controller, logging  # noqa: E402 - upstream's pypto._controller, pypto.logging
from .config import (TileL1Info, TileL0Info, get_conv_tile_shapes, get_global_config, get_matrix_size,  # noqa: E402
                     get_print_options, get_semantic_label, reset_global_config, set_conv_tile_shapes,
                     set_global_config, set_matrix_size, set_print_options, set_semantic_label)
from .logging import (CheckError, InternalError, LogLevel, check, get_log_level, internal_check,  # noqa: E402
                      log_debug, log_error, log_event, log_fatal, log_info, log_warn, raise_error, set_log_level)
from .pass_config import (PassConfigKey, PassConfigs, get_pass_config, get_pass_configs,  # noqa: E402
                          get_pass_default_config, set_pass_config, set_pass_default_config)
from .platform import platform  # noqa: E402 - the Platform object, as upstream
from .runtime.verify import set_verify_golden_data  # noqa: E402
from .runtime.pass_bisect import bisect_passes  # noqa: E402

from . import symbolic_scalar as _symbolic_scalar_module  # noqa: E402,F401 - `from pypto.symbolic_scalar import`

tensor = Tensor  # upstream spells the local-tensor constructor ``pypto.tensor``
symbolic_scalar = SymbolicScalar  # the class, as upstream (the module stays importable by name)

__version__ = "0.1.0"
