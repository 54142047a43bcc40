"""downstream_free_energy: the paper's CIFAR-FS / mini-ImageNet read from their distributed formats
(``load_paper_dataset``) and the ``paper_data`` experiment's ``data_dir`` / ``paper_dataset`` settings (the writers
of the CIFAR-100 files are shared with the suite's batteries in ``tests/paper_files/``).

Every fixture is written into ``tmp_path`` in the real format: CIFAR-100's python version (``cifar-100-python/train``,
``test``, ``meta``: pickled dicts with ``data`` (N, 3072) uint8 in channel-major order, ``fine_labels``,
``fine_label_names``), with the keys as the Python 2 originals read back (``str``) or as ``bytes``; MetaOptNet's
``CIFAR_FS_{train,test}.pickle`` and ``miniImageNet_category_split_{train_phase_train,test}.pickle`` (``data``
(N, H, W, 3) uint8, ``labels``). The expected values follow the documented conversion ``pixel / 255``, channel-major.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from icml25.core.experiment import ConfigError
from icml25.papers.downstream_free_energy.data import (
    CIFAR_FS_SPLIT,
    METAOPTNET_FILES,
    PAPER_DATASETS,
    PaperDataError,
    load_paper_dataset,
)
from icml25.papers.downstream_free_energy.free_energy import full_loss
from icml25.papers.downstream_free_energy.repro import EXPERIMENTS, PaperSelectionConfig, SelectionConfig
from icml25.papers.downstream_free_energy.transfer import FineTuner, TransferData, pretrain
from paper_files.downstream_free_energy import NAMES, PER_CLASS, cifar_image, dump_pickle, write_cifar100

torch.set_num_threads(1)

@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises."""


def _pixels(rows: list[np.ndarray]) -> torch.Tensor:
    return torch.from_numpy(np.stack(rows).astype(np.float32) / np.float32(255.0))


def _expected(images: dict[str, list], split: str) -> tuple[torch.Tensor, list[int]]:
    rows, labels = [], []
    for k, c in enumerate(CIFAR_FS_SPLIT[split]):
        rows += images[c]
        labels += [k] * len(images[c])
    return _pixels(rows), labels


@pytest.mark.parametrize("bytes_keys", [False, True])
def test_cifar100_python_gives_the_cifar_fs_split_exactly(tmp_path, bytes_keys):
    images = write_cifar100(tmp_path, bytes_keys=bytes_keys)
    data = load_paper_dataset("cifar_fs", tmp_path)
    n_img = sum(PER_CLASS)
    assert data.name == "cifar_fs" and data.n_pre_classes == 64
    assert data.x_pre.dtype == torch.float32 and data.y_pre.dtype == torch.int64
    assert data.x_pre.shape == (64 * n_img, 3072) and data.x_down.shape == (20 * n_img, 3072)
    x_pre, y_pre = _expected(images, "train")
    x_down, y_down = _expected(images, "test")
    assert torch.equal(data.x_pre, x_pre) and data.y_pre.tolist() == y_pre
    assert torch.equal(data.x_down, x_down) and data.y_down.tolist() == y_down
    # by hand: pretraining class 0 is 'apple' (fine id 0), its first image is train row 0: pixel j = j % 256
    assert data.x_pre[0, 5].item() == pytest.approx(5 / 255) and data.x_pre[0, 300].item() == pytest.approx(44 / 255)
    # downstream class 0 is 'baby' (fine id 2); its 6th image is the first of the `test` file: (74 + 101 + j) % 256
    assert data.x_down[5, 0].item() == pytest.approx(175 / 255)
    # the 16 meta-validation classes' 96 images are in neither set (the exact equalities above hold all the rest)
    assert len(data.x_pre) + len(data.x_down) == (100 - 16) * n_img
    # channel-major: feature c*1024 + r*32 + col is channel c, row r, column col
    assert data.x_pre.view(-1, 3, 32, 32)[3, 2, 5, 7].item() == data.x_pre[3, 2 * 1024 + 5 * 32 + 7].item()
    # the data set's own folder works as data_dir too
    again = load_paper_dataset("cifar_fs", tmp_path / "cifar-100-python")
    assert torch.equal(again.x_pre, data.x_pre) and torch.equal(again.y_down, data.y_down)


def test_cifar_fs_classes_are_found_by_name_not_by_position(tmp_path):
    """A meta file whose names are in another order: the split is resolved through ``fine_label_names``."""
    shuffled = list(reversed(NAMES))  # fine id c now names NAMES[99 - c]
    images = write_cifar100(tmp_path, names=shuffled)
    data = load_paper_dataset("cifar_fs", tmp_path)
    x_pre, y_pre = _expected(images, "train")
    x_down, y_down = _expected(images, "test")
    assert torch.equal(data.x_pre, x_pre) and data.y_pre.tolist() == y_pre
    assert torch.equal(data.x_down, x_down) and data.y_down.tolist() == y_down
    # 'apple' is fine id 99 in this meta file: pretraining class 0's first image is that of fine id 99
    assert torch.equal(data.x_pre[0], _pixels([cifar_image(99, 0, 0)])[0])


