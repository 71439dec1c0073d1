"""The pipeline benchmark on a tiny clip: every figure is there and the runs did what
their names say (counts only; timings belong to `facecache bench`, not to tests)."""

import json

import pytest

from facecache.bench import pipeline_bench
from facecache.cli import build_parser

pytestmark = pytest.mark.index  # the default models and portraits come from the package index

FIGURES = ("cold_s", "warm_new_source_s", "param_only_s", "partial_s", "preview_ms_median", "preview_ms_p95",
           "preview_first_ms", "preview_ms_p95_after_first", "preview_cpu_ms_median", "preview_jump_cpu_ms",
           "preview_jump_ms", "cache_overhead_fraction", "fingerprint_ms", "sha256_ms",
           "warm_new_source_ratio", "param_only_ratio", "partial_ratio", "cold_per_frame_ms",
           "cold_detector_only_per_frame_ms", "warm_new_source_per_frame_ms", "warm_detector_only_per_frame_ms",
           "warm_identity_models_ratio", "cold_reference_per_frame_ms", "cold_cpu_ms_per_frame",
           "cold_detector_only_cpu_ms_per_frame", "cold_reference_cpu_ms_per_frame", "warm_new_source_cpu_ms_per_frame",
           "warm_detector_only_cpu_ms_per_frame", "cold_identity_models_cpu_ratio", "cold_reference_cpu_ratio",
           "warm_identity_models_cpu_ratio", "cold_every_frame_per_frame_ms", "cold_tracking_ratio")


@pytest.fixture(scope="module")
def result(default_models_dir, portrait_paths, tmp_path_factory):
    return pipeline_bench.run(frames=6, cache_dir=tmp_path_factory.mktemp("bench-cache"), models_dir=default_models_dir,
                              samples_dir=portrait_paths["astronaut"].parent, size=(480, 270))


def test_every_figure_is_reported_as_one_json_object(result):
    assert set(FIGURES) <= set(result)
    assert set(result["goals"]) == set(result["goals_met"]) == set(pipeline_bench.GOALS)
    assert json.loads(json.dumps(result))["frames"] == 6


def test_each_run_pays_only_for_its_own_stage(result):
    base, extension = result["first_range_frames"], result["extension_frames"]
    assert (base, extension) == (5, 1)  # the range is extended by 10% (rounded)
    runs = result["runs"]
    faces = runs["cold"]["inferences"]["swap"]
    assert faces >= 1
    assert runs["cold"]["inferences"]["detect"] == base + 1  # every frame and the source image
    assert runs["cold"]["written"] == base
    # the same run detecting every whole frame, on its own cache: the same work, to compare with
    every_frame = runs["cold_every_frame"]
    assert every_frame["inferences"] == runs["cold"]["inferences"] and every_frame["written"] == base
    assert result["cold_tracking_ratio"] > 0

    warm = runs["warm_new_source"]
    assert warm["inferences"]["detect"] == 1  # only the new source image; the clip's analysis is cached
    assert warm["inferences"]["swap"] == faces and warm["written"] == base
    assert warm["analysis_lookups"]["hits"] == base

    param_only = runs["param_only"]
    assert sum(param_only["inferences"].values()) == 0  # no model runs at all
    assert param_only["written"] == base and param_only["swap_lookups"]["misses"] == 0

    partial = runs["partial"]
    assert (partial["written"], partial["skipped"]) == (extension, base)
    assert partial["inferences"]["detect"] == extension


def test_identity_models_cost_is_reported_with_the_models_used(result):
    assert result["identity_models"] == ["face_mesh_468", "facenet_512"]  # the default pack
    assert result["cold_analysis_cpu_ms_per_frame"] > 0 and result["cold_analysis_cpu_ms_per_frame_detector_only"] > 0
    assert result["identity_models_cost_ratio"] > 0
    by_model = result["cold_analysis_cpu_ms_per_frame_by_model"]
    assert set(by_model) == {"mtcnn", "face_mesh_468", "facenet_512"} and all(ms > 0 for ms in by_model.values())


def test_the_cold_runs_analysis_share_is_reported_per_model_with_its_goals(result):
    # the default job runs the detector and the landmarker on the clip; the recognizer is never needed
    assert set(result["cold_analysis_ms_per_frame_by_model"]) == {"mtcnn", "face_mesh_468"}
    assert result["cold_analysis_ms_per_frame"] == pytest.approx(
        sum(result["cold_analysis_ms_per_frame_by_model"].values()), abs=0.02)
    assert 0 < result["cold_analysis_ms_per_frame"] < result["cold_per_frame_ms"]
    assert result["cold_every_frame_analysis_ms_per_frame"] > 0
    assert set(result["runs"]["cold_detector_only"]["analysis_s_by_model"]) == {"mtcnn"}
    assert result["cold_goals"] == {"cold_per_frame_ms": 50.0, "cold_analysis_ms_per_frame": 25.0}  # one face
    assert result["cold_goals_met"] == {key: result[key] <= goal for key, goal in result["cold_goals"].items()}


