"""`facecache cache stats|verify|prune|clear`."""

from __future__ import annotations

import argparse
import datetime

from facecache import protocol
from facecache.cli.common import (add_cache_options, add_command, add_remote_cache_option, open_cache, parse_duration,
                                  parse_size, print_json)
from facecache.progress import human_bytes


def register(commands) -> None:
    parser = add_command(commands, "cache", "inspect and maintain the cache folder")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    stats = add_command(actions, "stats", "entries, bytes and namespaces")
    verify = add_command(actions, "verify", "check every pack; set aside bad ones")
    prune = add_command(actions, "prune", "evict least recently used packs and stale namespaces")
    clear = add_command(actions, "clear", "remove every cached result")
    for sub in (stats, verify, prune, clear):
        add_cache_options(sub, size_cap=sub is prune)  # only prune evicts down to a size
        sub.add_argument("--json", action="store_true", help="print one JSON object")
    add_remote_cache_option(stats, "also count the packs of this remote cache tier")
    prune.add_argument("--stale", type=parse_duration, default=None,
                       help="also remove namespaces unused for this long, e.g. 30d")
    stats.set_defaults(run=run_stats)
    verify.set_defaults(run=run_verify)
    prune.set_defaults(run=run_prune)
    clear.set_defaults(run=run_clear)


def run_stats(args: argparse.Namespace) -> int:
    cache = open_cache(args, create=False)  # looking changes nothing
    stats = cache.stats()
    remote = cache.remote.inventory() if cache.remote is not None else None
    if args.json:
        print_json(args, {**stats.as_dict(), **({protocol.REMOTE: remote.as_dict()} if remote else {})})
        return 0
    print(f"cache      {stats.root} ({'shared with its group' if stats.shared else 'private'})")
    print(f"entries    {stats.entries} frame records in {stats.packs} packs")
    print(f"size       {human_bytes(stats.bytes)}")
    print(f"namespaces {len(stats.namespaces)}")
    for ns in stats.namespaces:
        stage = (ns.description or {}).get("stage", "?")
        used = datetime.datetime.fromtimestamp(ns.last_used).isoformat(timespec="seconds") if ns.last_used else "never"
        print(f"  {ns.key[:12]}  {stage:<10} {ns.entries:>8} entries {human_bytes(ns.bytes):>10}  last used {used}")
    print(f"hits       {stats.hits.local} frame records served from the cache folder, {stats.hits.remote} from the "
          "remote tier (every run since the cache was cleared)")
    if stats.quarantined:
        print(f"set aside  {stats.quarantined} bad files in {stats.root}/quarantine (safe to delete)")
    if remote is not None:
        print(f"remote     {cache.remote.url}: {remote.packs} packs, {human_bytes(remote.bytes)}"
              + ("" if remote.reachable else " (not reachable: see the warning above)"))
    loose = stats.loose_permissions
    if loose.found:
        print(f"warning    {loose.found} entries are more open than a cache of faces may be "
              f"({loose.world_readable} world-readable), e.g. {loose.examples[0]}: `facecache cache verify` "
              "tightens those you own")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    report = open_cache(args).verify()
    if args.json:
        print_json(args, report.as_dict())
    else:
        print(f"checked {report.checked} packs: {len(report.bad)} bad (set aside)")
        for line in report.bad:
            print(f"  {line}")
        if report.temp_set_aside:
            print(f"set aside {report.temp_set_aside} temp files left by interrupted writes")
        if report.locks_cleaned:
            print(f"removed {report.locks_cleaned} stale claims and temp files from locks/")
        loose = report.loose_permissions
        if loose.tightened:
            print(f"tightened {loose.tightened} entries that were more open than a cache of faces may be")
        if loose.found > loose.tightened:
            print(f"warning: {loose.found - loose.tightened} entries are more open than they should be and not yours "
                  f"to change, e.g. {loose.examples[0]}: ask their owner to run `facecache cache verify`")
    return 0 if report.clean else 1


def run_prune(args: argparse.Namespace) -> int:
    report = open_cache(args).prune(max_bytes=args.max_bytes, stale_seconds=args.stale)
    if args.json:
        print_json(args, report.as_dict())
    elif report.busy:
        print("another process is pruning this cache right now; nothing done")
    else:
        print(f"removed {report.removed_packs} packs ({human_bytes(report.removed_bytes)}) "
              f"and {report.removed_namespaces} stale namespaces"
              + (f"; {report.locks_cleaned} stale claims and temp files from locks/" if report.locks_cleaned else ""))
    return 0


def run_clear(args: argparse.Namespace) -> int:
    cache = open_cache(args)
    cache.clear()
    if args.json:
        print_json(args, {"cleared": str(cache.root)})
    else:
        print(f"cleared {cache.root}")
    return 0
