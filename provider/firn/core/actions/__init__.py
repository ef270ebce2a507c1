"""One module per commit action."""
