#!/usr/bin/env python3
"""Which S3 client the remote cache tier uses: each candidate that is installed (botocore, minio, obstore)
uploads, lists and downloads one group's worth of packs on a SeaweedFS server on 127.0.0.1 (the tests' server,
tests/remote/seaweedfs.py), and its import time is taken in a fresh interpreter. Prints one JSON object.

    python scripts/s3_client_bench.py [--objects 64] [--sizes 16384,262144,4194304] [--repeat 3]

The figures and the choice: docs/benchmarks.md#the-remote-tiers-s3-client."""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "remote"))
from seaweedfs import ACCESS_KEY, SECRET_KEY, SeaweedS3, client, free_port  # noqa: E402

BUCKET = "client-bench"
IMPORTS = {"botocore": "import botocore.session", "minio": "import minio", "obstore": "import obstore.store"}


def botocore_ops(server):
    s3 = client(server)
    return (lambda key, data: s3.put_object(Bucket=BUCKET, Key=key, Body=data, IfNoneMatch="*"),
            lambda prefix: [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])],
            lambda key: s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def minio_ops(server):
    from minio import Minio

    s3 = Minio(f"127.0.0.1:{server.port}", access_key=ACCESS_KEY, secret_key=SECRET_KEY, secure=False)

    def get(key):
        response = s3.get_object(BUCKET, key)
        try:
            return response.read()
        finally:
            response.close()
            response.release_conn()

    return (lambda key, data: s3.put_object(BUCKET, key, io.BytesIO(data), len(data)),  # no conditional put
            lambda prefix: [o.object_name for o in s3.list_objects(BUCKET, prefix=prefix, recursive=True)], get)


def obstore_ops(server):
    import obstore
    from obstore.store import S3Store

    s3 = S3Store(BUCKET, endpoint=server.endpoint, access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY,
                 region="us-east-1", client_options={"allow_http": True})
    return (lambda key, data: obstore.put(s3, key, data, mode="create"),
            lambda prefix: [o["path"] for batch in obstore.list(s3, prefix) for o in batch],
            lambda key: bytes(obstore.get(s3, key).bytes()))


CLIENTS = {"botocore": botocore_ops, "minio": minio_ops, "obstore": obstore_ops}


def measure(ops, objects: int, size: int, repeat: int, run: str) -> dict:
    put, listing, get = ops
    data = os.urandom(size)
    times = {"put": [], "list": [], "get": []}
    for attempt in range(repeat):
        prefix = f"{run}/{size}/{attempt}/"
        keys = [f"{prefix}{n:032x}.fcp" for n in range(objects)]
        start = time.perf_counter()
        for key in keys:
            put(key, data)
        times["put"].append(time.perf_counter() - start)
        start = time.perf_counter()
        found = listing(prefix)
        times["list"].append(time.perf_counter() - start)
        assert len(found) == objects, (len(found), objects)
        start = time.perf_counter()
        for key in keys:
            assert get(key) == data
        times["get"].append(time.perf_counter() - start)
    return {step: round(statistics.median(values) * 1000, 1) for step, values in times.items()}


def import_ms(statement: str) -> float | None:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return round(float(done.stdout) * 1000, 1) if done.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=64)
    parser.add_argument("--sizes", default="16384,262144,4194304")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="s3-client-bench-") as folder:
        server = SeaweedS3(Path(folder), free_port())
        try:
            server.start(BUCKET)
            for name, make in CLIENTS.items():
                try:
                    ops = make(server)
                except ImportError:
                    results[name] = "not installed"
                    continue
                results[name] = {"import_ms": import_ms(IMPORTS[name]), "ms_per_group": {
                    str(size): measure(ops, args.objects, int(size), args.repeat, name)
                    for size in args.sizes.split(",")}}
        finally:
            server.stop()
    print(json.dumps({"objects_per_group": args.objects, "clients": results}, indent=1))


if __name__ == "__main__":
    main()
