"""The paper's data for risingattack: ImageNet-1k validation images (torchvision's ImageFolder layout) and
torchvision state_dict weights read from a user's files, and the ``paper_data`` experiment on them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from icml25.core.experiment import ConfigError
from icml25.core.registry import load_reproduction
from icml25.papers.risingattack.imagenet import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    ImageNetClassifier,
    list_imagenet_val,
    load_classifier,
    load_image,
    load_imagenet_images,
)
from icml25.papers.risingattack.repro import DigitsConfig, PaperDataConfig, TemplatesConfig
from paper_files.risingattack import (
    LABEL,
    torchvision_state_dict,
    wnid,
    write_imagenet_val,
    write_paper_data,
    write_weights,
)

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


def _experiment():
    return load_reproduction("risingattack").experiment("paper_data")


def test_folder_layout_gives_paths_labels_and_sorted_wnids(tmp_path):
    write_imagenet_val(tmp_path, {0: 1, 3: 2, 999: 1})
    paths, labels, wnids = list_imagenet_val(tmp_path)
    assert wnids == sorted(wnids) and len(wnids) == 1000 and wnids[3] == wnid(3) == "n01443764"
    assert labels.tolist() == [0, 3, 3, 999] and labels.dtype == torch.long
    assert [(p.parent.name, p.name) for p in paths] == [
        (wnid(0), "ILSVRC2012_val_00000001.JPEG"), (wnid(3), "ILSVRC2012_val_00000002.JPEG"),
        (wnid(3), "ILSVRC2012_val_00000003.JPEG"), (wnid(999), "ILSVRC2012_val_00000004.JPEG")]


def test_missing_files_raise_one_error_naming_them(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"val not found: .*<data_dir>/val/<wnid>/\*\.JPEG"):
        list_imagenet_val(tmp_path)
    (tmp_path / "val").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no class folders"):
        list_imagenet_val(tmp_path)
    (tmp_path / "val" / wnid(0)).mkdir()
    with pytest.raises(FileNotFoundError, match="no images"):
        list_imagenet_val(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"weights file .*nope\.pth not found"):
        load_classifier("resnet18", tmp_path / "nope.pth")
    with pytest.raises(FileNotFoundError, match="missing.JPEG not found"):
        load_image(tmp_path / "missing.JPEG")


def test_eval_transform_values(tmp_path):
    rng = np.random.default_rng(1)
    # 300 x 200 (w x h): shorter side 200 -> 256, longer int(256 * 300 / 200) = 384; crop offsets 16 and 80
    Image.fromarray(rng.integers(0, 256, (200, 300, 3), dtype=np.uint8)).save(tmp_path / "a.JPEG", format="JPEG")
    x = load_image(tmp_path / "a.JPEG")
    with Image.open(tmp_path / "a.JPEG") as im:
        ref = np.asarray(im.convert("RGB").resize((384, 256), Image.BILINEAR), dtype=np.float32)[16:240, 80:304]
    assert x.shape == (3, 224, 224) and x.dtype == torch.float32
    assert torch.equal(x, torch.from_numpy(ref.transpose(2, 0, 1) / 255.0))
    # already 256 x 256: no resampling, the centre 224 crop of the decoded pixels; greyscale becomes RGB
    grey = rng.integers(0, 256, (256, 256), dtype=np.uint8)
    Image.fromarray(grey, mode="L").save(tmp_path / "b.png")
    y = load_imagenet_images([tmp_path / "b.png"])
    assert y.shape == (1, 3, 224, 224)
    for c in range(3):
        assert torch.equal(y[0, c], torch.from_numpy(grey[16:240, 16:240].astype(np.float32) / 255.0))
    assert load_image(tmp_path / "a.JPEG", 64, 56).shape == (3, 56, 56)


def test_weights_load_as_torchvision_state_dicts(tmp_path):
    path = write_weights(tmp_path / "w.pth", label=None, seed=3)
    model = load_classifier("resnet18", path)
    saved = torch.load(path, weights_only=True)
    assert sorted(torchvision_state_dict(model)) == sorted(saved) and len(saved) == 122
    assert all(torch.equal(v, saved[k]) for k, v in torchvision_state_dict(model).items())
    assert not model.training and model.n_classes == 1000
    x = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    mean, std = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        assert torch.equal(model(x), model.head(model.body((x - mean) / std)))
    with pytest.raises(ValueError, match="not a torchvision resnet50 state_dict|does not match torchvision's resnet50"):
        load_classifier("resnet50", path)
    # torchvision's released DenseNet files use the old names 'norm.1', 'conv.2'
    dense = ImageNetClassifier("densenet121")
    old = {k.replace("norm1.", "norm.1.").replace("conv2.", "conv.2.") if "denselayer" in k else k: v
           for k, v in torchvision_state_dict(dense).items()}
    assert "features.denseblock1.denselayer1.norm.1.weight" in old
    torch.save(old, tmp_path / "d.pth")
    loaded = load_classifier("densenet121", tmp_path / "d.pth")
    assert torch.equal(loaded.body.features.denseblock1.denselayer1.norm1.weight,
                       dense.body.features.denseblock1.denselayer1.norm1.weight)


def test_experiment_shape_and_config_errors(tmp_path):
    exp = _experiment()
    assert exp.data_setting == "data_dir" and exp.missing_data(exp.make_config("smoke"))
    assert not hasattr(TemplatesConfig(), "data_dir") and not hasattr(DigitsConfig(), "weights_path")
    assert exp.make_config("full").ks == (1, 5, 10, 15, 20, 25, 30) and exp.make_config("full").crop == 224
    with pytest.raises(ConfigError, match="data_dir"):
        PaperDataConfig(data_dir=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="weights_path"):
        PaperDataConfig(weights_path=str(tmp_path / "nope.pth"))
    with pytest.raises(ConfigError, match="arch"):
        PaperDataConfig(arch="vit_b_16")
    with pytest.raises(ConfigError, match="crop"):
        PaperDataConfig(resize=200)
    write_imagenet_val(tmp_path, {LABEL: 1})
    with pytest.raises(ValueError, match="weights_path is empty"):
        exp.run(exp.make_config("smoke", {"data_dir": str(tmp_path)}), 0)


def test_class_folders_must_match_the_weights(tmp_path):
    for i in range(3):
        (tmp_path / "val" / wnid(i)).mkdir(parents=True)
    Image.new("RGB", (60, 60)).save(tmp_path / "val" / wnid(1) / "x.JPEG", format="JPEG")
    w = write_weights(tmp_path / "w.pth")
    exp = _experiment()
    cfg = exp.make_config("smoke", {"data_dir": str(tmp_path), "weights_path": str(w), "arch": "resnet18"})
    with pytest.raises(ValueError, match="3 class folders but the resnet18 weights have 1000 outputs"):
        exp.run(cfg, 0)


def test_smoke_runs_on_the_written_files(tmp_path):
    sets = write_paper_data(tmp_path)
    exp = _experiment()
    cfg = exp.make_config("smoke", {"data_dir": sets["data_dir"], "weights_path": sets["weights_path"],
                                    "arch": sets["arch"]})
    m = exp.run(cfg, 0)
    # the written model predicts class LABEL for every image, and every image is in LABEL's folder
    assert m["test_accuracy"] == 1.0 and m["images_classified"] == 2.0
    assert m["accuracy_minus_chance"] == pytest.approx(0.999, abs=1e-12)
    methods = ("rising", "quad", "quad_scaled", "cw", "pgd")
    for K in (1, 5):
        for name in methods:
            assert m[f"asr_{name}_k{K}"] in (0.0, 0.5, 1.0)
        assert m[f"asr_rising_minus_quad_k{K}"] == m[f"asr_rising_k{K}"] - m[f"asr_quad_k{K}"]
    assert m["asr_rising_minus_quad_k5plus"] == m["asr_rising_minus_quad_k5"]
    assert m["min_asr_k1"] == min(m[f"asr_{name}_k1"] for name in methods)
    for claim in load_reproduction("risingattack").claims:
        if claim.experiment == "paper_data" and claim.metric not in exp.not_at_smoke:
            assert np.isfinite(m[claim.metric]), claim.id
