"""Contract cases of dragsolver: the four C_d regressors (nn.Modules) and bad input to the mesh harness."""

from __future__ import annotations

import numpy as np
import torch

from icml25.papers.dragsolver import (
    DGCNNRegressor,
    DragSolver,
    Mesh,
    PlainPointTransformer,
    PointNetRegressor,
    box_mesh,
    farthest_point_sample,
    frontal_area,
    newtonian_cd,
    normalize_mesh,
    point_clouds,
    relative_l2,
    sample_surface,
    sphere_mesh,
    subdivide_mesh,
    synthetic_cars,
    train_regressor,
    winding_number,
)

ESTIMATORS: list = []  # no scikit-learn estimators: the regressors are nn.Modules trained by train_regressor


def _cloud(b: int = 2, n: int = 24):
    xyz = torch.randn(b, n, 3)
    normals = torch.nn.functional.normalize(torch.randn(b, n, 3), dim=-1)
    cues = torch.rand(b, n)
    return xyz, normals, cues


MODULES = {
    "DragSolver": lambda: (DragSolver(((8, 4), (4, 8)), d_model=16, depth=1, heads=2), _cloud()),
    "PlainPointTransformer": lambda: (PlainPointTransformer((8, 4), d_model=16, depth=1, heads=2), _cloud()),
    "PointNetRegressor": lambda: (PointNetRegressor(hidden=16), _cloud()),
    "DGCNNRegressor": lambda: (DGCNNRegressor(k=4, hidden=8), _cloud()),
}

_BOX = box_mesh([0, 0, 0], [1, 1, 1])
_X = _cloud(4, 16)
_TINY = DragSolver(((4, 4),), d_model=8, depth=1, heads=2)


def _nan_cloud():
    xyz, normals, cues = _cloud()
    xyz[0, 0, 0] = float("nan")
    return xyz, normals, cues


BAD_INPUTS = [
    ("mesh_nan_vertices", lambda: Mesh(np.full((3, 3), np.nan), [[0, 1, 2]], [True]), ValueError),
    ("mesh_face_out_of_range", lambda: Mesh(np.eye(3), [[0, 1, 3]], [True]), ValueError),
    ("mesh_negative_face", lambda: Mesh(np.eye(3), [[0, 1, -1]], [True]), ValueError),
    ("mesh_fractional_faces", lambda: Mesh(np.eye(3), [[0, 1, 1.5]], [True]), ValueError),
    ("mesh_no_faces", lambda: Mesh(np.eye(3), np.zeros((0, 3)), np.zeros(0, bool)), ValueError),
    ("mesh_exterior_wrong_length", lambda: Mesh(np.eye(3), [[0, 1, 2]], [True, False]), ValueError),
    ("sphere_mesh_too_few_points", lambda: sphere_mesh(2), ValueError),
    ("sphere_mesh_nonpositive_radius", lambda: sphere_mesh(50, radius=0.0), ValueError),
    ("subdivide_negative_levels", lambda: subdivide_mesh(_BOX, -1), ValueError),
    ("normalize_unknown_mode", lambda: normalize_mesh(_BOX, "diag"), ValueError),
    ("sample_surface_zero_points", lambda: sample_surface(_BOX, 0), ValueError),
    ("winding_number_wrong_shape", lambda: winding_number(_BOX, np.zeros((4, 2))), ValueError),
    ("winding_number_nan_points", lambda: winding_number(_BOX, np.full((2, 3), np.nan)), ValueError),
    ("frontal_area_zero_flow", lambda: frontal_area(_BOX, flow=(0.0, 0.0, 0.0)), ValueError),
    ("frontal_area_zero_resolution", lambda: frontal_area(_BOX, resolution=0), ValueError),
    ("newtonian_cd_nan_flow", lambda: newtonian_cd(_BOX, flow=(np.nan, 0.0, 0.0)), ValueError),
    ("synthetic_cars_zero", lambda: synthetic_cars(0, seed=0), ValueError),
    ("synthetic_cars_bad_scale_range", lambda: synthetic_cars(2, seed=0, scale_range=(2.0, 1.0)), ValueError),
    ("synthetic_cars_unknown_rear", lambda: synthetic_cars(2, seed=0, rear_types=("pickup",)), ValueError),
    ("synthetic_cars_bad_subdivide", lambda: synthetic_cars(2, seed=0, subdivide=(2, 1)), ValueError),
    ("point_clouds_no_meshes", lambda: point_clouds([], 16, seed=0), ValueError),
    ("point_clouds_zero_points", lambda: point_clouds([_BOX], 0, seed=0), ValueError),
    ("dragsolver_empty_scales", lambda: DragSolver(()), ValueError),
    ("dragsolver_heads_do_not_divide", lambda: DragSolver(d_model=10, heads=4), ValueError),
    ("dragsolver_dropout_one", lambda: DragSolver(dropout=1.0), ValueError),
    ("pointnet_zero_hidden", lambda: PointNetRegressor(hidden=0), ValueError),
    ("dgcnn_zero_k", lambda: DGCNNRegressor(k=0), ValueError),
    ("forward_wrong_point_dim", lambda: _TINY(torch.zeros(2, 8, 2), torch.zeros(2, 8, 2)), ValueError),
    ("forward_nan_points", lambda: _TINY(*_nan_cloud()), ValueError),
    ("forward_wrong_cue_shape", lambda: _TINY(_X[0], _X[1], torch.zeros(4, 3)), ValueError),
    ("forward_integer_points", lambda: _TINY(torch.zeros(2, 8, 3, dtype=torch.long),
                                             torch.zeros(2, 8, 3, dtype=torch.long)), TypeError),
    ("fps_zero_centres", lambda: farthest_point_sample(torch.zeros(1, 8, 3), 0), ValueError),
    ("predict_mc_zero_passes", lambda: _TINY.predict_mc(_X, T=0), ValueError),
    ("train_zero_epochs", lambda: train_regressor(_TINY, *_X, np.ones(4), epochs=0), ValueError),
    ("train_y_wrong_length", lambda: train_regressor(_TINY, *_X, np.ones(3), epochs=1), ValueError),
    ("train_y_nan", lambda: train_regressor(_TINY, *_X, np.array([1.0, np.nan, 1.0, 1.0]), epochs=1), ValueError),
    ("train_nonpositive_lr", lambda: train_regressor(_TINY, *_X, np.ones(4), epochs=1, lr=0.0), ValueError),
    ("relative_l2_shape_mismatch", lambda: relative_l2(np.ones(3), np.ones(4)), ValueError),
    ("relative_l2_zero_target", lambda: relative_l2(np.ones(3), np.zeros(3)), ValueError),
]
