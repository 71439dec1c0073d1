"""Several workstations on one NAS cache: four swap jobs at once over two sshfs mounts, and a
job killed with SIGKILL mid-run. Real MTCNN and the classic swapper on a small clip; each job
is a separate program (nas_worker.py) as it would be on separate machines."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facecache.store.cache import FaceCache

pytestmark = pytest.mark.index  # real weights and portraits come from the package index

FRAMES = 192  # three 64-frame segments
# Frames that may be analysed twice: only if a holder stalled past its claim's expiry (20 s). A
# claim handed from one mount to the other is followed by a fresh listing of the segment's groups
# (FaceCache.read_group(fresh=True)), so the previous holder's pack is seen although the new
# holder's mount cached the listing from before it; without that, CI once saw a whole segment
# analysed again. Without claims every job analyses every frame (3-4 x FRAMES).
HANDOVER_SLACK = 8
WORKER = Path(__file__).with_name("nas_worker.py")


def _write_clip(path: Path, portrait) -> Path:
    sys.path.insert(0, str(Path(__file__).parents[1] / "jobs"))
    from test_video_jobs import write_clip

    return write_clip(path, portrait, FRAMES)


def _start(tmp: Path, name: str, cache: Path, out: Path, clip: Path, source: Path, models: Path,
           first: int, last: int, ttl: float) -> tuple[subprocess.Popen, Path]:
    report = tmp / f"{name}.json"
    command = [sys.executable, str(WORKER), str(report), str(cache), str(out), str(clip), str(source),
               str(models), str(first), str(last), str(ttl)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), report


def _finish(process: subprocess.Popen, report: Path) -> dict:
    _out, err = process.communicate(timeout=900)  # bounds a hang, not a busy machine's slow run
    assert process.returncode == 0, err[-3000:]
    return json.loads(report.read_text())


def _outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.png"))}


@pytest.fixture(scope="module")
def scene(nas, tmp_path_factory, models_dir, portrait_paths, portraits):
    """The clip on the share, and what one process alone makes of it on local disk."""
    tmp = tmp_path_factory.mktemp("nas-jobs")
    shot = nas.export / "shot"
    shot.mkdir()
    _write_clip(shot / "clip.mp4", portraits["astronaut"])
    process, report = _start(tmp, "reference", tmp / "cache", tmp / "out", shot / "clip.mp4",
                             portrait_paths["grace_hopper"], models_dir, 0, FRAMES - 1, 30)
    reference = _finish(process, report)
    assert reference["detect"] == FRAMES and reference["written"] == FRAMES
    return {"tmp": tmp, "shot": shot.name, "expected": _outputs(tmp / "out" / "clip"),
            "source": portrait_paths["grace_hopper"], "other_source": portrait_paths["astronaut"],
            "models": models_dir}


def test_four_writers_on_two_mounts_split_the_work_and_match_one_process(nas, scene):
    tmp, shot = scene["tmp"], scene["shot"]
    ranges = [("a1", nas.a, 0, FRAMES - 1), ("b1", nas.b, 0, FRAMES - 1),
              ("a2", nas.a, 32, 159), ("b2", nas.b, 64, FRAMES - 1)]
    started = [_start(tmp, f"four-{name}", mount / "team4" / "cache", mount / "team4" / "renders",
                      mount / shot / "clip.mp4", scene["source"], scene["models"], first, last, 20)
               for name, mount, first, last in ranges]
    reports = [_finish(process, report) for process, report in started]

    detects = sum(r["detect"] for r in reports)
    # Every frame analysed about once: claims keep the others off a segment being made (see HANDOVER_SLACK).
    assert FRAMES <= detects <= FRAMES + HANDOVER_SLACK, reports
    assert sum(r["written"] for r in reports) <= FRAMES + HANDOVER_SLACK, reports
    assert all(not r["warnings"] for r in reports), "\n".join(w for r in reports for w in r["warnings"])
    assert sum(r["written"] > 0 for r in reports) >= 2, "the work was not shared at all"
    assert _outputs(nas.export / "team4" / "renders" / "clip") == scene["expected"]
    report = FaceCache(nas.b / "team4" / "cache").verify(temp_grace_seconds=0)
    assert report.clean and report.checked > 0
    claims = nas.export / "team4" / "cache" / "locks" / "claims"
    assert not [p for p in claims.iterdir() if p.name.endswith(".claim")]  # all released

    again = _finish(*_start(tmp, "four-again", nas.a / "team4" / "cache", nas.a / "team4" / "renders",
                            nas.a / shot / "clip.mp4", scene["source"], scene["models"], 0, FRAMES - 1, 20))
    assert again["detect"] == again["swap"] == again["written"] == 0 and again["skipped"] == FRAMES


def test_different_faces_and_a_render_node_analyse_each_frame_once(nas, scene):
    """Two teammates swap different source faces onto one shot while a render node runs
    `facecache analyze` on it: their swaps differ, their analysis is shared (analysis claims)."""
    tmp, shot = scene["tmp"], scene["shot"]
    cache_a, cache_b = nas.a / "team-mixed" / "cache", nas.b / "team-mixed" / "cache"
    swaps = [_start(tmp, "mixed-a", cache_a, nas.a / "team-mixed" / "renders-a", nas.a / shot / "clip.mp4",
                    scene["source"], scene["models"], 0, FRAMES - 1, 20),
             _start(tmp, "mixed-b", cache_b, nas.b / "team-mixed" / "renders-b", nas.b / shot / "clip.mp4",
                    scene["other_source"], scene["models"], 0, FRAMES - 1, 20)]
    node = subprocess.Popen([sys.executable, "-m", "facecache", "analyze", str(nas.a / shot / "clip.mp4"),
                             "--cache-dir", str(cache_a), "--models-dir", str(scene["models"]), "--providers", "cpu",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reports = [_finish(process, report) for process, report in swaps]
    node_out, node_err = node.communicate(timeout=240)
    assert node.returncode == 0, node_err[-3000:]
    analysed = json.loads(node_out.splitlines()[-1])  # JSON Lines: the summary last
    assert analysed["frames"] == FRAMES

    detects = sum(r["detect"] for r in reports) + analysed["inferences"]["detect"]
    assert FRAMES <= detects <= FRAMES + HANDOVER_SLACK, (reports, analysed["inferences"])
    assert all(not r["warnings"] for r in reports), "\n".join(w for r in reports for w in r["warnings"])
    assert all(r["swap"] > 0 for r in reports)  # each face was swapped by its own job
    assert _outputs(nas.export / "team-mixed" / "renders-a" / "clip") == scene["expected"]
    assert FaceCache(cache_b).verify(temp_grace_seconds=0).clean
    shutil.rmtree(nas.export / "team-mixed", ignore_errors=True)


def test_a_writer_killed_mid_run_leaves_nothing_corrupt_and_its_claim_expires(nas, scene):
    tmp, shot = scene["tmp"], scene["shot"]
    cache_a, out_a = nas.a / "team-kill" / "cache", nas.a / "team-kill" / "renders"
    cache_b, out_b = nas.b / "team-kill" / "cache", nas.b / "team-kill" / "renders"
    ttl = 4
    victim, _ = _start(tmp, "victim", cache_a, out_a, nas.a / shot / "clip.mp4", scene["source"],
                       scene["models"], 0, FRAMES - 1, ttl)
    outputs = nas.export / "team-kill" / "renders" / "clip"
    # No deadline: the victim either writes its tenth frame or ends, however loaded the machine.
    while len(list(outputs.glob("*.png"))) < 10 and victim.poll() is None:
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    killed_with = len(list(outputs.glob("*.png")))
    assert 0 < killed_with < 64, "the victim should die inside its first segment"
    claims = nas.export / "team-kill" / "cache" / "locks" / "claims"
    assert [p for p in claims.iterdir() if p.name.endswith(".claim")], "the victim held a claim"

    # Two teammates on the dead writer's segment: they do other work, wait for its claim to
    # expire (never forever), take it over and finish.
    others = [_start(tmp, "survivor-a", cache_a, out_a, nas.a / shot / "clip.mp4", scene["source"],
                     scene["models"], 0, 95, ttl),
              _start(tmp, "survivor-b", cache_b, out_b, nas.b / shot / "clip.mp4", scene["source"],
                     scene["models"], 32, 127, ttl)]
    reports = [_finish(process, report) for process, report in others]
    assert all(not r["warnings"] for r in reports), "\n".join(w for r in reports for w in r["warnings"])
    assert sorted(p.name for p in outputs.glob("*.png"))[:128] == [f"{i:06d}.png" for i in range(128)]
    assert FaceCache(cache_b).verify(temp_grace_seconds=0).clean  # nothing corrupt; dead temp files set aside
    assert not [p for p in claims.iterdir() if p.name.endswith(".claim")]

    rerun = _finish(*_start(tmp, "rerun", cache_b, out_b, nas.b / shot / "clip.mp4", scene["source"],
                            scene["models"], 0, FRAMES - 1, ttl))
    assert rerun["written"] == FRAMES - 128 and rerun["skipped"] == 128  # the gap, and only the gap
    # The victim's analyses died with it (a segment's records are written when it ends): the
    # survivors and the rerun analysed each frame once between them.
    assert sum(r["detect"] for r in reports) + rerun["detect"] <= FRAMES + HANDOVER_SLACK
    assert _outputs(outputs) == scene["expected"]
    shutil.rmtree(nas.export / "team-kill", ignore_errors=True)
