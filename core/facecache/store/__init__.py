"""The persistent cache: pack format, namespaces, groups, eviction, permissions."""
