"""The Hopper tensor core (lesson 6): ``wgmma.mma_async`` shapes, the shared-memory matrix descriptor and the
gather it implies, register fragments (accumulator, RS A operand, ``ldmatrix``/``stmatrix``) and the numerics
of one instruction.

* :mod:`~h100lab.tensorcore.shapes` — every legal shape/type/immediate combination of sm_90a, register counts;
* :mod:`~h100lab.tensorcore.descriptor` — the 64-bit descriptor (encode/decode) and :func:`gather`;
* :mod:`~h100lab.tensorcore.fragments` — (thread, register) ↔ (row, col) maps, ``ldmatrix``/``stmatrix``;
* :mod:`~h100lab.tensorcore.numerics` — ``D = A·B + C`` bit for bit (:class:`AccumulatorModel`).

Lesson 7 (imported by module, not re-exported): :mod:`~h100lab.tensorcore.sparsity` (``wgmma.mma_async.sp``),
:mod:`~h100lab.tensorcore.quant` (FP8 conversion and scaling), :mod:`~h100lab.tensorcore.accumulate` (two-level
accumulation), :mod:`~h100lab.tensorcore.epilogue` (stmatrix + TMA store), :mod:`~h100lab.tensorcore.timing`
(wgmma issue/latency with commit groups in flight).
"""
from .descriptor import MatrixDescriptor, addresses, canonical_lbo_sbo, gather
from .fragments import (a_fragment_layout, accumulator_layout, accumulator_owner, accumulator_to_matrix, ldmatrix,
                        matrix_to_accumulator, pack_a_fragment, stmatrix, unpack_a_fragment)
from .numerics import AccumulatorModel, default_model, mma
from .shapes import WgmmaError, WgmmaSpec, all_specs, legal_n, parse_opcode, spec

__all__ = ["MatrixDescriptor", "addresses", "canonical_lbo_sbo", "gather", "a_fragment_layout", "accumulator_layout",
           "accumulator_owner", "accumulator_to_matrix", "ldmatrix", "matrix_to_accumulator", "pack_a_fragment",
           "stmatrix", "unpack_a_fragment", "AccumulatorModel", "default_model", "mma", "WgmmaError", "WgmmaSpec",
           "all_specs", "legal_n", "parse_opcode", "spec"]
