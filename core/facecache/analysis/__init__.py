"""The analysis stage: face detectors, landmarker, recognizer, alignment, head pose, the cached analyzer and
which frames it has analysed (`coverage`).

Every adapter takes ONNX Runtime sessions that already exist (anything with
``get_inputs()``, ``get_outputs()`` and ``run(names, feeds)``), so the
engine's session factory and tests can both supply them. Frames are BGR uint8.

    MtcnnDetector(pnet, rnet, onet, MtcnnSettings()).detect(frame) -> [Detection]
    ScrfdDetector(session).detect(frame) -> [Detection]
    YoloFaceDetector(session).detect(frame) -> [Detection]
    Fan68Landmarker(session).landmarks(frame, box, angle=0) -> Landmarks68
    FaceMeshLandmarker(session).landmarks_batch(frame, faces) -> [Landmarks68]   (one run per frame)
    ArcFaceRecognizer(session).embed(frame, kps5) -> (512,) float32; l2_normalised(embedding)
    FaceNetRecognizer(session).embed_batch(frame, faces) -> (N, 512) float32     (one run per frame)
    head_pose(points, (width, height)) -> HeadPose
"""

from facecache.analysis.align import TEMPLATES, alignment_matrix, estimate_similarity, warp_back, warp_face
from facecache.analysis.arcface import ArcFaceRecognizer, l2_normalised
from facecache.analysis.errors import FrameError, ModelContractError, ModelRunError
from facecache.analysis.face_mesh import FaceMeshLandmarker
from facecache.analysis.facenet import FaceNetRecognizer
from facecache.analysis.fan68 import Fan68Landmarker, face_angle
from facecache.analysis.mtcnn import MtcnnDetector, MtcnnSettings
from facecache.analysis.pose import head_pose
from facecache.analysis.results import Detection, HeadPose, Landmarks68
from facecache.analysis.scrfd import ScrfdDetector
from facecache.analysis.yoloface import YoloFaceDetector

__all__ = [
    "TEMPLATES",
    "ArcFaceRecognizer",
    "Detection",
    "FaceMeshLandmarker",
    "FaceNetRecognizer",
    "Fan68Landmarker",
    "FrameError",
    "HeadPose",
    "Landmarks68",
    "ModelContractError",
    "ModelRunError",
    "MtcnnDetector",
    "MtcnnSettings",
    "ScrfdDetector",
    "YoloFaceDetector",
    "alignment_matrix",
    "estimate_similarity",
    "face_angle",
    "head_pose",
    "l2_normalised",
    "warp_back",
    "warp_face",
]
