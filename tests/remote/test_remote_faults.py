"""The remote tier's faults that need no running server (a missing client, a closed port), and the server
behaviour its claims rest on: SeaweedFS honours `If-None-Match: *` when PUTs race."""

from __future__ import annotations

import logging
import sys
import threading

import pytest

from facecache.store.remote import RemoteTier, RemoteURL
from seaweedfs import BUCKET, client, free_port

NAMESPACE, GROUP = "0" * 32, "1" * 32


def warnings_of(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


def test_without_botocore_the_tier_is_off_with_one_line(monkeypatch, caplog):
    for module in ("botocore", "botocore.exceptions", "botocore.session", "botocore.config"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    tier = RemoteTier(RemoteURL.parse("s3://studio-cache/faces"))
    assert tier.list_group(NAMESPACE, GROUP) == [] and tier.list_group(NAMESPACE, GROUP) == []
    tier.upload(NAMESPACE, GROUP, "2" * 32, b"pack")
    assert not tier.usable and tier.counters.packs_uploaded == 0
    assert len(warnings_of(caplog)) == 1 and "pip install 'facecache[remote]'" in warnings_of(caplog)[0]


def test_a_closed_port_turns_the_tier_off_with_one_warning_the_summary_says(monkeypatch, caplog, tmp_path):
    """The warning goes to the log (the command line's stderr) and into the job's summary, the only words of
    the engine an editor in Blender sees."""
    pytest.importorskip("botocore")
    from facecache import protocol
    from facecache.pipeline import Settings, end_of_job, open_cache

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    for name, value in (("AWS_ACCESS_KEY_ID", "key"), ("AWS_SECRET_ACCESS_KEY", "secret"),
                        ("AWS_REGION", "us-east-1"), ("AWS_CONFIG_FILE", "/dev/null"),
                        ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")):
        monkeypatch.setenv(name, value)
    cache = open_cache(Settings(cache_dir=str(tmp_path / "cache"), remote_cache="s3://studio-cache/faces"))
    tier = cache.remote
    assert tier.list_group(NAMESPACE, GROUP) == []
    assert tier.fetch(NAMESPACE, GROUP, "2" * 32) is None
    tier.upload(NAMESPACE, GROUP, "2" * 32, b"pack")
    assert not tier.usable
    assert len(warnings_of(caplog)) == 1 and "cannot be reached" in warnings_of(caplog)[0]
    summary = end_of_job(cache)
    assert summary[protocol.CACHE_WARNING] == warnings_of(caplog)[0]
    assert summary[protocol.REMOTE]["packs_uploaded"] == 0


def test_seaweedfs_gives_a_conditional_put_to_one_of_four_racing_writers(seaweed):
    from botocore.exceptions import ClientError

    clients = [client(seaweed) for _ in range(4)]
    for race in range(20):
        winners, losers = [], []
        start = threading.Barrier(len(clients))

        def put(number: int) -> None:
            start.wait()
            try:
                clients[number].put_object(Bucket=BUCKET, Key=f"race/{race}", Body=b"%d" % number, IfNoneMatch="*")
                winners.append(number)
            except ClientError as exc:
                losers.append(exc.response["Error"]["Code"])

        threads = [threading.Thread(target=put, args=(n,)) for n in range(len(clients))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(winners) == 1 and losers == ["PreconditionFailed"] * 3, (winners, losers)
        body = clients[0].get_object(Bucket=BUCKET, Key=f"race/{race}")["Body"].read()
        assert body == b"%d" % winners[0]


def test_only_the_command_line_reads_the_variable(monkeypatch, tmp_path):
    """FACECACHE_REMOTE_CACHE fills the command line's --remote-cache; a job's settings without a remote tier
    (the extension's engine session) reach no bucket whatever the environment says."""
    from facecache.cli import build_parser
    from facecache.pipeline import Settings, open_cache

    monkeypatch.setenv("FACECACHE_REMOTE_CACHE", "s3://studio-cache/faces")
    monkeypatch.setenv("FACECACHE_DIR", str(tmp_path / "cli-cache"))
    assert open_cache(Settings(cache_dir=str(tmp_path / "cache"))).remote is None
    args = build_parser().parse_args(["analyze", "clip.mp4"])
    assert args.remote_cache == "s3://studio-cache/faces"
    assert str(open_cache(Settings.from_args(args)).remote.url) == "s3://studio-cache/faces"


def test_a_runs_report_says_what_came_from_the_remote_tier():
    from facecache.jobs.run_summary import describe_run
    from facecache.store.remote import RemoteCounters

    summary = {"frames": 128, "analysis_cache": {"hits": 128}, "inferences": {"detect": 0}, "seconds": 0.5,
               "remote": RemoteCounters(packs_fetched=2, bytes_fetched=325_000).as_dict()}
    assert describe_run(summary) == ("128 frames; analyses from cache 128; model runs: detect 0; "
                                     "remote cache: 2 packs fetched, 0 uploaded; 0.50 s")
    summary["remote"]["packs_set_aside"] = 1
    assert "remote cache: 2 packs fetched, 0 uploaded, 1 set aside;" in describe_run(summary)


def test_a_profile_that_does_not_exist_is_one_line(monkeypatch, caplog):
    pytest.importorskip("botocore")
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    tier = RemoteTier(RemoteURL.parse("s3://studio-cache/faces"))
    assert tier.list_group(NAMESPACE, GROUP) == [] and not tier.usable
    assert len(warnings_of(caplog)) == 1 and "no-such-profile" in warnings_of(caplog)[0]


def test_a_dead_nodes_claim_is_taken_over_by_one_node(seaweed, monkeypatch):
    """The bucket's claims (remote_claims.py): a live claim is respected, a stale one is taken over by the
    node that creates its takeover marker, and a second contender for that same stale claim is refused."""
    import time

    import msgpack

    from facecache.store.remote_claims import claim_key, try_remote_claim

    for name, value in seaweed.environment().items():
        monkeypatch.setenv(name, value)
    keys = ("a" * 32, "b" * 32)
    tiers = [RemoteTier(RemoteURL.parse(f"s3://{BUCKET}/claims-test")) for _ in range(3)]
    held = try_remote_claim(tiers[0], keys, ttl=60)
    assert held is not None and held.holds
    assert try_remote_claim(tiers[1], keys, ttl=60) is None  # live: another node waits
    key = claim_key(tiers[0], keys)
    s3 = client(seaweed)
    s3.put_object(Bucket=BUCKET, Key=key, Body=msgpack.packb({"owner": "dead-node", "expires": time.time() - 1}))
    stale_etag = s3.head_object(Bucket=BUCKET, Key=key)["ETag"].strip('"')
    s3.put_object(Bucket=BUCKET, Key=f"{key}.takeover-{stale_etag}", Body=b"someone-else", IfNoneMatch="*")
    assert try_remote_claim(tiers[1], keys, ttl=60) is None  # that stale claim is being taken over already
    s3.put_object(Bucket=BUCKET, Key=key, Body=msgpack.packb({"owner": "dead-node-2", "expires": time.time() - 1}))
    taken = try_remote_claim(tiers[2], keys, ttl=60)
    assert taken is not None and taken.holds and taken.renew()
    assert not held.renew()  # the first holder's claim is gone: it learns it lost it
    taken.release()
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=key).get("KeyCount") == 2  # released: only the two markers
