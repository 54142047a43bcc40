"""IBFS on the paper's mini-/tiered-ImageNet from a user path: ``load_paper_dataset`` and the ``paper_data``
experiment (``PaperRankingConfig.data_dir`` / ``paper_dataset``).

Tiny files are written into ``tmp_path`` in the RFS layout (github.com/WangYueFt/rfs, ``dataset/mini_imagenet.py``
and ``dataset/tiered_imagenet.py``) by the writers in ``tests/paper_files/ibfs.py``: mini-ImageNet as
``miniImageNet_category_split_*.pickle`` files holding a dict with ``data`` (N, 84, 84, 3) uint8 and ``labels`` (a
list), written as Python 2 wrote them (the array's bytes as a py2 ``str``, which only ``encoding="latin1"`` reads, as
RFS does); tiered-ImageNet as ``<split>_images.npz`` (``images``) plus ``<split>_labels.pkl`` (a dict with ``labels``
and the other label keys of the distributed files). Every image carries its label and index in its pixels, so the
tests check which images come back, not only shapes. The ``paper_data`` experiment then runs its smoke preset on
such a folder, whose meta-test classes are constant colours: every network separates them, so every accuracy is
exactly 1 and every rank correlation 0; without a folder it is skipped. The glyph ``ranking`` experiment has no data
setting.
"""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import torch

from icml25.common.checks import ConfigError
from icml25.core.experiment import parse_value
from icml25.papers.ibfs import (
    PAPER_DATASETS,
    ImageClasses,
    ImageEpisodeSampler,
    load_paper_dataset,
    paper_files,
    read_paper_split,
    repro,
)
from icml25.papers.ibfs.data import RFS_MEAN, RFS_STD
from icml25.papers.ibfs.repro import CLAIMS, EXPERIMENTS, PROXIES, PaperRankingConfig, RankingConfig
from paper_files.ibfs import MINI, write_mini, write_tiered
from paper_files.ibfs import images as _images
from paper_files.ibfs import labels as _labels
from paper_files.ibfs import py2_pickle as _py2_pickle

EXP = next(e for e in EXPERIMENTS if e.name == "paper_data")
STANDIN = next(e for e in EXPERIMENTS if e.name == "ranking")


