"""naiad on the paper's real screens: the ``paper_data_*`` experiments (the official CSV layout at a user's path).

The real screens (Norman, Horlbeck K562/Jurkat, Simpson) ship in the official repository, not on PyPI; the
stand-in experiments generate a synthetic screen and no longer take a path. Files: tests/paper_files/naiad.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from icml25.core.experiment import ConfigError
from icml25.papers.naiad import repro
from icml25.papers.naiad.data import load_screen_csv
from paper_files.naiad import N_GENES, write_screen

pytest.importorskip("pandas")

EXP = {e.name: e for e in repro.EXPERIMENTS}
PAPER = ("paper_data_small_sample", "paper_data_active_learning")
STAND_IN = {"paper_data_small_sample": "small_sample", "paper_data_active_learning": "active_learning"}


def test_the_real_screens_run_only_in_their_own_experiments():
    for name in PAPER:
        exp = EXP[name]
        assert exp.data_setting == "data_path" and "tutorials/data" in exp.full_requirements
        assert exp.missing_data(exp.make_config("smoke"))
        assert not hasattr(EXP[STAND_IN[name]].make_config("smoke"), "data_path")
        assert exp.fidelity_of("full").level == "paper" and exp.fidelity_of("smoke").level == "mechanism"
    for name in STAND_IN.values():  # a synthetic stand-in is never the paper's fidelity
        assert EXP[name].fidelity_of("full").level == "reduced"


def test_presets_follow_the_norman_notebooks():
    small = EXP["paper_data_small_sample"].make_config("full")
    assert small.n_train == tuple(112 * k for k in (1, 2, 4, 10, 15, 20, 30))  # Table 1 notebook: n_gene = 112
    assert small.model.d_embed == (2, 4, 16, 32, 32, 64, 64) and small.model.n_epoch == 500
    assert small.model.d_pheno_hid == 64 and small.test_frac == 0.1 and small.n_val == 632
    al = EXP["paper_data_active_learning"].make_config("full")
    assert al.schedule == (100, 200, 300, 400, 500) and al.model.n_epoch == 200 and al.model.batch_size == 4096
    assert al.model.d_embed == (2, 4, 4, 8, 16) and al.test_frac == 0.3 and al.learner.n_ensemble == 5


def test_twin_claims_keep_the_stand_ins_rules():
    claims = {c.id: c for c in repro.CLAIMS}
    twins = [c for c in repro.CLAIMS if c.id.startswith("paper_data_")]
    assert {c.experiment for c in twins} == set(PAPER) and len(twins) == 7
    for twin in twins:
        base = claims[twin.id.removeprefix("paper_data_")]
        assert base.kind == twin.kind == "paper" and STAND_IN[twin.experiment] == base.experiment
        for key in ("metric", "op", "threshold", "aggregate", "resolution", "fair_at", "source", "paper_value"):
            assert getattr(twin, key) == getattr(base, key), (twin.id, key)


def test_loader_reads_the_fixture_exactly(tmp_path):
    path = write_screen(tmp_path)
    s = load_screen_csv(path)
    assert s.n_genes == N_GENES and len(s) == N_GENES * (N_GENES - 1) // 2 and s.y_clean is None
    rng = np.random.default_rng(0)  # the writer's draws, in its order
    single = rng.normal(-0.1, 0.2, N_GENES)
    np.testing.assert_allclose(s.single[s.pairs[:, 0] == 0, 0], single[0], atol=1e-7)
    row = {tuple(p): k for k, p in enumerate(s.pairs.tolist())}
    y01 = single[0] + single[1] + 0.5 * single[0] * single[1] + rng.normal(0, 0.02)
    assert s.y[row[(0, 1)]] == pytest.approx((round(y01, 9) - 0.5) / 2, abs=1e-6)  # repeated pair averaged
    np.testing.assert_allclose(s.single[row[(0, 1)]], single[[0, 1]], atol=1e-7)


def test_config_names_a_missing_file(tmp_path):
    for name in PAPER:
        with pytest.raises(ConfigError, match="data_path must be an existing CSV file"):
            EXP[name].make_config("smoke", {"data_path": str(tmp_path / "nope.csv")})


def test_small_sample_smoke_on_the_fixture(tmp_path, no_network):
    exp = EXP["paper_data_small_sample"]
    cfg = exp.make_config("smoke", {"data_path": str(write_screen(tmp_path))})
    m = exp.run(cfg, seed=0)
    assert m["n_train"] == [30.0, 60.0]
    assert "noise_floor_rmse" not in m and "additive_screen_naiad_over_linear" not in m  # synthetic-only
    base = np.minimum(m["rmse_additive"], m["rmse_svr"])
    np.testing.assert_allclose(m["naiad_over_best_baseline"], np.array(m["rmse_naiad"]) / base)
    assert m["naiad_minus_d128_smallest_n"] == pytest.approx(m["rmse_naiad"][0] - m["rmse_naiad_d128"][0])
    # the official linear model on the screen's own split, refitted here: the same test RMSE
    s = load_screen_csv(cfg.data_path)
    perm = np.random.default_rng([0, 3]).permutation(len(s))
    n_test = int(cfg.test_frac * len(s))
    test, train = perm[:n_test], perm[n_test + cfg.n_val:][:60]
    X = np.column_stack([np.ones(60), s.single[train]])
    coef = np.linalg.lstsq(X, s.y[train], rcond=None)[0]
    pred = np.column_stack([np.ones(n_test), s.single[test]]) @ coef
    assert m["rmse_additive"][-1] == pytest.approx(np.sqrt(np.mean((pred - s.y[test]) ** 2)), rel=1e-4)


def test_active_learning_smoke_on_the_fixture(tmp_path, no_network):
    exp = EXP["paper_data_active_learning"]
    cfg = exp.make_config("smoke", {"data_path": str(write_screen(tmp_path))})
    m = exp.run(cfg, seed=0)
    n_pairs = N_GENES * (N_GENES - 1) // 2
    assert m["expected_random_final"] == pytest.approx(cfg.top_n * 140 / (n_pairs - int(0.3 * n_pairs)))
    for method in cfg.methods:
        assert len(m[f"found_{method}"]) == 3 and 0.0 <= m[f"tpr_final_{method}"] <= 1.0
    assert m["found_mean"][0] == m["found_random"][0]  # the shared random start
    assert m["mean_minus_random_tpr_final"] == pytest.approx(m["tpr_final_mean"] - m["tpr_final_random"])
