"""One node's analysis of a clip through its own local cache and the shared remote tier, as a separate
program (a machine of its own, as far as the cache can tell).

    python remote_worker.py REPORT.json CACHE CLIP MODELS REMOTE_URL read-write|read-only [KILL_PGID]

The AWS configuration comes from the environment. With KILL_PGID, that process group (the S3 server)
is killed once the first 64-frame segment is analysed: the rest of the job runs without the remote.
Writes REPORT.json: model runs, the remote tier's counters, the hits by tier and every warning the engine logged.
"""

import json
import logging
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nas"))
from nas_worker import Warnings  # noqa: E402  (the NAS tests' worker: every warning the engine logs)


def main(report, cache, clip, models, remote_url, mode, kill_pgid=None):
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import build_model_set
    from facecache.models.runtime import SessionFactory
    from facecache.models.store import ModelStore
    from facecache.store.cache import FaceCache
    from facecache.store.remote import remote_from

    warnings = Warnings()
    logging.getLogger("facecache").addHandler(warnings)
    remote = remote_from(remote_url, read_only=mode == "read-only")
    analyzer = FaceAnalyzer(FaceCache(cache, remote=remote),
                            build_model_set(ModelStore(Path(models)), SessionFactory("cpu", threads=1)))

    killed = []

    def progress(done, total, detail=""):
        if not killed and remote.counters.packs_uploaded:  # the first segment is in the bucket
            os.killpg(int(kill_pgid), signal.SIGKILL)
            killed.append(done)

    frames = analyzer.analyze_media(Path(clip), progress=progress if kill_pgid else None)
    analyzer.cache.keep_hits()  # as a job's end does
    Path(report).write_text(json.dumps({
        "frames": len(frames), "detect": analyzer.inferences.detect,
        "faces": [len(frame.record.faces) for frame in frames],
        "remote": remote.counters.as_dict(), "tier_hits": analyzer.cache.hits.as_dict(),
        "warnings": warnings.messages, "killed_at": killed,
    }))


if __name__ == "__main__":
    main(*sys.argv[1:])
