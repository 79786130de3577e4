"""The Tensor Memory Accelerator: tensor maps (lesson 4) and the ``cp.async.bulk`` family (lesson 5).

* :mod:`~h100lab.tma.descriptor` — ``cuTensorMapEncodeTiled`` / ``...Im2col`` with the sm_90 driver's verdicts;
* :mod:`~h100lab.tma.tensor` — what a tensor copy writes: the swizzled shared-memory image, stores, reductions, im2col;
* :mod:`~h100lab.tma.l2` — a small L2 model: sectors, promotion, eviction priorities, prefetch;
* :mod:`~h100lab.tma.bulk` — raw ``cp.async.bulk``, completion (mbarrier ``complete_tx``, bulk groups), multicast;
* :mod:`~h100lab.tma.smem_plan` — a dynamic-shared-memory layout planner;
* :mod:`~h100lab.tma.pipeline` — TMA work in lesson 3's simulator.
"""
from .bulk import (AsyncOp, BulkCopyError, BulkGroups, BulkHazard, GlobalMemory, bulk_copy_global_to_shared,
                   bulk_copy_multicast, bulk_copy_shared_to_cluster, bulk_copy_shared_to_global, bulk_reduce,
                   mask_ranks, prefetch_bulk, prefetch_tensor, tensor_load, tensor_load_multicast, tensor_reduce,
                   tensor_store)
from .descriptor import (DocumentationWarning, TensorMap, TensorMapError, Verdict, encode_im2col, encode_tiled,
                         row_major_strides, verdict, verdict_im2col)
from .enums import DATA_TYPES, data_type, numpy_dtype, promotion_bytes
from .l2 import CachePolicy, L2Cache, createpolicy_fractional, createpolicy_range
from .smem_plan import SmemPlan, plan_smem, tile_alignment
from .tensor import (COORD_GRANULE, OOB_NAN, TF32_NAN, BoxMap, TmaFault, box_map, column_addresses, global_segments,
                     im2col_pixels, load, load_im2col, reduce, smem_address, store, tf32_round, write_mask)

__all__ = ["DocumentationWarning", "TensorMap", "TensorMapError", "Verdict", "encode_im2col", "encode_tiled",
           "row_major_strides", "verdict", "verdict_im2col", "DATA_TYPES", "data_type", "numpy_dtype",
           "promotion_bytes", "OOB_NAN", "TF32_NAN", "COORD_GRANULE", "tf32_round", "write_mask", "BoxMap", "TmaFault", "box_map", "global_segments", "im2col_pixels", "load",
           "load_im2col", "reduce", "smem_address", "store", "column_addresses", "CachePolicy", "L2Cache", "createpolicy_fractional",
           "createpolicy_range", "SmemPlan", "plan_smem", "tile_alignment", "AsyncOp", "BulkCopyError", "BulkGroups",
           "BulkHazard", "GlobalMemory", "bulk_copy_global_to_shared", "bulk_copy_multicast",
           "bulk_copy_shared_to_cluster", "bulk_copy_shared_to_global", "bulk_reduce", "mask_ranks", "prefetch_bulk",
           "prefetch_tensor", "tensor_load", "tensor_load_multicast", "tensor_reduce", "tensor_store"]
