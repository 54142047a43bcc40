"""Triangle meshes, area-weighted sampling, normalisation and the offline synthetic-car harness.

Pure NumPy/SciPy (no trimesh). A :class:`Mesh` holds vertices, outward-oriented
triangles and a per-face ``exterior`` flag (outer hull vs interior clutter). The
label is a *proxy* drag coefficient from a modified-Newtonian panel model on the
outer hull only; it is not automotive aerodynamics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import ConvexHull

FLOW = np.array([1.0, 0.0, 0.0])
"""Free-stream direction u: the car's nose is at low x, air travels towards +x."""
REAR_TYPES = ("squareback", "fastback", "hatchback")
"""Rear shapes of the harness; ``hatchback`` (slant > 30 deg) is kept out of training as the OOD type."""


@dataclass
class Mesh:
    """A triangle mesh: ``vertices`` (V, 3), ``faces`` (F, 3) int, ``exterior`` (F,) bool (outer hull faces)."""

    vertices: np.ndarray
    faces: np.ndarray
    exterior: np.ndarray

    def __post_init__(self) -> None:
        self.vertices = np.asarray(self.vertices, dtype=float)
        faces = np.asarray(self.faces)
        if faces.size and not (faces.dtype.kind in "iu" or np.array_equal(faces, np.round(faces))):
            raise ValueError("faces must hold integer vertex indices")
        self.faces = faces.astype(np.int64)
        self.exterior = np.asarray(self.exterior, dtype=bool)
        if self.vertices.ndim != 2 or self.vertices.shape[1] != 3:
            raise ValueError(f"vertices must have shape (V, 3), got {self.vertices.shape}")
        if not np.isfinite(self.vertices).all():
            raise ValueError("vertices must be finite (no NaN or inf)")
        if self.faces.ndim != 2 or self.faces.shape[1] != 3 or len(self.faces) == 0:
            raise ValueError(f"faces must have shape (F, 3) with F > 0, got {self.faces.shape}")
        if self.faces.min() < 0 or self.faces.max() >= len(self.vertices):
            raise ValueError("faces index vertices out of range")
        if self.exterior.shape != (len(self.faces),):
            raise ValueError(f"exterior must have shape ({len(self.faces)},), got {self.exterior.shape}")

    @property
    def triangles(self) -> np.ndarray:
        """Corner coordinates, shape (F, 3, 3)."""
        return self.vertices[self.faces]

    def face_normals_areas(self) -> tuple[np.ndarray, np.ndarray]:
        """Unit outward normals (F, 3) and areas (F,) from the counter-clockwise corner order."""
        t = self.triangles
        cross = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
        norm = np.linalg.norm(cross, axis=1)
        return cross / np.maximum(norm, 1e-300)[:, None], 0.5 * norm

    def transformed(self, scale: float = 1.0, shift=(0.0, 0.0, 0.0)) -> "Mesh":
        """The mesh scaled by ``scale`` then translated by ``shift``."""
        return Mesh(self.vertices * scale + np.asarray(shift, float), self.faces.copy(), self.exterior.copy())


def convex_part(points: np.ndarray, exterior: bool = True) -> Mesh:
    """Closed convex mesh (outward normals) spanning ``points`` (P, 3)."""
    points = np.asarray(points, dtype=float)
    hull = ConvexHull(points)
    faces = hull.simplices.copy()
    t = points[faces]
    normal = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
    flip = np.einsum("ij,ij->i", normal, t.mean(1) - points[hull.vertices].mean(0)) < 0
    faces[flip] = faces[flip][:, ::-1]
    used, inverse = np.unique(faces, return_inverse=True)
    return Mesh(points[used], inverse.reshape(-1, 3), np.full(len(faces), exterior))


def merge(parts: list[Mesh]) -> Mesh:
    """Concatenate meshes into one (parts keep their own ``exterior`` flags)."""
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    return Mesh(np.concatenate([p.vertices for p in parts]),
                np.concatenate([p.faces + o for p, o in zip(parts, offsets)]),
                np.concatenate([p.exterior for p in parts]))


