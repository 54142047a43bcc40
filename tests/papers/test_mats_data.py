"""The paper's data for mats: Clotho v2 and AudioCaps read in their distributed layouts, embedded by a (stub) CLAP
with msclap's method names into the documented ``.npz`` file, and the ``paper_data`` experiment on that file."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.io import wavfile

from icml25.core.experiment import ConfigError
from icml25.core.registry import load_reproduction
from icml25.papers.mats.data import SPECIAL, WORD, TinyCLAP, TinyLM, make_scenes
from icml25.papers.mats.model import MATS, MATSConfig, TransformerMapper, train_mats
from icml25.papers.mats.paper_data import (
    EMBEDDING_KEYS,
    EmbeddingCLAP,
    build_vocabulary,
    caption_scenes,
    caption_words,
    embed_dataset,
    load_audiocaps,
    load_clotho,
    load_embeddings,
    read_wav,
    reference_concepts,
)
from icml25.papers.mats.repro import PaperDataConfig, WorldConfig
from paper_files.mats import (
    GAP,
    SPLITS,
    StubCLAP,
    audio_embedding,
    captions_of,
    clip_name,
    text_embedding,
    word_vector,
    write_clotho,
    write_paper_data,
    write_wav,
)

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_network(no_network):
    """Every test: any attempt to reach the network raises (the suite's fixture)."""


def _experiment():
    return load_reproduction("mats").experiment("paper_data")


def _write_audiocaps(folder, naming="audiocap_id"):
    """AudioCaps' train.csv (one caption per clip) and test.csv (five rows per clip, clips interleaved) with WAVs."""
    rows = {"train": [(91139, "r1nicOVtvkQ", 130, "A woman talks nearby as water pours"),
                      (58146, "UDGBjjwyaqE", 20, "Multiple clanging and clanking sounds")],
            "test": [(103549, "7fmOlUlwoNg", 20, "Constant rattling noise and sharp vibrations")]
            + [(103550 + i, "6BJ455B1aAs" if i % 2 else "7fmOlUlwoNg", 0, f"caption {i}, with a comma")
               for i in range(9)]}
    for split, lines in rows.items():
        (folder / split).mkdir(parents=True, exist_ok=True)
        with (folder / f"{split}.csv").open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["audiocap_id", "youtube_id", "start_time", "caption"])
            w.writerows(lines)
        seen = set()
        for cap_id, yid, _, _ in lines:
            if naming == "audiocap_id":
                write_wav(folder / split / f"{cap_id}.wav", ("dog",))
            elif yid not in seen:
                write_wav(folder / split / f"{yid}.wav", ("dog",))
            seen.add(yid)
    return folder


def test_clotho_layout_gives_names_paths_and_captions(tmp_path):
    write_clotho(tmp_path)
    dev = load_clotho(tmp_path, "development")
    assert dev.dataset == "clotho" and dev.split == "development"
    assert dev.file_names == [clip_name("development", i) for i in range(8)] == [p.name for p in dev.audio_paths]
    assert dev.file_names[3] == "dev clip é03.wav"
    assert all(p.parent == tmp_path / "development" and p.is_file() for p in dev.audio_paths)
    assert dev.captions == [captions_of(a, b) for a, b in SPLITS["development"]]
    assert dev.captions[0] == ["A dog and a bird can be heard.", "Dog sounds, then a bird in the background.",
                               'the dog is loud over a "bird"', "A dog with a bird nearby", "Dog and bird outside"]
    val = load_clotho(tmp_path, "validation")
    assert val.file_names == ["val clip é00.wav", "val clip é01.wav"] and val.captions[1][4] == "Dog and water outside"


def test_audiocaps_layout_groups_rows_into_clips(tmp_path):
    _write_audiocaps(tmp_path)
    train = load_audiocaps(tmp_path, "train")
    assert train.file_names == ["r1nicOVtvkQ", "UDGBjjwyaqE"]
    assert [p.name for p in train.audio_paths] == ["91139.wav", "58146.wav"]
    assert train.captions == [["A woman talks nearby as water pours"], ["Multiple clanging and clanking sounds"]]
    test = load_audiocaps(tmp_path, "test")
    assert test.file_names == ["7fmOlUlwoNg", "6BJ455B1aAs"]
    assert [p.name for p in test.audio_paths] == ["103549.wav", "103551.wav"]  # the first row's audiocap_id
    assert test.captions[0] == ["Constant rattling noise and sharp vibrations"] + [
        f"caption {i}, with a comma" for i in (0, 2, 4, 6, 8)]
    assert test.captions[1] == [f"caption {i}, with a comma" for i in (1, 3, 5, 7)]
    other = tmp_path / "by_youtube_id"
    _write_audiocaps(other, naming="youtube_id")
    assert [p.name for p in load_audiocaps(other, "test", naming="youtube_id").audio_paths] == [
        "7fmOlUlwoNg.wav", "6BJ455B1aAs.wav"]


