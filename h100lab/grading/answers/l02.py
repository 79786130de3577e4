"""Exercise set 2 (chapter 2, "Clusters, PTX, data types and state spaces").

Every reference answer is computed by the model the chapter teaches (h100lab.cluster, h100lab.ptx,
h100lab.memory.spaces), never typed in.
"""
from __future__ import annotations

from ..registry import exercise


def _same_statement(a, b) -> bool:
    """Two asm statements are the same up to whitespace."""
    return isinstance(a, str) and " ".join(a.split()) == " ".join(str(b).split())


@exercise("2.1", points=1, hint="rank = x + nx·(y + ny·z) with (x, y, z) = %cluster_ctaid and (nx, ny, nz) the "
          "cluster shape: h100lab.cluster.cta_rank.")
def _rank():
    from h100lab.cluster import cta_rank

    return cta_rank((1, 0, 1), (2, 2, 2))


@exercise("2.2", points=1, hint="Block (6, 3) of a grid of 8 × 4 in clusters of 4 × 2: special_registers(...).cluster_ctarank.")
def _rank_of_block():
    from h100lab.cluster import special_registers

    return special_registers((6, 3), (8, 4), (4, 2)).cluster_ctarank


@exercise("2.3", points=1, hint="Element 0 goes in bits 0-15: pack([x0, x1], '.bf16x2').")
def _pack_bf16x2():
    from h100lab.ptx import pack

    return pack([1.5, -0.25], ".bf16x2")


@exercise("2.4", points=2, hint="cvt.rn.bf16x2.f32 d, a, b puts a in the upper half (unlike memory order); "
          "cvt_x2(a, b, '.bf16x2') computes what the instruction produces.")
def _cvt_operands():
    from h100lab.ptx import cvt_x2

    return cvt_x2(1.5, -0.25, ".bf16x2")


@exercise("2.5", points=2, hint="build('fma.rn.f32 {acc}, {a}, {b}, {acc};', acc=inout('float', 'acc'), "
          "a=inp('float', 'x'), b=inp('float', 'y')).text", equal=_same_statement)
def _asm_text():
    from h100lab.ptx import build, inout, inp

    return build("fma.rn.f32 {acc}, {a}, {b}, {acc};", acc=inout("float", "acc"), a=inp("float", "x"),
                 b=inp("float", "y")).text


@exercise("2.6", points=1, hint="A constraint letter follows the C++ type: constraint_for('unsigned long long').")
def _letter():
    from h100lab.ptx import constraint_for

    return constraint_for("unsigned long long")


@exercise("2.7", points=1, hint="AddressMap(cta_rank=1, cluster_size=2).space_of(address): the own CTA's slot is "
          ".shared::cta, another rank's only .shared::cluster.")
def _space():
    from h100lab.memory.spaces import SHARED_RESERVED, AddressMap, cluster_address

    m = AddressMap(cta_rank=1, cluster_size=2)
    return m.space_of(m.cvta(".shared::cluster", cluster_address(0, SHARED_RESERVED)))


@exercise("2.8", points=1, hint="Byte address r·128 + c·2, bank (address / 4) mod 32: tile_banks(64, 64, 2)[r, c].")
def _bank():
    from h100lab.memory.spaces import tile_banks

    return int(tile_banks(64, 64, 2)[37, 21])


@exercise("2.9", points=2, hint="max_active_clusters((4, 2), 256, 60000): the occupancy calculator gives the CTAs "
          "per SM, the domain rule (each CTA of a cluster on its own SM of one domain) the clusters.")
def _clusters():
    from h100lab.cluster import max_active_clusters

    return max_active_clusters((4, 2), 256, 60000)


@exercise("2.10", points=1, hint="cluster_capacity(16, 128, blocks=1, non_portable=True).idle_sms — the 8-SM virtual "
          "GPC and the singleton TPCs take no cluster of 16.")
def _idle():
    from h100lab.cluster import cluster_capacity

    return cluster_capacity(16, 128, blocks=1, non_portable=True).idle_sms


@exercise("2.11", points=1, hint="ring_exchange(4, mode='pull', sync_exit=False).error_type names the failure.")
def _race():
    from h100lab.cluster import ring_exchange

    return ring_exchange(4, mode="pull", sync_exit=False).error_type


@exercise("2.12", points=1, hint="A .shared::cta address on an H200 is (rank << 24) | offset, and the first variable "
          "is at offset 0x400: cluster_address(2, SHARED_RESERVED).")
def _cta_address():
    from h100lab.memory.spaces import SHARED_RESERVED, cluster_address

    return cluster_address(2, SHARED_RESERVED)
