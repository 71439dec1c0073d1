"""Benchmarks behind `facecache bench`: timings measured as ratios in one run."""
