"""DragSolver: the paper's DrivAerNet++ data read from a user folder (``data.load_paper_dataset``) and the
``paper_data`` experiment (``data_dir``, ``cd_csv``, ``point_cloud_dir``).

The folder is written into ``tmp_path`` by ``tests/paper_files/dragsolver.py`` in the layout the official DrivAerNet
repository's point-cloud loader reads (``DrivAerNetPlusPlus_Drag_8k.csv`` with ``Design`` / ``Average Cd``,
``subset_dir/{train,val,test}_design_ids.txt``, ``DrivAerNetPlusPlus_Processed_Point_Clouds_100k/<Design>.pt``
float32 tensors (N, 3)); expected values come from the writer's own arrays and labels.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml25.common.checks import ConfigError
from icml25.papers.dragsolver.data import (
    CD_CSV,
    POINT_CLOUD_DIR,
    SURFACE_CUE,
    estimate_normals,
    load_paper_dataset,
    load_point_cloud,
    read_drag_csv,
    read_split,
)
from icml25.papers.dragsolver.model import relative_l2
from icml25.papers.dragsolver.repro import CLAIMS, EXPERIMENTS, PaperDataConfig, SyntheticCarsConfig
from paper_files.dragsolver import DESIGNS, TEST, TRAIN, drag, write_drivaernet_folder

torch.set_num_threads(1)
CSV_ORDER = list(DESIGNS)
TRAIN_IDS = [d for d in CSV_ORDER if d in TRAIN]  # CSV order; F_D_WM_WW_9999 has no CSV row
TEST_IDS = [d for d in CSV_ORDER if d in TEST]


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


def _exp(name: str = "paper_data"):
    return next(e for e in EXPERIMENTS if e.name == name)


# ----------------------------------------------------------------------------- the files
def test_csv_split_and_cloud_files_are_read_as_written(tmp_path):
    clouds = write_drivaernet_folder(tmp_path)
    cd = read_drag_csv(tmp_path / CD_CSV)
    assert list(cd) == CSV_ORDER and cd == {d: drag(h) for d, (_, h) in DESIGNS.items()}
    assert read_split(tmp_path / "subset_dir" / "train_design_ids.txt") == TRAIN
    (tmp_path / "ids.txt").write_text("A_1  B_2\n\tC_3\n")  # any white space separates ids, as file.read().split()
    assert read_split(tmp_path / "ids.txt") == ["A_1", "B_2", "C_3"]
    xyz = load_point_cloud(tmp_path / POINT_CLOUD_DIR / "N_S_WWS_WM_0005.pt")
    assert xyz.dtype == np.float64 and xyz.shape == (40, 3)
    np.testing.assert_array_equal(xyz, clouds["N_S_WWS_WM_0005"].astype(np.float64))


def test_loader_keeps_the_official_splits_labels_and_points(tmp_path):
    clouds = write_drivaernet_folder(tmp_path)
    d = load_paper_dataset(tmp_path, n_train=100, n_test=100, n_points=64, seed=3)
    assert d["train"]["design"] == TRAIN_IDS and len(TRAIN_IDS) == 8
    assert d["test"]["design"] == TEST_IDS == ["N_S_WWS_WM_0010", "E_S_WW_WM_0011", "F_S_WWC_WM_0012"]
    for split in ("train", "test"):
        s = d[split]
        m = len(s["design"])
        np.testing.assert_array_equal(s["cd"], [drag(DESIGNS[x][1]) for x in s["design"]])
        assert s["xyz"].shape == s["normals"].shape == (m, 64, 3) and s["cues"].shape == (m, 64)
        assert (s["cues"] == SURFACE_CUE).all()
        np.testing.assert_allclose(np.linalg.norm(s["normals"], axis=2), 1.0, atol=1e-12)
        for x, pts, nrm in zip(s["design"], s["xyz"], s["normals"]):
            src = clouds[x].astype(np.float64)
            rows = [np.flatnonzero((src == p).all(1)) for p in pts]
            assert all(len(r) == 1 for r in rows)  # every sampled point is one of the file's points
            idx = np.concatenate(rows)
            if len(src) >= 64:
                assert len(set(idx)) == 64  # without replacement
            else:
                assert x == "N_S_WWS_WM_0005" and len(set(idx)) <= len(src) < 64  # with replacement
            # outward: the normal points away from the sampled cloud's centroid
            assert ((nrm * (pts - pts.mean(0))).sum(1) >= 0).all()
    again = load_paper_dataset(tmp_path, n_train=100, n_test=100, n_points=64, seed=3)
    np.testing.assert_array_equal(again["train"]["xyz"], d["train"]["xyz"])
    other = load_paper_dataset(tmp_path, n_train=100, n_test=100, n_points=64, seed=4)
    assert not np.array_equal(other["train"]["xyz"], d["train"]["xyz"])


def test_loader_caps_a_split_with_a_seeded_subset_in_csv_order(tmp_path):
    write_drivaernet_folder(tmp_path)
    picks = [load_paper_dataset(tmp_path, n_train=3, n_test=2, n_points=8, seed=s) for s in range(6)]
    for d in picks:
        ids = d["train"]["design"]
        assert len(ids) == 3 and set(ids) <= set(TRAIN_IDS)
        assert ids == [x for x in TRAIN_IDS if x in ids]
        assert len(d["test"]["design"]) == 2 and set(d["test"]["design"]) <= set(TEST_IDS)
    assert len({tuple(d["train"]["design"]) for d in picks}) > 1


def test_normals_of_a_sphere_are_radial_and_outward():
    rng = np.random.default_rng(0)
    v = rng.standard_normal((3000, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    n = estimate_normals(2.0 * v + np.array([5.0, -1.0, 3.0]))
    assert np.min((n * v).sum(1)) > 0.98


def test_other_file_names_are_arguments(tmp_path):
    write_drivaernet_folder(tmp_path)
    (tmp_path / CD_CSV).rename(tmp_path / "AeroCoefficients.csv")
    (tmp_path / POINT_CLOUD_DIR).rename(tmp_path / "clouds")
    d = load_paper_dataset(tmp_path, 100, 100, 16, 0, cd_csv="AeroCoefficients.csv", point_cloud_dir="clouds")
    assert d["test"]["design"] == TEST_IDS


@pytest.mark.parametrize("remove", [CD_CSV, "subset_dir/val_design_ids.txt", "subset_dir/test_design_ids.txt",
                                    POINT_CLOUD_DIR, f"{POINT_CLOUD_DIR}/E_S_WW_WM_0011.pt"])
def test_a_missing_file_raises_one_error_naming_it(tmp_path, remove):
    write_drivaernet_folder(tmp_path)
    path = tmp_path / remove
    if path.is_dir():
        for f in path.iterdir():
            f.unlink()
        path.rmdir()
    else:
        path.unlink()
    with pytest.raises(FileNotFoundError, match=path.name) as err:
        load_paper_dataset(tmp_path, 100, 100, 16, 0)
    assert "\n" not in str(err.value) and "expected" in str(err.value)
    with pytest.raises(FileNotFoundError, match="missing data folder"):
        load_paper_dataset(tmp_path / "nowhere", 100, 100, 16, 0)


def test_bad_files_raise(tmp_path):
    write_drivaernet_folder(tmp_path)
    (tmp_path / "bad.csv").write_text("Design,Cd\nA,0.3\n")
    with pytest.raises(ValueError, match="Average Cd"):
        read_drag_csv(tmp_path / "bad.csv")
    torch.save(torch.zeros(5, 2), tmp_path / "flat.pt")
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        load_point_cloud(tmp_path / "flat.pt")
    torch.save(torch.tensor([[0.0, float("nan"), 1.0]]), tmp_path / "nan.pt")
    with pytest.raises(ValueError, match="non-finite"):
        load_point_cloud(tmp_path / "nan.pt")
    (tmp_path / "subset_dir" / "test_design_ids.txt").write_text("NOT_A_DESIGN\n")
    with pytest.raises(ValueError, match="lists no design"):
        load_paper_dataset(tmp_path, 100, 100, 16, 0)


# ----------------------------------------------------------------------------- the experiment
def test_paper_data_experiment_holds_the_data_setting_and_the_stand_in_does_not(tmp_path):
    exp = _exp()
    assert exp.config is PaperDataConfig and issubclass(PaperDataConfig, SyntheticCarsConfig)
    assert exp.data_setting == "data_dir" and exp.missing_data(exp.make_config("smoke"))
    assert not exp.missing_data(exp.make_config("smoke", {"data_dir": str(tmp_path)}))
    stand_in = _exp("synthetic_cars")
    assert not stand_in.data_setting
    assert not any(hasattr(SyntheticCarsConfig(), f) for f in ("data_dir", "cd_csv", "point_cloud_dir"))
    assert "paper_data" in stand_in.full_requirements and "data_dir=" in exp.full_requirements
    assert exp.fidelity_of("smoke").level == "mechanism"
    assert exp.fidelity_of("quick").level == exp.fidelity_of("full").level == "reduced"
    assert exp.seeds == stand_in.seeds


def test_paper_data_config_errors_name_the_field(tmp_path):
    exp = _exp()
    with pytest.raises(ConfigError, match="data_dir"):
        exp.make_config("smoke", {"data_dir": str(tmp_path / "nowhere")})
    for name, bad in (("cd_csv", "sub/x.csv"), ("cd_csv", ""), ("point_cloud_dir", ".."), ("point_cloud_dir", " ")):
        with pytest.raises(ConfigError, match=name):
            exp.make_config("smoke", {"data_dir": str(tmp_path), name: bad})


def test_paper_data_smoke_runs_end_to_end_on_the_writers_folder(tmp_path):
    write_drivaernet_folder(tmp_path)
    exp = _exp()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    m = exp.run(cfg, seed=0)
    assert m["designs_train"] == 8 and m["designs_test"] == 3
    y_tr = np.array([drag(DESIGNS[d][1]) for d in TRAIN_IDS])
    y_te = np.array([drag(DESIGNS[d][1]) for d in TEST_IDS])
    assert m["rel_l2_mean"] == pytest.approx(relative_l2(np.full(3, y_tr.mean()), y_te), rel=1e-12)
    assert m["ds_over_pointnet"] == pytest.approx(m["rel_l2_dragsolver"] / m["rel_l2_pointnet"], rel=1e-12)
    assert m["best_over_mean"] == pytest.approx(min(m[f"{k}_over_mean"] for k in (
        "dragsolver", "no_gating", "no_multiscale", "no_norm", "pointnet", "dgcnn", "plain")), rel=1e-12)
    red = np.mean([1 - m["rel_l2_dragsolver"] / m[f"rel_l2_{b}"] for b in ("pointnet", "dgcnn", "plain")])
    assert m["mean_reduction_vs_baselines"] == pytest.approx(red, rel=1e-12)
    assert not {"gate_auroc", "ood_std_ratio", "interior_fraction", "mc_rel_l2_ood"} & set(m)
    for c in CLAIMS:
        if c.experiment == "paper_data":
            assert np.isfinite(m[c.metric]), c.id
    assert exp.run(cfg, seed=0)["rel_l2_dragsolver"] == m["rel_l2_dragsolver"]  # seeded


def test_paper_data_claims_are_twins_of_the_stand_ins():
    by_id = {c.id: c for c in CLAIMS}
    twins = {"paper_data_some_model_learns": "some_model_learns", "paper_data_dragsolver_learns": "dragsolver_learns",
             "paper_data_beats_pointnet": "beats_pointnet",
             "paper_data_beats_plain_transformer": "beats_plain_transformer",
             "paper_data_avg_reduction_58_7": "avg_reduction_58_7",
             "paper_data_mc_uncertainty_ranks_error": "mc_uncertainty_ranks_error",
             "paper_data_real_time": "real_time"}
    assert {c.id for c in CLAIMS if c.experiment == "paper_data"} == set(twins)
    for new, old in twins.items():
        a, b = by_id[new], by_id[old]
        assert (a.kind, a.metric, a.op, a.threshold, a.aggregate, a.resolution, a.source, a.fair_at) == (
            b.kind, b.metric, b.op, b.threshold, b.aggregate, b.resolution, b.source, b.fair_at), new
        assert tuple(a.requires) == tuple(f"paper_data_{r}" for r in b.requires), new
        assert "DrivAerNet++" in a.statement
        if a.kind == "paper":
            assert a.paper_value == b.paper_value and a.resolution_reason.startswith(f"as {old}")


def test_paper_data_figure_has_its_own_file(tmp_path):
    pytest.importorskip("matplotlib")
    exp = _exp()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    models = ("dragsolver", "no_gating", "no_multiscale", "no_norm", "pointnet", "dgcnn", "plain")
    per_seed = [{f"{k}{m}": 0.05 + 0.01 * i for k in ("rel_l2_", "rel_l2_shift_") for m in models} for i in range(2)]
    paths = exp.figures(per_seed, cfg, tmp_path)
    assert [p.name for p in paths] == ["dragsolver_paper_data_rel_l2.png"] and paths[0].is_file()
