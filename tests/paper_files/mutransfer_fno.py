"""mutransfer_fno: Li et al.'s FNO benchmark files: Darcy as MATLAB v5 (``scipy.io.savemat``:
``piececonst_r421_N1024_smooth1.mat`` / ``..._smooth2.mat`` with ``coeff`` and ``sol``), and the MATLAB v7.3 writer
the Navier-Stokes file needs (HDF5 behind a 512-byte MATLAB header, every array stored in reversed axis order, as
MATLAB writes it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.io

from icml25.papers.mutransfer_fno.data import PAPER_FILES


def write_darcy(root: Path, n1: int, n2: int, s: int) -> tuple[dict, dict]:
    """smooth1 (training, ``n1`` samples) and smooth2 (test, ``n2``) on an ``s`` x ``s`` grid: piecewise-constant
    coeff in {3, 12}, a smooth positive sol; returns the two files' arrays."""
    out = []
    for name, n, seed in ((PAPER_FILES["darcy"][0], n1, 1), (PAPER_FILES["darcy"][1], n2, 2)):
        rng = np.random.default_rng(seed)
        coeff = np.where(rng.standard_normal((n, s, s)) > 0, 12.0, 3.0)
        x = np.linspace(0, 1, s)
        sol = np.sin(np.pi * x)[None, :, None] * np.sin(np.pi * x)[None, None, :] * rng.uniform(0.5, 1.5, (n, 1, 1))
        sol = sol + 0.01 * rng.standard_normal((n, s, s))
        data = {"coeff": coeff, "sol": sol}
        scipy.io.savemat(root / name, data)  # MATLAB v5, as the released files
        out.append(data)
    return out[0], out[1]


def write_mat73(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """A MATLAB v7.3 file: HDF5 with a 512-byte user block holding MATLAB's 128-byte header, every array stored
    transposed (HDF5 is row-major, MATLAB column-major)."""
    import h5py

    with h5py.File(path, "w", userblock_size=512) as f:
        for name, x in arrays.items():
            f[name] = np.ascontiguousarray(x.transpose())
    text = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Sat Dec  5 12:00:00 2026 HDF5 schema 1.00 ."
    with path.open("r+b") as fh:
        fh.write(text.ljust(116, b" ") + b" " * 8 + b"\x00\x02" + b"IM")


def _paper_data(folder: Path) -> dict[str, str]:
    """Darcy (the default paper_dataset) with the smoke preset's 40 / 20 pairs on a 66 x 66 grid: the default
    stride 5 gives 14 x 14, where the smoke preset's K 3 and 6 fit."""
    write_darcy(folder, n1=40, n2=20, s=66)
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
