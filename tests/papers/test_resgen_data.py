"""The paper's data for resgen: ImageNet images read from a user's folder (torchvision's ImageFolder layout, ADM's
centre crop), cut into RGB patches, and the ``paper_data`` experiment on them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from PIL import Image

from icml25.core.experiment import ConfigError
from icml25.core.registry import load_reproduction
from icml25.papers.resgen import ResidualVQ
from icml25.papers.resgen.imagenet import (
    list_image_folder,
    load_image,
    load_imagenet,
    patches_to_rgb,
    rgb_to_patches,
)
from icml25.papers.resgen.repro import DigitsConfig, PaperDataConfig
from paper_files.resgen import IMAGES, wnid, write_image_folder, write_paper_data

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


def _experiment():
    return load_reproduction("resgen").experiment("paper_data")


def test_folder_layout_gives_paths_labels_and_sorted_wnids(tmp_path):
    write_image_folder(tmp_path, {3: 2, 0: 3, 7: 1})
    (tmp_path / "train" / wnid(0) / "notes.txt").write_text("not an image")
    paths, labels, wnids = list_image_folder(tmp_path)
    assert wnids == [wnid(0), wnid(3), wnid(7)] and wnids[1] == "n01443764"
    assert labels.tolist() == [0, 0, 0, 1, 1, 2] and labels.dtype == torch.long
    assert [p.name for p in paths] == [f"{wnid(0)}_{n}.JPEG" for n in (1, 2, 3)] + [
        f"{wnid(3)}_{n}.JPEG" for n in (4, 5)] + [f"{wnid(7)}_6.JPEG"]
    paths, labels, wnids = list_image_folder(tmp_path, n_classes=2, images_per_class=2)
    assert wnids == [wnid(0), wnid(3)] and labels.tolist() == [0, 0, 1, 1]
    assert [p.name for p in paths] == [f"{wnid(0)}_1.JPEG", f"{wnid(0)}_2.JPEG", f"{wnid(3)}_4.JPEG",
                                       f"{wnid(3)}_5.JPEG"]
    write_image_folder(tmp_path, {5: 1}, split="val")
    assert list_image_folder(tmp_path, "val")[2] == [wnid(5)]


def test_missing_files_raise_one_error_naming_them(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"train not found: .*<data_dir>/<split>/<wnid>/\*\.JPEG"):
        list_image_folder(tmp_path)
    (tmp_path / "train" / wnid(0)).mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=rf"no images .* in .*{wnid(0)}"):
        list_image_folder(tmp_path)
    write_image_folder(tmp_path, {0: 1})
    with pytest.raises(FileNotFoundError, match="holds 1 class folders, need 2"):
        list_image_folder(tmp_path, n_classes=2)
    with pytest.raises(FileNotFoundError, match="val not found"):
        list_image_folder(tmp_path, "val")
    with pytest.raises(FileNotFoundError, match="missing.JPEG not found"):
        load_image(tmp_path / "missing.JPEG", 8)
    with pytest.raises(ValueError, match="split must be one of"):
        list_image_folder(tmp_path, "test")


def test_centre_crop_values(tmp_path):
    rng = np.random.default_rng(1)
    # 64 x 48 (w x h) to 16: 48 >= 32, box-halved to 32 x 24; 24 < 32 stops; bicubic by 16 / 24 to
    # (round(21.33), 16) = (21, 16); centre crop columns 2..17
    Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(tmp_path / "a.png")
    x = load_image(tmp_path / "a.png", 16)
    with Image.open(tmp_path / "a.png") as im:
        ref = np.asarray(im.resize((32, 24), Image.BOX).resize((21, 16), Image.BICUBIC), dtype=np.float32)[:, 2:18]
    assert x.shape == (3, 16, 16) and x.dtype == torch.float32
    assert torch.equal(x, torch.from_numpy(ref.transpose(2, 0, 1) / 255.0))
    # 10 x 14 greyscale to 10: no halving, no resampling (scale 1), rows 2..11; grey becomes three equal channels
    grey = rng.integers(0, 256, (14, 10), dtype=np.uint8)
    Image.fromarray(grey, mode="L").save(tmp_path / "b.png")
    y = load_image(tmp_path / "b.png", 10)
    for c in range(3):
        assert torch.equal(y[c], torch.from_numpy(grey[2:12].astype(np.float32) / 255.0))
    # a JPEG is decoded by Pillow as it is: the loader's pixels are Pillow's
    write_image_folder(tmp_path / "j", {0: 1})
    path = next((tmp_path / "j" / "train" / wnid(0)).iterdir())
    with Image.open(path) as im:
        assert im.size == (27, 22)
        ref = np.asarray(im.convert("RGB").resize((13, 11), Image.BOX).resize((9, 8), Image.BICUBIC))[:, 0:8]
    assert torch.equal(load_image(path, 8), torch.from_numpy(ref.transpose(2, 0, 1).astype(np.float32) / 255.0))


def test_patches_round_trip_and_order():
    images = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    p = rgb_to_patches(images, 2)
    assert p.shape == (2, 4, 12)
    # position 1 of image 0 = rows 0-1, columns 2-3, channel-major
    assert p[0, 1].tolist() == [2, 3, 6, 7, 18, 19, 22, 23, 34, 35, 38, 39]
    assert np.array_equal(patches_to_rgb(p, 2, 4), images)
    with pytest.raises(ValueError, match="patch must be a positive int dividing"):
        rgb_to_patches(images, 3)


def test_load_imagenet_stacks_the_listed_images(tmp_path):
    write_image_folder(tmp_path, {0: 2, 1: 1, 2: 1})
    x, y, wnids = load_imagenet(tmp_path, 8, n_classes=2)
    paths, _, _ = list_image_folder(tmp_path, n_classes=2)
    assert x.shape == (3, 3, 8, 8) and y.tolist() == [0, 0, 1] and wnids == [wnid(0), wnid(1)]
    assert all(torch.equal(x[i], load_image(p, 8)) for i, p in enumerate(paths))


def test_experiment_shape_and_config_errors(tmp_path):
    exp = _experiment()
    assert exp.data_setting == "data_dir" and exp.missing_data(exp.make_config("smoke"))
    assert not hasattr(DigitsConfig(), "data_dir") and not hasattr(DigitsConfig(), "image_size")
    full = exp.make_config("full")
    assert full.resgen_depths == (8, 16) and full.baseline_depth == 8 and full.n_classes == 100
    assert exp.make_config("quick").image_size // exp.make_config("quick").patch == 8  # 64 positions
    with pytest.raises(ConfigError, match="data_dir"):
        PaperDataConfig(data_dir=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="patch"):
        PaperDataConfig(image_size=30, patch=4)
    with pytest.raises(ConfigError, match="split"):
        PaperDataConfig(split="test")
    with pytest.raises(ConfigError, match="n_classes"):
        PaperDataConfig(n_classes=0)
    with pytest.raises(ConfigError, match="images_per_class"):
        PaperDataConfig(images_per_class=0)
    assert PaperDataConfig(data_dir=str(tmp_path)).data_dir == str(tmp_path)  # validation reads no file


def test_smoke_runs_on_the_written_files(tmp_path):
    sets = write_paper_data(tmp_path)
    exp = _experiment()
    cfg = exp.make_config("smoke", sets)
    m = exp.run(cfg, 0)
    assert m["n_classes"] == 2.0 and m["n_images"] == 12.0 == IMAGES[0] + IMAGES[1]
    # the RVQ error is re-derived from the loaded images with the run's own draw of fitting vectors
    x, _, _ = load_imagenet(tmp_path, 8, n_classes=2, images_per_class=6)
    patches = rgb_to_patches(x.numpy(), 2)
    flat = patches.reshape(-1, 12)
    fit_x = flat[np.random.default_rng([0, 5]).choice(len(flat), min(2000, len(flat)), replace=False)]
    for d in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rvq = ResidualVQ(12, d, 32, random_state=0).fit(fit_x)
        mse = float(((rvq.decode(rvq.encode(patches)).numpy() - patches) ** 2).mean())
        assert m[f"rvq_mse_d{d}"] == pytest.approx(mse, rel=1e-6)
    assert m["rvq_mse_ratio_max"] == m["rvq_mse_d2"] / m["rvq_mse_d1"]
    # the sampler's network evaluations follow the config: T for ResGen at any depth, T D for the depth-sequential
    assert m["nfe_resgen_d1"] == m["nfe_resgen_d2"] == 4.0 and m["nfe_dsm_d2"] == 8.0
    assert m["nfe_ar_d2"] == 16 * 2  # one per token: 16 positions of 2x2 patches in 8-pixel images, D = 2
    assert m["fd_resgen_deepest_minus_shallowest"] == m["fd_resgen_d2"] - m["fd_resgen_d1"]
    assert m["fd_ratio_resgen_over_ar"] == m["fd_resgen_d2"] / m["fd_ar_d2"]
    assert m["fd_ratio_trained_over_untrained_max"] == max(
        m[f"fd_ratio_trained_over_untrained_{n}"] for n in ("resgen_d1", "resgen_d2", "dsm_d2", "ar_d2"))
    assert m["class_acc_resgen_d2"] in {i / 6 for i in range(7)}  # 2 classes x 3 samples
    for claim in load_reproduction("resgen").claims:
        if claim.experiment == "paper_data":
            assert np.isfinite(m[claim.metric]), claim.id
