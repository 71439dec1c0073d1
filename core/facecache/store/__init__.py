"""The persistent cache: pack format, records, namespaces, groups, claims and leases, eviction."""
