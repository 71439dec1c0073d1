"""Swappers are kind records, one per choice; and no setting that reaches a swapper changes its pixels
without changing the swap records' key.

The key test runs the swap pipeline of every swapper kind (FaceFusion's as stand-in graphs with their real
contracts) once with base settings and once with each setting changed: where the swap stage's key stays
the same, the swap records made must be byte for byte the same."""

from __future__ import annotations

import dataclasses
import shutil
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest

from analysis_graphs import echo_model, standin_model
from facecache import choices
from facecache.analysis.iris import IRIS_MODEL
from facecache.errors import FaceCacheError
from facecache.models.runtime import CPU, SessionFactory
from facecache.models.store import ModelStore
from facecache.pipeline import Parts, Settings, build_pipeline
from facecache.swap.factory import SWAPPER_KINDS, swapper_kind
from swap_graphs import emap_matrix, hyperswap_standin, inswapper_standin, probe_vector

KINDS = choices.names(choices.SWAPPERS)


def test_every_swapper_choice_is_one_kind_record():
    assert tuple(SWAPPER_KINDS) == KINDS


def test_an_unknown_swapper_is_refused_naming_the_known_ones():
    with pytest.raises(FaceCacheError, match=f"unknown swapper 'nope': choose one of {', '.join(KINDS)}$"):
        swapper_kind("nope")