def test_read_wav_scales_every_pcm_format(tmp_path):
    wavfile.write(tmp_path / "i16.wav", 16000, np.array([0, 16384, -32768, 32767], np.int16))
    rate, x = read_wav(tmp_path / "i16.wav")
    assert rate == 16000 and x.dtype == np.float32
    assert x.tolist() == [0.0, 0.5, -1.0, 32767 / 32768]
    wavfile.write(tmp_path / "u8.wav", 8000, np.array([128, 192, 0], np.uint8))
    assert read_wav(tmp_path / "u8.wav")[1].tolist() == [0.0, 0.5, -1.0]
    wavfile.write(tmp_path / "i32.wav", 8000, np.array([2 ** 30, -2 ** 31], np.int32))
    assert read_wav(tmp_path / "i32.wav")[1].tolist() == [0.5, -1.0]
    stereo = np.array([[0.5, -0.25], [1.0, 0.0]], np.float32)
    wavfile.write(tmp_path / "f32.wav", 44100, stereo)
    assert read_wav(tmp_path / "f32.wav")[1].tolist() == [0.125, 0.5]


def test_missing_files_raise_one_error_naming_them(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"clotho_captions_evaluation\.csv not found: expected Clotho v2's"):
        load_clotho(tmp_path, "evaluation")
    write_clotho(tmp_path, {"evaluation": [("dog", "car")]})
    (tmp_path / "evaluation" / clip_name("evaluation", 0)).unlink()
    with pytest.raises(FileNotFoundError, match=r"eva clip é00\.wav not found: .*WAV files in <root>/evaluation/"):
        load_clotho(tmp_path, "evaluation")
    with pytest.raises(FileNotFoundError, match=r"test\.csv not found: expected AudioCaps' <root>/test\.csv"):
        load_audiocaps(tmp_path, "test")
    with pytest.raises(FileNotFoundError, match=r"nope\.npz not found: expected an \.npz file written by"):
        load_embeddings(tmp_path / "nope.npz")
    with pytest.raises(FileNotFoundError, match=r"none\.wav not found"):
        read_wav(tmp_path / "none.wav")
    with pytest.raises(ValueError, match="Clotho split must be one of"):
        load_clotho(tmp_path, "train")
    (tmp_path / "clotho_captions_development.csv").write_text("file_name,caption_1\nx.wav,a dog\n")
    with pytest.raises(ValueError, match=r"columns \['caption_2', 'caption_3', 'caption_4', 'caption_5'\] missing"):
        load_clotho(tmp_path, "development")


def test_embed_dataset_writes_the_documented_file(tmp_path):
    write_clotho(tmp_path)
    clap = StubCLAP()
    out = embed_dataset(clap, tmp_path, tmp_path / "emb.file", batch_size=16, encoder="stub")
    assert out == tmp_path / "emb.file"  # the name is kept as given
    with np.load(out, allow_pickle=False) as z:  # nothing pickled
        assert sorted(z.files) == sorted(EMBEDDING_KEYS)
    # 8 development + 4 evaluation clips (the default splits: training and test), 5 captions each, batches of 16
    assert clap.calls == [("text", 16), ("text", 16), ("text", 16), ("text", 12), ("audio", 12)]
    e = load_embeddings(out)
    assert e.dataset == "clotho" and e.encoder == "stub"
    assert e.file_name.tolist() == [clip_name("development", i) for i in range(8)] + [
        clip_name("evaluation", i) for i in range(4)]
    assert e.split.tolist() == ["development"] * 8 + ["evaluation"] * 4
    assert e.caption_clip.tolist() == [i for i in range(12) for _ in range(5)]
    pairs = SPLITS["development"] + SPLITS["evaluation"]
    assert e.caption.tolist() == [c for a, b in pairs for c in captions_of(a, b)]
    assert e.text_embeddings.shape == (60, 16) and e.audio_embeddings.shape == (12, 16)
    expected = text_embedding(captions_of("rain", "car")[2]).astype(np.float32)
    np.testing.assert_array_equal(e.text_embeddings[7], expected)
    # the stub reads each WAV: its audio embedding is the gap plus the vectors of the clip's two tones
    for i, (a, b) in enumerate(pairs):
        np.testing.assert_allclose(e.audio_embeddings[i], GAP + word_vector(a) + word_vector(b), rtol=1e-6)
    np.testing.assert_array_equal(e.audio_embeddings[9], audio_embedding(
        tmp_path / "evaluation" / clip_name("evaluation", 1)).astype(np.float32))
    # every split, and AudioCaps
    e3 = load_embeddings(embed_dataset(StubCLAP(), tmp_path, tmp_path / "all.npz",
                                       splits=("development", "validation", "evaluation")))
    assert e3.split.tolist().count("validation") == 2 and len(e3.caption) == 70
    _write_audiocaps(tmp_path / "ac")
    ac = load_embeddings(embed_dataset(StubCLAP(), tmp_path / "ac", tmp_path / "ac.npz", dataset="audiocaps"))
    assert ac.dataset == "audiocaps" and ac.file_name.tolist() == ["r1nicOVtvkQ", "UDGBjjwyaqE", "7fmOlUlwoNg",
                                                                   "6BJ455B1aAs"]
    assert ac.caption_clip.tolist() == [0, 1] + [2] * 6 + [3] * 4
    with pytest.raises(TypeError, match="get_audio_embeddings"):
        embed_dataset(object(), tmp_path, tmp_path / "x.npz")


