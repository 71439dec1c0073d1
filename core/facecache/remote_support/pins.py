"""The remote cache support's pinned wheels: botocore and the pure-Python packages it needs.

botocore's wheel alone is 16.9 MB; the extension's Linux zip is 144 of Blender's 150 MB, so the extension
fetches them when asked (install.py) instead of carrying them. Every wheel is `py3-none-any` and asks for
Python 3.10 or newer, so one set serves every Blender the extension supports (Python 3.11 for 4.2-5.0, 3.13 for
5.1 and later). Each is pinned by what identifies it on any index: project, file name, SHA-256 and size, as
`pip download --no-deps --only-binary=:all:` fetched them from the Python package index on 2026-12-04 (the
versions the engine's `remote` extra is tested with). No host is named: pip uses the user's index settings.

Standard library only: the add-on reads the download size from here before anything is asked.
"""

from __future__ import annotations

# (project, wheel file name, SHA-256, bytes)
WHEELS = (
    ("botocore", "botocore-1.44.8-py3-none-any.whl",
     "76342a76c338701db80dcb8afe1c9bd079283d6fffbb9d881442abb02a215043", 16884815),
    ("jmespath", "jmespath-1.1.0-py3-none-any.whl",
     "a5663118de4908c91729bea0acadca56526eb2698e83de10cd116ae0f4e97c64", 20419),
    ("python-dateutil", "python_dateutil-2.9.0.post0-py2.py3-none-any.whl",
     "a8b2bc7bffae282281c8140a97d3aa9c14da0b136dfe83f850eea9a5f7470427", 229892),
    ("six", "six-1.17.0-py2.py3-none-any.whl",
     "4721f391ed90541fddacab5acf947aa0d3dc7d27b2e1e8eda2be8970586c3274", 11050),
    ("urllib3", "urllib3-2.8.0-py3-none-any.whl",
     "0cf3cae568d36aa9576b28dfb35f11328f1cb974ca7647d9475ebb86c75ac6e3", 135717),
)


def download_bytes(wheels=WHEELS) -> int:
    return sum(size for *_, size in wheels)
