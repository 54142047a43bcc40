"""The paper's instruction data (LLaVA-1.5 JSON + images + a teacher features file) and the paper_data experiment."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from icml25.core.experiment import ConfigError
from icml25.core.registry import load_reproduction
from icml25.papers.single_transformer_lmm.llava import (
    ANS_ID,
    IMAGE_TOKEN_ID,
    OPENAI_CLIP_MEAN,
    OPENAI_CLIP_STD,
    PAD_ID,
    UNK_ID,
    build_vocab,
    compute_teacher_features,
    load_llava_image,
    load_llava_records,
    load_paper_dataset,
    load_teacher_features,
    pool_grid,
    question_type,
    single_word_turns,
    words,
)
from icml25.papers.single_transformer_lmm.repro import MiniConfig, PaperDataConfig, _majority_accuracy
from paper_files.single_transformer_lmm import N_IMAGES, StubEncoder, write_llava, write_paper_data

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


def _experiment():
    return load_reproduction("single_transformer_lmm").experiment("paper_data")


def _solid(path, w, h, rgb):
    Image.fromarray(np.full((h, w, 3), rgb, np.uint8)).save(path)
    return path


def _tiny_json(tmp_path):
    """Three images (solid PNGs), a text-only record, multi-word and one-word replies, an OOV test answer."""
    for i, rgb in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255)]):
        _solid(tmp_path / f"{i}.png", 4, 4, rgb)
    recs = [
        {"id": "a", "image": "0.png", "conversations": [
            {"from": "human", "value": "<image>\nWhat color is it?"}, {"from": "gpt", "value": "Red."},
            {"from": "human", "value": "Is it big?"}, {"from": "gpt", "value": "A big red square."}]},
        {"id": "b", "image": "1.png", "conversations": [
            {"from": "human", "value": "Who made it?\n<image>"}, {"from": "gpt", "value": "nobody"},
            {"from": "human", "value": "Is it round"}, {"from": "gpt", "value": "No"}]},
        {"id": "c", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "Hello"}]},
        {"id": "d", "image": "2.png", "conversations": [
            {"from": "gpt", "value": "Welcome"}, {"from": "human", "value": "<image>\nName it."},
            {"from": "gpt", "value": "Zebra"}]},
    ]
    path = tmp_path / "llava.json"
    path.write_text(json.dumps(recs))
    return path


def test_records_turns_words_and_question_types(tmp_path):
    path = _tiny_json(tmp_path)
    turns = single_word_turns(load_llava_records(path))
    assert turns == [("0.png", "What color is it?", "red"), ("1.png", "Who made it?", "nobody"),
                     ("1.png", "Is it round", "no"), ("2.png", "Name it.", "zebra")]
    assert words("<image>\nHow many Dogs, 2 or 3?") == ["how", "many", "dogs", "2", "or", "3"]
    assert [question_type(q) for q in ("What color is it?", "Is it round", "Does it fly?", "Who made it?",
                                       "Name it.", "How many dogs?")] == [3, 3, 0, 1, 2, 3]
    assert build_vocab([["b", "a"], ["a", "c"]], 6) == {"PAD": 0, "IMG": 1, "ANS": 2, "UNK": 3, "a": 4, "b": 5}


def test_image_is_padded_to_a_square_with_the_clip_mean_then_resized(tmp_path):
    _solid(tmp_path / "wide.png", 4, 2, (10, 20, 30))
    x = load_llava_image(tmp_path / "wide.png", 4)
    bg = torch.tensor([int(255 * m) for m in OPENAI_CLIP_MEAN], dtype=torch.float32) / 255  # (122, 116, 104)
    assert x.shape == (3, 4, 4) and x.dtype == torch.float32
    for c, v in enumerate((10, 20, 30)):
        assert torch.equal(x[c, 1:3], torch.full((2, 4), v / 255.0))
        assert torch.equal(x[c, [0, 3]], torch.full((2, 4), float(bg[c])))
    tall = load_llava_image(_solid(tmp_path / "tall.png", 2, 4, (10, 20, 30)), 4)
    assert torch.equal(tall, x.transpose(1, 2))
    # resizing is Pillow's bicubic on the padded square
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (30, 30, 3), dtype=np.uint8)).save(tmp_path / "r.png")
    ref = np.asarray(Image.open(tmp_path / "r.png").convert("RGB").resize((8, 8), Image.BICUBIC), np.float32) / 255
    assert torch.equal(load_llava_image(tmp_path / "r.png", 8), torch.from_numpy(ref.transpose(2, 0, 1).copy()))


def test_teacher_features_from_any_encoder(tmp_path):
    path = _tiny_json(tmp_path)
    enc = StubEncoder()
    out = compute_teacher_features(path, tmp_path, enc, tmp_path / "f.pt", grid=2, size=8, batch=2,
                                   encoder_name="stub")
    blob = torch.load(out, weights_only=True)
    assert blob["images"] == ["0.png", "1.png", "2.png"] and blob["grid"] == 2 and blob["size"] == 8
    assert blob["encoder"] == "stub" and blob["features"].shape == (3, 4, 6) and blob["features"].dtype == torch.float16
    # the encoder saw CLIP-normalised pixels, in batches of 2
    assert [len(c) for c in enc.calls] == [2, 1]
    mean, std = torch.tensor(OPENAI_CLIP_MEAN).view(3, 1, 1), torch.tensor(OPENAI_CLIP_STD).view(3, 1, 1)
    assert torch.allclose(enc.calls[0][1], (load_llava_image(tmp_path / "1.png", 8) - mean) / std, atol=1e-6)
    # solid green: every pooled token is the normalised green pixel and its square (class token dropped)
    green = ((torch.tensor([0.0, 1.0, 0.0]) - mean.flatten()) / std.flatten())
    assert torch.allclose(blob["features"][1].float(), torch.cat([green, green ** 2]).expand(4, 6), atol=1e-2)
    # a plain callable returning pooled (B, C) embeddings fills the grid
    out2 = compute_teacher_features(path, tmp_path, lambda x: x.mean((2, 3)), tmp_path / "g.pt", grid=2, size=8,
                                    images=["2.png"])
    feats = load_teacher_features(out2, ["2.png"], 4)
    blue = (torch.tensor([0.0, 0.0, 1.0]) - mean.flatten()) / std.flatten()
    assert feats.shape == (1, 16, 3) and torch.allclose(feats[0], blue.half().float().expand(16, 3))
    assert torch.equal(load_teacher_features(out, ["2.png", "0.png"], 1)[:, 0],
                       blob["features"][[2, 0]].float().mean(1))
    # tokens are row-major over the patch grid, as ViT's and our patch embedding's: 4 x 4 -> 2 x 2 pools blocks
    tokens = torch.arange(16.0).view(1, 16, 1)
    assert pool_grid(tokens, 2).flatten().tolist() == [2.5, 4.5, 10.5, 12.5]  # mean of (0, 1, 4, 5), ...
    with pytest.raises(ValueError, match="not a square grid"):
        compute_teacher_features(path, tmp_path, lambda x: torch.zeros(len(x), 3, 5), tmp_path / "h.pt", size=8)


def test_dataset_split_tokens_and_tables(tmp_path):
    path = _tiny_json(tmp_path)
    feats = compute_teacher_features(path, tmp_path, StubEncoder(), tmp_path / "f.pt", grid=2, size=8)
    train, test, vocab = load_paper_dataset(path, tmp_path, feats, sizes=(10, 1), img=4, patch=2, q_len=3,
                                            vocab_size=100, seed=0)
    assert set(train["images"]).isdisjoint(test["images"])
    assert sorted(train["images"] + test["images"]) == ["0.png", "1.png", "2.png"]
    for split in (train, test):
        n = len(split["answers"])
        assert split["input_ids"].shape == (n, 4 + 3 + 1)
        assert (split["input_ids"][:, :4] == IMAGE_TOKEN_ID).all() and (split["input_ids"][:, -1] == ANS_ID).all()
        for k, img in enumerate(split["images"]):
            assert torch.equal(split["pixel_values"][k], load_llava_image(tmp_path / img, 4))
            assert torch.equal(split["teacher_features"][k], load_teacher_features(feats, [img], 2)[0])
    # seed 0 holds out image 2 (its one turn, 'Name it.' -> 'zebra'); the vocabulary is the training words by count
    assert test["images"] == ["2.png"] and train["images"] == ["0.png", "1.png"]
    assert list(vocab) == ["PAD", "IMG", "ANS", "UNK", "it", "is", "color", "made", "no", "nobody", "red", "round",
                           "what", "who"]
    w = vocab.get
    assert train["input_ids"][:, 4:7].tolist() == [[w("what"), w("color"), w("is")], [w("who"), w("made"), w("it")],
                                                   [w("is"), w("it"), w("round")]]
    assert train["answers"].tolist() == [w("red"), w("nobody"), w("no")] and train["qtype"].tolist() == [3, 1, 3]
    assert train["image_index"].tolist() == [0, 1, 1]
    # 'name' and the answer 'zebra' are not training words: UNK in the question, -1 (always wrong) as the answer
    assert test["input_ids"][0, 4:7].tolist() == [UNK_ID, w("it"), PAD_ID] and test["answers"].tolist() == [-1]
    assert test["qtype"].tolist() == [2] and test["image_index"].tolist() == [0]
    # with a smaller vocabulary, training turns whose answer falls outside it are dropped
    small, _, v = load_paper_dataset(path, tmp_path, feats, sizes=(10, 1), img=4, patch=2, q_len=3,
                                     vocab_size=9, seed=0)
    assert list(v)[4:] == ["it", "is", "color", "made", "no"] and small["answers"].tolist() == [v["no"]]
    assert small["images"] == ["1.png"] and small["image_index"].tolist() == [0]
    with pytest.raises(ValueError, match="vocab_size=8 leaves no training answer"):
        load_paper_dataset(path, tmp_path, feats, sizes=(10, 1), img=4, patch=2, q_len=3, vocab_size=8,
                           seed=0)


def test_missing_files_raise_one_error_naming_them(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.json not found: expected <data_path>: LLaVA-1.5"):
        load_llava_records(tmp_path / "nope.json")
    path = _tiny_json(tmp_path)
    feats = compute_teacher_features(path, tmp_path, StubEncoder(), tmp_path / "f.pt", grid=2, size=8)
    (tmp_path / "1.png").unlink()
    with pytest.raises(FileNotFoundError, match=r"image .*1\.png not found"):
        load_paper_dataset(path, tmp_path, feats, sizes=(10, 1), img=4, patch=2, q_len=3, vocab_size=100,
                           seed=0)
    with pytest.raises(FileNotFoundError, match=r"teacher features file .*none\.pt not found"):
        load_teacher_features(tmp_path / "none.pt", ["0.png"], 2)
    with pytest.raises(ValueError, match="has no features for 1 image"):
        load_teacher_features(feats, ["0.png", "9.png"], 2)
    (tmp_path / "bad.json").write_text(json.dumps({"id": 1}))
    with pytest.raises(ValueError, match="expected a JSON list of records"):
        load_llava_records(tmp_path / "bad.json")


def test_experiment_shape_and_config_errors(tmp_path):
    exp = _experiment()
    assert exp.data_setting == "data_path" and exp.missing_data(exp.make_config("smoke"))
    assert not hasattr(MiniConfig(), "data_path") and not hasattr(MiniConfig(), "teacher_features")
    assert exp.make_config("quick").patch == 8 and exp.make_config("full").img == 64
    for field in ("data_path", "teacher_features"):
        with pytest.raises(ConfigError, match=field):
            PaperDataConfig(**{field: str(tmp_path / "nope.json")})
    with pytest.raises(ConfigError, match="image_folder"):
        PaperDataConfig(image_folder=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="q_len"):
        PaperDataConfig(q_len=0)
    with pytest.raises(ConfigError, match="vocab_size"):
        PaperDataConfig(vocab_size=4)
    path = write_llava(tmp_path, n_images=3)
    with pytest.raises(ValueError, match="teacher_features is empty"):
        exp.run(exp.make_config("smoke", {"data_path": str(path)}), 0)


def test_smoke_runs_on_the_written_files(tmp_path):
    sets = write_paper_data(tmp_path)
    exp = _experiment()
    cfg = exp.make_config("smoke", sets)
    m = exp.run(cfg, 0)
    # 12 images x 3 one-word turns, 3 images (9 turns) held out for n_test = 8; the words of the writer's questions
    assert m["n_train_examples"] + m["n_test_examples"] == 3 * N_IMAGES and m["n_test_examples"] == 9.0
    assert m["n_train_images"] == 9.0 and m["n_test_images"] == 3.0 and m["test_answer_in_vocab"] == 1.0
    assert m["test_fine_fraction"] == pytest.approx(6 / 9)  # colour and "is the square <colour>" questions
    for name in ("haplo", "no_stage1", "scratch", "compositional", "majority"):
        assert m[f"acc_{name}"] * 9 == pytest.approx(round(m[f"acc_{name}"] * 9), abs=1e-5)
    train, test, vocab = load_paper_dataset(sets["data_path"], sets["image_folder"], sets["teacher_features"],
                                            sizes=(cfg.n_train, cfg.n_test), img=cfg.img, patch=cfg.patch,
                                            q_len=cfg.q_len, vocab_size=cfg.vocab_size, seed=0)
    assert m["vocab_words"] == len(vocab) and m["acc_majority"] == _majority_accuracy(train, test)
    assert test["images"] == sorted(test["images"]) and all(img.startswith("coco/train2017/") for img in test["images"])
    assert m["haplo_minus_majority"] == m["acc_haplo"] - m["acc_majority"]
    assert m["stage1_gain"] == m["acc_haplo"] - m["acc_no_stage1"]
    assert m["haplo_minus_compositional_fine"] == m["fine_acc_haplo"] - m["fine_acc_compositional"]
    for claim in load_reproduction("single_transformer_lmm").claims:
        if claim.experiment == "paper_data":
            assert np.isfinite(m[claim.metric]), claim.id