def test_load_embeddings_rejects_broken_files(tmp_path):
    write_clotho(tmp_path)
    good = dict(np.load(embed_dataset(StubCLAP(), tmp_path, tmp_path / "e.npz"), allow_pickle=False))

    def write(**change):
        arrays = {k: v for k, v in {**good, **change}.items() if v is not None}
        np.savez(tmp_path / "bad.npz", **arrays)
        return tmp_path / "bad.npz"

    with pytest.raises(ValueError, match=r"arrays \['caption_clip'\] missing"):
        load_embeddings(write(caption_clip=None))
    with pytest.raises(ValueError, match=r"splits \['train'\] are not clotho's"):
        load_embeddings(write(split=np.array(["train"] * 12)))
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_embeddings(write(dataset=np.array("esc50")))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        load_embeddings(write(audio_embeddings=good["audio_embeddings"][:, :8]))
    with pytest.raises(ValueError, match="caption_clip must index the 12 clips"):
        load_embeddings(write(caption_clip=good["caption_clip"] + 1))
    nan = good["text_embeddings"].copy()
    nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="must be finite"):
        load_embeddings(write(text_embeddings=nan))


def test_vocabulary_tokens_and_reference_concepts():
    caps = ["A dog barks, a bird sings.", "Dogs bark; the dog's owner whistles.", "a DOG barks over rain"]
    assert caption_words(caps[1]) == ["dogs", "bark", "the", "dog's", "owner", "whistles"]
    v = build_vocabulary(caps, n_concepts=3, vocab_size=16)
    # counts: dog 2, barks 2, then (1 each, alphabetically) bark, bird, dog's ...; 'a', 'over' are special tokens
    assert v.concepts == ("barks", "dog", "bark") and v.words[:len(SPECIAL)] == SPECIAL
    assert v.words[len(SPECIAL) + 3:] == ("bird", "dog's", "dogs", "owner", "<unk>")  # 16 tokens in all
    assert v.ids("A dog barks over the sea", max_words=5) == [WORD["a"], 9, 8, WORD["over"], 15]
    assert v.concept_set("the DOG barks and barks").tolist() == [1, 1, 0]
    s = caption_scenes(["a dog barks over rain", "bird"], np.arange(6, dtype=np.float32).reshape(2, 3), v,
                       max_words=3)
    assert s.caption.tolist() == [[5, 9, 8, 2], [11, 2, 0, 0]]
    assert s.sounds.tolist() == [[8, 9, 2, 0], [2, 0, 0, 0]]
    assert s.concepts.tolist() == [[1, 1, 0], [0, 0, 0]] and s.features.tolist() == [[0, 1, 2], [3, 4, 5]]
    # a concept counts for a clip when at least half of its references name it
    refs = [["a dog barks", "dog", "bird"], ["bark bark"], ["dog barks", "barks", "bird", "dog"]]
    assert reference_concepts(refs, v).tolist() == [[0, 1, 0], [0, 0, 1], [1, 1, 0]]
    with pytest.raises(ValueError, match="vocab_size must be at least 12"):
        build_vocabulary(caps, n_concepts=3, vocab_size=11)
    with pytest.raises(ValueError, match="name no concept word"):
        build_vocabulary(["a the of", "it is"], 3, 100)


