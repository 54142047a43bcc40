"""ReT-FHD: the paper's image data sets read from their official layouts (``load_paper_dataset``) and the
``paper_data`` experiment's ``data_dir`` / ``paper_dataset`` settings (the CIFAR-10 writer is shared with the
suite's batteries in ``tests/paper_files/ret_fhd.py``).

Every fixture is written into ``tmp_path`` in the real format: CIFAR-10's ``cifar-10-batches-py/`` pickles
(``data_batch_1..5``, ``test_batch``, ``batches.meta``), CIFAR-100's ``cifar-100-python/`` (``train``, ``test``,
``meta``), dicts with bytes keys, ``b"data"`` (N, 3072) uint8 in channel-major order; Tiny-ImageNet's
``tiny-imagenet-200/`` folders. The expected values follow the documented conversion ``(pixel / 255 - 0.5) / 0.5``
with channel-major flattening.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml25.papers.ret_fhd.data import PAPER_DATASETS, PaperDataError, load_paper_dataset
from paper_files.ret_fhd import cifar_images, dump_pickle, write_cifar10

torch.set_num_threads(1)


def _expected(raw: np.ndarray) -> torch.Tensor:
    return torch.tensor((raw.astype(np.float64) / 255.0 - 0.5) / 0.5, dtype=torch.float32)


def test_cifar10_pixels_labels_and_order(tmp_path):
    raw, labels, Xte_raw, yte_raw = write_cifar10(tmp_path)
    Xtr, ytr, Xte, yte, C = load_paper_dataset("cifar10", tmp_path)
    assert C == 10 and Xtr.dtype == torch.float32 and ytr.dtype == torch.int64
    assert Xtr.shape == (10, 3072) and Xte.shape == (2, 3072)
    # batches 1..5 in order, rows in file order
    torch.testing.assert_close(Xtr, _expected(np.concatenate(raw)), rtol=0, atol=1e-7)
    assert ytr.tolist() == [v for y in labels for v in y]
    torch.testing.assert_close(Xte, _expected(Xte_raw), rtol=0, atol=1e-7)
    assert yte.tolist() == yte_raw.tolist()
    # hand-checked values: pixel 0 of image 0 of batch 1 is 11 -> (11/255 - .5)/.5; 255 -> 1, 0 -> -1
    assert Xtr[0, 0].item() == pytest.approx(11 / 127.5 - 1, abs=1e-7)
    assert Xtr.min() >= -1 and Xtr.max() <= 1
    # channel-major: row index c*1024 + r*32 + col is channel c, row r, column col of the 3x32x32 image
    img = Xtr.view(-1, 3, 32, 32)
    assert img[3, 2, 5, 7].item() == pytest.approx(Xtr[3, 2 * 1024 + 5 * 32 + 7].item())
    # the data set's own folder works as data_dir too
    again = load_paper_dataset("cifar10", tmp_path / "cifar-10-batches-py")
    assert torch.equal(again[0], Xtr) and torch.equal(again[3], yte)


def test_cifar100_fine_labels(tmp_path):
    d = tmp_path / "cifar-100-python"
    d.mkdir()
    Xtr_raw, Xte_raw = cifar_images(3, 5), cifar_images(2, 99)
    dump_pickle(d / "train", {b"filenames": [b"a"] * 3, b"batch_label": b"training batch 1 of 1",
                              b"fine_labels": [99, 0, 42], b"coarse_labels": [19, 4, 7], b"data": Xtr_raw})
    dump_pickle(d / "test", {b"filenames": [b"b"] * 2, b"batch_label": b"testing batch 1 of 1",
                             b"fine_labels": [3, 57], b"coarse_labels": [0, 1], b"data": Xte_raw})
    dump_pickle(d / "meta", {b"fine_label_names": [f"f{i}".encode() for i in range(100)],
                             b"coarse_label_names": [f"k{i}".encode() for i in range(20)]})
    Xtr, ytr, Xte, yte, C = load_paper_dataset("cifar100", tmp_path)
    assert C == 100 and ytr.tolist() == [99, 0, 42] and yte.tolist() == [3, 57]
    torch.testing.assert_close(Xtr, _expected(Xtr_raw), rtol=0, atol=1e-7)
    torch.testing.assert_close(Xte, _expected(Xte_raw), rtol=0, atol=1e-7)


def test_tinyimagenet_folders(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    root = tmp_path / "tiny-imagenet-200"
    wnids = ["n02", "n01"]  # classes are the sorted wnids: n01 -> 0, n02 -> 1
    (root / "val" / "images").mkdir(parents=True)
    (root / "wnids.txt").write_text("\n".join(wnids) + "\n")
    rng = np.random.default_rng(0)
    pix = {}
    for w in wnids:
        (root / "train" / w / "images").mkdir(parents=True)
        for i in range(2):
            a = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
            # PNG bytes under the real .JPEG names: Pillow reads by content, and PNG keeps the pixels exact
            Image.fromarray(a).save(root / "train" / w / "images" / f"{w}_{i}.JPEG", format="PNG")
            pix[(w, i)] = a
    grey = rng.integers(0, 256, (64, 64), dtype=np.uint8)
    Image.fromarray(grey, mode="L").save(root / "val" / "images" / "val_0.JPEG", format="PNG")
    colour = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    Image.fromarray(colour).save(root / "val" / "images" / "val_1.JPEG", format="PNG")
    (root / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn02\t0\t0\t63\t63\nval_1.JPEG\tn01\t1\t2\t3\t4\n")
    Xtr, ytr, Xte, yte, C = load_paper_dataset("tinyimagenet", tmp_path)
    assert C == 2 and Xtr.shape == (4, 3 * 64 * 64) and ytr.tolist() == [0, 0, 1, 1] and yte.tolist() == [1, 0]
    chw = lambda a: a.transpose(2, 0, 1).reshape(-1)  # noqa: E731
    torch.testing.assert_close(Xtr[0], _expected(chw(pix[("n01", 0)])), rtol=0, atol=1e-7)
    torch.testing.assert_close(Xtr[3], _expected(chw(pix[("n02", 1)])), rtol=0, atol=1e-7)
    torch.testing.assert_close(Xte[0], _expected(np.tile(grey.reshape(-1), 3)), rtol=0, atol=1e-7)
    torch.testing.assert_close(Xte[1], _expected(chw(colour)), rtol=0, atol=1e-7)
    (root / "val" / "images" / "val_1.JPEG").unlink()
    with pytest.raises(PaperDataError, match="val_1.JPEG"):
        load_paper_dataset("tinyimagenet", tmp_path)


def test_missing_and_malformed_files_name_the_file(tmp_path):
    with pytest.raises(PaperDataError, match=r"data_batch_1.*expected layout.*cifar-10-batches-py"):
        load_paper_dataset("cifar10", tmp_path)
    write_cifar10(tmp_path)
    d = tmp_path / "cifar-10-batches-py"
    (d / "batches.meta").unlink()
    with pytest.raises(PaperDataError, match="missing file .*batches.meta"):
        load_paper_dataset("cifar10", tmp_path)
    dump_pickle(d / "batches.meta", {b"label_names": [b"a"] * 10})
    dump_pickle(d / "data_batch_3", {b"data": cifar_images(2, 0)})  # no labels
    with pytest.raises(PaperDataError, match=r"data_batch_3 has no key b'labels'"):
        load_paper_dataset("cifar10", tmp_path)
    dump_pickle(d / "data_batch_3", {b"data": np.zeros((2, 1024), np.uint8), b"labels": [0, 1]})
    with pytest.raises(PaperDataError, match=r"data_batch_3 has data of shape \(2, 1024\)"):
        load_paper_dataset("cifar10", tmp_path)
    (d / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(PaperDataError, match="data_batch_3 is not a CIFAR python pickle"):
        load_paper_dataset("cifar10", tmp_path)
    with pytest.raises(PaperDataError, match=r"cifar-100-python/ .*train, test, meta"):
        load_paper_dataset("cifar100", tmp_path)
    with pytest.raises(ValueError, match="unknown paper data set 'flowers102'"):
        load_paper_dataset("flowers102", tmp_path)
    assert PAPER_DATASETS == ("cifar10", "cifar100", "tinyimagenet")


def test_no_download_is_attempted(tmp_path, no_network):
    write_cifar10(tmp_path)
    assert load_paper_dataset("cifar10", tmp_path)[4] == 10
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PaperDataError):  # a missing file is an error, never a download
        load_paper_dataset("cifar10", empty)
    assert not any(empty.iterdir())


def _paper_data():
    from icml25.papers.ret_fhd.repro import EXPERIMENTS

    return next(e for e in EXPERIMENTS if e.name == "paper_data")


def test_smoke_preset_runs_on_cifar_files(tmp_path):
    from icml25.papers.ret_fhd.repro import EXPERIMENTS, load_data

    write_cifar10(tmp_path, per_batch=40, n_test=40)
    exp = _paper_data()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    assert cfg.paper_dataset == "cifar10"
    Xtr, ytr, Xte, yte, C = load_data(cfg, 0)
    assert Xtr.shape == (200, 3072) and Xte.shape == (40, 3072) and C == 10
    out = exp.run(cfg, seed=0)
    scalars = {k: v for k, v in out.items() if not k.startswith("curve_")}
    assert all(math.isfinite(v) for v in scalars.values())
    assert all(math.isfinite(a) for k, v in out.items() if k.startswith("curve_") for a in v)
    assert 0 <= out["acc_retfhd"] <= 1
    # a client uploads its C x C class-mean logits and C counts as float32 (C = 10 here), and the smallest client
    # model's bytes include a first layer on the 3 x 32 x 32 = 3,072 inputs: the real images reached the models
    assert out["upload_bytes_per_client"] == 4 * (10 * 10 + 10)
    assert out["upload_bytes_per_client"] / out["upload_over_smallest_model"] > 4 * 3072
    # paper_data runs the stand-ins' protocol: every preset is theirs, the data aside
    for preset in ("smoke", "quick", "full"):
        standin = next(e for e in EXPERIMENTS if e.name == "digits").make_config(preset)
        mine = exp.make_config(preset)
        assert {k: v for k, v in vars(mine).items() if k in vars(standin)} == vars(standin)
    # the stand-in experiments read only their bundled data
    Xd, _, _, _, Cd = load_data(EXPERIMENTS[0].make_config("smoke"), 0)
    assert Xd.shape[1] == 64 and Cd == 10


def test_config_validation(tmp_path):
    from icml25.core.experiment import ConfigError
    from icml25.papers.ret_fhd.repro import EXPERIMENTS, FHDConfig, PaperDataConfig

    exp = _paper_data()
    assert exp.data_setting == "data_dir" and exp.missing_data(exp.make_config("smoke"))
    with pytest.raises(ConfigError, match="PaperDataConfig.data_dir must be an existing folder"):
        exp.make_config("smoke", {"data_dir": str(tmp_path / "missing")})
    f = tmp_path / "file.txt"
    f.write_text("x")
    with pytest.raises(ConfigError, match="data_dir must be an existing folder"):
        exp.make_config("smoke", {"data_dir": str(f)})  # a file, not a folder
    with pytest.raises(ConfigError, match="paper_dataset"):
        exp.make_config("smoke", {"paper_dataset": "flowers102"})
    cfg = exp.make_config("full", {"data_dir": str(tmp_path), "paper_dataset": "cifar100"})
    assert isinstance(cfg, PaperDataConfig) and (cfg.data_dir, cfg.paper_dataset) == (str(tmp_path), "cifar100")
    assert cfg.fhd.rounds == 100 and exp.make_config("quick").data_dir == ""
    # the stand-in experiments have no paper-data settings
    for standin in EXPERIMENTS[:2]:
        assert not standin.data_setting
        for key in ("data_dir", "paper_dataset"):
            with pytest.raises(ConfigError, match=f"has no setting '{key}'"):
                standin.make_config("smoke", {key: "cifar10"})
    assert not hasattr(FHDConfig(), "data_dir") and not hasattr(FHDConfig(), "paper_dataset")


def test_figures_get_one_file_per_experiment(tmp_path):
    pytest.importorskip("matplotlib")
    from icml25.papers.ret_fhd.repro import EXPERIMENTS, METHODS

    per_seed = [{**{f"acc_{n}": 0.5 + 0.01 * s for n in (*METHODS, "attack_guard", "attack_noguard")},
                 **{f"curve_{n}": [0.3, 0.4, 0.5] for n in ("retfhd", "fd_t1", "fd_t4", "local")}} for s in range(2)]
    cfg = _paper_data().make_config("smoke", {"data_dir": str(tmp_path)})
    assert [p.name for p in _paper_data().figures(per_seed, cfg, tmp_path)] == ["retfhd_paper_data_cifar10.png"]
    names = [p.name for e in EXPERIMENTS[:2] for p in e.figures(per_seed, e.make_config("smoke"), tmp_path)]
    assert names == ["retfhd_digits.png", "retfhd_gmm20.png"]
