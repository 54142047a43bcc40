"""icml25.common.images: class folders and their image files in torchvision's ImageFolder layout."""

from __future__ import annotations

from icml25.common.images import class_folders, class_images


def test_class_folders_and_images_are_sorted_and_filtered(tmp_path):
    for wnid in ("n02", "n01", "n10"):
        (tmp_path / wnid).mkdir()
    (tmp_path / "stray.txt").write_text("not a class")
    for name in ("b.JPEG", "a.jpg", "c.png", "notes.txt", "d.JPEG.bak"):
        (tmp_path / "n01" / name).write_bytes(b"x")
    (tmp_path / "n01" / "sub.JPEG").mkdir()  # a folder named like an image is not one
    assert class_folders(tmp_path) == ["n01", "n02", "n10"]
    assert [p.name for p in class_images(tmp_path, "n01")] == ["a.jpg", "b.JPEG", "c.png"]
    assert class_images(tmp_path, "n02") == []
