"""Sizes as every message says them: in binary units (KiB, MiB, GiB: 2^10, 2^20, 2^30 bytes), the
units the caps are defined in (`50 * MiB` a file, `200 * MiB` unzipped), so a cap reads back as the
number written ("50 MiB"), never as a converted one ("52 MB", issue 45). docs/*.md say the same."""

from __future__ import annotations

KiB, MiB, GiB = 2**10, 2**20, 2**30


def size_text(n: float) -> str:
    """`n` bytes for a message: "50 MiB", "52.4 MiB", "4 KiB", "50 GiB" (one decimal, dropped when 0)."""
    unit, name = (GiB, "GiB") if n >= GiB else (MiB, "MiB") if n >= MiB else (KiB, "KiB")
    return f"{n / unit:.1f}".removesuffix(".0") + f" {name}"
