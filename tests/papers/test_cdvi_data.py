"""CDVI: the paper's data sets read from the official repository's CSV layout (``load_paper_dataset``) and the
``paper_data`` experiment's ``data_dir`` / ``paper_datasets`` settings.

Every fixture is a tiny CSV written into ``tmp_path`` with the real files' column names in their order
(ChuanhuiLiu/CDVI at dab3bf9, ``datasets/``; the writers are shared with the suite's batteries in
``tests/paper_files/``); the expected X, times and events are written out by hand from the
documented preprocessing (official features, PBC's time and age, mean / mode imputation over all rows, one-hot
with the first sorted level dropped).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("pandas")

from icml25.papers.cdvi.data import PAPER_DATASETS, load_paper_dataset  # noqa: E402
from paper_files.cdvi import (  # noqa: E402
    METABRIC_HEADER,
    PBC_HEADER,
    SUPPORT_HEADER,
    SUPPORT_NUMERIC,
    WHAS_HEADER,
    write_cdvi_files,
    write_csv,
)

torch.set_num_threads(1)


def _support_rows() -> tuple[list[list], np.ndarray]:
    """Four SUPPORT rows and the X they must give (18 numeric columns, then 9 dummies)."""
    cats = [  # sex, dzgroup, dzclass, income, race, ca
        ("male", "Lung Cancer", "Cancer", "$11-$25k", "white", "metastatic"),
        ("female", "CHF", "COPD/CHF/Cirrhosis", None, "black", "no"),
        ("female", "ARF/MOSF w/Sepsis", "ARF/MOSF", "under $11k", None, "yes"),
        ("male", "CHF", "COPD/CHF/Cirrhosis", "under $11k", "white", "no")]
    num = [[100.0 * i + j for j in range(18)] for i in range(1, 5)]  # age, num.co, ..., adls
    num[0][SUPPORT_NUMERIC.index("glucose")] = None  # glucose is column 13: -> mean of 213, 313, 413 = 313
    num[1][SUPPORT_NUMERIC.index("adlp")] = num[2][SUPPORT_NUMERIC.index("adlp")] = None  # -> mean(116, 416) = 266
    outcome = [(1, 10), (0, 2000), (1, 5), (0, 300)]  # death, d.time
    rows = []
    for i in range(4):
        row = {c: "junk" for c in SUPPORT_HEADER}  # every column the loader must drop
        row.update(zip(("sex", "dzgroup", "dzclass", "income", "race", "ca"), cats[i]))
        row.update(zip(SUPPORT_NUMERIC, num[i]))
        row["sno"], row["death"], row["d.time"] = i + 1, *outcome[i]
        rows.append([row[c] for c in SUPPORT_HEADER])
    expected_num = np.array([[313.0 if v is None and j == SUPPORT_NUMERIC.index("glucose") else
                              266.0 if v is None else v for j, v in enumerate(r)] for r in num])
    dummies = np.array([  # sex_male, dzgroup_CHF, dzgroup_Lung Cancer, dzclass_COPD/CHF/Cirrhosis, dzclass_Cancer,
        # income_under $11k (missing -> mode "under $11k"), race_white (missing -> mode "white"), ca_no, ca_yes
        [1, 0, 1, 0, 1, 0, 1, 0, 0],
        [0, 1, 0, 1, 0, 1, 0, 1, 0],
        [0, 0, 0, 0, 0, 1, 1, 0, 1],
        [1, 1, 0, 1, 0, 1, 1, 1, 0]], dtype=float)
    return rows, np.hstack([expected_num, dummies])


def _metabric_rows() -> tuple[list[list], list[list], np.ndarray]:
    """Three METABRIC feature rows (79 columns; NPI and the one-hot blocks after grade are dropped), their labels
    and the X they must give."""
    kept = [[75.65, 22, 10, 2, 16, 0, 0, 1], [43.19, 10, 0, 1, 25, 0, 1, 0], [48.87, 15.5, 1, 3, 12, 1, 0, 0]]
    rows = []
    for i, k in enumerate(kept):
        rest = [(i + j) % 2 for j in range(79 - 9)]
        rows.append(k[:5] + [4.5 + i] + k[5:] + rest)  # NPI sits between lymph_nodes_removed and grade
    return rows, [[2999, 0], [1484, 1], [3, 1]], np.array(kept, dtype=float)


def _pbc_rows() -> tuple[list[list], np.ndarray, np.ndarray, np.ndarray]:
    """Four PBC visits of two patients, and the X, times (years - year) and events (status2) they must give."""
    rows = [  # sno., id, years, status, drug, age, sex, year, ascites, hepatomegaly, spiders, edema, serBilir,
        # serChol, albumin, alkaline, SGOT, platelets, prothrombin, histologic, status2
        ["1", "1", 2.5, "dead", "D-penicil", 50.5, "female", 0.0, "Yes", "No", "No", "No edema", 1.5, 300.0, 3.5,
         1000.0, 100.0, 200.0, 10.5, 4, 1],
        ["2", "1", 2.5, "dead", "D-penicil", 50.5, "female", 1.5, None, "Yes", "No", "edema no diuretics", 2.5, None,
         3.0, 1200.0, 110.0, None, 11.0, 4, 1],
        ["3", "2", 8.0, "alive", "placebo", 40.0, "male", 0.0, "No", "No", "Yes", "No edema", 0.5, 250.0, 4.0, 800.0,
         90.0, 300.0, 10.0, 2, 0],
        ["4", "2", 8.0, "alive", "placebo", 40.0, "male", 4.0, None, None, "Yes", "edema despite diuretics", 0.7,
         350.0, 3.8, 900.0, 95.0, 280.0, 10.2, 3, 0]]
    X = np.array([  # age + years, serBilir, serChol (NA -> 300), albumin, alkaline, SGOT, platelets (NA -> 260),
        # prothrombin, then drug_placebo, sex_male, ascites_Yes (NA -> "No": a 1-1 tie goes to the smallest level),
        # hepatomegaly_Yes (NA -> "No"), spiders_Yes, edema_edema despite diuretics, edema_edema no diuretics,
        # histologic_3, histologic_4
        [53.0, 1.5, 300.0, 3.5, 1000.0, 100.0, 200.0, 10.5, 0, 0, 1, 0, 0, 0, 0, 0, 1],
        [53.0, 2.5, 300.0, 3.0, 1200.0, 110.0, 260.0, 11.0, 0, 0, 0, 1, 0, 0, 1, 0, 1],
        [48.0, 0.5, 250.0, 4.0, 800.0, 90.0, 300.0, 10.0, 1, 1, 0, 0, 1, 0, 0, 0, 0],
        [48.0, 0.7, 350.0, 3.8, 900.0, 95.0, 280.0, 10.2, 1, 1, 0, 0, 1, 1, 0, 1, 0]])
    return rows, X, np.array([2.5, 1.0, 8.0, 4.0]), np.array([True, True, False, False])


def _whas_rows() -> tuple[list[list], np.ndarray]:
    rows = [[70, 0, 25.0, 1, 0, 100, 1], [80, 1, None, 0, 1, 200, 0], [60, 1, 31.0, 0, 0, 50, 1],
            [65, None, 22.0, 1, 1, 7, 0]]
    X = np.array([  # age, bmi (missing -> mean 26), sex_1 (missing -> mode 1), chf_1, miord_1
        [70, 25, 0, 1, 0], [80, 26, 1, 0, 1], [60, 31, 1, 0, 0], [65, 22, 1, 1, 1]], dtype=float)
    return rows, X


def _write_exact_fixture(folder: Path) -> None:
    write_csv(folder / "support2.csv", SUPPORT_HEADER, _support_rows()[0])
    feat, labels, _ = _metabric_rows()
    write_csv(folder / "metabric_feat.csv", METABRIC_HEADER, feat)
    write_csv(folder / "metabric_label.csv", ["event_time", "label"], labels)
    write_csv(folder / "pbc2.csv", PBC_HEADER, _pbc_rows()[0], quote_strings=True)
    write_csv(folder / "whas.csv", WHAS_HEADER, _whas_rows()[0])


# ----------------------------------------------------------------------------- the loader, exactly
def test_fixture_headers_are_the_official_files_layout():
    assert len(SUPPORT_HEADER) == 48 and len(METABRIC_HEADER) == 79 and len(PBC_HEADER) == 21
    assert METABRIC_HEADER[5:9] == ["NPI", "grade", "grade", "grade"]


def test_support_features_imputation_and_one_hot(tmp_path):
    _write_exact_fixture(tmp_path)
    X, y = load_paper_dataset("support", tmp_path)
    np.testing.assert_array_equal(X, _support_rows()[1])
    np.testing.assert_array_equal(y["time"], [10.0, 2000.0, 5.0, 300.0])
    np.testing.assert_array_equal(y["event"], [True, False, True, False])
    assert X.dtype == np.float64 and y.dtype.names == ("event", "time")


def test_metabric_keeps_its_eight_columns_and_reads_the_label_file(tmp_path):
    _write_exact_fixture(tmp_path)
    X, y = load_paper_dataset("metabric", str(tmp_path))
    np.testing.assert_array_equal(X, _metabric_rows()[2])
    np.testing.assert_array_equal(y["time"], [2999.0, 1484.0, 3.0])
    np.testing.assert_array_equal(y["event"], [False, True, True])


def test_pbc_visits_time_age_and_categories(tmp_path):
    _write_exact_fixture(tmp_path)
    X, y = load_paper_dataset("pbc", tmp_path)
    _, X_ref, t_ref, e_ref = _pbc_rows()
    np.testing.assert_allclose(X, X_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(y["time"], t_ref, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(y["event"], e_ref)


def test_whas_features_and_imputation(tmp_path):
    _write_exact_fixture(tmp_path)
    X, y = load_paper_dataset("whas", tmp_path)
    np.testing.assert_array_equal(X, _whas_rows()[1])
    np.testing.assert_array_equal(y["time"], [100.0, 200.0, 50.0, 7.0])
    np.testing.assert_array_equal(y["event"], [True, False, True, False])


@pytest.mark.parametrize("name, file", [("support", "support2.csv"), ("metabric", "metabric_feat.csv"),
                                        ("metabric", "metabric_label.csv"), ("pbc", "pbc2.csv"),
                                        ("whas", "whas.csv")])
def test_a_missing_file_is_named_with_the_expected_layout(tmp_path, name, file):
    _write_exact_fixture(tmp_path)
    (tmp_path / file).unlink()
    with pytest.raises(FileNotFoundError, match=rf"{name}: .*{file}.* not found; data_dir must be the official CDVI "
                                                r"repository's datasets/ folder"):
        load_paper_dataset(name, tmp_path)


def test_bad_files_raise_clear_errors(tmp_path):
    _write_exact_fixture(tmp_path)
    with pytest.raises(ValueError, match="name must be one of"):
        load_paper_dataset("whas500", tmp_path)
    write_csv(tmp_path / "whas.csv", [c for c in WHAS_HEADER if c != "bmi"], [[70, 0, 1, 0, 100, 1]])
    with pytest.raises(ValueError, match=r"whas\.csv' lacks the column\(s\) bmi"):
        load_paper_dataset("whas", tmp_path)
    write_csv(tmp_path / "whas.csv", WHAS_HEADER, [[70, 0, 25.0, 1, 0, 0, 1]])
    with pytest.raises(ValueError, match="every time must be a finite number > 0"):
        load_paper_dataset("whas", tmp_path)
    write_csv(tmp_path / "whas.csv", WHAS_HEADER, [[70, 0, 25.0, 1, 0, 10, 2]])
    with pytest.raises(ValueError, match="the event column 'event' must hold only 0 and 1"):
        load_paper_dataset("whas", tmp_path)
    write_csv(tmp_path / "metabric_label.csv", ["event_time", "label"], [[10, 1]])
    with pytest.raises(ValueError, match="the two METABRIC files must hold the same subjects"):
        load_paper_dataset("metabric", tmp_path)


# ----------------------------------------------------------------------------- the paper_data experiment on it
def _paper_data():
    from icml25.papers.cdvi.repro import EXPERIMENTS

    return next(e for e in EXPERIMENTS if e.name == "paper_data")


def test_paper_data_smoke_runs_end_to_end_on_the_paper_layout(tmp_path):
    pytest.importorskip("sksurv")
    write_cdvi_files(tmp_path)
    for name in PAPER_DATASETS:  # the fixture itself loads
        X, y = load_paper_dataset(name, tmp_path)
        assert len(y) == 90 and np.isfinite(X).all()
    exp = _paper_data()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    assert cfg.run_datasets() == PAPER_DATASETS
    m = exp.run(cfg, seed=0)
    for name in PAPER_DATASETS:
        for key in ("none", "dense", "split", "aft", "cox"):
            assert 0.0 <= m[f"{name}_ctd_{key}"] <= 1.0
            assert 0.0 <= m[f"{name}_ibs_{key}"] <= 1.0
    assert not any(k.startswith("whas500") for k in m)
    assert all(np.isfinite(v) for v in m.values())
    assert m["mean_ibs_diff_dense"] == pytest.approx(np.mean([m[f"{d}_ibs_diff_dense"] for d in PAPER_DATASETS]))
    assert m["min_ctd_dense"] == min(m[f"{d}_ctd_dense"] for d in PAPER_DATASETS)
    one = exp.run(exp.make_config("smoke", {"data_dir": str(tmp_path), "paper_datasets": ("whas",)}), seed=0)
    assert one["min_ctd_dense"] == one["whas_ctd_dense"] and not any(k.startswith("support") for k in one)
    # the same seed and set give the same numbers whether run alone or with the others
    assert one["whas_ctd_dense"] == m["whas_ctd_dense"]


def test_paper_data_runs_the_official_recipe():
    from icml25.papers.cdvi.model import CDCVAEConfig
    from icml25.papers.cdvi.repro import PaperDataConfig

    cfg = _paper_data().make_config("full")
    assert cfg.model == CDCVAEConfig(primitive="gumbel", beta=0.9, lr=1e-3, batch_size=200, epochs=5000,
                                     weight_decay=1e-2, patience=30, criterion="ctd")
    assert _paper_data().make_config("quick").model == cfg.model and cfg.max_rows == 0
    assert PaperDataConfig().paper_datasets == PAPER_DATASETS and PaperDataConfig().data_dir == ""


def test_figures_use_the_data_sets_that_ran(tmp_path):
    pytest.importorskip("matplotlib")
    from icml25.papers.cdvi.repro import EXPERIMENTS

    cfg = _paper_data().make_config("smoke", {"data_dir": str(tmp_path), "paper_datasets": ("pbc", "whas")})
    per_seed = [{f"{d}_{m}_{k}": 0.5 + 0.01 * s for d in ("pbc", "whas") for m in ("ibs", "ctd")
                 for k in ("none", "dense", "split", "aft", "cox")} for s in range(2)]
    paths = _paper_data().figures(per_seed, cfg, tmp_path)
    assert [p.name for p in paths] == ["paper_data_ibs_ctd.png"] and paths[0].is_file()
    real = next(e for e in EXPERIMENTS if e.name == "real")
    per_seed = [{f"whas500_{m}_{k}": 0.5 for m in ("ibs", "ctd") for k in ("none", "dense", "split", "aft", "cox")}]
    assert [p.name for p in real.figures(per_seed, real.make_config("smoke"), tmp_path)] == ["real_ibs_ctd.png"]


def test_paper_data_config_data_dir_and_paper_datasets(tmp_path):
    from icml25.common.checks import ConfigError
    from icml25.papers.cdvi.repro import PaperDataConfig, RealConfig

    assert _paper_data().make_config("full", {"data_dir": str(tmp_path)}).run_datasets() == PAPER_DATASETS
    with pytest.raises(ConfigError, match=r"^PaperDataConfig\.data_dir must be an existing folder with the "
                                          r"paper's CSV files"):
        PaperDataConfig(data_dir=str(tmp_path / "nowhere"))
    (tmp_path / "whas.csv").write_text("age\n")
    with pytest.raises(ConfigError, match=r"PaperDataConfig\.data_dir must be an existing folder"):
        PaperDataConfig(data_dir=str(tmp_path / "whas.csv"))  # a file, not a folder
    with pytest.raises(ConfigError, match=r"PaperDataConfig\.paper_datasets must be one of"):
        PaperDataConfig(data_dir=str(tmp_path), paper_datasets=("whas500",))
    with pytest.raises(ConfigError, match=r"PaperDataConfig\.paper_datasets must not repeat"):
        PaperDataConfig(paper_datasets=("whas", "whas"))
    with pytest.raises(ConfigError, match=r"PaperDataConfig\.paper_datasets"):
        PaperDataConfig(paper_datasets=())
    with pytest.raises(ConfigError, match=r"RealConfig\.datasets holds the paper's sets .* paper_data experiment"):
        RealConfig(datasets=("support",))
    assert not hasattr(RealConfig(), "data_dir")  # the bundled-data experiment reads no user path
    PaperDataConfig(data_dir=str(tmp_path))  # validation reads no file: an empty folder passes
