"""dragsolver: a DrivAerNet++ folder as the official DrivAerNet repository's point-cloud loader reads it
(Mohamedelrefaie/DrivAerNet, ``DeepSurrogates/DrivAerNetDataset.py`` with ``pointcloud_exist=True`` and
``train_RegPointNet.py``'s ``get_dataloaders``): ``DrivAerNetPlusPlus_Drag_8k.csv`` (columns ``Design``,
``Average Cd``; an extra column is ignored), ``subset_dir/{train,val,test}_design_ids.txt`` and
``DrivAerNetPlusPlus_Processed_Point_Clouds_100k/<Design>.pt`` (a float32 torch tensor (N, 3) per design)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch

# design id -> (number of points, body height); DrivAerNet++-style ids (rear type, underbody, wheels, ...)
DESIGNS = {
    "F_D_WM_WW_0001": (120, 1.30), "F_D_WM_WW_0002": (120, 1.35), "F_S_WWC_WM_0003": (120, 1.40),
    "N_S_WWS_WM_0004": (120, 1.45), "N_S_WWS_WM_0005": (40, 1.50), "E_S_WW_WM_0006": (120, 1.55),
    "E_S_WW_WM_0007": (120, 1.60), "E_S_WWC_WM_0008": (120, 1.65), "F_D_WM_WW_0009": (120, 1.32),
    "N_S_WWS_WM_0010": (120, 1.42), "E_S_WW_WM_0011": (120, 1.52), "F_S_WWC_WM_0012": (120, 1.62),
}
TRAIN = ["F_D_WM_WW_0001", "F_D_WM_WW_0002", "F_S_WWC_WM_0003", "N_S_WWS_WM_0004", "N_S_WWS_WM_0005",
         "E_S_WW_WM_0006", "E_S_WW_WM_0007", "E_S_WWC_WM_0008", "F_D_WM_WW_9999"]  # the last has no CSV row
VAL = ["F_D_WM_WW_0009"]
TEST = ["F_S_WWC_WM_0012", "E_S_WW_WM_0011", "N_S_WWS_WM_0010"]  # listed out of CSV order


def drag(height: float) -> float:
    """The fixture's label: a drag coefficient rising with body height."""
    return round(0.22 + 0.08 * (height - 1.3), 6)


def cloud(n: int, height: float, seed: int) -> np.ndarray:
    """``n`` float32 points on an ellipsoidal body 4.6 m long, 1.9 m wide, ``height`` m high (metres, as DrivAerNet)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return (v * np.array([2.3, 0.95, height / 2]) + np.array([2.3, 0.0, height / 2])).astype(np.float32)


def write_drivaernet_folder(folder: Path) -> dict[str, np.ndarray]:
    """Write the folder; returns every design's point cloud as written (float32 (N, 3))."""
    clouds = folder / "DrivAerNetPlusPlus_Processed_Point_Clouds_100k"
    clouds.mkdir(parents=True, exist_ok=True)
    with (folder / "DrivAerNetPlusPlus_Drag_8k.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["Design", "Average Cd", "Std Cd"])
        for d, (_, h) in DESIGNS.items():
            w.writerow([d, drag(h), 0.001])
    (folder / "subset_dir").mkdir(exist_ok=True)
    for name, ids in (("train", TRAIN), ("val", VAL), ("test", TEST)):
        (folder / "subset_dir" / f"{name}_design_ids.txt").write_text("\n".join(ids) + "\n")
    written = {}
    for i, (d, (n, h)) in enumerate(DESIGNS.items()):
        written[d] = cloud(n, h, i)
        torch.save(torch.from_numpy(written[d]), clouds / f"{d}.pt")
    return written


def _paper_data(folder: Path) -> dict[str, str]:
    write_drivaernet_folder(folder)
    return {"data_dir": str(folder)}


FILES = {"paper_data": _paper_data}
