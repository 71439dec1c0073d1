"""Media files: identity, decoding and frame-accurate access."""
