#!/usr/bin/env python3
"""What the remote cache tier saves a node: one 64-frame 1080p segment analysed (the default models: detect,
landmarks, embeddings) against the same segment fetched from a SeaweedFS bucket on 127.0.0.1 by a node with an
empty cache folder, and read from a warm local cache; the bytes uploaded per frame. Prints one JSON object.

    python scripts/remote_bench.py [--frames 64] [--repeat 3]

Needs the remote extra, the test extra's `weed` binary and the default models (`facecache models install
default`). Figures: docs/benchmarks.md#the-remote-tier-scriptsremote_benchpy."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "remote"))
from seaweedfs import BUCKET, SeaweedS3, client, free_port  # noqa: E402


def analyse(clip: Path, cache_dir: Path, remote_url: str | None, warm_up: Path | None = None) -> tuple[float, dict, int]:
    """Seconds to analyse the clip with this cache folder, the remote tier's counters and the model runs
    (`warm_up`: a photo analysed first, so that loading the models is not counted)."""
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import build_model_set
    from facecache.locations import resolve_models_dir
    from facecache.models.runtime import SessionFactory
    from facecache.models.store import ModelStore
    from facecache.store.cache import FaceCache
    from facecache.store.remote import remote_from

    remote = remote_from(remote_url) if remote_url else None
    analyzer = FaceAnalyzer(FaceCache(cache_dir, remote=remote),
                            build_model_set(ModelStore(resolve_models_dir()), SessionFactory("cpu")))
    if warm_up is not None:
        analyzer.analyze_media(warm_up)
    detects, before = analyzer.inferences.detect, (remote.counters.as_dict() if remote else {})
    start = time.perf_counter()
    analyzer.analyze_media(clip)
    seconds = time.perf_counter() - start
    counters = {key: value - before[key] for key, value in remote.counters.as_dict().items()} if remote else {}
    return seconds, counters, analyzer.inferences.detect - detects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from facecache.media.sample_clip import write_sample_clip
    from facecache.samples import sample_image

    runs: dict[str, list[float]] = {"compute_and_upload": [], "fetch_from_remote": [], "warm_local": []}
    with tempfile.TemporaryDirectory(prefix="remote-bench-") as folder:
        work = Path(folder)
        clip = write_sample_clip(sample_image("grace_hopper"), work / "clip.mp4", frames=args.frames)
        photo = sample_image("astronaut")
        server = SeaweedS3(work / "server", free_port())
        (work / "server").mkdir()
        server.start()
        try:
            client(server).create_bucket(Bucket=BUCKET)
            os.environ.update(server.environment())
            for attempt in range(args.repeat):
                url = f"s3://{BUCKET}/run-{attempt}"
                seconds, uploaded, detects = analyse(clip, work / f"cold-{attempt}", url, warm_up=photo)
                assert detects > 0
                runs["compute_and_upload"].append(seconds)
                seconds, fetched, detects = analyse(clip, work / f"fresh-{attempt}", url)
                assert detects == 0 and fetched["packs_fetched"] > 0, fetched
                runs["fetch_from_remote"].append(seconds)
                runs["warm_local"].append(analyse(clip, work / f"fresh-{attempt}", None)[0])
        finally:
            server.stop()
    print(json.dumps({"frames": args.frames, "size": "1920x1080",
                      "seconds_median": {name: round(statistics.median(values), 3) for name, values in runs.items()},
                      "bytes_uploaded_per_frame": round(uploaded["bytes_uploaded"] / args.frames),
                      "packs_uploaded": uploaded["packs_uploaded"],
                      "bytes_fetched_per_frame": round(fetched["bytes_fetched"] / args.frames)}, indent=1))


if __name__ == "__main__":
    main()
