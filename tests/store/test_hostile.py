"""Hostile input: mutated packs and strange files in a cache folder.

Every mutation must decode to a CorruptPack (a miss) or to plain records, never
raise anything else, never load a pickle, and never allocate much more than the
input. Most mutations are resealed (checksum and file name recomputed) so the
corruption reaches the header, msgpack, array-table, `.npy` and record parsers
instead of stopping at the checksum.
"""

from __future__ import annotations

import _pickle
import io
import logging
import os
import pickle
import random
import shutil
import signal
import socket
import stat
import struct
import tempfile
import time
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

import msgpack
import numpy as np
import pytest
import xxhash

from facecache.errors import CorruptPack
from facecache.store import packfile, records
from facecache.store.cache import FaceCache
from facecache.store.frame_store import FrameStore
from facecache.store.records import Face, FrameRecord, GroupRecords, Stage

from stress_helpers import NS, fingerprint_for, group_id, make_record

# numpy warns (UserWarning) when it has to re-parse a Python-2 style header; a hostile
# header may ask for that. Under -W error the warning is an exception, also a miss.
pytestmark = pytest.mark.filterwarnings("ignore:Reading `.npy` or `.npz` file required additional header parsing")

MEMORY_LIMIT = 64 * 1024 * 1024
HEADER = packfile.HEADER


# -- guards: no pickle, bounded memory, no hang ----------------------------------------------


class PickleTrap(BaseException):
    """BaseException so no `except Exception` in the engine can swallow it."""


@pytest.fixture
def no_pickle(monkeypatch):
    calls = []

    def trap(*args, **kwargs):
        calls.append(args[:1])
        raise PickleTrap("pickle was used")

    for module in (pickle, _pickle):
        for attr in ("load", "loads", "Unpickler"):
            monkeypatch.setattr(module, attr, trap)
    import numpy.lib.format as npy_format
    # numpy.lib.format reads object arrays with its own `pickle` reference
    assert getattr(npy_format, "pickle", pickle) is pickle
    yield calls
    assert calls == [], "a pickle was loaded"


@contextmanager
def bounded_memory(limit: int = MEMORY_LIMIT):
    """Peak of traced allocations (numpy registers its buffers) while inside."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    box = {}
    try:
        yield box
    finally:
        box["peak"] = tracemalloc.get_traced_memory()[1] - base
        if started:
            tracemalloc.stop()
    assert box["peak"] < limit, f"peak {box['peak'] / 2**20:.1f} MiB while decoding hostile input"


class Hung(BaseException):
    """Not an OSError (the engine rightly swallows those) and not an Exception."""


@contextmanager
def no_hang(seconds: int = 10):
    def alarm(*_):
        raise Hung("hung (e.g. blocked opening a FIFO)")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_guards_are_live(no_pickle):
    """The traps would catch numpy's pickle path, and tracemalloc sees numpy buffers."""
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(PickleTrap):
        np.load(io.BytesIO(buf.getvalue()), allow_pickle=True)
    no_pickle.clear()
    with pytest.raises(AssertionError):
        with bounded_memory(limit=50 * 2**20):
            big = np.ones(80 * 2**20, dtype=np.uint8)
            del big


# -- valid base packs ---------------------------------------------------------------------------


def _face(rng, dim, lm=True, emb=True, pose=True):
    return Face(rng.random(4, dtype=np.float32), float(np.float32(rng.random())), rng.random((5, 2), dtype=np.float32),
                landmarks68=rng.random((68, 2), dtype=np.float32) if lm else None,
                embedding=rng.random(dim, dtype=np.float32) if emb else None,
                pose=rng.random(3, dtype=np.float32) if pose else None)


def _group(n_records, faces_each, dim, seed, **fields):
    rng = np.random.default_rng(seed)
    group = GroupRecords()
    for i in range(n_records):
        fp = fingerprint_for("base", seed * 1000 + i)
        faces = [_face(rng, dim, **fields) for _ in range(faces_each(i))]
        group.records[fp] = FrameRecord(fp, Stage(15), 1080, 1920, faces)
        group.index[i] = fp
    return group


def _pack(group):
    return packfile.encode(*records.encode(group))[1]


BASES = {
    # one record, one face, every optional field, tiny embedding: truncated at every length
    "small": _pack(_group(1, lambda i: 1, 4, seed=1)),
    "mixed": _pack(_group(6, lambda i: i % 3, 16, seed=2)),
    "partial": _pack(_group(3, lambda i: 2, 8, seed=3, lm=False, pose=False)),
    "empty": _pack(GroupRecords()),
    "faceless": _pack(_group(4, lambda i: 0, 8, seed=4)),
}


# -- pack surgery -----------------------------------------------------------------------------


def reseal(body: bytes) -> tuple[str, bytes]:
    digest = xxhash.xxh3_128_digest(body)
    return digest.hex(), body + digest


def name_of(data: bytes) -> str:
    return data[-16:].hex() if len(data) >= 16 else "0" * 32


