"""naiad: a screen CSV in the official repository's raw layout (NeptuneBio/NAIAD, ``tutorials/data/*_gamma.csv``).

The real files start with a UTF-8 byte-order mark, have the header ``id1,id2,score``, give each gene's single effect
in rows paired with ``negative`` (in either column, repeated per guide) and list some pairs more than once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

N_GENES = 30
"""Genes of the tiny screen: all 435 pairs, enough for the paper_data smoke presets."""


def write_screen(folder: Path, n_genes: int = N_GENES, seed: int = 0) -> Path:
    """A made-up screen of ``n_genes`` genes: two single rows per gene, every pair, three pairs repeated reversed."""
    rng = np.random.default_rng(seed)
    genes = [f"G{i:02d}" for i in range(n_genes)]
    single = rng.normal(-0.1, 0.2, n_genes)
    rows = ["\ufeffid1,id2,score"]
    for i, g in enumerate(genes):
        rows.append(f"{g},negative,{single[i] + 0.01:.9f}")
        rows.append(f"negative,{g},{single[i] - 0.01:.9f}")  # mean of the two: single[i]
    for i in range(n_genes):
        for j in range(i + 1, n_genes):
            y = single[i] + single[j] + 0.5 * single[i] * single[j] + rng.normal(0, 0.02)
            rows.append(f"{genes[i]},{genes[j]},{y:.9f}")
    for i, j in ((0, 1), (2, 5), (7, 3)):  # repeated with the ids swapped: averaged by the loader
        rows.append(f"{genes[j]},{genes[i]},{-0.5:.9f}")
    rows.append("negative,negative,0.0")
    path = folder / "norman_gamma.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_paper_data(folder: Path) -> dict[str, str]:
    return {"data_path": str(write_screen(folder))}


FILES = {"paper_data_small_sample": write_paper_data, "paper_data_active_learning": write_paper_data}