def sphere_mesh(n: int = 800, radius: float = 1.0) -> Mesh:
    """Convex polyhedron through ``n`` Fibonacci points of a sphere (``n >= 4``, ``radius > 0``)."""
    if n < 4 or not radius > 0:
        raise ValueError(f"need n >= 4 points and radius > 0, got n={n}, radius={radius}")
    i = np.arange(n) + 0.5
    z = 1 - 2 * i / n
    phi = np.pi * (1 + 5 ** 0.5) * i
    r = np.sqrt(1 - z * z)
    return convex_part(radius * np.stack([r * np.cos(phi), r * np.sin(phi), z], 1))


def box_mesh(lo, hi, exterior: bool = True) -> Mesh:
    """Axis-aligned box with corners ``lo`` and ``hi``."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    corners = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)], float)
    return convex_part(lo + corners * (hi - lo), exterior)


def cylinder_mesh(center, radius: float, width: float, segments: int = 12, exterior: bool = True) -> Mesh:
    """Wheel-like cylinder with its axis along y."""
    a = 2 * np.pi * np.arange(segments) / segments
    ring = np.stack([radius * np.cos(a), np.zeros(segments), radius * np.sin(a)], 1)
    pts = np.concatenate([ring + [0, -width / 2, 0], ring + [0, width / 2, 0]]) + np.asarray(center, float)
    return convex_part(pts, exterior)


def subdivide_mesh(mesh: Mesh, levels: int = 1) -> Mesh:
    """Midpoint re-tessellation: each triangle becomes 4, ``levels`` times (geometry unchanged)."""
    if levels < 0:
        raise ValueError(f"levels must be >= 0, got {levels}")
    v, f, ext = mesh.vertices, mesh.faces, mesh.exterior
    for _ in range(levels):
        t = v[f]
        m = (t + t[:, [1, 2, 0]]) / 2  # midpoints of edges 01, 12, 20
        nv = np.concatenate([t, m], 1).reshape(-1, 3)  # 6 vertices per old face
        b = 6 * np.arange(len(f))[:, None]
        f = np.concatenate([b + [0, 3, 5], b + [3, 1, 4], b + [5, 4, 2], b + [3, 4, 5]])
        v, ext = nv, np.tile(ext, 4)
    return Mesh(v, f, ext)


def normalize_mesh(mesh: Mesh, mode: str = "bbox_diag") -> Mesh:
    """Centre at the bounding-box centre and divide by a characteristic length.

    ``mode="bbox_diag"`` divides by the bounding-box diagonal, ``"length"`` by the
    largest bounding-box extent (vehicle length).
    """
    lo, hi = mesh.vertices.min(0), mesh.vertices.max(0)
    if mode == "bbox_diag":
        scale = np.linalg.norm(hi - lo)
    elif mode == "length":
        scale = (hi - lo).max()
    else:
        raise ValueError(f"mode must be 'bbox_diag' or 'length', got {mode!r}")
    if scale <= 0:
        raise ValueError("mesh is degenerate (zero extent)")
    return Mesh((mesh.vertices - (lo + hi) / 2) / scale, mesh.faces.copy(), mesh.exterior.copy())


def sample_surface_faces(mesh: Mesh, n: int, seed: int | np.random.Generator = 0):
    """Area-weighted uniform surface samples: (xyz (n, 3), normals (n, 3), face index (n,))."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    normals, areas = mesh.face_normals_areas()
    face = rng.choice(len(areas), size=n, p=areas / areas.sum())
    r1, r2 = rng.random(n), rng.random(n)
    s = np.sqrt(r1)
    w = np.stack([1 - s, s * (1 - r2), s * r2], 1)  # uniform barycentric weights
    xyz = np.einsum("nk,nkd->nd", w, mesh.triangles[face])
    return xyz, normals[face], face