class Layout:
    def __init__(self, data: bytes):
        self.data = data
        _, _, _, self.entries, self.meta_len, self.arrays_len = HEADER.unpack(data[:HEADER.size])
        self.meta_start = HEADER.size
        self.meta_end = self.meta_start + self.meta_len
        self.meta = msgpack.unpackb(data[self.meta_start:self.meta_end], raw=False)
        self.blobs = {name: data[self.meta_end + off:self.meta_end + off + n] for name, off, n in self.meta["arrays"]}
        self.blob_spans = [(self.meta_end + off, self.meta_end + off + n) for _, off, n in self.meta["arrays"]]
        self.trailer = len(data) - packfile.TRAILER_LEN

    def npy_header_ends(self):
        ends = []
        for start, _ in self.blob_spans:
            major = self.data[start + 6]
            if major == 1:
                ends.append(start + 10 + struct.unpack("<H", self.data[start + 8:start + 10])[0])
            else:
                ends.append(start + 12 + struct.unpack("<I", self.data[start + 8:start + 12])[0])
        return ends

    def boundaries(self):
        points = {0, 4, 6, 8, 12, 16, HEADER.size, self.meta_end, self.trailer, len(self.data)}
        points.update(p for span in self.blob_spans for p in span)
        points.update(self.npy_header_ends())
        return sorted(points)


def build(meta_bytes: bytes, arrays: bytes, entries: int = 1, version: int = packfile.FORMAT_VERSION,
          meta_len: int | None = None, arrays_len: int | None = None, magic: bytes = packfile.MAGIC,
          reserved: int = 0) -> bytes:
    header = HEADER.pack(magic, version, reserved, entries,
                         len(meta_bytes) if meta_len is None else meta_len,
                         len(arrays) if arrays_len is None else arrays_len)
    return reseal(header + meta_bytes + arrays)[1]


def with_meta(data: bytes, change) -> bytes:
    """Decode the metadata map, let `change` edit it in place, re-encode and reseal."""
    lay = Layout(data)
    meta = msgpack.unpackb(data[lay.meta_start:lay.meta_end], raw=False)
    change(meta)
    return build(msgpack.packb(meta, use_bin_type=True), data[lay.meta_end:lay.trailer], lay.entries)


def with_blobs(data: bytes, blobs: dict[str, bytes]) -> bytes:
    """Rebuild the arrays region from named raw blobs (a correct table), reseal."""
    lay = Layout(data)
    meta = {k: v for k, v in lay.meta.items() if k != "arrays"}
    table, offset = [], 0
    for name, blob in blobs.items():
        table.append([name, offset, len(blob)])
        offset += len(blob)
    meta["arrays"] = table
    return build(msgpack.packb(meta, use_bin_type=True), b"".join(blobs.values()), lay.entries)


def npy_blob(array: np.ndarray, **kw) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, **kw)
    return buf.getvalue()


def npy_raw(header: str, payload: bytes = b"", version=(1, 0), header_len: int | None = None,
            magic: bytes = b"\x93NUMPY") -> bytes:
    text = header.encode("latin1" if version < (3, 0) else "utf8")
    size = len(text) if header_len is None else header_len
    length = struct.pack("<H", size) if version == (1, 0) else struct.pack("<I", size)
    return magic + bytes(version) + length + text + payload


# -- outcome of one hostile pack --------------------------------------------------------------

CATEGORIES = [
    ("checksum", ("checksum mismatch",)),
    ("name", ("file name does not match",)),
    ("header", ("truncated", "bad magic", "format version", "section lengths", "exceeds")),
    ("meta", ("unreadable metadata", "metadata is not a map")),
    ("table", ("bad array table", "lies outside")),
    ("npy_header", ("bad .npy header", "unsupported .npy version")),
    ("dtype", (".npy dtype",)),
    ("npy_data", (".npy data length", "bad .npy shape", ".npy shape", ".npy array")),
]


def category(message: str) -> str:
    for name, needles in CATEGORIES:
        if any(n in message for n in needles):
            return name
    return "records"


def outcome(data: bytes, name: str) -> str:
    """'ok' or the category of the CorruptPack; anything else propagates (a test failure)."""
    try:
        pack = packfile.decode(data, name)
        group = records.decode(pack.meta, pack.arrays)
    except CorruptPack as exc:
        return category(str(exc))
    # Whatever decodes must be plain data that can be merged and written again.
    for fp, record in group.records.items():
        assert isinstance(record, FrameRecord) and fp == record.fingerprint
        for face in record.faces:
            for value in (face.box, face.kps5, face.landmarks68, face.embedding, face.pose):
                assert value is None or (isinstance(value, np.ndarray) and value.dtype.kind in "f")
    packfile.encode(*records.encode(group))
    return "ok"


def run_family(mutations, no_pickle) -> dict[str, int]:
    """Decode every (label, data, name) under the guards; returns counts per outcome."""
    counts: dict[str, int] = {}
    failures = []
    with bounded_memory():
        for label, data, name in mutations:
            try:
                result = outcome(data, name)
            except PickleTrap:
                raise
            except Exception as exc:  # the finding: a crash instead of a miss
                failures.append(f"{label}: {exc.__class__.__name__}: {exc}"[:300])
                continue
            counts[result] = counts.get(result, 0) + 1
            counts["total"] = counts.get("total", 0) + 1
    assert failures == [], f"{len(failures)} hostile packs crashed the decoder:\n" + "\n".join(failures[:20])
    return counts


# -- mutation families --------------------------------------------------------------------------


