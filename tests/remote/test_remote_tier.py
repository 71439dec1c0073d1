"""The remote cache tier against a real S3 server (SeaweedFS on 127.0.0.1): two nodes with their own
local caches and one bucket, the server killed mid-job, a corrupt object, bad credentials, a missing
bucket, a read-only render node. Each node is a separate program (remote_worker.py); model runs are
counted as the NAS tests count them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from seaweedfs import BUCKET, client
from facecache.pipeline import Settings, SettingsError
from facecache.store.cache import FaceCache
from facecache.store.remote import RemoteURL

pytestmark = pytest.mark.index  # real weights and portraits come from the package index

FRAMES = 128  # two 64-frame segments
WORKER = Path(__file__).with_name("remote_worker.py")
URL = f"s3://{BUCKET}/studio/cache"


@pytest.fixture(scope="module")
def clip(tmp_path_factory, portraits) -> Path:
    sys.path.insert(0, str(Path(__file__).parents[1] / "jobs"))
    from test_video_jobs import write_clip

    return write_clip(tmp_path_factory.mktemp("remote-clip") / "clip.mp4", portraits["astronaut"], FRAMES)


def start_node(tmp: Path, name: str, server, clip: Path, models: Path, url: str = URL, kill: bool = False,
               mode: str = "read-write", **credentials) -> tuple[subprocess.Popen, Path]:
    """One node: its own cache folder and its own copy of the clip (the same bytes, as on another machine)."""
    home = tmp / name
    home.mkdir()
    local_clip = home / clip.name
    shutil.copyfile(clip, local_clip)
    env = {**os.environ, **server.environment(**credentials)}
    command = [sys.executable, str(WORKER), str(home / "report.json"), str(home / "cache"), str(local_clip),
               str(models), url, mode]
    if kill:
        command.append(str(server.process.pid))
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), home


def finish_node(process: subprocess.Popen, home: Path) -> dict:
    _out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    result = json.loads((home / "report.json").read_text())
    result["cache"] = home / "cache"
    result["stderr"] = err
    return result


def run_node(*args, **kwargs) -> dict:
    return finish_node(*start_node(*args, **kwargs))


def bucket_packs(server) -> dict[str, int]:
    listing = client(server).list_objects_v2(Bucket=BUCKET, Prefix="studio/cache/ns/")
    return {item["Key"]: item["Size"] for item in listing.get("Contents", [])}


def test_a_second_node_runs_no_model_on_the_first_nodes_frames(seaweed, clip, models_dir, tmp_path):
    first = run_node(tmp_path, "first", seaweed, clip, models_dir)
    assert first["frames"] == FRAMES and first["detect"] == FRAMES
    assert first["remote"]["packs_uploaded"] == 2 and first["warnings"] == []
    uploaded = bucket_packs(seaweed)
    assert len(uploaded) == 2 and all(key.endswith(".fcp") for key in uploaded)

    second = run_node(tmp_path, "second", seaweed, clip, models_dir)
    assert second["detect"] == 0 and second["faces"] == first["faces"]
    assert second["remote"]["packs_fetched"] == 2 and second["remote"]["packs_uploaded"] == 0
    assert second["warnings"] == []
    assert FaceCache(second["cache"], create=False).stats().packs == 2  # the remote hits are kept locally
    assert second["tier_hits"] == {"local": 0, "remote": FRAMES}
    assert FaceCache(second["cache"], create=False).stats().hits.as_dict() == {"local": 0, "remote": FRAMES}


def test_two_nodes_at_once_analyse_each_frame_once_between_them(seaweed, clip, models_dir, tmp_path):
    """Their segment claims are taken in the bucket (conditional PUTs, which SeaweedFS honours)."""
    nodes = [start_node(tmp_path, name, seaweed, clip, models_dir) for name in ("a", "b")]
    reports = [finish_node(*node) for node in nodes]
    assert sum(report["detect"] for report in reports) == FRAMES, [r["detect"] for r in reports]
    assert reports[0]["faces"] == reports[1]["faces"]
    assert all(report["warnings"] == [] for report in reports)


def test_a_read_only_node_reads_and_never_uploads(seaweed, clip, models_dir, tmp_path):
    node = run_node(tmp_path, "render-node", seaweed, clip, models_dir, mode="read-only")
    assert node["detect"] == FRAMES and node["remote"]["packs_uploaded"] == 0 and bucket_packs(seaweed) == {}


def test_the_server_killed_mid_job_leaves_one_warning_and_the_job_completes(seaweed, clip, models_dir, tmp_path):
    node = run_node(tmp_path, "node", seaweed, clip, models_dir, kill=True)
    assert node["killed_at"], "the server was never killed: the test proves nothing"
    assert node["frames"] == FRAMES and node["detect"] == FRAMES
    assert len(node["warnings"]) == 1, node["warnings"]
    assert "cannot be reached" in node["warnings"][0] and "local cache only" in node["warnings"][0]
    assert FaceCache(node["cache"], create=False).stats().entries == FRAMES  # every frame stored locally


def test_a_corrupt_remote_object_is_never_served_and_is_computed_again(seaweed, clip, models_dir, tmp_path):
    first = run_node(tmp_path, "first", seaweed, clip, models_dir)
    s3 = client(seaweed)
    spoiled = sorted(bucket_packs(seaweed))[0]
    whole = s3.get_object(Bucket=BUCKET, Key=spoiled)["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=spoiled, Body=whole[: len(whole) // 2])  # truncated, under its digest's name

    second = run_node(tmp_path, "second", seaweed, clip, models_dir)
    assert second["detect"] == 64  # the spoiled segment only
    assert second["faces"] == first["faces"]
    assert second["remote"]["packs_set_aside"] == 1
    assert [message for message in second["warnings"] if "set aside the remote pack" in message] == second["warnings"]
    name = spoiled.rsplit("/", 1)[1]
    kept = second["cache"] / "quarantine" / f"remote.{name}"
    assert kept.read_bytes() == whole[: len(whole) // 2] and kept.stat().st_mode & 0o007 == 0  # never world-readable
    assert FaceCache(second["cache"]).verify().bad == []  # only whole packs were kept locally
    # The spoiled object was removed; the segment computed again is the same pack, uploaded whole.
    assert len(bucket_packs(seaweed)) == 2
    assert s3.get_object(Bucket=BUCKET, Key=spoiled)["Body"].read() == whole


@pytest.mark.parametrize("case, fix", [
    ("bad secret", "refused the AWS credentials"),
    ("missing bucket", "does not exist: create it"),
])
def test_a_bucket_problem_is_one_line_that_says_what_to_fix(seaweed, clip, models_dir, tmp_path, case, fix):
    secret = "not-the-secret-at-all"
    if case == "bad secret":
        node = run_node(tmp_path, "node", seaweed, clip, models_dir, secret_key=secret)
    else:
        node = run_node(tmp_path, "node", seaweed, clip, models_dir, url="s3://no-such-bucket/cache")
    assert node["detect"] == FRAMES and node["frames"] == FRAMES  # the job went on locally
    assert len(node["warnings"]) == 1 and fix in node["warnings"][0], node["warnings"]
    assert "\n" not in node["warnings"][0]
    for text in (node["stderr"], json.dumps(node["warnings"])):
        assert secret not in text and "facecache-test-secret" not in text


def test_remote_urls_are_checked():
    assert RemoteURL.parse("s3://bucket-1/a/b/") == RemoteURL("bucket-1", "a/b")
    assert RemoteURL.parse("s3://bucket-1").key("ns", "x") == "ns/x"
    for bad in ("bucket/prefix", "http://bucket/x", "s3://B/x", "s3://"):
        with pytest.raises(SettingsError, match="s3://bucket/prefix"):
            Settings(remote_cache=bad)


def facecache(server, *args, env: dict | None = None) -> dict:
    """`facecache ARGS --json` with the server's AWS configuration; its last line, parsed."""
    done = subprocess.run([sys.executable, "-m", "facecache", *args, "--json"], capture_output=True, text=True,
                          env={**os.environ, **server.environment(), **(env or {})}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_command_line_takes_the_remote_tier_from_its_option_or_the_environment(seaweed, clip, models_dir,
                                                                                    tmp_path):
    common = ["--models-dir", str(models_dir), "--providers", "cpu"]
    first = facecache(seaweed, "analyze", str(clip), "--cache-dir", str(tmp_path / "a"), "--remote-cache", URL,
                      *common)
    assert first["inferences"]["detect"] == FRAMES and first["remote"]["packs_uploaded"] == 2
    # a render node: the remote tier from FACECACHE_REMOTE_CACHE, read-only
    second = facecache(seaweed, "analyze", str(clip), "--cache-dir", str(tmp_path / "b"), "--remote-read-only",
                       *common, env={"FACECACHE_REMOTE_CACHE": URL})
    assert second["inferences"]["detect"] == 0 and second["remote"]["packs_fetched"] == 2
    assert second["remote"]["packs_uploaded"] == 0
    stats = facecache(seaweed, "cache", "stats", "--cache-dir", str(tmp_path / "b"), "--remote-cache", URL)
    assert stats["packs"] == 2 and stats["remote"]["packs"] == 2 and stats["remote"]["reachable"]
