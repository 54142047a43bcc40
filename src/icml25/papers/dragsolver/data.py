"""The paper's data: DrivAerNet++ (or DrivAerNet) drag coefficients and preprocessed point clouds from a user folder.

Read in the layout the official DrivAerNet repository (github.com/Mohamedelrefaie/DrivAerNet,
``DeepSurrogates/DrivAerNetDataset.py`` with ``pointcloud_exist=True`` and ``train_RegPointNet.py``'s
``get_dataloaders``) consumes, with the files as the dataset's distribution names them::

    <root>/DrivAerNetPlusPlus_Drag_8k.csv                     columns ``Design`` and ``Average Cd`` (others ignored)
    <root>/subset_dir/train_design_ids.txt                    official split: design ids separated by white space
    <root>/subset_dir/val_design_ids.txt
    <root>/subset_dir/test_design_ids.txt
    <root>/DrivAerNetPlusPlus_Processed_Point_Clouds_100k/<Design>.pt   a torch tensor (N, 3) of surface points

As the official ``create_subset``, a split holds the CSV's designs whose id is listed in its file (in CSV order;
listed ids without a CSV row are left out). The CSV name and the point-cloud folder name are arguments
(DrivAerNet v1 and re-packaged copies name them differently). Nothing is downloaded: every file is checked
first and a missing one raises one :class:`FileNotFoundError` naming it and the expected layout. STL meshes are not
read (no mesh library is a dependency); the ``.pt`` point clouds are loaded with ``torch.load(weights_only=True)``.

A point cloud carries no normals and no interior/exterior labels: :func:`estimate_normals` gives unit normals from
a principal-component fit over each point's nearest neighbours, oriented away from the cloud's centroid, and every
point's winding-number cue is 1/2 (the value of a point on a closed surface), so the gate's exterior cues carry no
information on these data.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import torch
from scipy.spatial import cKDTree

CD_CSV = "DrivAerNetPlusPlus_Drag_8k.csv"
"""The DrivAerNet++ drag-coefficient table (8k designs; columns ``Design``, ``Average Cd``)."""
POINT_CLOUD_DIR = "DrivAerNetPlusPlus_Processed_Point_Clouds_100k"
"""The DrivAerNet++ preprocessed point clouds (100k surface points per design, ``<Design>.pt``)."""
SPLIT_DIR = "subset_dir"
SPLITS = ("train", "val", "test")
SURFACE_CUE = 0.5
"""The winding-number cue given to every point of a point cloud (a point on a closed surface)."""
LAYOUT = (f"expected <root>/{CD_CSV} (columns Design, Average Cd), <root>/{SPLIT_DIR}/{{train,val,test}}"
          f"_design_ids.txt and <root>/{POINT_CLOUD_DIR}/<Design>.pt (the DrivAerNet++ distribution)")


def _need(path: Path, what: str, layout: str = LAYOUT) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"missing {what} {path}; {layout}")
    return path


def read_drag_csv(path: str | Path) -> dict[str, float]:
    """``Design -> Average Cd`` from the drag table (any other column ignored), in file order."""
    path = _need(Path(path).expanduser(), "drag-coefficient file")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        if "Design" not in cols or "Average Cd" not in cols:
            raise ValueError(f"{path} must have the columns 'Design' and 'Average Cd', got {cols}")
        out: dict[str, float] = {}
        for row in reader:
            cd = float(row["Average Cd"])
            if not np.isfinite(cd):
                raise ValueError(f"{path}: design {row['Design']!r} has a non-finite Average Cd")
            out[row["Design"].strip()] = cd
    if not out:
        raise ValueError(f"{path} holds no designs")
    return out


def read_split(path: str | Path) -> list[str]:
    """The design ids of one official split file (white-space separated, as ``file.read().split()``)."""
    return _need(Path(path).expanduser(), "split file").read_text().split()


def load_point_cloud(path: str | Path) -> np.ndarray:
    """One ``<Design>.pt``: a torch tensor of shape (N, 3), returned as float64 (N, 3); nothing but tensors is
    unpickled (``weights_only=True``)."""
    path = _need(Path(path).expanduser(), "point cloud")
    t = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(t, torch.Tensor) or t.ndim != 2 or t.shape[1] != 3 or t.shape[0] < 1:
        raise ValueError(f"{path} must hold a tensor of shape (N, 3), got "
                         f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    xyz = t.detach().to(torch.float64).numpy()
    if not np.isfinite(xyz).all():
        raise ValueError(f"{path} holds non-finite coordinates")
    return xyz


def estimate_normals(xyz: np.ndarray, k: int = 16) -> np.ndarray:
    """Unit normals (N, 3): the least-variance principal direction of each point's ``k`` nearest neighbours (itself
    included; fewer when the cloud is smaller), signed to point away from the cloud's centroid."""
    xyz = np.asarray(xyz, float)
    n = len(xyz)
    k = max(1, min(k, n))
    _, nb = cKDTree(xyz).query(xyz, k=k)
    nb = np.asarray(nb).reshape(n, k)
    local = xyz[nb] - xyz[nb].mean(1, keepdims=True)
    _, vecs = np.linalg.eigh(np.einsum("nki,nkj->nij", local, local))
    normals = vecs[:, :, 0]  # eigenvector of the smallest eigenvalue
    out = xyz - xyz.mean(0)
    normals = np.where((np.einsum("ni,ni->n", normals, out) < 0)[:, None], -normals, normals)
    return normals / np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-300)


