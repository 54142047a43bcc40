"""The paper's data for vlgpo: a task of the official VLGPO release (GGS AAV training split, ground-truth
landscape, official VAE, GGS predictor and oracle checkpoints) read from a user's folder, and the
``paper_data_aav_medium`` / ``paper_data_aav_hard`` experiments on it."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from icml25.core.experiment import ConfigError
from icml25.core.registry import load_reproduction
from icml25.papers.vlgpo.landscape import encode_sequences
from icml25.papers.vlgpo.official import (
    OFFICIAL_ALPHABET,
    OFFICIAL_SEEDS,
    ConvSeqVAE,
    load_ggs_cnn,
    load_vlgpo_release,
    release_files,
)
from icml25.papers.vlgpo.repro import PaperDataConfig, TaskConfig
from paper_files.vlgpo import N_GT, N_TRAIN, write_release

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


def _rows(path):
    with path.open(newline="") as fh:
        return [(r["sequence"], float(r["score"])) for r in csv.DictReader(fh)]


def test_official_seeds_are_the_released_ones():
    rng = np.random.RandomState(41)   # sample.py: np.random.seed(41); np.random.randint(0, 1000, size=5)
    assert OFFICIAL_SEEDS == tuple(int(s) for s in rng.randint(0, 1000, size=5))


def test_release_loads_the_files_exactly(tmp_path):
    write_release(tmp_path)
    rel = load_vlgpo_release(tmp_path, "aav_medium")
    train = _rows(tmp_path / "data" / "aav_medium.csv")
    gt = _rows(tmp_path / "data" / "aav_ground_truth.csv")
    assert len(train) == N_TRAIN and len(gt) == N_GT
    assert rel["train_seqs"] == [s for s, _ in train] == rel["gt_seqs"][:N_TRAIN]
    np.testing.assert_array_equal(rel["train_scores"], [v for _, v in train])
    np.testing.assert_array_equal(rel["gt_scores"], [v for _, v in gt])
    assert all(len(s) == 28 for s in rel["gt_seqs"])
    assert rel["fitness_range"] == (0.0, 19.5365) and rel["latent_dim"] == 16
    assert rel["step_settings"] == (39, 34.0)
    assert load_vlgpo_release(tmp_path, "aav_hard")["step_settings"] == (19, 38.0)
    assert load_vlgpo_release(tmp_path, "aav_medium", "smoothed")["step_settings"] == (20, 10.0)
    # the VAE: the written official-layout weights, read in the official token order
    raw = ConvSeqVAE(28, 16).eval()
    raw.load_state_dict(torch.load(tmp_path / "checkpoints" / "vae" / "vae_aav_medium.pt")["state_dict"])
    official_tokens = torch.tensor([[OFFICIAL_ALPHABET.index(c) for c in s] for s in rel["train_seqs"]])
    torch.testing.assert_close(rel["vae"].embed(rel["train_seqs"]), raw.embed(official_tokens))
    # predictor and oracle: the two written checkpoints (the formula itself is tested in test_vlgpo.py)
    files = release_files(tmp_path, "aav_medium")
    for key in ("predictor", "oracle"):
        np.testing.assert_array_equal(rel[key].predict(rel["train_seqs"]),
                                      load_ggs_cnn(files[key], 28).predict(rel["train_seqs"]))
    assert not np.allclose(rel["predictor"].predict(rel["train_seqs"]), rel["oracle"].predict(rel["train_seqs"]))
    assert files["predictor"].parent.name == "unsmoothed"
    assert release_files(tmp_path, "aav_hard", "smoothed")["predictor"].parent.name == "smoothed"


@pytest.mark.parametrize("rel", ["data/aav_medium.csv", "data/aav_ground_truth.csv",
                                 "checkpoints/vae/vae_aav_medium.pt",
                                 "checkpoints/predictor/unsmoothed/predictor_aav_medium.ckpt",
                                 "checkpoints/oracle/oracle_aav.ckpt"])
def test_a_missing_file_is_named(tmp_path, rel):
    write_release(tmp_path)
    (tmp_path / rel).unlink()
    with pytest.raises(FileNotFoundError, match=rel.split("/")[-1]):
        load_vlgpo_release(tmp_path, "aav_medium")


def test_gfp_and_unknown_names_are_refused(tmp_path):
    write_release(tmp_path)
    with pytest.raises(ValueError, match="only the AAV tasks"):
        load_vlgpo_release(tmp_path, "gfp_medium")
    with pytest.raises(ValueError, match="task must be one of"):
        load_vlgpo_release(tmp_path, "gb1_medium")
    with pytest.raises(ValueError, match="predictor must be"):
        load_vlgpo_release(tmp_path, "aav_medium", "tiny")


def test_experiments_shape_and_config_errors(tmp_path):
    repro = load_reproduction("vlgpo")
    assert not hasattr(TaskConfig(), "data_dir")
    for task in ("aav_medium", "aav_hard"):
        exp = repro.experiment(f"paper_data_{task}")
        assert exp.config is PaperDataConfig and exp.data_setting == "data_dir"
        assert exp.missing_data(exp.make_config("smoke"))
        assert exp.make_config("full").task == task and exp.make_config("full").vlgpo.n_samples == 512
    exp = repro.experiment("paper_data_aav_medium")
    for key, value in (("data_dir", str(tmp_path / "nowhere")), ("task", "gfp_hard"), ("task", "aav_easy"),
                       ("predictor", "tiny")):
        with pytest.raises(ConfigError, match=key):
            exp.make_config("smoke", {key: value})


def test_smoke_runs_on_the_written_files(tmp_path):
    write_release(tmp_path)
    exp = load_reproduction("vlgpo").experiment("paper_data_aav_hard")
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    m = exp.run(cfg, 0)
    rel = load_vlgpo_release(tmp_path, "aav_hard")
    train_x, y = encode_sequences(rel["train_seqs"]), rel["train_scores"]
    assert (m["J"], m["alpha"], m["n_train"]) == (2.0, 34.0, N_TRAIN)
    assert m["train_fitness_median"] == pytest.approx(np.median(y) / 19.5365, abs=1e-12)
    assert m["train_fitness_max"] == pytest.approx(y.max() / 19.5365, abs=1e-12)
    held = slice(N_TRAIN, None)   # the ground truth holds the training split first, then the others
    rho = spearmanr(rel["predictor"].predict(rel["gt_seqs"][held]), rel["gt_scores"][held])[0]
    assert m["predictor_spearman_heldout"] == pytest.approx(rho, abs=1e-12)
    recon = (rel["vae"].decode_tokens(rel["vae"].embed(train_x)) == train_x).mean()
    assert m["vae_reconstruction"] == pytest.approx(recon, abs=1e-12)
    consensus = np.array([np.bincount(c, minlength=20).argmax() for c in train_x.T])
    assert m["vae_minus_consensus_reconstruction"] == pytest.approx(recon - (train_x == consensus).mean(), abs=1e-12)
    oracle = (rel["oracle"].predict(rel["gt_seqs"]) - 0.0) / 19.5365
    for method in ("vlgpo", "adalead"):
        assert 1 <= m[f"n_designs_{method}"] <= 16
        assert oracle.min() - 1 < m[f"fitness_{method}"] < oracle.max() + 1
        assert m[f"diversity_median_{method}"] >= 0 and 0 <= m[f"novelty_{method}"] <= 28
    assert m["fitness_vlgpo_minus_adalead"] == m["fitness_vlgpo"] - m["fitness_adalead"]
    assert exp.run(cfg, 0) == m          # seeded
    # official_steps (the default): the released J / alpha of the task and predictor
    tiny = {"data_dir": str(tmp_path), "official_steps": True, "vlgpo.n_samples": 4, "vlgpo.ode_steps": 1,
            "vlgpo.top_k": 2}
    m2 = exp.run(exp.make_config("smoke", tiny), 1)
    assert (m2["J"], m2["alpha"]) == (19.0, 38.0)
    m3 = exp.run(exp.make_config("smoke", {**tiny, "predictor": "smoothed"}), 1)
    assert (m3["J"], m3["alpha"]) == (20.0, 10.0)