def bit_flips(seed=11):
    rng = random.Random(seed)
    for base_name, base in BASES.items():
        lay = Layout(base)
        body = base[:-packfile.TRAILER_LEN]
        # every bit of the header, resealed: reaches the length/magic/version checks
        if base_name == "mixed":
            positions = [(byte, bit) for byte in range(HEADER.size) for bit in range(8)]
        else:
            positions = []
        # random bits in each region (metadata, .npy headers, array data), resealed
        regions = [(lay.meta_start, lay.meta_end)]
        regions += [(s, e) for (s, _), e in zip(lay.blob_spans, lay.npy_header_ends())]
        regions += [(e, end) for (_, end), e in zip(lay.blob_spans, lay.npy_header_ends()) if end > e]
        for start, end in regions:
            positions += [(rng.randrange(start, end), rng.randrange(8)) for _ in range(8)]
        for byte, bit in positions:
            mutated = bytearray(body)
            mutated[byte] ^= 1 << bit
            name, data = reseal(bytes(mutated))
            yield f"{base_name} flip {byte}.{bit} resealed", data, name
        # raw flips anywhere (the trailer included): the checksum must catch them all
        for _ in range(40):
            mutated = bytearray(base)
            byte = rng.randrange(len(base))
            mutated[byte] ^= 1 << rng.randrange(8)
            yield f"{base_name} raw flip {byte}", bytes(mutated), name_of(base)


def insertions_deletions(seed=12):
    rng = random.Random(seed)
    for base_name, base in BASES.items():
        lay = Layout(base)
        body = base[:-packfile.TRAILER_LEN]
        for i in range(60):
            pos = rng.randrange(len(body) + 1)
            n = rng.randint(1, 5)
            if i % 2:
                mutated = body[:pos] + bytes(rng.randrange(256) for _ in range(n)) + body[pos:]
                delta = n
            else:
                mutated = body[:pos] + body[pos + n:]
                delta = -min(n, len(body) - pos)
            yield f"{base_name} {'ins' if delta > 0 else 'del'} {pos}", reseal(mutated)[1], reseal(mutated)[0]
            # the same, with the header's section lengths fixed up so the parsers see it
            if pos >= HEADER.size:
                fields = list(HEADER.unpack(mutated[:HEADER.size]))
                if pos <= lay.meta_end:
                    fields[4] = max(0, fields[4] + delta)
                else:
                    fields[5] = max(0, fields[5] + delta)
                fixed = HEADER.pack(*fields) + mutated[HEADER.size:]
                name, data = reseal(fixed)
                yield f"{base_name} {'ins' if delta > 0 else 'del'} {pos} lengths fixed", data, name
            if pos < len(base):  # raw (unresealed) edits
                yield f"{base_name} raw edit {pos}", base[:pos] + base[pos + 1:], name_of(base)


def truncations():
    small = BASES["small"]
    body = small[:-packfile.TRAILER_LEN]
    for n in range(len(small)):  # a file cut at every length
        yield f"small cut at {n}", small[:n], name_of(small)
    for n in range(len(body)):  # a body cut at every length, with a valid checksum
        name, data = reseal(body[:n])
        yield f"small body cut at {n} resealed", data, name
    for base_name, base in BASES.items():
        lay = Layout(base)
        body = base[:-packfile.TRAILER_LEN]
        for point in lay.boundaries():
            for n in (point - 1, point, point + 1):
                if 0 <= n <= len(body):
                    cut = body[:n]
                    yield f"{base_name} cut {n}", base[:n], name_of(base)
                    yield f"{base_name} cut {n} resealed", reseal(cut)[1], reseal(cut)[0]
                    if n >= HEADER.size:  # lengths rewritten to match what is left
                        fields = list(HEADER.unpack(cut[:HEADER.size]))
                        fields[4] = min(lay.meta_len, n - HEADER.size)
                        fields[5] = n - HEADER.size - fields[4]
                        fixed = HEADER.pack(*fields) + cut[HEADER.size:]
                        yield f"{base_name} cut {n} lengths fixed", reseal(fixed)[1], reseal(fixed)[0]


def blob_truncations():
    """Each .npy blob cut at every byte of its header and at data boundaries, with the
    array table fixed up: the cut reaches numpy's header reader and the length checks."""
    for base_name in ("mixed", "small"):
        base = BASES[base_name]
        lay = Layout(base)
        for column, blob in lay.blobs.items():
            header_end = 10 + struct.unpack("<H", blob[8:10])[0]
            # every byte of magic, version and length; every 3rd of the header text; the data edges
            cuts = set(range(11)) | set(range(11, header_end, 3)) | {header_end - 1, header_end, header_end + 1,
                                                                      header_end + 4, len(blob) - 4, len(blob) - 1}
            for n in sorted(c for c in cuts if 0 <= c < len(blob)):
                data = with_blobs(base, {**lay.blobs, column: blob[:n]})
                yield f"{base_name} npy[{column}] cut at {n}", data, name_of(data)


def header_fields():
    big = [2**32 - 1, 2**31, packfile.MAX_META_BYTES + 1, 2**16]
    for base_name, base in BASES.items():
        lay = Layout(base)
        meta = base[lay.meta_start:lay.meta_end]
        arrays = base[lay.meta_end:lay.trailer]
        cases = {
            "entries huge": dict(entries=2**32 - 1),
            "version 0": dict(version=0),
            "version 2": dict(version=2),
            "version max": dict(version=0xFFFF),
            "reserved set": dict(reserved=0xFFFF),
            "magic": dict(magic=b"FCPX"),
            "magic npy": dict(magic=b"\x93NUM"),
            "arrays_len max": dict(arrays_len=2**64 - 1),
            "arrays_len 2**63": dict(arrays_len=2**63),
            "arrays_len 0": dict(arrays_len=0),
            "arrays_len +1": dict(arrays_len=len(arrays) + 1),
            "arrays_len -1": dict(arrays_len=max(0, len(arrays) - 1)),
            "meta_len 0": dict(meta_len=0),
            "meta_len +1": dict(meta_len=len(meta) + 1),
            "meta_len -1": dict(meta_len=len(meta) - 1),
            **{f"meta_len {v}": dict(meta_len=v) for v in big},
            **{f"meta_len {v} arrays_len wraps": dict(meta_len=v, arrays_len=(len(meta) + len(arrays) - v) % 2**64)
               for v in big},
            "meta swallows arrays": dict(meta_len=len(meta) + len(arrays), arrays_len=0),
        }
        for label, kw in cases.items():
            data = build(meta, arrays, **{"entries": lay.entries, **kw})
            yield f"{base_name} header {label}", data, name_of(data)
        # a valid pack stored under another pack's name
        other = BASES["empty" if base_name != "empty" else "small"]
        yield f"{base_name} under a wrong name", base, name_of(other)


