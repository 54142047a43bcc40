"""pas: the official repository's prediction files (listar2000/prediction-powered-adaptive-shrinkage, ``data/``).

``data/galaxy/galaxy_test_prediction.csv``: one row per galaxy with ``galaxyID, true_label, pred_label, dr7objid,
WVT_BIN`` (classes 0-6; 3-5 count as spiral). ``data/amazon/amazon_review.h5``: one dataset per product id, a
(2, n) array of star ratings and the fine-tuned BERT's predicted ratings.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_galaxy_csv(path: Path, seed: int = 0, bins: tuple[int, ...] = (70, 3, 12, 5, 41, 8),
                     per_bin: int = 30) -> np.ndarray:
    """Made-up galaxies in the official column order, bins interleaved (out of order); returns the rows."""
    rng = np.random.default_rng(seed)
    rows = [(1000 + i, int(rng.integers(0, 7)), int(rng.integers(0, 7)), 587730022795182299 + i,
             bins[i % len(bins)]) for i in range(per_bin * len(bins))]
    with open(path, "w") as fh:
        fh.write("galaxyID,true_label,pred_label,dr7objid,WVT_BIN\n")
        fh.writelines(",".join(map(str, r)) + "\n" for r in rows)
    return np.array(rows)


def write_amazon_h5(path: Path, seed: int = 0, n_products: int = 6, n: int = 25) -> dict[str, np.ndarray]:
    """Made-up products (ids like the file's ASINs), ratings 1-5 and noisy predicted ratings; returns the arrays."""
    import h5py

    rng = np.random.default_rng(seed)
    arrays = {}
    for k in range(n_products):
        y = rng.integers(1, 6, n).astype(float)
        arrays[f"B00{k:07d}"] = np.stack([y, np.clip(y + rng.normal(0, 0.7, n), 1, 5)])
    with h5py.File(path, "w") as fh:
        for pid, a in arrays.items():
            fh.create_dataset(pid, data=a)
    return arrays


def write_galaxy(folder: Path) -> dict[str, str]:
    path = folder / "galaxy_test_prediction.csv"
    write_galaxy_csv(path)
    return {"galaxy_path": str(path)}


def write_amazon(folder: Path) -> dict[str, str]:
    path = folder / "amazon_review.h5"
    write_amazon_h5(path)
    return {"amazon_path": str(path)}


FILES = {"paper_data_galaxy": write_galaxy, "paper_data_amazon": write_amazon}