def sample_surface(mesh: Mesh, n: int, seed: int | np.random.Generator = 0) -> tuple[np.ndarray, np.ndarray]:
    """Area-weighted surface sampling (density independent of tessellation): (xyz (n, 3), normals (n, 3))."""
    xyz, normals, _ = sample_surface_faces(mesh, n, seed)
    return xyz, normals


def winding_number(mesh: Mesh, points: np.ndarray, chunk: int = 256) -> np.ndarray:
    """Generalised winding number of ``points`` (P, 3) w.r.t. all faces (Van Oosterom-Strackee solid angles).

    About 0 outside, 1 inside a closed part, 1/2 on its surface; nested parts add up.
    """
    points = np.asarray(points, float)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"points must have shape (P, 3), got {points.shape}")
    if not np.isfinite(points).all():
        raise ValueError("points must be finite (no NaN or inf)")
    t = mesh.triangles
    out = np.empty(len(points))
    for s in range(0, len(points), chunk):
        r = t[None] - points[s:s + chunk, None, None, :]  # (P, F, 3, 3)
        a, b, c = r[..., 0, :], r[..., 1, :], r[..., 2, :]
        la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
        num = np.einsum("pfd,pfd->pf", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("pfd,pfd->pf", a, b) * lc + np.einsum("pfd,pfd->pf", b, c) * la
               + np.einsum("pfd,pfd->pf", c, a) * lb)
        omega = 2 * np.arctan2(num, den)
        omega[np.abs(num) <= 1e-9 * la * lb * lc] = 0.0  # point in the face's plane: no solid angle
        out[s:s + chunk] = omega.sum(1) / (4 * np.pi)
    return out


def _unit_flow(flow) -> np.ndarray:
    """``flow`` as a unit 3-vector; raises on a zero, non-finite or wrongly shaped direction."""
    flow = np.asarray(flow, float)
    norm = np.linalg.norm(flow) if flow.shape == (3,) else 0.0
    if not (np.isfinite(flow).all() and norm > 0):
        raise ValueError(f"flow must be a finite, non-zero 3-vector, got {flow!r}")
    return flow / norm