@pytest.fixture(scope="module")
def swap_models(tmp_path_factory, models_dir, default_models_dir) -> Path:
    """MTCNN, the iris model (the classic_eyes swapper's), and every FaceFusion model a swapper kind needs
    (and SCRFD, another detector) as stand-ins, imported from a FaceFusion-style folder with crc32 sidecars."""
    folder = tmp_path_factory.mktemp("facefusion")
    echo_model(folder / "arcface_w600k_r50.onnx", "input", (1, 3, 112, 112), "output", 512)
    inswapper_standin(folder / "inswapper_128.onnx", emap_matrix(), probe_vector())
    inswapper_standin(folder / "inswapper_128_fp16.onnx", emap_matrix(), probe_vector(), fp16=True)
    hyperswap_standin(folder / "hyperswap_1a_256.onnx", probe_vector())
    counts = [(640 // stride) ** 2 * 2 for stride in (8, 16, 32)]  # SCRFD's outputs: one face, mid-picture
    outputs = [np.zeros((n, width)) for width in (1, 4, 10) for n in counts]
    anchor = (9 * 20 + 9) * 2  # stride 32, row 9, column 9: centred at (288, 288)
    outputs[2][anchor], outputs[5][anchor] = 0.9, [2, 2, 2, 2]
    outputs[8][anchor] = [-0.6, -0.4, 0.6, -0.4, 0, 0.1, -0.5, 0.6, 0.5, 0.6]  # eyes, nose, mouth (stride units)
    names = [f"{what}_{stride}" for what in ("score", "bbox", "kps") for stride in (8, 16, 32)]
    standin_model(folder / "scrfd_2.5g.onnx", "input", [1, 3, 640, 640], list(zip(names, outputs)))
    for model in folder.glob("*.onnx"):
        (folder / f"{model.stem}.hash").write_text(f"{zlib.crc32(model.read_bytes()):08x}")
    models = tmp_path_factory.mktemp("swap-models")
    ModelStore(default_models_dir).install(["check"])
    for store, name in ((ModelStore(models_dir), "mtcnn"), (ModelStore(default_models_dir), IRIS_MODEL)):
        for path in store.paths(name).values():
            shutil.copy(path, models / path.name)
    ModelStore(models).import_folder(folder)
    return models


@pytest.fixture(scope="module")
def two_faces(tmp_path_factory, portrait_paths) -> Path:
    """Grace Hopper's portrait beside a half-size copy: a source with a second face (--source-face 1)."""
    image = cv2.imread(str(portrait_paths["grace_hopper"]))
    small = cv2.resize(image, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_AREA)
    both = np.zeros((image.shape[0], image.shape[1] + small.shape[1], 3), np.uint8)
    both[:, :image.shape[1]], both[:small.shape[0], image.shape[1]:] = image, small
    path = tmp_path_factory.mktemp("two-faces") / "two_faces.png"
    cv2.imwrite(str(path), both)
    return path


@dataclasses.dataclass
class Context:
    tmp: Path
    models: Path
    source: Path
    swapper: str


# Another value of every setting. A new setting must be given one here, so the test tries it.
OTHER_VALUES = {
    "cache_dir": lambda ctx: str(ctx.tmp / "elsewhere"),
    "max_bytes": lambda ctx: 10**9,
    "models_dir": lambda ctx: str(shutil.copytree(ctx.models, ctx.tmp / "models-copy")),
    "providers": lambda ctx: "auto",
    "detector": lambda ctx: "scrfd_2.5g",
    "tracking": lambda ctx: "off",
    "landmarker": lambda ctx: "none",
    "recognizer": lambda ctx: "none",
    "swapper": lambda ctx: next(kind for kind in KINDS if kind != ctx.swapper),
    "selector": lambda ctx: "many",
    "sources": lambda ctx: (_mirrored(ctx.source, ctx.tmp),),
    "source_face": lambda ctx: 1,
    "position": lambda ctx: (0.1, 0.9),
    "references": lambda ctx: (str(ctx.source),),
    "reference_threshold": lambda ctx: 0.5,
    "mask_blur": lambda ctx: 0.6,
    "color_match": lambda ctx: 0.4,
    "opacity": lambda ctx: 0.5,
    "output_form": lambda ctx: "full",
    "limit_yaw": lambda ctx: False,
    "max_yaw": lambda ctx: 2.0,  # the astronaut turns her head 5 degrees: past it, the classic swapper leaves her
    "picture_rules": lambda ctx: "blender-4.2",
    # a remote tier that cannot be reached (a closed port on 127.0.0.1: the job goes on locally, one warning)
    "remote_cache": lambda ctx: "s3://facecache-unreachable/cache",
    "remote_read_only": lambda ctx: True,
}


def _mirrored(path: Path, folder: Path) -> str:
    mirrored = folder / "mirrored.png"
    cv2.imwrite(str(mirrored), cv2.flip(cv2.imread(str(path)), 1))
    return str(mirrored)


def _swap_records(settings: Settings, target: Path, out: Path) -> tuple[str, dict[str, bytes]] | None:
    """(the swap stage's key, every file of its namespace folder) after a run; None when the settings are
    refused (nothing is made, so nothing can be served under a wrong key)."""
    try:
        job = build_pipeline(settings, Parts()).swap_job()
    except FaceCacheError:
        return None
    job.run(target, out)
    folder = Path(settings.cache_dir) / "ns" / job.namespace.key
    return job.namespace.key, {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
                               if p.is_file()}


def _cpu_alone(providers: str) -> bool:
    return SessionFactory(providers).requested_providers() == (CPU,)


def test_every_setting_is_tried():
    assert sorted(OTHER_VALUES) == sorted(field.name for field in dataclasses.fields(Settings))


@pytest.mark.parametrize("kind", KINDS)
def test_no_setting_changes_a_swappers_pixels_without_changing_its_key(tmp_path, swap_models, two_faces,
                                                                         portrait_paths, kind, monkeypatch):
    for name, value in (("AWS_ENDPOINT_URL", "http://127.0.0.1:9"), ("AWS_ACCESS_KEY_ID", "test"),
                        ("AWS_SECRET_ACCESS_KEY", "test"), ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    ctx = Context(tmp_path, swap_models, two_faces, kind)
    base = Settings(cache_dir=str(tmp_path / "base"), models_dir=str(swap_models), providers="cpu", swapper=kind,
                    sources=(str(two_faces),))
    target = portrait_paths["astronaut"]
    key, records = _swap_records(base, target, tmp_path / "out-base")
    assert len(records) > 1  # the namespace file and at least one pack of swapped faces
    outcomes = {}
    for field, other in OTHER_VALUES.items():
        value = other(ctx)
        if field == "providers" and not _cpu_alone(value):
            continue  # no key names where a model runs (nodes with and without a GPU share a cache): CPU to CPU here
        changed = dataclasses.replace(base, **{"cache_dir": str(tmp_path / field), field: value})
        made = _swap_records(changed, target, tmp_path / f"out-{field}")
        if made is None:
            outcomes[field] = "refused"
        elif made[0] != key:
            outcomes[field] = "new key"
        else:
            assert made[1] == records, f"{field} changed the {kind} swapper's records but not their key"
            outcomes[field] = "same records"
    # The swapper's own settings reach its key: the yaw limit only where its choice uses it (as the add-on's
    # panel offers it: the engine and the panel read one record).
    yaw = "new key" if choices.choice(choices.SWAPPERS, kind).uses_yaw_limit else "same records"
    assert (outcomes["limit_yaw"], outcomes["max_yaw"]) == (yaw, yaw)
    assert outcomes["swapper"] == outcomes["sources"] == outcomes["source_face"] == outcomes["detector"] == "new key"
    assert outcomes["mask_blur"] == outcomes["opacity"] == outcomes["models_dir"] == "same records"
    assert outcomes["remote_cache"] == outcomes["remote_read_only"] == "same records"  # where packs live, not what