def test_class_split_is_bertinettos():
    assert [len(CIFAR_FS_SPLIT[s]) for s in ("train", "val", "test")] == [64, 16, 20]
    assert len(set(NAMES)) == 100
    assert set(CIFAR_FS_SPLIT["test"]) == {"baby", "bed", "bicycle", "chimpanzee", "fox", "leopard", "man",
                                           "pickup_truck", "plain", "poppy", "rocket", "rose", "snail",
                                           "sweet_pepper", "table", "telephone", "wardrobe", "whale", "woman", "worm"}
    for split in CIFAR_FS_SPLIT.values():
        assert list(split) == sorted(split)


def write_metaoptnet(root: Path, name: str, per_class: tuple[int, int] = (3, 2),
                     pre_labels: tuple[int, ...] = (40, 7, 12), down_labels: tuple[int, ...] = (90, 3)) -> list:
    """MetaOptNet's two pickles for ``name``, rows interleaved across classes; returns the (H, W, 3) images and
    raw labels of each file."""
    side = {"cifar_fs": 32, "mini_imagenet": 84}[name]
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for f, labels, n in zip(METAOPTNET_FILES[name], (pre_labels, down_labels), per_class):
        ys = [c for _ in range(n) for c in labels]
        X = np.stack([((7 * i + c + np.arange(side * side * 3)) % 256).astype(np.uint8).reshape(side, side, 3)
                      for i, c in enumerate(ys)])
        dump_pickle(root / f, {"data": X, "labels": ys}, bytes_keys=False)
        out.append((X, ys))
    return out


@pytest.mark.parametrize("name", PAPER_DATASETS)
def test_metaoptnet_pickles_values_and_class_numbering(tmp_path, name):
    (Xp, yp_raw), (Xd, yd_raw) = write_metaoptnet(tmp_path, name)
    data = load_paper_dataset(name, tmp_path)
    side = {"cifar_fs": 32, "mini_imagenet": 84}[name]
    assert data.name == name and data.n_pre_classes == 3 and data.x_pre.shape == (9, 3 * side * side)
    # classes numbered by sorted label value (7, 12, 40 -> 0, 1, 2; 3, 90 -> 0, 1), rows by class, file order within
    order = np.argsort(np.searchsorted([7, 12, 40], yp_raw), kind="stable")
    assert data.y_pre.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert data.y_down.tolist() == [0, 0, 1, 1]
    chw = Xp.transpose(0, 3, 1, 2).reshape(len(Xp), -1)
    assert torch.equal(data.x_pre, _pixels(list(chw[order])))
    # by hand: row 0 is the file's row 1 (label 7): its (h=0, w=0, c=1) pixel is (7 + 7 + 1) % 256 = 15,
    # feature 1 * side * side in channel-major order
    assert data.x_pre[0, side * side].item() == pytest.approx(15 / 255)
    # downstream row 0 is the file's row 1 (label 3): (7 + 3 + 0) / 255 at feature 0
    assert data.x_down[0, 0].item() == pytest.approx(10 / 255)
    assert torch.equal(data.x_pre.view(-1, 3, side, side)[0].permute(1, 2, 0),
                       torch.from_numpy(Xp[1].astype(np.float32) / np.float32(255.0)))


def test_both_cifar_fs_formats_give_the_same_data(tmp_path):
    """The same images as CIFAR-100 python files and as MetaOptNet pickles (labels = fine ids) load identically."""
    images = write_cifar100(tmp_path / "a")
    for split, f in zip(("train", "test"), METAOPTNET_FILES["cifar_fs"]):
        # round robin over the classes (the files interleave classes); within a class the same order
        rows = [(images[c][k], NAMES.index(c)) for k in range(sum(PER_CLASS)) for c in CIFAR_FS_SPLIT[split]]
        X = np.stack([r.reshape(3, 32, 32).transpose(1, 2, 0) for r, _ in rows])
        (tmp_path / "b").mkdir(exist_ok=True)
        dump_pickle(tmp_path / "b" / f, {"data": X, "labels": [c for _, c in rows]}, bytes_keys=False)
    a, b = load_paper_dataset("cifar_fs", tmp_path / "a"), load_paper_dataset("cifar_fs", tmp_path / "b")
    for field in ("x_pre", "y_pre", "x_down", "y_down"):
        assert torch.equal(getattr(a, field), getattr(b, field)), field
    assert a.n_pre_classes == b.n_pre_classes == 64


def test_missing_files_raise_one_error_naming_them(tmp_path):
    write_cifar100(tmp_path)
    (tmp_path / "cifar-100-python" / "meta").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing file .*cifar-100-python/meta; expected either") as exc:
        load_paper_dataset("cifar_fs", tmp_path)
    assert isinstance(exc.value, PaperDataError) and "\n" not in str(exc.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=r"missing file .*CIFAR_FS_train.pickle; expected either "
                                                r"<data_dir>/cifar-100-python/"):
        load_paper_dataset("cifar_fs", empty)
    write_metaoptnet(tmp_path / "m", "mini_imagenet")
    (tmp_path / "m" / "miniImageNet_category_split_test.pickle").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing file .*miniImageNet_category_split_test.pickle"):
        load_paper_dataset("mini_imagenet", tmp_path / "m")
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        load_paper_dataset("cifar_fs", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="unknown paper data set 'omniglot'"):
        load_paper_dataset("omniglot", tmp_path)


