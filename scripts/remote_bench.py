#!/usr/bin/env python3
"""What the remote cache tier saves a node: one 64-frame 1080p segment analysed (the default models: detect,
landmarks, embeddings) against the same segment fetched from a SeaweedFS bucket on 127.0.0.1 by a node with an
empty cache folder, and read from a warm local cache; the bytes uploaded per frame. Prints one JSON object.

    python scripts/remote_bench.py [--frames 64] [--repeat 3] [--latency-ms 0 20 100]

Latency is added by a relay on 127.0.0.1 in front of the server, which holds every chunk of bytes it passes
on for half the given time each way (this machine's kernel has no `netem`). On Linux the whole run (server,
relay, nodes) happens in a network namespace of its own (`unshare --net`, its loopback brought up), so it
touches no connection of the machine; where that cannot be made it runs on the machine's loopback and says so
(`"network_namespace": false`).

Needs the remote extra, the test extra's `weed` binary and the default models (`facecache models install
default`). Figures: docs/benchmarks.md#the-remote-tier-scriptsremote_benchpy."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "remote"))
from seaweedfs import BUCKET, SeaweedS3, free_port  # noqa: E402


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


def start_relay(target_port: int, latency_s: float) -> int:
    """A TCP relay on 127.0.0.1 to the server that delays each chunk by latency_s / 2 in each direction
    (a request and its answer: one round trip of latency_s); returns its port. Runs in a daemon thread."""
    port = free_port()

    async def pipe(reader, writer):
        try:
            while data := await reader.read(65536):
                await asyncio.sleep(latency_s / 2)
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(client_reader, client_writer):
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    async def serve(ready: threading.Event):
        server = await asyncio.start_server(handle, "127.0.0.1", port)
        ready.set()
        await server.serve_forever()

    ready = threading.Event()
    threading.Thread(target=lambda: asyncio.run(serve(ready)), daemon=True).start()
    ready.wait(30)
    return port


IN_NAMESPACE = "FACECACHE_BENCH_NETNS"  # set in the run started inside its own network namespace


def rerun_in_own_network_namespace() -> None:
    """Run this script again inside a new network namespace with its loopback up and exit with that run; return
    where no namespace can be made (not Linux, no `unshare` or `ip`, not allowed) or this is that run."""
    if os.environ.get(IN_NAMESPACE) or not sys.platform.startswith("linux") or not shutil.which("unshare"):
        return
    enter = ["unshare", "--net", "--map-root-user", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    if subprocess.run([*enter, "true"], capture_output=True).returncode != 0:
        return
    rerun = subprocess.run([*enter, sys.executable, *sys.argv], env={**os.environ, IN_NAMESPACE: "1"})
    raise SystemExit(rerun.returncode)


def main() -> None:
    rerun_in_own_network_namespace()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0])
    args = parser.parse_args()
    from facecache.media.sample_clip import write_sample_clip
    from facecache.samples import sample_image

    runs: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="remote-bench-") as folder:
        work = Path(folder)
        clip = write_sample_clip(sample_image("grace_hopper"), work / "clip.mp4", frames=args.frames)
        photo = sample_image("astronaut")
        server = SeaweedS3(work / "server", free_port())
        (work / "server").mkdir()
        try:
            server.start()
            os.environ.update(server.environment())
            for latency in args.latency_ms:
                os.environ["AWS_ENDPOINT_URL"] = (f"http://127.0.0.1:{start_relay(server.port, latency / 1000)}"
                                                  if latency else server.endpoint)
                times = runs[f"{latency:g} ms"] = {"compute_and_upload": [], "fetch_from_remote": [], "warm_local": []}
                for attempt in range(args.repeat):
                    url = f"s3://{BUCKET}/latency-{latency:g}-run-{attempt}"
                    run = work / f"{latency:g}-{attempt}"
                    seconds, uploaded, detects = analyse(clip, run / "cold", url, warm_up=photo)
                    assert detects > 0
                    times["compute_and_upload"].append(seconds)
                    seconds, fetched, detects = analyse(clip, run / "fresh", url)
                    assert detects == 0 and fetched["packs_fetched"] > 0, fetched
                    times["fetch_from_remote"].append(seconds)
                    times["warm_local"].append(analyse(clip, run / "fresh", None)[0])
        finally:
            server.stop()
    print(json.dumps({"frames": args.frames, "size": "1920x1080",
                      "network_namespace": bool(os.environ.get(IN_NAMESPACE)),
                      "seconds_median": {latency: {name: round(statistics.median(values), 3)
                                                   for name, values in times.items()}
                                         for latency, times in runs.items()},
                      "bytes_uploaded_per_frame": round(uploaded["bytes_uploaded"] / args.frames),
                      "packs_uploaded": uploaded["packs_uploaded"],
                      "bytes_fetched_per_frame": round(fetched["bytes_fetched"] / args.frames)}, indent=1))


if __name__ == "__main__":
    main()
