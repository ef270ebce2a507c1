"""V4 single-file commits (seed 004): root-manifest commits, planning, flush, change detection."""