def test_stored_text_embeddings_train_as_the_tokens_they_came_from():
    """MATS.loss and train_mats on stored CLAP text embeddings give what the tokens through the CLAP give."""
    scenes = make_scenes(40, seed=3)
    torch.manual_seed(0)
    clap = TinyCLAP(dim=8).eval()
    with torch.no_grad():
        stored = clap.encode_text(torch.from_numpy(scenes.caption))
    cfg = MATSConfig(train_steps=3, batch_size=8, prefix_len=2, mapper_layers=1)

    def model(encoder):
        torch.manual_seed(1)
        return MATS(encoder, TransformerMapper(8, 64, 2, 2, 1, n_heads=4), TinyLM(), use_santa=False)

    a = train_mats(model(clap), scenes, cfg, seed=5)
    b = train_mats(model(EmbeddingCLAP(8)), scenes, cfg, seed=5, text_embeddings=stored)
    trained = lambda m: [*m.mapper.parameters(), *m.lm.parameters()]  # noqa: E731
    assert not all(torch.equal(p, q) for p, q in zip(trained(a), trained(model(clap))))  # it did train
    for p, q in zip(trained(a), trained(b)):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="precomputed CLAP text embeddings"):
        train_mats(model(EmbeddingCLAP(8)), scenes, cfg, seed=5)
    with pytest.raises(ValueError, match=r"text_embeddings must have shape \(40, dim\)"):
        train_mats(model(clap), scenes, cfg, seed=5, text_embeddings=stored[:5])


def test_experiment_shape_and_config_errors(tmp_path):
    exp = _experiment()
    assert exp.data_setting == "data_path" and exp.missing_data(exp.make_config("smoke"))
    assert not hasattr(WorldConfig(), "data_path")
    assert exp.fidelity_of("smoke").level == "mechanism" and exp.fidelity_of("quick").level == "reduced"
    assert exp.make_config("full").mats.prefix_len == 40
    with pytest.raises(ConfigError, match="data_path"):
        PaperDataConfig(data_path=str(tmp_path / "nope.npz"))
    with pytest.raises(ConfigError, match="data_path"):
        PaperDataConfig(data_path=str(tmp_path))  # a folder, not the file
    with pytest.raises(ConfigError, match="n_concepts"):
        PaperDataConfig(n_concepts=0)
    with pytest.raises(ConfigError, match="vocab_size"):
        PaperDataConfig(n_concepts=30, vocab_size=38)
    with pytest.raises(ConfigError, match="max_words"):
        PaperDataConfig(max_words=0)
    with pytest.raises(ValueError, match="data_path is empty"):
        exp.run(exp.make_config("smoke"), 0)


def test_smoke_runs_on_the_written_files(tmp_path):
    sets = write_paper_data(tmp_path)
    exp = _experiment()
    m = exp.run(exp.make_config("smoke", sets), 0)
    # all 40 development captions train, all 4 evaluation clips are tested (their references agree on both sounds)
    assert (m["n_train_captions"], m["n_test_clips"], m["n_concepts_used"], m["embedding_dim"]) == (40, 4, 12, 16)
    e = load_embeddings(sets["data_path"])
    # concepts: dog, car, rain, water (15 captions each), bird, engine (10), six template words (8)
    concepts = ["car", "dog", "rain", "water", "bird", "engine", "background", "heard", "loud", "nearby", "outside",
                "sounds"]
    sets_of = lambda caption: np.isin(concepts, caption_words(caption)).astype(int)  # noqa: E731
    truth = np.array([np.isin(concepts, [a, b]) for a, b in SPLITS["evaluation"]], dtype=int)
    train_sets = np.array([sets_of(c) for c in e.caption[:40]])
    rows, counts = np.unique(train_sets, axis=0, return_counts=True)
    majority = rows[counts.argmax()]
    f1 = [2 * (majority * t).sum() / (majority.sum() + t.sum()) for t in truth]
    assert m["f1_majority"] == pytest.approx(np.mean(f1), abs=1e-12)
    assert m["acc_majority"] == 0.0  # every training caption names a template word besides its two sounds
    a = e.audio_embeddings[8:]
    assert m["audio_norm"] == pytest.approx(np.linalg.norm(a, axis=1).mean(), rel=1e-6)
    t = e.text_embeddings[[40, 45, 50, 55]]  # each test clip's first reference
    cos = (a * t).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(t, axis=1)
    assert m["paired_cosine"] == pytest.approx(cos.mean(), rel=1e-5)
    bank = F.normalize(torch.from_numpy(e.text_embeddings[:40]), dim=-1).numpy()
    nearest = (a / np.linalg.norm(a, axis=1, keepdims=True)) @ bank.T
    assert m["text_dist_raw"] == pytest.approx((1 - nearest.max(1)).mean(), rel=1e-5)
    assert m["f1_noise_minus_plain"] == m["f1_b"] - m["f1_a"] and m["acc_santa_minus_noise"] == m["acc_c"] - m["acc_b"]
    assert m["f1_santa_minus_majority"] == m["f1_c"] - m["f1_majority"]
    for claim in load_reproduction("mats").claims:
        if claim.experiment == "paper_data":
            assert np.isfinite(m[claim.metric]), claim.id