def frontal_area(mesh: Mesh, flow=FLOW, resolution: int = 128, exterior_only: bool = True) -> float:
    """Area of the hull's projection on the plane normal to ``flow``, by rasterisation on a resolution^2 grid."""
    if resolution < 1:
        raise ValueError(f"resolution must be >= 1, got {resolution}")
    flow = _unit_flow(flow)
    e1 = np.cross(flow, [0.0, 0.0, 1.0] if abs(flow[2]) < 0.9 else [1.0, 0.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(flow, e1)
    normals, areas = mesh.face_normals_areas()
    keep = (normals @ flow < -1e-12) & (areas > 0) & (mesh.exterior if exterior_only else True)
    tri = mesh.triangles[keep] @ np.stack([e1, e2], 1)  # (T, 3, 2)
    tri = tri - tri.reshape(-1, 2).min(0)  # translation- and scale-free before the float32 cast
    extent = float(tri.max())
    tri = (tri / extent).astype(np.float32)
    unit = extent ** 2
    lo, hi = tri.reshape(-1, 2).min(0), tri.reshape(-1, 2).max(0)
    step = (hi - lo) / resolution
    g = lo + (np.stack(np.meshgrid(np.arange(resolution), np.arange(resolution), indexing="ij"), -1)
              .reshape(-1, 2) + 0.5) * step
    covered = np.zeros(len(g), bool)
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    det = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (b[:, 1] - a[:, 1])
    g = g.astype(np.float32)
    for s in range(0, len(tri), 64):
        d = g[:, None, :] - a[None, s:s + 64]
        u = (d[..., 0] * (c[s:s + 64, 1] - a[s:s + 64, 1]) - d[..., 1] * (c[s:s + 64, 0] - a[s:s + 64, 0])) / det[s:s + 64]
        v = (d[..., 1] * (b[s:s + 64, 0] - a[s:s + 64, 0]) - d[..., 0] * (b[s:s + 64, 1] - a[s:s + 64, 1])) / det[s:s + 64]
        covered |= ((u >= -1e-9) & (v >= -1e-9) & (u + v <= 1 + 1e-9)).any(1)
    return float(covered.sum() * step[0] * step[1]) * unit


def newtonian_cd(mesh: Mesh, flow=FLOW, base_pressure: float = 0.0, friction: float = 0.0,
                 resolution: int = 128) -> float:
    """Proxy drag coefficient of the outer hull (faces with ``exterior``) by a modified-Newtonian panel model.

    C_p = 2 max(0, -n.u)^2 on windward faces, C_p = ``base_pressure`` on leeward faces (n.u > 0);
    C_d = -sum_f C_p,f (n_f.u) A_f / A_front + friction * A_wet / A_front.
    A sphere gives 1, a flat plate facing the flow 2 (with base_pressure = friction = 0).
    """
    flow = _unit_flow(flow)
    normals, areas = mesh.face_normals_areas()
    normals, areas = normals[mesh.exterior], areas[mesh.exterior]
    if len(areas) == 0:
        raise ValueError("mesh has no exterior faces")
    nu = normals @ flow
    cp = np.where(nu < 0, 2 * nu ** 2, np.where(nu > 1e-12, base_pressure, 0.0))
    a_front = frontal_area(mesh, flow, resolution)
    return float((-(cp * nu * areas).sum() + friction * areas.sum()) / a_front)


def car_hull(length, width, height, nose, windscreen_deg, slant_deg, slant_len, clearance,
             wheel_segments: int = 12) -> Mesh:
    """Outer hull of a parametric car (unit-free): convex body plus four wheel cylinders under it.

    The side profile (x along the car, z up) is: flat underbody at ``clearance``, a chamfered nose,
    a bonnet/windscreen line at ``windscreen_deg``, a flat roof, a rear slant of ``slant_deg`` over
    ``slant_len`` (fraction of length), and a vertical base. The roof is 80% of the body width.
    """
    L, W, H, z0 = length, width, height, clearance
    n = nose * 0.5 * H
    xw = n + 0.5 * H / np.tan(np.radians(windscreen_deg))
    xs = L * (1 - slant_len)
    zs = z0 + H - min(0.45 * H, (L - xs) * np.tan(np.radians(slant_deg)))
    lower = [(0, z0 + 0.5 * H - n), (0, z0), (L, z0), (L, zs)]
    upper = [(n, z0 + 0.5 * H), (xw, z0 + H), (xs, z0 + H)]
    pts = [(x, s * 0.5 * W, z) for x, z in lower for s in (-1, 1)]
    pts += [(x, s * 0.4 * W, z) for x, z in upper for s in (-1, 1)]
    parts = [convex_part(np.array(pts, float))]
    r = z0 / 2
    for x in (0.18 * L, 0.8 * L):
        for y in (-0.42 * W, 0.42 * W):
            parts.append(cylinder_mesh((x, y, r), r, 0.14 * W, wheel_segments))
    return merge(parts)


def interior_clutter(length, width, height, clearance, count: int, rng: np.random.Generator) -> list[Mesh]:
    """Random interior boxes (seats, engine block) strictly inside the lower half of the body."""
    L, W, H, z0 = length, width, height, clearance
    boxes = []
    for _ in range(count):
        size = rng.uniform([0.08 * L, 0.15 * W, 0.1 * H], [0.3 * L, 0.7 * W, 0.35 * H])
        lo = rng.uniform([0.1 * L, -0.45 * W, z0 + 0.03 * H], [0.9 * L - size[0], 0.45 * W - size[1], z0 + 0.45 * H - size[2]])
        boxes.append(box_mesh(lo, lo + size, exterior=False))
    return boxes


def synthetic_cars(n: int, seed: int, interior: bool = True, scale_range=(0.3, 3.0), unit_mix: bool = True,
                   subdivide=(0, 2), rear_types=("squareback", "fastback"), resolution: int = 64):
    """Offline harness: ``n`` parametric car meshes with proxy C_d labels on the outer hull only.

    Distractors that leave the label unchanged: interior boxes (``interior``), a random global
    scale in ``scale_range`` (times 1000 with probability 0.2 when ``unit_mix``: millimetres), a
    random translation, and ``subdivide=(lo, hi)`` levels of re-tessellation. Leeward base pressure
    is -0.15, or -0.35 when the rear slant exceeds 30 deg; skin friction C_f = 0.004.

    Returns:
        (meshes, cd (n,), meta) with meta a dict of per-car arrays (``scale``, ``rear_type`` index, ...).
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not (0 < scale_range[0] <= scale_range[1]):
        raise ValueError(f"scale_range must satisfy 0 < lo <= hi, got {scale_range}")
    if not 0 <= subdivide[0] <= subdivide[1]:
        raise ValueError(f"subdivide must satisfy 0 <= lo <= hi, got {subdivide}")
    bad = [r for r in rear_types if r not in REAR_TYPES]
    if bad or not rear_types:
        raise ValueError(f"rear_types must be a non-empty subset of {REAR_TYPES}, got {rear_types}")
    rng = np.random.default_rng([seed, 1234])
    slant = {"squareback": (3.0, 12.0, 0.08, 0.12), "fastback": (14.0, 28.0, 0.2, 0.35),
             "hatchback": (32.0, 42.0, 0.12, 0.2)}
    meshes, cds = [], np.empty(n)
    meta = {k: np.empty(n) for k in ("scale", "rear_type", "slant_deg", "n_interior", "levels")}
    for i in range(n):
        rt = rear_types[rng.integers(len(rear_types))]
        lo_s, hi_s, lo_l, hi_l = slant[rt]
        L, W, H = rng.uniform(3.6, 5.0), rng.uniform(1.6, 2.0), rng.uniform(1.1, 1.6)
        sl = rng.uniform(lo_s, hi_s)
        z0 = rng.uniform(0.12, 0.3) * H
        hull = car_hull(L, W, H, nose=rng.uniform(0.05, 0.6), windscreen_deg=rng.uniform(22, 50), slant_deg=sl,
                        slant_len=rng.uniform(lo_l, hi_l), clearance=z0)
        cds[i] = newtonian_cd(hull, base_pressure=-0.35 if sl > 30 else -0.15, friction=0.004,
                              resolution=resolution)
        count = int(rng.integers(1, 4)) if interior else 0
        parts = [hull] + interior_clutter(L, W, H, z0, count, rng)
        mesh = merge(parts)
        levels = int(rng.integers(subdivide[0], subdivide[1] + 1))
        mesh = subdivide_mesh(mesh, levels)
        scale = rng.uniform(*scale_range) * (1000.0 if unit_mix and rng.random() < 0.2 else 1.0)
        meshes.append(mesh.transformed(scale, rng.normal(0, 2.0, 3) * scale))
        meta["scale"][i], meta["rear_type"][i], meta["slant_deg"][i] = scale, REAR_TYPES.index(rt), sl
        meta["n_interior"][i], meta["levels"][i] = count, levels
    return meshes, cds, meta



def point_clouds(meshes: list[Mesh], n_points: int, seed: int):
    """Sample every mesh: xyz (M, n, 3), normals (M, n, 3), winding-number cues (M, n), exterior mask (M, n)."""
    if len(meshes) == 0:
        raise ValueError("meshes is empty: need at least one mesh")
    if n_points < 1:
        raise ValueError(f"n_points must be >= 1, got {n_points}")
    rng = np.random.default_rng([seed, 99])
    out = {k: [] for k in ("xyz", "normals", "cues", "exterior")}
    for m in meshes:
        xyz, nrm, face = sample_surface_faces(m, n_points, rng)
        out["xyz"].append(xyz)
        out["normals"].append(nrm)
        out["cues"].append(winding_number(m, xyz))
        out["exterior"].append(m.exterior[face])
    return {k: np.stack(v) for k, v in out.items()}