def _meta_bombs():
    u32 = b"\xff\xff\xff\xff"
    yield "array32 huge", b"\xdd" + u32
    yield "map32 huge", b"\xdf" + u32
    yield "str32 huge", b"\xdb" + u32
    yield "bin32 huge", b"\xc6" + u32
    yield "ext32 huge", b"\xc9" + u32 + b"\x01"
    yield "array16 huge", b"\xdc\xff\xff" + b"\xc0" * 10
    yield "map16 huge", b"\xde\xff\xff" + b"\xa1a\xc0" * 10
    yield "arrays key, array32 huge", b"\x81\xa6arrays\xdd" + u32
    yield "records key, array32 huge", b"\x82\xa6arrays\x90\xa7records\xdd" + u32
    yield "format str32 huge", b"\x82\xa6arrays\x90\xa6format\xdb" + u32 + b"x"
    yield "nested map huge", b"\x81\xa1a\xdf" + u32
    yield "deep arrays", b"\x91" * 50_000 + b"\xc0"
    yield "deep maps", b"\x81\xa1a" * 20_000 + b"\xc0"
    yield "reserved byte", b"\xc1"
    yield "int key", b"\x81\x01\xc0"
    yield "float key", b"\x81\xcb" + struct.pack("<d", 1.5) + b"\xc0"
    yield "nil key", b"\x81\xc0\xc0"
    yield "map key", b"\x81\x81\xa1a\xc0\xc0"
    yield "top-level int", b"\x05"
    yield "top-level nil", b"\xc0"
    yield "top-level list", b"\x92\xa1a\xa1b"
    yield "top-level str", b"\xa3abc"
    yield "empty", b""
    yield "truncated map", b"\x83\xa1a"
    yield "trailing bytes", b"\x80\x80"
    yield "bad utf8", b"\x81\xa2\xff\xfe\xc0"
    yield "bad timestamp", b"\x81\xa1t\xd5\xff\x00\x01"
    yield "ext type", b"\x81\xa6arrays\xd4\x05\x00"
    yield "timestamp as table", b"\x81\xa6arrays\xd6\xff\x00\x00\x00\x01"


def metadata_bombs():
    for base_name in ("small", "mixed", "empty"):
        base = BASES[base_name]
        lay = Layout(base)
        arrays = base[lay.meta_end:lay.trailer]
        for label, meta_bytes in _meta_bombs():
            data = build(meta_bytes, arrays, lay.entries)
            yield f"{base_name} meta {label}", data, name_of(data)
            # the same bomb as the value of every key of the real metadata
            if label.endswith("huge"):
                for key in ("arrays", "records", "index", "format"):
                    real = dict(lay.meta)
                    real[key] = "\x00PLACEHOLDER\x00"
                    packed = msgpack.packb(real, use_bin_type=True)
                    marker = msgpack.packb("\x00PLACEHOLDER\x00", use_bin_type=True)
                    bombed = packed.replace(marker, meta_bytes)
                    data = build(bombed, arrays, lay.entries)
                    yield f"{base_name} meta[{key}] {label}", data, name_of(data)


def array_tables():
    for base_name in ("small", "mixed"):
        base = BASES[base_name]
        lay = Layout(base)
        region = lay.trailer - lay.meta_end
        first = lay.meta["arrays"][0]

        def set_first(value):
            return lambda meta: meta["arrays"].__setitem__(0, value)

        cases = {
            "offset negative": set_first([first[0], -1, first[2]]),
            "offset past end": set_first([first[0], region, 1]),
            "length past end": set_first([first[0], first[1], region + 1]),
            "offset huge": set_first([first[0], 2**63 - 1, first[2]]),
            "offset u64 max": set_first([first[0], 2**64 - 1, first[2]]),
            "offset min i64": set_first([first[0], -(2**63), first[2]]),
            "length huge": set_first([first[0], 0, 2**64 - 1]),
            "offset+length wraps": set_first([first[0], 2**63, 2**63]),
            "offset bool": set_first([first[0], True, first[2]]),
            "offset float": set_first([first[0], 0.0, first[2]]),
            "offset str": set_first([first[0], "0", first[2]]),
            "length nil": set_first([first[0], first[1], None]),
            "name int": set_first([7, first[1], first[2]]),
            "name bytes": set_first([b"box", first[1], first[2]]),
            "name path": set_first(["../../etc/passwd", first[1], first[2]]),
            "name long": set_first(["x" * 100_000, first[1], first[2]]),
            "entry short": set_first([first[0], first[1]]),
            "entry long": set_first([first[0], first[1], first[2], 0]),
            "entry map": set_first({"name": first[0]}),
            "duplicate name": lambda meta: meta["arrays"].append(list(meta["arrays"][0])),
            "overlapping blobs": lambda meta: meta["arrays"].append(["evil", *meta["arrays"][0][1:]]),
            "table map": lambda meta: meta.__setitem__("arrays", {"box": [0, 1]}),
            "table nil": lambda meta: meta.__setitem__("arrays", None),
            "table missing": lambda meta: meta.pop("arrays"),
            "table too long": lambda meta: meta.__setitem__("arrays", [[f"a{i}", 0, 0] for i in range(5000)]),
            "4096 zero-length blobs": lambda meta: meta.__setitem__(
                "arrays", meta["arrays"] + [[f"z{i}", 0, 0] for i in range(4096 - len(meta["arrays"]))]),
            "4096 aliases of one blob": lambda meta: meta.__setitem__(
                "arrays", meta["arrays"] + [[f"a{i}", *meta["arrays"][0][1:]] for i in range(4096 - len(meta["arrays"]))]),
        }
        for label, change in cases.items():
            data = with_meta(base, change)
            yield f"{base_name} table {label}", data, name_of(data)


