"""What the corpus generates in place of a download, where scripts share it: the TF docs'
flower_photos folder (5 class folders of JPEGs), written once and reused.

Imports nothing from the repository, like `_truth.py`; the scripts' folder is on sys.path.
"""

from __future__ import annotations

import numpy as np
import PIL
import PIL.Image

FLOWER_CLASSES = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]


def make_flower_photos(root, count=400, seed=0):
    """`count` JPEGs in 5 class folders, like flower_photos: smooth noise plus grain, 200-500 px."""
    data_dir = root / "flower_photos"
    done = root / "flower_photos.complete"
    if done.exists():
        return data_dir
    rng = np.random.default_rng(seed)
    tints = rng.uniform(-60, 60, size=(len(FLOWER_CLASSES), 3))
    for i in range(count):
        label = i % len(FLOWER_CLASSES)
        height, width = (int(v) for v in rng.integers(200, 501, size=2))
        coarse = rng.uniform(0, 255, size=(8, 8, 3)) + tints[label]
        coarse = PIL.Image.fromarray(np.clip(coarse, 0, 255).astype(np.uint8))
        smooth = np.asarray(coarse.resize((width, height), PIL.Image.BICUBIC), dtype=np.float32)
        grain = rng.normal(0, 12, size=smooth.shape)
        pixels = np.clip(smooth + grain, 0, 255).astype(np.uint8)
        class_dir = data_dir / FLOWER_CLASSES[label]
        class_dir.mkdir(parents=True, exist_ok=True)
        PIL.Image.fromarray(pixels).save(class_dir / f"{i:05d}.jpg", quality=90)
    done.touch()
    return data_dir
