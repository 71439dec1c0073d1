"""A real network filesystem for the NAS tests: sshfs over an sshd on 127.0.0.1.

One session-wide sshd (its own config, host key and a key pair made for the test, listening
on 127.0.0.1 only, on a free high port) exports a temp folder, mounted twice with sshfs
(`nas.a`, `nas.b`: two workstations on one share). Everything is stopped and unmounted at
the end. Where sshd, sshfs or FUSE is missing the tests are skipped with the reason.

Mount options, as a studio NAS client would use them:
  reconnect, ServerAliveInterval=5        survive a dropped link
  dcache_timeout=1                        sshfs caches directory listings for 20 s by default,
                                          so a teammate's new packs would show up to 20 s late
                                          (NFS clients: actimeo/acdirmin do the same); 1 s keeps
                                          "seen within 3 s" possible. Correctness never depends
                                          on it: a pack not yet seen is a miss, never a bad read.
Rename-over-existing and hard links work without `-o workaround=rename` (OpenSSH's sftp
server has the posix-rename and hardlink extensions); tests/nas/test_nas_fs.py checks both.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
SSHFS = shutil.which("sshfs")
FUSERMOUNT = shutil.which("fusermount3") or shutil.which("fusermount")
INSTALL_HINT = "install them with: apt-get install -y --no-install-recommends openssh-server sshfs (./dev test does this as root)"


@dataclass(frozen=True)
class Nas:
    export: Path  # the server's folder (what the NAS holds on its own disk)
    a: Path       # workstation A's mount of it
    b: Path       # workstation B's mount of it


def _skip(reason: str):
    # Loud: printed at collection and listed in the summary (-ra), never a silent pass.
    print(f"\n*** NAS TESTS SKIPPED: {reason} ***", file=sys.stderr)
    pytest.skip(f"NAS tests need sshd, sshfs and FUSE: {reason}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _skip(f"sshd exited at start ({log.read_text(errors='replace').strip()[-300:]})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    _skip("sshd did not start listening within 10 s")


def _unmount(mountpoint: Path) -> None:
    for command in ([FUSERMOUNT, "-u", str(mountpoint)], [FUSERMOUNT, "-uz", str(mountpoint)]):
        if command[0] and subprocess.run(command, capture_output=True).returncode == 0:
            return


@pytest.fixture(scope="session")
def nas(tmp_path_factory):
    missing = [name for name, path in (("sshd", SSHD), ("sshfs", SSHFS), ("fusermount", FUSERMOUNT)) if not path]
    if missing:
        _skip(f"{', '.join(missing)} not found; {INSTALL_HINT}")
    if not os.path.exists("/dev/fuse"):
        _skip("/dev/fuse is missing (a container without FUSE: run it with --device /dev/fuse --cap-add SYS_ADMIN)")
    base = tmp_path_factory.mktemp("nas")
    export, a, b, keys = base / "export", base / "mnt-a", base / "mnt-b", base / "keys"
    for folder in (export, a, b, keys):
        folder.mkdir()
    for name in ("host", "user"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
    shutil.copy(keys / "user.pub", keys / "authorized_keys")
    port = _free_port()
    config = keys / "sshd_config"
    config.write_text("\n".join([
        "ListenAddress 127.0.0.1", f"Port {port}", f"HostKey {keys / 'host'}",
        f"AuthorizedKeysFile {keys / 'authorized_keys'}", f"PidFile {keys / 'sshd.pid'}",
        "StrictModes no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password", "UsePAM no", "Subsystem sftp internal-sftp -u 0002", "",
    ]))
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation folder sshd insists on
    log = keys / "sshd.log"
    sshd = subprocess.Popen([SSHD, "-D", "-f", str(config), "-E", str(log)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mounted: list[Path] = []
    try:
        _wait_for_port(port, sshd, log)
        user = os.environ.get("USER") or __import__("getpass").getuser()
        options = ",".join([
            "reconnect", "ServerAliveInterval=5", "StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null",
            f"IdentityFile={keys / 'user'}", "BatchMode=yes", f"port={port}", "dcache_timeout=1",
        ])
        for mountpoint in (a, b):
            result = subprocess.run([SSHFS, f"{user}@127.0.0.1:{export}", str(mountpoint), "-o", options],
                                    capture_output=True, text=True, timeout=30)
            if result.returncode != 0:
                _skip(f"sshfs could not mount ({result.stderr.strip()[-300:]})")
            mounted.append(mountpoint)
        yield Nas(export, a, b)
    finally:
        for mountpoint in mounted:
            _unmount(mountpoint)
        sshd.terminate()
        try:
            sshd.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sshd.kill()
            sshd.wait()


@pytest.fixture
def share(nas, request):
    """A fresh folder on the share for one test: (path through A, path through B, path on the server)."""
    name = request.node.name.replace("[", "-").replace("]", "")[:60]
    (nas.export / name).mkdir()
    return nas.a / name, nas.b / name, nas.export / name