def record_tables():
    """Metadata that is a well-formed pack but describes impossible records."""
    base = BASES["mixed"]
    lay = Layout(base)
    rows = lay.meta["records"]
    cases = {
        "format": lambda m: m.__setitem__("format", "frames/2"),
        "format missing": lambda m: m.pop("format"),
        "records missing": lambda m: m.pop("records"),
        "index map": lambda m: m.__setitem__("index", {}),
        "row short": lambda m: m["records"][0].pop(),
        "row fp not hex": lambda m: m["records"][0].__setitem__(0, "Z" * 32),
        "row fp path": lambda m: m["records"][0].__setitem__(0, "../" * 10 + "xx"),
        "stage bits": lambda m: m["records"][0].__setitem__(1, 16),
        "stage negative": lambda m: m["records"][0].__setitem__(1, -1),
        "height bool": lambda m: m["records"][0].__setitem__(2, True),
        "height huge": lambda m: m["records"][0].__setitem__(2, 2**63),
        "faces huge": lambda m: m["records"][1].__setitem__(4, 2**39),
        "faces over limit": lambda m: m["records"][1].__setitem__(4, 2**40),
        "faces +1": lambda m: m["records"][1].__setitem__(4, rows[1][4] + 1),
        "faces -1": lambda m: m["records"][1].__setitem__(4, max(0, rows[1][4] - 1)),
        "index out of range": lambda m: m["index"].append([99, len(rows)]),
        "index negative": lambda m: m["index"].append([-1, 0]),
        "index frame huge": lambda m: m["index"].append([2**40, 0]),
        "index short": lambda m: m["index"].append([3]),
        "duplicate record": lambda m: m["records"].append(list(m["records"][1])),
        "many rows": lambda m: m.__setitem__("records", [list(rows[0]) for _ in range(20_000)]),
    }
    for label, change in cases.items():
        data = with_meta(base, change)
        yield f"records {label}", data, name_of(data)
    # well-formed .npy columns of the wrong dtype or shape
    for name, blob in lay.blobs.items():
        array = np.load(io.BytesIO(blob))
        variants = {
            "as int32": array.astype(np.int32),
            "as float64": array.astype(np.float64),
            "as big-endian": array.astype(array.dtype.newbyteorder(">")),
            "one row less": array[:-1],
            "one row more": np.concatenate([array, array[:1]]) if len(array) else np.zeros((1, *array.shape[1:]), array.dtype),
            "flattened": array.reshape(-1),
            "extra axis": array[..., None],
            "bool": array.astype(bool),
            "presence bits": np.full_like(array, 0xF8) if name == "present" else array.T.copy(),
        }
        for label, variant in variants.items():
            data = with_blobs(base, {**lay.blobs, name: npy_blob(variant)})
            yield f"column {name} {label}", data, name_of(data)
        data = with_blobs(base, {k: v for k, v in lay.blobs.items() if k != name})
        yield f"column {name} missing", data, name_of(data)


