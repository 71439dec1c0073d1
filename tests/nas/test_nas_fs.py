"""What the store relies on, checked on the real sshfs mounts (two clients of one share)."""

import os

import pytest


def test_the_two_mounts_are_sshfs(nas):
    from facecache.watch import mount_type

    assert mount_type(nas.a) == mount_type(nas.b) == "fuse.sshfs"


def test_rename_over_an_existing_file_is_atomic_without_workarounds(share):
    a, b, _server = share
    (a / "target").write_bytes(b"old")
    (a / "temp").write_bytes(b"new")
    os.replace(a / "temp", a / "target")  # what write_atomic and Lease.renew do
    assert (b / "target").read_bytes() == b"new"


def test_hard_links_work(share):
    a, b, _server = share
    (a / "one").write_bytes(b"x")
    os.link(a / "one", a / "two")  # Lease takeover puts a claim back with link()
    assert (b / "two").read_bytes() == b"x"


def test_exclusive_create_is_exclusive_across_clients(share):
    a, b, _server = share
    os.close(os.open(a / "claim", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    with pytest.raises(FileExistsError):
        os.open(b / "claim", os.O_WRONLY | os.O_CREAT | os.O_EXCL)


def test_symlinks_are_refused_by_o_nofollow(share):
    a, _b, _server = share
    (a / "real").write_bytes(b"x")
    os.symlink("real", a / "link")
    with pytest.raises(OSError):
        os.open(a / "link", os.O_RDONLY | os.O_NOFOLLOW)
