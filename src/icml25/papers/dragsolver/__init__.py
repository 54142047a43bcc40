"""DragSolver (reconstruction): A Multi-Scale Transformer for Real-World Automotive Drag Coefficient Estimation.

The paper was not retrieved; the architecture follows the abstract's four components
(scale normalisation, multi-scale features, surface-guided gating, Transformer with MC
dropout). Reproduced on an offline synthetic-car harness with a proxy Newtonian C_d label.
"""

from icml25.papers.dragsolver.data import estimate_normals, load_paper_dataset
from icml25.papers.dragsolver.mesh import (
    Mesh,
    box_mesh,
    car_hull,
    convex_part,
    cylinder_mesh,
    frontal_area,
    merge,
    newtonian_cd,
    normalize_mesh,
    point_clouds,
    sample_surface,
    sample_surface_faces,
    sphere_mesh,
    subdivide_mesh,
    synthetic_cars,
    winding_number,
)
from icml25.papers.dragsolver.model import (
    DGCNNRegressor,
    DragSolver,
    DragSolverConfig,
    PlainPointTransformer,
    PointNetRegressor,
    farthest_point_sample,
    gated_attention_pool,
    normalize_points,
    relative_l2,
    train_regressor,
)

__all__ = [
    "DGCNNRegressor", "DragSolver", "DragSolverConfig", "Mesh", "PlainPointTransformer", "PointNetRegressor",
    "box_mesh", "car_hull", "convex_part", "cylinder_mesh", "estimate_normals", "farthest_point_sample",
    "frontal_area", "gated_attention_pool", "load_paper_dataset", "merge", "newtonian_cd", "normalize_mesh",
    "normalize_points", "point_clouds",
    "relative_l2", "sample_surface", "sample_surface_faces", "sphere_mesh", "subdivide_mesh", "synthetic_cars",
    "train_regressor", "winding_number",
]