def _hostile_npy():
    f4 = np.arange(4, dtype="<f4").tobytes()
    yield "shape 2**40", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", f4)
    yield "shape 2**31 x 2**31", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, 2147483648), }", f4)
    yield "shape 2**62 squared", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }", f4)
    yield "shape 2**63", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }", f4)
    yield "shape huge, zero rows", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 9223372036854775808), }")
    yield "shape huge product, zero rows", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4611686018427387904), }")
    yield "shape huge first, zero", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775807, 0), }")
    yield "shape 40 dims", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * 40 + "), }", f4[:4])
    yield "shape 40 zero dims", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "0, " * 40 + "), }")
    yield "shape negative", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", f4)
    yield "shape negative pair", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, -2), }", f4)
    yield "shape bool", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (True,), }", f4[:4])
    yield "shape float", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4.0,), }", f4)
    yield "shape list", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': [4], }", f4)
    yield "shape str", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': 'x', }", f4)
    yield "fortran str", npy_raw("{'descr': '<f4', 'fortran_order': 'yes', 'shape': (4,), }", f4)
    yield "fortran 2d", npy_raw("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f4)
    for descr in ("'|O'", "[('a', '|O')]", "[('a', '<f4'), ('b', '|O')]", "[('a', '<f4')]",
                  "[('a', '<f4', (1,))]", "'<U1'", "'|S4'", "'|V4'", "'<M8[s]'", "'<m8[s]'", "'<c8'",
                  "'|b1'", "'<f2'", "'>f4'", "'<i4'", "'|V2147483647'", "'<U1073741824'",
                  "('<f4', (1,))", "'object'", "'float32'", "'i'", "None", "1", "'<f4,<f4'"):
        yield f"descr {descr}", npy_raw(f"{{'descr': {descr}, 'fortran_order': False, 'shape': (1,), }}", f4)
    yield "not a dict", npy_raw("[1, 2, 3]", f4)
    yield "missing keys", npy_raw("{'descr': '<f4'}", f4)
    yield "extra key", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", f4)
    yield "code", npy_raw("__import__('os').system('false')", f4)
    yield "call in dict", npy_raw("{'descr': __import__('os').getcwd(), 'fortran_order': False, 'shape': (4,)}", f4)
    yield "unterminated", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,", f4)
    yield "deep parens", npy_raw("(" * 1000 + ")" * 1000, f4)
    yield "deep lists", npy_raw("[" * 1000 + "]" * 1000, f4)
    yield "python2 header", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4L,), }", f4)
    yield "non-ascii", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\xff\xfe", f4)
    yield "header over max", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }" + " " * 20_000,
                                     f4, version=(2, 0))
    yield "v1 header len past end", npy_raw("{'descr': '<f4'", b"", header_len=0xFFFF)
    yield "v2 header len u32 max", npy_raw("{'descr': '<f4'", b"", version=(2, 0), header_len=2**32 - 1)
    yield "v3 utf8", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4, version=(3, 0))
    yield "v9", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4, version=(9, 9))
    yield "bad magic", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4, magic=b"\x93NUMPX")
    yield "magic only", b"\x93NUMPY"
    yield "empty blob", b""
    yield "one byte short", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4[:-1])
    yield "one byte long", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f4 + b"\0")
    # real pickles, exactly as numpy writes them
    yield "pickled object array", npy_blob(np.array([{"a": 1}, None, "x"], dtype=object), allow_pickle=True)
    structured = np.zeros(2, dtype=[("a", "<f4"), ("b", object)])
    yield "pickled structured array with objects", npy_blob(structured, allow_pickle=True)
    yield "pickled object array, descr rewritten to <f4", npy_blob(
        np.array([1, 2], dtype=object), allow_pickle=True).replace(b"'|O'", b"'<f4'", 1)


def npy_blobs():
    """Every hostile .npy in place of every column of two base packs, plus as an extra column."""
    hostile = list(_hostile_npy())
    for base_name in ("mixed", "partial"):
        base = BASES[base_name]
        lay = Layout(base)
        for column in list(lay.blobs) + ["extra"]:
            for label, blob in hostile:
                data = with_blobs(base, {**lay.blobs, column: blob})
                yield f"{base_name} npy[{column}] {label}", data, name_of(data)


FAMILIES = {
    "bit_flips": bit_flips,
    "insertions_deletions": insertions_deletions,
    "truncations": truncations,
    "blob_truncations": blob_truncations,
    "header_fields": header_fields,
    "metadata_bombs": metadata_bombs,
    "array_tables": array_tables,
    "record_tables": record_tables,
    "npy_blobs": npy_blobs,
}

# Categories each family must reach: proof that the corruption gets past the checksum.
MUST_REACH = {
    "bit_flips": {"checksum", "header", "meta", "npy_header", "npy_data"},
    "insertions_deletions": {"checksum", "header", "meta"},
    "truncations": {"header", "checksum", "table"},
    "blob_truncations": {"npy_header", "npy_data"},
    "header_fields": {"header", "name"},
    "metadata_bombs": {"meta", "table"},
    "array_tables": {"table"},
    "record_tables": {"records"},
    "npy_blobs": {"npy_header", "dtype", "npy_data"},
}


def test_at_least_2000_mutated_packs():
    counts = {name: sum(1 for _ in family()) for name, family in FAMILIES.items()}
    assert sum(counts.values()) >= 2000, counts


@pytest.mark.parametrize("family", list(FAMILIES))
def test_mutated_packs_are_misses_never_crashes(family, no_pickle):
    counts = run_family(FAMILIES[family](), no_pickle)
    reached = {c for c in counts if c not in ("ok", "total")}
    assert MUST_REACH[family] <= reached, (family, counts)
    if family in ("blob_truncations", "header_fields", "metadata_bombs", "array_tables", "npy_blobs", "record_tables"):
        # resealed: nothing stops at the checksum (except the deliberately misnamed pack)
        assert counts.get("checksum", 0) == 0, counts


def test_hostile_npy_never_returns_an_object_or_structured_array(no_pickle):
    """Column by column: a hostile .npy is refused by the pack parser itself."""
    base = BASES["mixed"]
    lay = Layout(base)
    for label, blob in _hostile_npy():
        data = with_blobs(base, {**lay.blobs, "box": blob})
        try:
            pack = packfile.decode(data, name_of(data))
        except CorruptPack:
            continue
        for array in pack.arrays.values():
            assert array.dtype.kind in "biuf" and array.dtype.fields is None and not array.dtype.hasobject, label


# -- mutated packs inside a cache: set aside, logged once --------------------------------------


def _sample_mutations():
    rng = random.Random(5)
    chosen = {}
    for family in FAMILIES.values():
        items = list(family())
        for label, data, name in rng.sample(items, min(45, len(items))):
            chosen.setdefault(name, (label, data))
    return chosen


