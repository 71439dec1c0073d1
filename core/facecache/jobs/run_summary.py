"""One sentence for a job's summary, in the one vocabulary every front end prints: frames written,
frames up to date, analyses from cache, model runs (and faces left as they were, and why).

The CLI, the worker (so the Blender add-on's status line), `facecache demo` and `./dev demo` all
print this sentence, so one step never reads "0 from cache" in one place and "48 from cache" in
another.

    describe_run({"frames": 48, "written": 48, "skipped": 0, "analysis_cache": {"hits": 0},
                  "inferences": {"detect": 48, "swap": 44}, "seconds": 12.3})
    -> "48 frames: 48 frames written, 0 frames up to date; analyses from cache 0; model runs:
        detect 48, swap 44; 12.3 s"
"""

from __future__ import annotations

from .. import protocol  # relative: in Blender this is the add-on's vendored copy, standard library only


def empty_summary(**fields) -> dict:
    """A job's summary before anything is counted (a job that makes no frame: the cache's, the models',
    the GPU's, or a timeline range with nothing to do), with `fields` added. Standard library only: the
    Blender add-on imports it too."""
    return {protocol.FRAMES: 0, protocol.WRITTEN: 0, protocol.SKIPPED: 0, protocol.INFERENCES: {}, **fields}


def frames(count: int) -> str:
    """"1 frame", "0 frames", "48 frames"."""
    return f"{count} frame" if count == 1 else f"{count} frames"


def describe_run(summary: dict) -> str:
    parts = [frames(summary.get(protocol.FRAMES, 0))]
    if protocol.WRITTEN in summary:
        parts[0] += (f": {frames(summary.get(protocol.WRITTEN, 0))} written, "
                     f"{frames(summary.get(protocol.SKIPPED, 0))} up to date")
    analysis = summary.get(protocol.ANALYSIS_CACHE) or {}
    runs = ", ".join(f"{stage} {count}" for stage, count in (summary.get(protocol.INFERENCES) or {}).items())
    text = "; ".join(parts + [f"analyses from cache {analysis.get('hits', 0)}", "model runs: " + (runs or "none")])
    turned = summary.get(protocol.FACES_TURNED_AWAY)
    if turned:
        text += ("; 1 face turned past the yaw limit left as it was" if turned == 1
                 else f"; {turned} faces turned past the yaw limit left as they were")
    remote = summary.get(protocol.REMOTE)
    if remote is not None:  # what came from the remote tier, beside the hits the cache folder served
        text += (f"; remote cache: {remote['packs_fetched']} packs fetched, {remote['packs_uploaded']} uploaded"
                 + (f", {remote['packs_set_aside']} set aside" if remote["packs_set_aside"] else ""))
    if protocol.SECONDS in summary:
        text += f"; {summary[protocol.SECONDS]:.2f} s"
    return text


def no_face_warning(summary: dict, target: str) -> str | None:
    """The warning for a swap that found no face to swap in the frames it made, else None."""
    if summary.get(protocol.WRITTEN, 0) == 0 or summary.get(protocol.FACES_SWAPPED, 0) > 0:
        return None
    if summary.get(protocol.FACES_FOUND, 0) == 0:
        return (f"no face found in {target}: nothing was swapped and the output equals the original. "
                "Check that the target shows a face (large and bright enough), or try another --detector")
    if summary.get(protocol.FACES_TURNED_AWAY, 0):
        return (f"every face in {target} is turned further than the swapper's yaw limit, so nothing was "
                "swapped (a frontal source on a profile looks wrong). Raise the limit with --max-yaw, "
                "or use a model swapper")
    return (f"no face in {target} matched the selector: nothing was swapped. Check --selector, --position "
            "or the --reference photos")
