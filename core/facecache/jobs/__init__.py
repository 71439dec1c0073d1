"""Jobs: incremental runs over media that write output frames."""