def test_bad_packs_in_a_group_are_set_aside_and_logged_once(tmp_path, caplog, no_pickle):
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    groups = [group_id(i) for i in range(8)]
    expected_bad, expected_good = {}, {}
    for i, (name, (label, data)) in enumerate(sorted(_sample_mutations().items())):
        key = groups[i % len(groups)]
        folder = cache.group_dir(store.namespace_key, key)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.fcp"
        path.write_bytes(data)
        (expected_good if outcome(data, name) == "ok" else expected_bad)[path] = label
    assert len(expected_bad) > 250

    caplog.set_level(logging.WARNING, logger="facecache.cache")
    with bounded_memory():
        for key in groups:
            store.open_group(key)  # merges whatever decodes; never raises
    warned = [r.getMessage() for r in caplog.records if r.name == "facecache.cache"]
    for path in expected_bad:
        assert not path.exists()
        assert sum(str(path) in m for m in warned) == 1, path
    assert all(p.exists() for p in expected_good)
    quarantined = os.listdir(cache.root / "quarantine")
    assert len(quarantined) == len(expected_bad)
    assert len(warned) == len(expected_bad)

    # read again: nothing new to set aside, nothing logged again
    caplog.clear()
    for key in groups:
        store.open_group(key)
    assert [r for r in caplog.records if r.name == "facecache.cache"] == []
    assert cache.verify(temp_grace_seconds=0).bad == []


def test_a_bad_pack_that_cannot_be_moved_is_still_logged_once(tmp_path, caplog, monkeypatch):
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    key = group_id(0)
    folder = cache.group_dir(store.namespace_key, key)
    folder.mkdir(parents=True)
    data = bytearray(BASES["mixed"])
    data[40] ^= 1
    (folder / f"{name_of(BASES['mixed'])}.fcp").write_bytes(bytes(data))

    def refuse(*_args, **_kw):
        raise PermissionError(13, "read-only share")

    monkeypatch.setattr(os, "rename", refuse)
    caplog.set_level(logging.WARNING, logger="facecache.cache")
    for _ in range(3):
        assert store.open_group(key).content.records == {}
    assert len([r for r in caplog.records if r.name == "facecache.cache"]) == 1


# -- strange files in the cache folder --------------------------------------------------------


def _good_group(cache, store, key, frames=range(5)):
    group = store.open_group(key)
    for f in frames:
        group.put(make_record(fingerprint_for(key, f), 3), f)
    group.flush()
    folder = cache.group_dir(store.namespace_key, key)
    (pack,) = folder.glob("*.fcp")
    return folder, pack


def _assert_clean_miss(store, key):
    group = store.open_group(key)
    assert group.content.records == {} and group.content.index == {}


def test_symlinked_pack_outside_the_cache_is_a_miss_and_target_untouched(tmp_path, caplog):
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    folder, pack = _good_group(cache, store, group_id(0))
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / pack.name
    os.rename(pack, target)
    os.symlink(target, folder / pack.name)
    caplog.set_level(logging.WARNING, logger="facecache.cache")
    _assert_clean_miss(store, group_id(0))
    assert target.read_bytes() and not os.path.lexists(folder / pack.name)
    assert len(caplog.records) == 1
    # a dangling link and a link to /dev/zero behave the same
    for i, dest in enumerate(["/nonexistent/x.fcp", "/dev/zero"], start=1):
        f2, p2 = _good_group(cache, store, group_id(i))
        os.unlink(p2)
        os.symlink(dest, p2)
        _assert_clean_miss(store, group_id(i))


@pytest.mark.parametrize("level", ["group", "fanout", "namespace"])
def test_symlinked_folders_are_never_followed(tmp_path, caplog, level):
    """A group, fan-out or namespace folder that is a symlink to a folder outside the
    cache holding a perfectly valid pack: the pack must not be served (miss) and
    nothing outside the cache may be moved, deleted or written."""
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    key = group_id(0)
    folder, pack = _good_group(cache, store, key)
    link = {"group": folder, "fanout": folder.parent, "namespace": folder.parent.parent}[level]
    outside = tmp_path / "outside"
    os.rename(link, outside)
    os.symlink(outside, link)
    before = sorted((p.relative_to(outside), p.read_bytes()) for p in outside.rglob("*") if p.is_file())
    assert before

    _assert_clean_miss(store, key)
    # writing into that group must not write through the link either
    group = store.open_group(key)
    group.put(make_record(fingerprint_for(key, 9), 0), 9)
    group.flush()
    after = sorted((p.relative_to(outside), p.read_bytes()) for p in outside.rglob("*") if p.is_file())
    assert after == before
    # the fresh pack lives inside the cache and is served from there
    fresh = FrameStore(FaceCache(cache.root), NS).open_group(key)
    assert list(fresh.content.records) == [fingerprint_for(key, 9)]
    assert cache.verify(temp_grace_seconds=0).bad == []


def test_path_like_keys_and_names_are_refused(tmp_path):
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    folder, pack = _good_group(cache, store, group_id(0))
    victim = tmp_path / "x.fcp"
    victim.write_bytes(b"keep me")
    for bad in ["../x", "../../x", "/etc/passwd", "0" * 31 + "/", "..", "A" * 32, "g" * 32, "0" * 33, ""]:
        with pytest.raises(ValueError):
            cache.group_dir(store.namespace_key, bad)
        with pytest.raises(ValueError):
            cache.group_dir(bad, group_id(0))
        with pytest.raises(ValueError):
            store.open_group(bad)
    cache.remove_packs(store.namespace_key, group_id(0), ["../x", "../../../x", "../../../../../x", pack.stem.upper()])
    assert victim.read_bytes() == b"keep me" and pack.exists()