def load_paper_dataset(root: str | Path, n_train: int, n_test: int, n_points: int, seed: int,
                       cd_csv: str = CD_CSV, point_cloud_dir: str = POINT_CLOUD_DIR, k_normals: int = 16) -> dict:
    """The official train and test splits as the experiment consumes them.

    Returns ``{"train": split, "test": split}``, each ``{"design": ids, "xyz": (M, n_points, 3), "normals": (M,
    n_points, 3), "cues": (M, n_points), "cd": (M,)}``. A split larger than ``n_train`` / ``n_test`` designs is
    cut to a seeded subset of that size (kept in CSV order); each cloud is subsampled to ``n_points`` points by a
    seeded choice without replacement (with replacement when it has fewer points). Coordinates are the files'
    (the models normalise them); normals from :func:`estimate_normals`; cues :data:`SURFACE_CUE`.
    """
    root = Path(root).expanduser()
    layout = LAYOUT.replace(CD_CSV, cd_csv).replace(POINT_CLOUD_DIR, point_cloud_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"missing data folder {root}; {layout}")
    if n_train < 1 or n_test < 1 or n_points < 1:
        raise ValueError(f"n_train, n_test and n_points must be >= 1, got {n_train}, {n_test}, {n_points}")
    csv_path = _need(root / cd_csv, "drag-coefficient file", layout)
    split_paths = {s: _need(root / SPLIT_DIR / f"{s}_design_ids.txt", "split file", layout) for s in SPLITS}
    clouds = _need(root / point_cloud_dir, "point-cloud folder", layout)
    cd = read_drag_csv(csv_path)
    rng = np.random.default_rng([seed, 7713])
    out = {}
    for split, cap in (("train", n_train), ("test", n_test)):
        listed = set(read_split(split_paths[split]))
        ids = [d for d in cd if d in listed]
        if not ids:
            raise ValueError(f"{split_paths[split]} lists no design of {csv_path}")
        if len(ids) > cap:
            ids = [ids[i] for i in np.sort(rng.choice(len(ids), cap, replace=False))]
        xyz = []
        for d in ids:
            pts = load_point_cloud(_need(clouds / f"{d}.pt", "point cloud", layout))
            xyz.append(pts[rng.choice(len(pts), n_points, replace=len(pts) < n_points)])
        xyz = np.stack(xyz)
        out[split] = {"design": ids, "xyz": xyz, "normals": np.stack([estimate_normals(p, k_normals) for p in xyz]),
                      "cues": np.full(xyz.shape[:2], SURFACE_CUE), "cd": np.array([cd[d] for d in ids])}
    return out