def test_cold_cost_is_measured_with_and_without_the_new_models_and_warm_costs_no_inference(result):
    runs, base = result["runs"], result["first_range_frames"]
    assert runs["cold"]["inferences"]["landmark"] >= base  # the face mesh ran on the clip's faces
    assert runs["cold"]["inferences"]["embed"] == 0  # the default job (classic swapper) needs no identity
    assert runs["cold_detector_only"]["inferences"]["landmark"] == 0
    assert runs["cold_detector_only"]["inferences"]["detect"] == runs["cold"]["inferences"]["detect"]
    # By reference: every face of the clip through the recognizer too, and every face swapped as in `cold`;
    # besides them the reference photo of the clip's one person (landmarks and identity) and, in this
    # run's own cache, the source photo (landmarks only: the classic swapper needs no source identity).
    reference = runs["cold_reference"]["inferences"]
    clip_faces = runs["cold"]["inferences"]["landmark"] - 1
    assert reference["swap"] == runs["cold"]["inferences"]["swap"]
    assert reference["embed"] == clip_faces + 1 and reference["landmark"] == clip_faces + 2
    assert result["cold_reference_cpu_ratio"] > result["cold_identity_models_cpu_ratio"] > 0
    assert runs["warm_new_source"]["inferences"]["landmark"] == 1  # only the new source image
    assert runs["warm_new_source"]["inferences"]["embed"] == 0
    assert runs["warm_new_source"]["inferences"]["detect"] == runs["warm_detector_only"]["inferences"]["detect"] == 1
    assert runs["warm_detector_only"]["inferences"]["landmark"] == 0
    assert result["warm_identity_models_ratio"] > 0


def test_preview_renders_each_frame_from_the_cache(result):
    assert result["preview_frames"] == 5 and result["preview_jumps"] == 1
    assert result["preview_written"] == result["preview_frames"] + result["preview_jumps"]
    assert result["preview_inferences"] == 0
    assert result["preview_profile"]["main_by_self_time"]


def test_cache_overhead_is_instrumented_and_then_removed(result):
    from facecache.store.frame_store import FrameStore

    calls = result["runs"]["warm_new_source"]["cache_calls"]
    assert calls["open_group"]["calls"] >= 2 and calls["lookup"]["calls"] >= 5
    assert 0 < result["cache_overhead_fraction"] < 1
    assert not hasattr(FrameStore.open_group, "__wrapped__")  # the timing hooks are gone


def test_bench_runs_the_pipeline_suite_unless_told_otherwise():
    parser = build_parser()
    assert parser.parse_args(["bench"]).suite == "pipeline"
    cache = parser.parse_args(["bench", "cache", "--cache-dir", "/mnt/nas"])
    assert cache.suite == "cache" and str(cache.cache_dir) == "/mnt/nas"


def test_bench_takes_faces_size_and_frames():
    args = build_parser().parse_args(["bench", "--faces", "6", "--size", "3840x2160", "--frames", "600"])
    assert (args.faces, args.size, args.frames) == (6, (3840, 2160), 600)
    for bad in (["--faces", "0"], ["--size", "4k"], ["--size", "8x8"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["bench", *bad])


def test_group_clip_has_the_asked_number_of_faces(portrait_paths, mtcnn, tmp_path):
    from facecache.media.reader import MediaReader
    from facecache.media.sample_clip import write_group_clip

    clip = write_group_clip([portrait_paths["grace_hopper"], portrait_paths["astronaut"]], tmp_path / "group.mp4",
                            faces=6, frames=12, size=(1280, 720))
    with MediaReader(clip) as reader:
        assert (reader.info.width, reader.info.height, reader.info.frame_count) == (1280, 720, 12)
        (_, first), (_, empty) = reader.frames([0, 11])
    assert len(mtcnn.detect(first)) == 6
    assert mtcnn.detect(empty) == []  # every 12th frame is plain background


def test_figures_have_the_same_keys_for_several_faces(default_models_dir, portrait_paths, tmp_path, result):
    several = pipeline_bench.run(frames=3, cache_dir=tmp_path, models_dir=default_models_dir,
                                 samples_dir=portrait_paths["astronaut"].parent, size=(640, 360), faces=2)
    assert several["faces"] == 2 and several["size"] == "640x360"
    assert set(several) == set(result)
    assert several["cold_goals"] == {"cold_per_frame_ms": 100.0, "cold_analysis_ms_per_frame": 40.0}  # six faces' goals
    assert several["runs"]["cold"]["inferences"]["swap"] == 2 * several["first_range_frames"]  # two faces a frame
