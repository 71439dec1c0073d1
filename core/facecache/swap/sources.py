"""Source sets: the face images whose identity goes onto the target.

Each source image is analysed through the cache like any frame. Its largest
face is used unless another is chosen (`face_rank`: 0 = largest, 1 = the next
...). With a recognizer, and when the caller needs them (a model swapper, the
reference selector; not the classic swapper), the set's raw embeddings are
averaged. The set's digest names exactly which faces of which pixels, analysed
how, so it is a stable part of the swap stage's cache key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from facecache.analysis.analyzer import FaceAnalyzer
from facecache.errors import FaceCacheError
from facecache.fingerprint import bytes_digest
from facecache.media.reader import MediaReader
from facecache.store.records import Face
from facecache.swap.embedding import average_embedding


class SourceError(FaceCacheError):
    """A source image cannot serve as a source face."""


@dataclass
class SourceFace:
    path: Path
    image: np.ndarray
    face: Face
    fingerprint: str


@dataclass
class SourceSet:
    faces: list[SourceFace]
    digest: str
    embedding: np.ndarray | None  # averaged raw embedding, when a recognizer is installed
    recognizer: str | None = None  # the model that made the embeddings

    @classmethod
    def load(cls, paths: list[Path], analyzer: FaceAnalyzer, face_rank: int = 0,
             embeddings: bool = True) -> "SourceSet":
        """The faces of `paths` through the cache; `embeddings=False` skips the recognizer (a
        later load that needs them computes that stage alone)."""
        if not paths:
            raise SourceError("no source face given: pass at least one --source IMAGE")
        faces = []
        for path in paths:
            with MediaReader(path) as reader:
                if not reader.info.is_still:
                    raise SourceError(f"source {path} is a video: use a still image (PNG or JPEG) of the face")
                ((_, image),) = reader.frames([0])
            record = analyzer.analyze_frame(image, analyzer.stages(embeddings=embeddings))
            if not record.faces:
                raise SourceError(f"no face found in the source image {path}: choose a photo where the face "
                                  "is clearly visible and at least about 40 pixels wide")
            ranked = sorted(record.faces, key=lambda f: -float((f.box[2] - f.box[0]) * (f.box[3] - f.box[1])))
            if face_rank >= len(ranked):
                raise SourceError(f"the source image {path} has {len(ranked)} face(s); "
                                  f"face rank {face_rank} does not exist (0 = largest)")
            faces.append(SourceFace(Path(path), image, ranked[face_rank], record.fingerprint))
        found = [s.face.embedding for s in faces if s.face.embedding is not None]
        embedding = average_embedding(found) if embeddings and len(found) == len(faces) else None
        digest = bytes_digest("|".join([analyzer.namespace.key, str(face_rank),
                                        *(s.fingerprint for s in faces)]).encode())
        return cls(faces, digest, embedding, analyzer.models.settings.get("recognizer"))

    @property
    def has_embeddings(self) -> bool:
        return self.embedding is not None