def test_non_pack_names_in_a_group_are_ignored(tmp_path, caplog):
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    key = group_id(0)
    folder, pack = _good_group(cache, store, key)
    data = pack.read_bytes()
    os.unlink(pack)
    names = [pack.stem.upper() + ".fcp", pack.stem[:31] + ".fcp", pack.stem + "0.fcp", pack.stem + ".FCP",
             pack.stem + ".fcp.bak", pack.stem + ".fcp~", "." + pack.name, "..fcp", "x" * 32 + ".fcp",
             pack.stem + ".fcp\n", pack.stem + " .fcp", "\u0660" * 32 + ".fcp", ".tmp-" + pack.name,
             ".del-" + pack.name]
    for name in names:
        (folder / name).write_bytes(data)
    caplog.set_level(logging.WARNING, logger="facecache.cache")
    _assert_clean_miss(store, key)
    assert sorted(os.listdir(folder)) == sorted(names)  # ignored, not set aside
    assert caplog.records == []
    report = cache.verify(temp_grace_seconds=3600)
    assert report.bad == [] and report.checked == 0


def _strange_files(cache, store):
    """A FIFO, a folder and a unix socket, each named like a pack, in three groups."""
    paths, sockets = [], []
    for i, kind in enumerate(("fifo", "folder", "socket")):
        key = group_id(i)
        folder = cache.group_dir(store.namespace_key, key)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (f"{i + 10:x}" * 32 + ".fcp")
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            os.mkdir(path)
            (path / "inner.fcp").write_bytes(b"x")
        else:
            short = Path(tempfile.mkdtemp(dir="/tmp")) / "s"  # AF_UNIX paths are short
            sock = socket.socket(socket.AF_UNIX)
            sock.bind(str(short))
            os.rename(short, path)
            os.rmdir(short.parent)
            sockets.append(sock)
        paths.append((key, path))
    return paths, sockets


def test_fifo_socket_and_folder_named_like_packs_are_misses_without_hanging(tmp_path, caplog):
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    caplog.set_level(logging.WARNING, logger="facecache.cache")
    paths, sockets = _strange_files(cache, store)
    try:
        with no_hang():
            cache.stats()
            for key, _ in paths:
                _assert_clean_miss(store, key)
                _assert_clean_miss(store, key)  # again: logged once
        messages = [r.getMessage() for r in caplog.records]
        for _, path in paths:
            assert sum(str(path) in m for m in messages) == 1, (path, messages)
        for _, path in paths:
            if os.path.lexists(path):
                assert stat.S_ISSOCK(os.lstat(path).st_mode)  # unopenable: a miss, left in place
            else:
                assert path.name.split(".")[0] in " ".join(os.listdir(cache.root / "quarantine"))
    finally:
        for sock in sockets:
            sock.close()
    # maintenance walks the same files
    for action in ("verify", "prune"):
        for _, path in paths:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            elif os.path.lexists(path):
                os.unlink(path)
        paths, sockets = _strange_files(FaceCache(cache.root), store)
        try:
            with no_hang():
                fresh = FaceCache(cache.root)
                if action == "verify":
                    report = fresh.verify(temp_grace_seconds=0)
                    assert len(report.bad) == 2  # the FIFO and the socket (folders are not packs)
                else:
                    fresh.prune(max_bytes=0, grace_seconds=0)
                fresh.stats()
        finally:
            for sock in sockets:
                sock.close()


def test_sparse_300mb_file_named_like_a_pack(tmp_path, caplog):
    cache = FaceCache(tmp_path / "cache")
    store = FrameStore(cache, NS)
    key = group_id(0)
    folder, pack = _good_group(cache, store, key)
    good = store.open_group(key).content.records
    huge = folder / ("f" * 32 + ".fcp")
    with open(huge, "wb") as handle:
        handle.truncate(300_000_000)
    caplog.set_level(logging.WARNING, logger="facecache.cache")
    with bounded_memory():
        group = store.open_group(key)
    assert set(group.content.records) == set(good)  # the good pack is still served
    assert not huge.exists() and len(os.listdir(cache.root / "quarantine")) == 1
    assert len(caplog.records) == 1
    with open(huge, "wb") as handle:
        handle.truncate(300_000_000)
    with bounded_memory():
        cache.stats()
        report = cache.verify(temp_grace_seconds=0)
    assert len(report.bad) == 1 and not huge.exists()


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink", "dangling symlink", "garbage", "huge"])
def test_strange_prune_lease_never_hangs_or_crashes(tmp_path, kind):
    """Whatever sits at locks/prune.lease, prune answers busy (while it is young) or
    takes it over (once old): never a hang, never an exception."""
    cache = FaceCache(tmp_path / "cache")
    lease = cache.root / "locks" / "prune.lease"
    outside = tmp_path / "outside"
    outside.write_bytes(b"keep me")
    if kind == "fifo":
        os.mkfifo(lease)
    elif kind == "folder":
        lease.mkdir()
    elif kind == "symlink":
        os.symlink(outside, lease)
    elif kind == "dangling symlink":
        os.symlink(tmp_path / "nowhere", lease)
    elif kind == "garbage":
        lease.write_bytes(b"\xdd\xff\xff\xff\xff")
    else:
        with open(lease, "wb") as handle:
            handle.truncate(300_000_000)
    with no_hang(), bounded_memory():
        assert cache.prune(max_bytes=0, grace_seconds=0).busy  # young: could be a claimant mid-write
        old = time.time() - 3600
        os.utime(lease, (old, old), follow_symlinks=False)
        report = cache.prune(max_bytes=0, grace_seconds=0)
    assert not report.busy
    assert outside.read_bytes() == b"keep me"