def test_malformed_files_are_named(tmp_path):
    write_cifar100(tmp_path, names=[n if n != "whale" else "orca" for n in NAMES])
    with pytest.raises(PaperDataError, match=r"meta 'fine_label_names' must name .* missing \['whale'\]"):
        load_paper_dataset("cifar_fs", tmp_path)
    write_metaoptnet(tmp_path / "o", "cifar_fs", down_labels=(40, 3))
    with pytest.raises(PaperDataError, match=r"share labels \[40\]"):
        load_paper_dataset("cifar_fs", tmp_path / "o")
    (tmp_path / "p").mkdir()
    dump_pickle(tmp_path / "p" / "CIFAR_FS_train.pickle", {"data": np.zeros((2, 3072), np.uint8), "labels": [0, 1]},
                False)
    dump_pickle(tmp_path / "p" / "CIFAR_FS_test.pickle",
                {"data": np.zeros((2, 32, 32, 3), np.uint8), "labels": [2, 3]}, False)
    with pytest.raises(PaperDataError, match=r"CIFAR_FS_train.pickle key 'data' must be \(N, 32, 32, 3\) uint8"):
        load_paper_dataset("cifar_fs", tmp_path / "p")


def _paper_data():
    return next(e for e in EXPERIMENTS if e.name == "paper_data")


def test_config_checks_name_the_field(tmp_path):
    PaperSelectionConfig(data_dir=str(tmp_path)).validate()
    PaperSelectionConfig(data_dir=str(tmp_path), paper_dataset="mini_imagenet").validate()
    with pytest.raises(ConfigError, match=r"PaperSelectionConfig.data_dir must be an existing folder .* got "
                                          r"'.*nowhere'"):
        PaperSelectionConfig(data_dir=str(tmp_path / "nowhere")).validate()
    with pytest.raises(ConfigError, match="paper_dataset"):
        PaperSelectionConfig(data_dir=str(tmp_path), paper_dataset="omniglot").validate()
    assert not hasattr(SelectionConfig(), "data_dir")  # the stand-in experiments read no user path
    # validate() only checks that the folder exists: an empty folder is accepted, the run names the missing file
    exp = _paper_data()
    assert exp.data_setting == "data_dir" and exp.missing_data(exp.make_config("smoke"))
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    with pytest.raises(FileNotFoundError, match="CIFAR_FS_train.pickle"):
        exp.run(cfg, 0)


def test_smoke_run_on_the_fixture_is_rederived(tmp_path):
    """paper_data's smoke preset (digits_selection's settings) on a CIFAR-FS fixture: 4 checkpoints on the 64
    meta-train classes (3,072 inputs), 20-way 5-shot downstream error on the 20 meta-test classes; a checkpoint's
    train loss and downstream error are recomputed from the fixture, and F_hat = n L* + lambda_hat log n with n the
    fixture's 384 images."""
    write_cifar100(tmp_path)
    exp = _paper_data()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path)})
    digits = next(e for e in EXPERIMENTS if e.name == "digits_selection").make_config("smoke")
    assert {k: v for k, v in vars(cfg).items() if k in vars(digits)} == vars(digits)  # the same study
    out = exp.run(cfg, 0)
    n = 64 * sum(PER_CLASS)
    assert out["n_checkpoints"] == 4 and out["n_missed_target"] == 0
    errors = out["ckpt_downstream_error"]
    assert out["chance_minus_mean_downstream_error"] == pytest.approx((1 - 1 / 20) - np.mean(errors), abs=1e-12)
    for fe, lam, loss in zip(out["ckpt_free_energy"], out["ckpt_llc"], out["ckpt_train_loss"]):
        assert fe == pytest.approx(n * loss + lam * math.log(n), rel=1e-9)
    # re-derive the first checkpoint (lr 0.05, batch 64, momentum 0) from the fixture
    data: TransferData = load_paper_dataset("cifar_fs", tmp_path)
    torch.manual_seed(0)
    model = pretrain(data, (3072, *cfg.hidden), cfg.lrs[0], cfg.batch_sizes[0], cfg.momenta[0], cfg.epochs,
                     cfg.weight_decay, 0)
    assert model.backbone[0].in_features == 3072 and model.head.out_features == 64
    assert out["ckpt_train_loss"][0] == full_loss(model, F.cross_entropy, (data.x_pre, data.y_pre))
    tuner = FineTuner(cfg.n_shot, cfg.head_lr, cfg.backbone_lr_ratio, cfg.finetune_steps, cfg.episodes)
    assert errors[0] == tuner.error(model, data.x_down, data.y_down, 0)
    # each episode's queries are the 20 x (6 - 5) = 20 downstream images outside the support: errors are k / 20
    for e in errors:
        assert e * 20 * cfg.episodes == pytest.approx(round(e * 20 * cfg.episodes), abs=1e-4)  # float32 means
