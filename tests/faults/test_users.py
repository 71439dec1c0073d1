"""Two unprivileged users of one team group, and one outside it (switched to by the test as root,
as `setpriv` does: see fault_helpers.cli), sharing what holds faces: the cache, the outputs, the
output manifest's journal and the swapped frames.

Under a group-writable team folder everything is group-shared (folders setgid 2770, files 0660), so
Bob updates Alice's outputs and prunes her cache entries; elsewhere it is private (0700/0600)
whatever the umask; never world-readable. A cache Bob can read but not write still serves him.
"""

import json
import os
import stat

import pytest

from fault_helpers import ALICE, BOB, EVE, TEAM_GID, cli, require_root, setpriv, tree_modes

pytestmark = pytest.mark.index  # real MTCNN weights and portraits


def swap(media, out, cache, models_dir, user, *extra, umask=0o022):
    return cli("swap", "--source", media["source"], "--target", media["clip"], "--out", out, "--cache-dir", cache,
               "--models-dir", models_dir, "--json", *extra, uid=user, gid=TEAM_GID if user != EVE else EVE,
               groups=(TEAM_GID,) if user != EVE else (), umask=umask)


def assert_rule(folder, team: bool):
    for name, mode in tree_modes(folder).items():
        assert not mode & stat.S_IRWXO, f"{name} is open to everyone: {stat.filemode(mode)}"
        if stat.S_ISDIR(mode):
            assert stat.S_IMODE(mode) == (0o2770 if team else 0o700), (name, stat.filemode(mode))
        else:
            assert stat.S_IMODE(mode) == (0o660 if team else 0o600), (name, stat.filemode(mode))


def test_a_team_folder_is_shared_by_its_group_and_closed_to_everyone_else(shared_dir, models_dir, fault_media):
    require_root()
    team = shared_dir / "team"
    team.mkdir()
    os.chown(team, 0, TEAM_GID)
    os.chmod(team, 0o2775)  # a team folder on the NAS: group-writable, setgid
    cache, out = team / "cache", team / "renders"

    alice = swap(fault_media, out, cache, models_dir, ALICE, umask=0o077)  # her umask does not matter
    assert alice.code == 0, alice.err
    assert json.loads(alice.out)["written"] == 8
    bob = swap(fault_media, out, cache, models_dir, BOB, "--opacity", "0.5", umask=0o002)
    assert bob.code == 0, bob.err
    assert (json.loads(bob.out)["written"], json.loads(bob.out)["inferences"]["detect"]) == (8, 0)  # her analyses
    owners = {os.stat(p).st_uid for p in (out / "clip").glob("*.png")}
    assert owners == {BOB}  # he replaced her outputs
    assert_rule(cache, team=True)
    assert_rule(out, team=True)
    assert {os.stat(p).st_gid for p in [*cache.rglob("*"), *out.rglob("*")]} == {TEAM_GID}

    pruned = cli("cache", "prune", "--cache-dir", cache, "--max-size", "0", "--stale", "0s", "--json",
                 uid=BOB, gid=TEAM_GID, groups=(TEAM_GID,))
    assert pruned.code == 0, pruned.err  # the grace period keeps young packs, but nothing is refused
    output, pack = next((out / "clip").glob("*.png")), next(cache.rglob("*.fcp"))
    assert os.stat(pack).st_uid == ALICE
    assert setpriv(BOB, TEAM_GID, (TEAM_GID,), "rm", str(pack)).returncode == 0  # he may remove her pack
    assert setpriv(EVE, EVE, (), "cat", str(output)).returncode != 0  # outside the group: not even readable
    assert setpriv(EVE, EVE, (), "ls", str(cache)).returncode != 0

    eve_home = shared_dir / "eve"
    eve_home.mkdir()
    os.chown(eve_home, EVE, EVE)
    eve = swap(fault_media, eve_home / "out", cache, models_dir, EVE)
    assert eve.code == 3, eve.err  # not in the group: permission denied, one line, no traceback
    (line,) = eve.err.splitlines()
    assert "permission denied" in line and str(cache) in line and "Traceback" not in eve.err


def test_elsewhere_everything_is_private_whatever_the_umask(shared_dir, models_dir, fault_media):
    require_root()
    home = shared_dir / "alice"
    home.mkdir()
    os.chown(home, ALICE, TEAM_GID)
    os.chmod(home, 0o755)  # her own folder: not a team folder
    result = swap(fault_media, home / "renders", home / "cache", models_dir, ALICE, umask=0o000)
    assert result.code == 0, result.err
    assert_rule(home / "cache", team=False)
    assert_rule(home / "renders", team=False)


def test_loose_folders_are_reported_and_tightened_where_ours(shared_dir, models_dir, fault_media):
    require_root()
    home = shared_dir / "alice"
    home.mkdir()
    os.chown(home, ALICE, ALICE)
    cache = home / "cache"
    assert swap(fault_media, home / "renders", cache, models_dir, ALICE).code == 0
    packs = list(cache.rglob("*.fcp"))
    for path in [p for p in cache.rglob("*") if p.parent != cache]:  # as an old version or a loose umask left them
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    theirs = cache / "ns" / "left-by-root"
    theirs.mkdir(mode=0o755)

    stats = cli("cache", "stats", "--cache-dir", cache, "--json", uid=ALICE, gid=ALICE)
    loose = json.loads(stats.out)["loose_permissions"]
    assert loose["world_readable"] >= len(packs) + 1 and loose["tightened"] == 0
    verify = cli("cache", "verify", "--cache-dir", cache, uid=ALICE, gid=ALICE)
    assert verify.code == 0, verify.err
    assert "tightened" in verify.out and "not yours to change" in verify.out and "left-by-root" in verify.out
    after = json.loads(cli("cache", "stats", "--cache-dir", cache, "--json", uid=ALICE, gid=ALICE).out)
    assert after["loose_permissions"]["found"] == 1  # only root's folder is left
    assert all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in packs)


def test_a_cache_bob_may_read_but_not_write_still_serves_him(shared_dir, models_dir, fault_media):
    require_root()
    cache = shared_dir / "alices-cache"
    warm = cli("analyze", fault_media["clip"], "--frames", "0-3", "--cache-dir", cache, "--models-dir", models_dir)
    assert warm.code == 0, warm.err
    for path in [cache, *cache.rglob("*")]:  # readable by the group, writable by its owner only
        os.chown(path, 0, TEAM_GID)
        os.chmod(path, 0o750 if path.is_dir() else 0o640)
    run = cli("analyze", fault_media["clip"], "--cache-dir", cache, "--models-dir", models_dir, "--json",
              uid=BOB, gid=TEAM_GID, groups=(TEAM_GID,))
    assert run.code == 0, run.err
    summary = run.summary
    assert (summary["hits"], summary["inferences"]["detect"]) == (4, 4)
    assert run.err.count("permission denied") == 1 and "computed but not stored" in run.err
    for action in ("prune", "clear"):
        refused = cli("cache", action, "--cache-dir", cache, uid=BOB, gid=TEAM_GID, groups=(TEAM_GID,))
        assert refused.code == 3, refused.err
        (line,) = refused.err.splitlines()
        assert f"cannot {action} the cache {cache}" in line and "permission denied" in line
