"""generative_bilevel: MNIST read from a user's folder of official IDX files (``data.load_mnist``) and the
``paper_data_schedule`` / ``paper_data_schedule_zo`` experiments (``PaperScheduleConfig.data_dir``).

Every fixture is a tiny IDX file written into ``tmp_path`` byte by byte as LeCun's format prescribes (big-endian
magic 2051 / 2049, then big-endian uint32 sizes, then unsigned bytes row-major; the writers are in
``tests/paper_files/generative_bilevel.py``); the expected tensors are written out from the documented conversion
p / 255 * 2 - 1, flattened row-major.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
import torch

from icml25.core.experiment import ConfigError
from icml25.papers.generative_bilevel.data import MNISTFormatError, load_mnist, read_idx
from icml25.papers.generative_bilevel.repro import (
    CLAIMS,
    EXPERIMENTS,
    PaperScheduleConfig,
    ScheduleConfig,
    schedule_data,
)
from paper_files.generative_bilevel import write_idx as _idx
from paper_files.generative_bilevel import write_mnist as _mnist

torch.set_num_threads(1)
PAPER = {name: next(e for e in EXPERIMENTS if e.name == f"paper_data_{name}") for name in ("schedule", "schedule_zo")}
STANDIN = {name: next(e for e in EXPERIMENTS if e.name == name) for name in ("schedule", "schedule_zo")}


def test_exact_pixels_and_labels_after_the_documented_conversion(tmp_path):
    images = np.array([[[0, 255], [128, 1]], [[51, 204], [255, 0]], [[10, 20], [30, 40]]], dtype=np.uint8)
    labels = np.array([7, 0, 9], dtype=np.uint8)
    _idx(tmp_path / "train-images-idx3-ubyte", 2051, images)
    _idx(tmp_path / "train-labels-idx1-ubyte", 2049, labels)
    x, y = load_mnist(tmp_path, "train")
    assert x.dtype == torch.float32 and y.dtype == torch.int64
    assert x.shape == (3, 4) and y.tolist() == [7, 0, 9]
    expected = [[-1.0, 1.0, 128 / 255 * 2 - 1, 1 / 255 * 2 - 1],  # row-major: (0,0), (0,1), (1,0), (1,1)
                [51 / 255 * 2 - 1, 204 / 255 * 2 - 1, 1.0, -1.0],
                [10 / 255 * 2 - 1, 20 / 255 * 2 - 1, 30 / 255 * 2 - 1, 40 / 255 * 2 - 1]]
    np.testing.assert_allclose(x.numpy(), np.array(expected, dtype=np.float32), rtol=0, atol=1e-6)
    assert float(x.min()) == -1.0 and float(x.max()) == 1.0


def test_both_splits_gzip_and_torchvision_layout(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    data = _mnist(raw, n_train=5, n_test=3, gz=True)
    for split in ("train", "test"):
        x, y = load_mnist(tmp_path, split)  # the torchvision root, .gz files
        images, labels = data[split]
        assert x.shape == (len(images), 784)
        np.testing.assert_allclose(x.numpy(), images.reshape(len(images), -1) / 255.0 * 2 - 1, atol=1e-6)
        assert y.tolist() == labels.tolist()
        x2, y2 = load_mnist(raw, split)  # the raw folder itself
        assert torch.equal(x, x2) and torch.equal(y, y2)
    assert read_idx(raw / "t10k-labels-idx1-ubyte.gz", 2049).tolist() == data["test"][1].tolist()


def test_missing_and_malformed_files_raise_one_error_naming_them(tmp_path):
    _mnist(tmp_path, n_train=4, n_test=2)
    with pytest.raises(ValueError, match="split must be one of"):
        load_mnist(tmp_path, "val")
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(MNISTFormatError, match="t10k-labels-idx1-ubyte.*not found"):
        load_mnist(tmp_path, "test")
    with pytest.raises(MNISTFormatError, match="not found"):
        load_mnist(tmp_path / "nowhere", "train")
    images = tmp_path / "train-images-idx3-ubyte"
    good = images.read_bytes()
    images.write_bytes(struct.pack(">I", 2049) + good[4:])  # the labels' magic on an image file
    with pytest.raises(MNISTFormatError, match=r"train-images-idx3-ubyte has magic number 2049.*expected 2051"):
        load_mnist(tmp_path, "train")
    images.write_bytes(good[:-5])  # truncated data
    with pytest.raises(MNISTFormatError, match=r"train-images-idx3-ubyte.*needs 3136 data bytes, the file holds 3131"):
        load_mnist(tmp_path, "train")
    images.write_bytes(good[:2])
    with pytest.raises(MNISTFormatError, match="train-images-idx3-ubyte is too short"):
        load_mnist(tmp_path, "train")
    images.write_bytes(good)
    _idx(tmp_path / "train-labels-idx1-ubyte", 2049, np.array([1, 2, 3], dtype=np.uint8))
    with pytest.raises(MNISTFormatError, match="hold 4 images and 3 labels"):
        load_mnist(tmp_path, "train")
    _idx(tmp_path / "train-labels-idx1-ubyte", 2049, np.array([1, 2, 3, 12], dtype=np.uint8))
    with pytest.raises(MNISTFormatError, match="label 12"):
        load_mnist(tmp_path, "train")
    gz = tmp_path / "gz"
    gz.mkdir()
    (gz / "train-images-idx3-ubyte.gz").write_bytes(b"not a gzip stream")
    with pytest.raises(MNISTFormatError, match="cannot read MNIST file .*train-images-idx3-ubyte.gz"):
        read_idx(gz / "train-images-idx3-ubyte.gz", 2051)


def test_schedule_data_draws_disjoint_seeded_subsets(tmp_path):
    data = _mnist(tmp_path, n_train=30, n_test=20)
    exp = PAPER["schedule"]
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path), "n_train": 12, "n_val": 5, "n_test": 7})
    train, val, test = schedule_data(cfg, seed=0)
    assert train.shape == (12, 784) and val.shape == (5, 784) and test.shape == (7, 784)
    all_train = torch.from_numpy(data["train"][0].reshape(30, -1) / 255.0 * 2 - 1).float()
    all_test = torch.from_numpy(data["test"][0].reshape(20, -1) / 255.0 * 2 - 1).float()

    def rows(x, pool):  # index of each row of x in pool
        return [int(torch.nonzero((pool - r).abs().amax(1) < 1e-6)[0]) for r in x]

    assert len(set(rows(train, all_train))) == 12
    v, t = rows(val, all_test), rows(test, all_test)
    assert len(set(v) | set(t)) == 12  # val and test are disjoint t10k images
    again = schedule_data(cfg, seed=0)
    assert all(torch.equal(a, b) for a, b in zip((train, val, test), again))
    assert not torch.equal(schedule_data(cfg, seed=1)[0], train)
    too_many = exp.make_config("smoke", {"data_dir": str(tmp_path), "n_train": 31, "n_val": 5, "n_test": 7})
    with pytest.raises(ValueError, match="n_train = 31 exceeds the 30 images"):
        schedule_data(too_many, seed=0)


@pytest.mark.parametrize("name", ["schedule", "schedule_zo"])
def test_smoke_runs_end_to_end_on_an_mnist_fixture(tmp_path, name):
    _mnist(tmp_path / "MNIST" / "raw", n_train=300, n_test=200, gz=True)
    exp = PAPER[name]
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    metrics = exp.run(cfg, seed=0)
    for key in ("mmd_bilevel", "mmd_cosine", "mmd_linear", "mmd_random_best", "mmd_gaussian",
                "bilevel_minus_cosine", "bilevel_minus_random_median"):
        assert math.isfinite(metrics[key]), key
    # the noise baseline re-derived on the MNIST test split: 784-dimensional N(0, I) draws against the held-out
    # images with the bandwidths scaled by sqrt(784 / 2) (float32 sums, same operations: a few float32 ulps)
    from icml25.papers.generative_bilevel.noise_schedule import rbf_mmd2

    test = schedule_data(cfg, 0)[2]
    assert test.shape[1] == 784
    noise = torch.randn(cfg.eval_samples, 784, generator=torch.Generator().manual_seed(0 + 999))
    bandwidths = tuple(h * math.sqrt(784 / 2) for h in (0.1, 0.3, 1.0, 3.0))
    want = float(rbf_mmd2(noise, test, bandwidths=bandwidths))
    assert metrics["mmd_gaussian"] == pytest.approx(want, rel=16 * float(np.finfo(np.float32).eps)) and want > 0


@pytest.mark.parametrize("name", ["schedule", "schedule_zo"])
def test_config_errors_and_the_stand_in_reads_no_path(tmp_path, name):
    exp, standin = PAPER[name], STANDIN[name]
    assert exp.data_setting == "data_dir" and not standin.data_setting
    for preset in ("smoke", "quick", "full"):
        assert exp.make_config(preset).data_dir == "" and exp.missing_data(exp.make_config(preset))
        assert not hasattr(standin.make_config(preset), "data_dir")  # two-moons only
        assert exp.make_config(preset).learner.zo == standin.make_config(preset).learner.zo == (name == "schedule_zo")
    assert not hasattr(ScheduleConfig(), "data_dir")
    assert not exp.missing_data(exp.make_config("smoke", {"data_dir": str(tmp_path)}))
    with pytest.raises(ConfigError, match=r"PaperScheduleConfig\.data_dir must be an existing folder with MNIST's "
                                          r"IDX files \(empty: the experiment does not run\)"):
        exp.make_config("smoke", {"data_dir": "/no/such/mnist/folder"})
    with pytest.raises(ConfigError, match="has no setting 'data_dir'"):
        standin.make_config("smoke", {"data_dir": str(tmp_path)})


def test_paper_data_presets_and_claims():
    """MNIST runs with the official T, learning rate and clamp; the claims repeat the stand-ins' paper claims."""
    cfg = PaperScheduleConfig()
    assert (cfg.T, cfg.learner.lr, cfg.learner.clip_x0, cfg.learner.gamma, cfg.learner.lr_beta) == \
        (1000, 1e-3, 1.0, 1.0, 0.05)
    assert cfg.learner.inner_loop == 1  # equal network training with the baselines (one step per minibatch)
    assert PAPER["schedule"].make_config("full").n_train == 60000
    by_id = {c.id: c for c in CLAIMS}
    for name, tag in (("schedule", ""), ("schedule_zo", "_zo")):
        exp = PAPER[name]
        assert [exp.fidelity_of(p).level for p in ("smoke", "quick", "full")] == ["mechanism", "reduced", "reduced"]
        a, b = by_id[f"paper_data_s2{tag}_beats_random_median"], by_id[f"s2{tag}_beats_random_median"]
        assert (a.experiment, b.experiment) == (f"paper_data_{name}", name)
        assert (a.kind, a.metric, a.op, a.threshold, a.aggregate, a.resolution, a.source, a.paper_value) == \
            (b.kind, b.metric, b.op, b.threshold, b.aggregate, b.resolution, b.source, b.paper_value)
        assert a.resolution_reason == f"{b.resolution_reason} (as s2{tag}_beats_random_median)"
        assert a.fair_at == "reduced" and b.requires == ()
        # the MNIST comparison is gated on the sampler having learned, with the stand-in check's statistic
        gate, stand_in_gate = by_id[f"paper_data_s2{tag}_learned"], by_id[f"s2{tag}_learned"]
        assert a.requires == (gate.id,) and (gate.kind, gate.experiment) == ("check", f"paper_data_{name}")
        assert (gate.metric, gate.op, gate.threshold, gate.aggregate) == \
            (stand_in_gate.metric, stand_in_gate.op, stand_in_gate.threshold, stand_in_gate.aggregate)


def test_figures_have_their_own_files(tmp_path):
    pytest.importorskip("matplotlib")
    from icml25.papers.generative_bilevel.figures import S2_METHODS

    per_seed = [{f"mmd_{m}": 0.1 for m in S2_METHODS}]
    names = [p.name for exp in (*PAPER.values(), *STANDIN.values())
             for p in exp.figures(per_seed, exp.make_config("smoke"), tmp_path)]
    assert names == ["paper_data_schedule_mmd.png", "paper_data_schedule_zo_mmd.png", "schedule_mmd.png",
                     "schedule_zo_mmd.png"]