@pytest.fixture(autouse=True)
def _no_network_one_thread(no_network):
    """Every test: any attempt to reach the network raises; torch on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _decode(x: torch.Tensor) -> np.ndarray:
    """(label, file index) of each normalised image tensor (m, 3, H, W), read back from channels 0 and 1."""
    px = x[:, :2, 0, 0].double().numpy() * RFS_STD[:2] + RFS_MEAN[:2]
    return np.rint(px * 255).astype(int)


# --------------------------------------------------------------------------- reading the files
def test_mini_imagenet_py2_pickles_read_exactly(tmp_path):
    written = write_mini(tmp_path, {"train": _labels(0, 4, 5, 0), "val": _labels(64, 3, 4, 1),
                                    "test": _labels(80, 5, 6, 2)})
    raw = (tmp_path / MINI["test"]).read_bytes()
    with pytest.raises(UnicodeDecodeError):  # the fixture is a py2 pickle: only latin1 reads it
        pickle.loads(raw)
    for split in ("train", "val", "test"):
        images, labels = read_paper_split("mini_imagenet", tmp_path, split)
        assert images.dtype == np.uint8 and images.shape == (len(labels), 84, 84, 3)
        np.testing.assert_array_equal(images, written[split][0])
        np.testing.assert_array_equal(labels, written[split][1])
        assert labels.dtype == np.int64
    bank = ImageClasses(images, labels)  # test split: labels 80..84, class c = the c-th smallest label
    np.testing.assert_array_equal(bank.class_labels, np.arange(80, 85))
    np.testing.assert_array_equal(bank.counts, [6] * 5)
    assert (bank.n_classes, bank.size, bank.channels) == (5, 84, 3)
    for c in range(5):  # each class's images, in file order
        np.testing.assert_array_equal(bank.class_images(c), np.flatnonzero(labels == 80 + c))
    assert paper_files("mini_imagenet", "train") == (MINI["train"],)
    assert paper_files("tiered_imagenet", "val") == ("val_images.npz", "val_labels.pkl")


def test_tiered_imagenet_npz_and_label_pickles_read_exactly(tmp_path):
    written = write_tiered(tmp_path, {"train": _labels(0, 6, 3, 3), "test": _labels(0, 5, 4, 4)})
    for split in ("train", "test"):
        images, labels = read_paper_split("tiered_imagenet", tmp_path, split)
        np.testing.assert_array_equal(images, written[split][0])
        np.testing.assert_array_equal(labels, written[split][1])  # ``labels``, not label_specific / general
    train, test = load_paper_dataset("tiered_imagenet", tmp_path, n_way=5, k_shot=1, n_query=2)
    assert (train.bank.n_classes, test.bank.n_classes) == (6, 5)
    assert (train.bank.name, test.bank.name) == ("tiered_imagenet train", "tiered_imagenet test")


def test_rfs_data_root_with_dataset_subfolder_and_val_split(tmp_path):
    """RFS's ``--data_root`` holds ``miniImageNet/``: that parent folder is accepted too; ``eval_split='val'``
    serves the meta-validation classes."""
    write_mini(tmp_path / "miniImageNet", {"train": _labels(0, 6, 5, 0), "val": _labels(64, 5, 4, 1)})
    train, val = load_paper_dataset("mini_imagenet", tmp_path, n_way=5, k_shot=1, n_query=3, eval_split="val")
    np.testing.assert_array_equal(val.bank.class_labels, np.arange(64, 69))
    np.testing.assert_array_equal(train.bank.class_labels, np.arange(6))
    assert isinstance(train, ImageEpisodeSampler) and isinstance(val, ImageEpisodeSampler)


def test_missing_file_is_one_line_error_naming_it(tmp_path):
    write_mini(tmp_path, {"train": _labels(0, 4, 5, 0)})
    with pytest.raises(FileNotFoundError) as err:
        load_paper_dataset("mini_imagenet", tmp_path)
    msg = str(err.value)
    assert "\n" not in msg and f"missing {tmp_path / MINI['test']}" in msg and MINI["train"] in msg
    write_tiered(tmp_path / "t", {"train": _labels(0, 4, 5, 0), "test": _labels(0, 5, 4, 1)})
    (tmp_path / "t" / "test_labels.pkl").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing .*test_labels\.pkl; expected the RFS layout"):
        load_paper_dataset("tiered_imagenet", tmp_path / "t")
    with pytest.raises(FileNotFoundError, match="miniImageNet_category_split_train_phase_train.pickle"):
        read_paper_split("mini_imagenet", tmp_path / "nowhere", "train")
    with pytest.raises(ValueError, match="name must be one of"):
        load_paper_dataset("omniglot", tmp_path)
    with pytest.raises(ValueError, match="eval_split"):
        load_paper_dataset("mini_imagenet", tmp_path, eval_split="train")


def test_malformed_contents_raise_clear_errors(tmp_path):
    labels = _labels(0, 2, 3, 0)
    write_mini(tmp_path, {"train": labels}, data={"train": _images(labels).astype(np.float32)})
    with pytest.raises(ValueError, match=r"images must be uint8 \(N, H, W, 3\)"):
        read_paper_split("mini_imagenet", tmp_path, "train")
    write_mini(tmp_path, {"train": labels[:-1]}, data={"train": _images(labels)})
    with pytest.raises(ValueError, match="labels must be 6 integers"):
        read_paper_split("mini_imagenet", tmp_path, "train")
    _py2_pickle(tmp_path / MINI["train"], {"images": _images(labels), "labels": list(labels)})
    with pytest.raises(ValueError, match="'data' and 'labels'"):
        read_paper_split("mini_imagenet", tmp_path, "train")


# --------------------------------------------------------------------------- serving images and episodes
def test_images_are_normalised_as_rfs():
    """ToTensor (/255, HWC -> CHW) then Normalize(RFS mean, std), in float32."""
    labels = np.array([7, 7, 9])
    imgs = _images(labels, size=5)
    bank = ImageClasses(imgs, labels)
    x = bank.to_tensor(np.array([2, 0]))
    expected = (imgs[[2, 0]].astype(np.float64) / 255 - RFS_MEAN) / RFS_STD
    assert x.dtype == np.float32 and x.shape == (2, 3, 5, 5)
    np.testing.assert_allclose(x, expected.transpose(0, 3, 1, 2), rtol=0, atol=4 * np.finfo(np.float32).eps * 4)
    # by hand, one pixel: channel 0 of image 2 holds its label 9
    assert x[0, 0, 0, 0] == pytest.approx((9 / 255 - 120.39586422 / 255) / (70.68188272 / 255), rel=1e-6)


def test_episodes_draw_distinct_images_of_the_drawn_classes(tmp_path):
    """Like RFS's meta-test sampler: n_way distinct classes, k_shot + n_query distinct images each, support and
    query disjoint, labels 0..n_way-1 in the order the classes were drawn, class-major support."""
    write_mini(tmp_path, {"train": _labels(0, 9, 6, 0), "test": _labels(80, 7, 6, 2)})
    _, test = load_paper_dataset("mini_imagenet", tmp_path, n_way=3, k_shot=2, n_query=3)
    rng = np.random.default_rng(0)
    seen_classes = set()
    for _ in range(20):
        xs, ys, xq, yq = test.sample(rng)
        assert xs.shape == (6, 3, 84, 84) and xq.shape == (9, 3, 84, 84) and xs.dtype == torch.float32
        np.testing.assert_array_equal(ys.numpy(), [0, 0, 1, 1, 2, 2])
        np.testing.assert_array_equal(yq.numpy(), [0, 0, 0, 1, 1, 1, 2, 2, 2])
        s, q = _decode(xs), _decode(xq)
        classes = [s[ys.numpy() == k, 0] for k in range(3)]
        assert all(len(set(c)) == 1 for c in classes) and len({int(c[0]) for c in classes}) == 3
        for k in range(3):
            assert set(q[yq.numpy() == k, 0]) == {classes[k][0]}
        idx = np.concatenate([s[:, 1], q[:, 1]])
        assert len(set(idx)) == idx.size  # every image of the episode is a different file row
        seen_classes |= {int(c[0]) for c in classes}
    assert seen_classes == set(range(80, 87))
    five_shot = dataclasses.replace(test, k_shot=3)  # the reproduction's scoring view
    assert isinstance(five_shot, ImageEpisodeSampler) and five_shot.sample(rng)[0].shape[0] == 9
    with pytest.raises(ValueError, match="exceeds the 6 images of the smallest class of mini_imagenet test"):
        dataclasses.replace(test, k_shot=4)
    with pytest.raises(ValueError, match="n_way=8 exceeds the 7 available classes"):
        load_paper_dataset("mini_imagenet", tmp_path, n_way=8, k_shot=1, n_query=1)


def test_render_draws_each_class_uniformly(tmp_path):
    """``bank.render`` (RFS pre-training batches) returns an image of each requested class, all of its images in
    turn."""
    write_mini(tmp_path, {"train": _labels(0, 4, 5, 0), "test": _labels(80, 5, 6, 2)})
    train, _ = load_paper_dataset("mini_imagenet", tmp_path, n_way=2, k_shot=1, n_query=1)
    classes = np.array([3, 0, 0, 2] * 50)
    x = train.bank.render(classes, np.random.default_rng(0))
    dec = _decode(torch.from_numpy(x))
    np.testing.assert_array_equal(dec[:, 0], classes)
    assert set(dec[classes == 3, 1]) == set(np.flatnonzero(train.bank.images[:, 0, 0, 0] == 3))
    with pytest.raises(ValueError, match=r"class ids must lie in \[0, 4\)"):
        train.bank.render(np.array([4]), np.random.default_rng(0))


# --------------------------------------------------------------------------- the experiment
def test_config_fields_and_errors(tmp_path):
    cfg = EXP.make_config("smoke")
    assert (cfg.data_dir, cfg.paper_dataset) == ("", "mini_imagenet")
    assert PAPER_DATASETS == ("mini_imagenet", "tiered_imagenet")
    with pytest.raises(ConfigError, match=r"PaperRankingConfig\.data_dir must be an existing folder .* got "
                                          r"'/no/such/dir'$"):
        EXP.make_config("smoke", {"data_dir": "/no/such/dir"})
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"PaperRankingConfig\.data_dir must be an existing folder"):
        EXP.make_config("smoke", {"data_dir": str(tmp_path / "file")})
    with pytest.raises(ConfigError, match=r"PaperRankingConfig\.paper_dataset must be"):
        EXP.make_config("smoke", {"paper_dataset": "omniglot"})
    assert parse_value(PaperRankingConfig, "data_dir", str(tmp_path)) == str(tmp_path)
    cfg = EXP.make_config("full", {"data_dir": str(tmp_path), "paper_dataset": "tiered_imagenet", "n_way": 150})
    assert (cfg.data_dir, cfg.paper_dataset, cfg.n_way) == (str(tmp_path), "tiered_imagenet", 150)  # 160 classes
    with pytest.raises(ConfigError, match="n_way must be <= 100"):
        STANDIN.make_config("smoke", {"n_way": 150})  # the glyph world's 100 meta-test classes
    cfg = STANDIN.make_config("smoke")  # the glyph experiment reads no user path
    assert not hasattr(cfg, "data_dir") and not hasattr(cfg, "paper_dataset")
    assert not hasattr(RankingConfig(), "data_dir")


def test_paper_data_presets_keep_the_rfs_protocol():
    """quick and full train every candidate RFS-style (lr 0.05, batch 64) for 600 / 3000 steps, evaluate 5-way
    1-shot with RFS's 15 queries; the seeds are the stand-in's."""
    quick, full = EXP.make_config("quick"), EXP.make_config("full")
    for cfg in (quick, full):
        assert (cfg.ground_truth, cfg.rfs_lr, cfg.rfs_batch, cfg.n_way, cfg.k_shot, cfg.n_query) == (
            "rfs", 0.05, 64, 5, 1, 15)
    assert (quick.n_archs, quick.rfs_steps, quick.test_episodes) == (12, 600, 100)
    assert (full.n_archs, full.rfs_steps, full.test_episodes) == (50, 3000, 600)
    assert EXP.fidelity_of("quick").level == EXP.fidelity_of("full").level == "reduced"
    assert EXP.fidelity_of("smoke").level == "mechanism" and EXP.seeds == STANDIN.seeds


def test_paper_data_claims_twin_the_stand_in_paper_claims():
    """Every paper claim of ``ranking`` and its gate has a ``paper_data_`` twin with the same statistic; the
    ``ours`` claims have none."""
    by_id = {c.id: c for c in CLAIMS}
    twins = [c for c in CLAIMS if c.experiment == "paper_data"]
    assert sorted(c.id for c in twins) == ["paper_data_ground_truth_learns", "paper_data_ibfs_beats_naswot",
                                           "paper_data_ibfs_tau_positive", "paper_data_ibfs_top1_accuracy"]
    for twin in twins:
        orig = by_id[twin.id.removeprefix("paper_data_")]
        assert orig.experiment == "ranking"
        for key in ("kind", "metric", "op", "threshold", "aggregate", "resolution", "source", "paper_value",
                    "fair_at"):
            assert getattr(twin, key) == getattr(orig, key), (twin.id, key)
        assert twin.requires == tuple(f"paper_data_{r}" for r in orig.requires)
        assert "mini-ImageNet" in twin.statement


def test_figures_have_one_file_per_experiment(tmp_path):
    pytest.importorskip("matplotlib")
    per_seed = [{f"{k}_{p}": 0.1 * s for k in ("tau", "top1_percentile") for p in PROXIES} for s in range(2)]
    paths = EXP.figures(per_seed, EXP.make_config("smoke", {"data_dir": str(tmp_path)}), tmp_path)
    assert [p.name for p in paths] == ["paper_data_ranking.png"] and paths[0].is_file()
    assert [p.name for p in STANDIN.figures(per_seed, STANDIN.make_config("smoke"), tmp_path)] == ["ranking.png"]


def test_paper_dataset_field_picks_the_loader(tmp_path, monkeypatch):
    calls = []

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        raise RuntimeError("stop after the loader")
    monkeypatch.setattr(repro, "load_paper_dataset", spy)
    cfg = EXP.make_config("smoke", {"data_dir": str(tmp_path), "paper_dataset": "tiered_imagenet", "n_query": 4})
    with pytest.raises(RuntimeError, match="stop after the loader"):
        EXP.run(cfg, 0)
    assert calls == [(("tiered_imagenet", str(tmp_path)), {"n_way": 5, "k_shot": 1, "n_query": 4, "device": "cpu"})]


def test_smoke_run_on_fixture_every_accuracy_is_one(tmp_path):
    """Smoke preset on a mini-ImageNet folder whose 5 meta-test classes are constant colours (10 identical images
    each): every 5-way episode holds the 5 colours, the batch-statistics BN sees the query as the support repeated,
    so the logistic regression classifies every query right, trained or not. Hence every accuracy is exactly 1,
    the ground truth is constant (Kendall tau NaN -> 0, p -> 1) and every pick sits at the tied mid-rank 2/3.
    Images are 24 x 24 (not 84) to keep the run to seconds; the loader does not depend on the size."""
    colours = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 0], [0, 255, 255]], np.uint8)
    test_labels = _labels(80, 5, 10, 5)
    test_images = np.broadcast_to(colours[test_labels - 80][:, None, None, :], (50, 24, 24, 3)).copy()
    write_mini(tmp_path / "miniImageNet", {"train": _labels(0, 6, 6, 6), "test": test_labels}, size=24,
               data={"test": test_images})
    cfg = EXP.make_config("smoke", {"data_dir": str(tmp_path)})
    m = EXP.run(cfg, seed=0)
    for key in ("acc_best", "acc_mean", "acc_worst", "acc_untrained_mean"):
        assert m[key] == 1.0, key
    assert m["acc_mean_minus_untrained"] == 0.0 and m["acc_mean_minus_chance"] == pytest.approx(0.8, abs=1e-15)
    for p in PROXIES:
        assert (m[f"tau_{p}"], m[f"p_{p}"]) == (0.0, 1.0), p
        assert m[f"top1_percentile_{p}"] == pytest.approx(2 / 3, abs=1e-15)
        assert (m[f"top1_regret_{p}"], m[f"top1_acc_{p}"], m[f"top1_in_top_{p}"]) == (0.0, 1.0, 0.0)
    assert m["ibfs_minus_params_tau"] == 0.0 and m["ibfs_minus_naswot_tau"] == 0.0
