"""`facecache swap --out MOVIE`: the composited frames encoded into .mp4 (H.264), .mkv (H.264) and .mov
(ProRes 422) with the source's audio, timing and colour tags, checked with PyAV; a blend change encodes
again without running a model; bad movie paths are one-line errors before any work.

The source is made here with PyAV: 12 frames of 320x240 at 25 fps, the astronaut sliding over noise,
tagged BT.709 (limited range), with a 440 Hz tone in AAC (or PCM, which an MP4 of this FFmpeg cannot copy)."""

import json
import subprocess
import sys
from fractions import Fraction

import av
import cv2
import numpy as np
import pytest

from facecache.cli import main
from facecache.media.reader import MediaReader
from facecache.media.movie_out import MOVIE_FORMATS

pytestmark = pytest.mark.index  # real MTCNN weights and portraits come from the package index

FRAMES, RATE, SIZE, SAMPLE_RATE = 12, 25, (320, 240), 48000
BT709 = 1  # AVCOL_SPC_BT709, AVCOL_PRI_BT709, AVCOL_TRC_BT709
LIMITED = 1  # AVCOL_RANGE_MPEG


def write_source(path, portrait, audio_codec="aac", rotation=0):
    """A short H.264 clip tagged BT.709 with a mono tone (and a display matrix turning it by `rotation`
    degrees); returns its frames as BGR (what was encoded)."""
    width, height = SIZE
    face = cv2.resize(portrait, (height, height))
    # Softened noise: every frame differs, and a codec's loss stays well under a wrong matrix's error
    noise = cv2.GaussianBlur(np.random.default_rng(0).integers(0, 255, (height, width * 2, 3), dtype=np.uint8),
                             (0, 0), 1.5)
    pictures = []
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=RATE)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        context = video.codec_context
        context.colorspace = context.color_primaries = context.color_trc = BT709
        context.color_range = LIMITED
        if rotation:
            video.set_display_rotation(rotation)
        sound = out.add_stream(audio_codec, rate=SAMPLE_RATE)
        sound.layout = "mono"
        for i in range(FRAMES):
            picture = noise[:, i % width:i % width + width].copy()
            picture[:, i * 4:i * 4 + height] = face
            pictures.append(picture)
            frame = av.VideoFrame.from_ndarray(picture, format="bgr24").reformat(
                format="yuv420p", dst_colorspace=BT709, dst_color_range=LIMITED)
            frame.pts = i
            out.mux(video.encode(frame))
        out.mux(video.encode())
        tone = 0.3 * np.sin(2 * np.pi * 440 * np.arange(SAMPLE_RATE * FRAMES // RATE) / SAMPLE_RATE)
        fmt = sound.codec_context.format.name
        samples = {"s16": (tone * 32767).astype(np.int16), "u8": (tone * 127 + 128).astype(np.uint8)}.get(
            fmt, tone.astype(np.float32))
        chunk = av.AudioFrame.from_ndarray(samples[None], format=fmt, layout="mono")
        chunk.sample_rate, chunk.pts = SAMPLE_RATE, 0
        out.mux(sound.encode(chunk))
        out.mux(sound.encode())
    return pictures


def decoded_pictures(path):
    """The movie's frames as BGR, converted back with the matrix and range its stream is tagged with."""
    with av.open(str(path)) as movie:
        stream = movie.streams.video[0]
        context = stream.codec_context
        return [frame.reformat(format="bgr24", src_colorspace=context.colorspace,
                               src_color_range=context.color_range).to_ndarray() for frame in movie.decode(stream)]


def decoded_planes(path):
    """The movie's frames as they are stored: Y, Cb, Cr planes, on the 8-bit scale (10-bit ones divided by 4)."""
    with av.open(str(path)) as movie:
        frames = []
        for frame in movie.decode(movie.streams.video[0]):
            deep = "10" in frame.format.name
            dtype = np.uint16 if deep else np.uint8
            frames.append([np.frombuffer(plane, dtype).reshape(plane.height, -1)[:, :plane.width] / (4 if deep else 1)
                           for plane in frame.planes])
        return frames


def bt709_limited(bgr):
    """BT.709's Y, Cb, Cr of a BGR picture, limited range, by the standard's own formula (not FFmpeg's code)."""
    b, g, r = (bgr[..., channel] / 255.0 for channel in range(3))
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return 16 + 219 * y, 128 + 224 * (b - y) / 1.8556, 128 + 224 * (r - y) / 1.5748


def audio_samples(path) -> int:
    with av.open(str(path)) as movie:
        return sum(frame.samples for frame in movie.decode(movie.streams.audio[0]))


def swap(tmp_path, models_dir, portrait_paths, target, out, *extra):
    command = [sys.executable, "-m", "facecache", "swap", "--source", str(portrait_paths["grace_hopper"]),
               "--target", str(target), "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
               "--models-dir", str(models_dir), "--providers", "cpu", "--json", *extra]
    run = subprocess.run(command, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def made(tmp_path_factory, models_dir, portrait_paths, portraits):
    """One cache, one source: the movies of each suffix, and the same frames as whole pictures."""
    tmp_path = tmp_path_factory.mktemp("movie")
    source = tmp_path / "shot.mp4"
    write_source(source, portraits["astronaut"])
    runs = {suffix: swap(tmp_path, models_dir, portrait_paths, source, tmp_path / f"out{suffix}")
            for suffix in (".mp4", ".mov", ".mkv")}
    pictures = swap(tmp_path, models_dir, portrait_paths, source, tmp_path / "pictures", "--output-form", "full")
    return {"tmp": tmp_path, "source": source, "runs": runs, "pictures_run": pictures,
            "pictures": [cv2.imread(str(tmp_path / "pictures" / "shot" / f"{i:06d}.png")) for i in range(FRAMES)]}


def test_the_first_movie_runs_the_models_and_the_others_reuse_the_cache(made):
    first = made["runs"][".mp4"]
    assert first["inferences"]["detect"] == FRAMES + 1 and first["inferences"]["swap"] == FRAMES  # frames + source
    assert first["faces_swapped"] == FRAMES and first["written"] == FRAMES
    for run in (made["runs"][".mov"], made["runs"][".mkv"], made["pictures_run"]):
        assert sum(run["inferences"].values()) == 0
    assert [p.name for p in made["tmp"].iterdir() if p.name.startswith(".")] == []  # the hidden frames are gone


@pytest.mark.parametrize("suffix, codec, audio", [(".mp4", "h264", "copied aac"), (".mov", "prores", "copied aac"),
                                                  (".mkv", "h264", "copied aac")])
def test_the_movie_keeps_the_sources_timing_size_tags_and_audio(made, suffix, codec, audio):
    movie_path = made["tmp"] / f"out{suffix}"
    assert made["runs"][suffix]["movie"]["audio"] == audio and made["runs"][suffix]["movie"]["frames"] == FRAMES
    with av.open(str(movie_path)) as movie, av.open(str(made["source"])) as source:
        video = movie.streams.video[0]
        assert video.codec_context.name == codec and (video.width, video.height) == SIZE
        assert video.average_rate == RATE
        times = [frame.pts * frame.time_base for frame in movie.decode(video)]
        assert times == [Fraction(i, RATE) for i in range(FRAMES)]
        movie.seek(0)
        context = video.codec_context
        assert (context.colorspace, context.color_primaries, context.color_trc, context.color_range) == \
               (BT709, BT709, BT709, LIMITED)
        assert all(frame.rotation == 0 for frame in movie.decode(video))  # no rotation added
        assert movie.streams.audio[0].codec_context.name == source.streams.audio[0].codec_context.name
    assert abs(audio_samples(movie_path) - audio_samples(made["source"])) <= SAMPLE_RATE // RATE  # within a frame


# Mean error of the stored Y plane against the composited pictures (measured: H.264 at CRF 18 1.1-1.2, ProRes HQ
# 0.5-0.56). A BT.601 matrix misses by 2.3 levels here, full range by 7.5, the next frame by 21.
Y_TOLERANCE = {".mp4": 1.5, ".mkv": 1.5, ".mov": 0.8}


def assert_stored_frames_are(movie, pictures):
    """Each stored frame against its composited picture through BT.709's formula: Y at full size, Cb and Cr
    averaged to the chroma planes' size; and the frames as a player converts them back."""
    stored = decoded_planes(movie)
    assert len(stored) == len(pictures)
    for index, (planes, composited) in enumerate(zip(stored, pictures)):
        for plane, expected, tolerance in zip(planes, bt709_limited(composited), (Y_TOLERANCE[movie.suffix], 1, 1)):
            if plane.shape != expected.shape:
                expected = cv2.resize(expected, plane.shape[::-1], interpolation=cv2.INTER_AREA)
            assert np.abs(plane - expected).mean() < tolerance, (index, np.abs(plane - expected).mean())
    shown = decoded_pictures(movie)
    assert max(np.abs(a.astype(np.int16) - b).mean() for a, b in zip(shown, pictures)) < 3.0


@pytest.mark.parametrize("suffix", [".mp4", ".mov", ".mkv"])
def test_the_movies_pictures_are_the_composited_frames_in_bt709(made, suffix):
    assert_stored_frames_are(made["tmp"] / f"out{suffix}", made["pictures"])


def test_the_prores_profile_is_the_quality_option(made, models_dir, portrait_paths):
    with av.open(str(made["tmp"] / "out.mov")) as movie:
        assert movie.streams.video[0].codec_context.profile == "HQ"  # the default, 3
    swap(made["tmp"], models_dir, portrait_paths, made["source"], made["tmp"] / "lt.mov", "--quality", "1")
    with av.open(str(made["tmp"] / "lt.mov")) as movie:
        assert movie.streams.video[0].codec_context.profile == "LT"


def test_a_blend_change_encodes_again_without_running_a_model(made, models_dir, portrait_paths):
    tmp, movie = made["tmp"], made["tmp"] / "again.mp4"
    for opacity in ("0.5", "0.7"):  # the second one replaces the first movie
        again = swap(tmp, models_dir, portrait_paths, made["source"], movie, "--opacity", opacity)
        assert again["inferences"] == {"detect": 0, "landmark": 0, "embed": 0, "swap": 0}
        assert again["swap_cache"]["misses"] == 0 and again["movie"]["frames"] == FRAMES
    swap(tmp, models_dir, portrait_paths, made["source"], tmp / "faded", "--output-form", "full", "--opacity", "0.7")
    faded = [cv2.imread(str(tmp / "faded" / "shot" / f"{i:06d}.png")) for i in range(FRAMES)]
    assert all(np.abs(a.astype(np.int16) - b).max() > 20 for a, b in zip(faded, made["pictures"]))
    assert_stored_frames_are(movie, faded)
    assert [p.name for p in tmp.iterdir() if p.name.startswith(".")] == []


def test_a_frame_range_keeps_its_own_times_and_audio(made, models_dir, portrait_paths):
    part = made["tmp"] / "part.mp4"
    run = swap(made["tmp"], models_dir, portrait_paths, made["source"], part, "--frames", "3-8")
    assert run["movie"]["frames"] == 6 and sum(run["inferences"].values()) == 0
    with av.open(str(part)) as movie:
        times = [frame.pts * frame.time_base for frame in movie.decode(movie.streams.video[0])]
    assert times == [Fraction(i, RATE) for i in range(6)]
    assert abs(audio_samples(part) - 6 * SAMPLE_RATE // RATE) <= SAMPLE_RATE // RATE
    pictures = decoded_pictures(part)
    assert np.abs(pictures[0].astype(np.int16) - made["pictures"][3]).mean() < 3.0


def test_audio_the_container_cannot_hold_is_re_encoded(tmp_path, models_dir, portrait_paths, portraits):
    source = tmp_path / "take.mov"
    write_source(source, portraits["astronaut"], audio_codec="pcm_s16le")
    copied = swap(tmp_path, models_dir, portrait_paths, source, tmp_path / "take_out.mkv")
    assert copied["movie"]["audio"] == "copied pcm_s16le"
    with av.open(str(tmp_path / "take_out.mkv")) as movie:
        assert movie.streams.audio[0].codec_context.name == "pcm_s16le"
    mp4 = tmp_path / "take_out.mp4"
    if "pcm_s16le" in av.open(str(mp4), "w", format="mp4").supported_codecs:  # FFmpeg 8's MP4 takes PCM
        source_u8 = tmp_path / "take_u8.mov"
        write_source(source_u8, portraits["astronaut"], audio_codec="pcm_u8")
        source = source_u8
    mp4.unlink(missing_ok=True)
    encoded = swap(tmp_path, models_dir, portrait_paths, source, mp4)
    assert encoded["movie"]["audio"].endswith("re-encoded to aac")
    with av.open(str(mp4)) as movie:
        assert movie.streams.audio[0].codec_context.name == "aac"
    assert abs(audio_samples(mp4) - FRAMES * SAMPLE_RATE // RATE) <= SAMPLE_RATE // RATE


def test_a_turned_source_gives_the_engines_frames_without_a_rotation(tmp_path, models_dir, portrait_paths,
                                                                    portraits):
    """The engine's frames are what the sequencer shows: they are written as they are, and no display
    matrix is added on top (it would turn them a second time)."""
    source = tmp_path / "phone.mp4"
    write_source(source, portraits["astronaut"], rotation=90)
    with MediaReader(source) as reader:
        shown = next(reader.frames([0]))[1].shape[1::-1]
    swap(tmp_path, models_dir, portrait_paths, source, tmp_path / "phone_out.mp4")
    with av.open(str(tmp_path / "phone_out.mp4")) as movie:
        video = movie.streams.video[0]
        assert (video.width, video.height) == shown
        assert all(frame.rotation == 0 for frame in movie.decode(video))


def run_cli(capsys, *args) -> tuple[int, str]:
    code = main(["swap", *args])
    return code, capsys.readouterr().err.strip()


def test_bad_movie_outputs_are_one_line_errors_before_any_work(tmp_path, capsys, portrait_paths):
    source, still = str(portrait_paths["grace_hopper"]), str(portrait_paths["astronaut"])
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"")  # never opened: the output is refused first
    common = ["--source", source, "--cache-dir", str(tmp_path / "cache"), "--models-dir", str(tmp_path / "none")]

    code, error = run_cli(capsys, *common, "--target", str(clip), "--out", str(tmp_path / "out.avi"))
    assert code == 2 and error.count("\n") == 0 and all(suffix in error for suffix in MOVIE_FORMATS)
    code, error = run_cli(capsys, *common, "--target", still, "--out", str(tmp_path / "out.mp4"))
    assert code == 2 and "still image" in error and "give --out a folder" in error
    frames = tmp_path / "frames"
    frames.mkdir()
    cv2.imwrite(str(frames / "0001.png"), np.zeros((8, 8, 3), np.uint8))
    code, error = run_cli(capsys, *common, "--target", str(frames), "--out", str(tmp_path / "out.mov"))
    assert code == 2 and "folder of frames" in error and "give --out a folder" in error
    code, error = run_cli(capsys, *common, "--target", str(clip), "--out", str(tmp_path / "missing" / "out.mp4"))
    assert code == 2 and "does not exist" in error and str(tmp_path / "missing") in error
    code, error = run_cli(capsys, *common, "--target", str(clip), "--out", str(tmp_path / "out.mp4"), "--quality", "60")
    assert code == 2 and "0 to 51" in error
    code, error = run_cli(capsys, *common, "--target", str(clip), "--out", str(tmp_path / "out.mov"), "--quality", "4")
    assert code == 2 and "0 to 3" in error
    code, error = run_cli(capsys, *common, "--target", still, "--out", str(tmp_path / "folder"), "--quality", "20")
    assert code == 2 and "--quality is for a movie" in error
    code, error = run_cli(capsys, *common, "--target", str(clip), "--out", str(tmp_path / "out.mp4"),
                          "--output-form", "overlay")
    assert code == 2 and "leave out --output-form overlay" in error
    assert not (tmp_path / "cache").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4", "frames"]
