"""One workstation's swap job, as a separate program (the NAS tests start several at once).

    python nas_worker.py REPORT.json CACHE OUT CLIP SOURCE MODELS FIRST LAST CLAIM_TTL

Writes REPORT.json at the end: model runs by stage, outputs written and skipped, and every
warning the store logged (a corrupt read would show up there as "set aside").
"""

import json
import logging
import sys
from pathlib import Path


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main(report, cache, out, clip, source, models, first, last, ttl):
    from facecache.analysis.analyzer import FaceAnalyzer
    from facecache.analysis.factory import build_model_set
    from facecache.jobs.swap_job import SwapJob
    from facecache.models.runtime import SessionFactory
    from facecache.models.store import ModelStore
    from facecache.store.cache import FaceCache
    from facecache.swap.factory import build_swapper
    from facecache.swap.sources import SourceSet

    warnings = Warnings()
    logging.getLogger("facecache").addHandler(warnings)
    sessions = SessionFactory("cpu", threads=1)
    store = ModelStore(Path(models))
    analyzer = FaceAnalyzer(FaceCache(cache), build_model_set(store, sessions))
    sources = SourceSet.load([Path(source)], analyzer)
    job = SwapJob(analyzer, build_swapper("classic", sources, store, sessions), sources,
                  claim_ttl=float(ttl), claim_poll_seconds=0.2)
    source_detects = analyzer.inferences.detect  # the source portrait's own analysis
    result = job.run(Path(clip), Path(out), frames=range(int(first), int(last) + 1))
    Path(report).write_text(json.dumps({
        "detect": analyzer.inferences.detect - source_detects, "swap": analyzer.inferences.swap,
        "written": result.written, "skipped": result.skipped, "frames": result.frames,
        "warnings": warnings.messages,
    }))


if __name__ == "__main__":
    main(*sys.argv[1:])
