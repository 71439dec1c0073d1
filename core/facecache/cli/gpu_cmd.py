"""`facecache gpu install|uninstall|status`: the opt-in NVIDIA GPU runtime (facecache.gpu)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from facecache import choices
from facecache.cli.common import add_command, print_json
from facecache.cli.models_cmd import ProgressBar
from facecache.errors import Interrupted
from facecache.gpu_runtime import pins
from facecache.gpu_runtime.driver import read_driver
from facecache.gpu.install import GpuRuntimeInstaller
from facecache.gpu_runtime.pins import this_platform
from facecache.gpu.wheels import STALL_ENV, STALL_SECONDS
from facecache.locations import GPU_RUNTIME_DIR_ENV, MODELS_DIR_ENV
from facecache.models.download import Progress
from facecache.progress import ProgressLine, bytes_of, human_bytes


def register(commands) -> None:
    parser = add_command(commands, "gpu", "install, remove and check the NVIDIA GPU runtime")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    install = add_command(actions, "install", "download onnxruntime-gpu with NVIDIA's CUDA and cuDNN libraries "
                                              "(about 2 GB) into the shared runtime folder")
    install.add_argument("--cuda", choices=pins.CUDA_MAJORS, default=None,
                         help="CUDA major (default: 13 where the driver is 580 or newer on Turing or newer GPUs, "
                              "else 12)")
    install.add_argument("--python", dest="pythons", action="append", metavar="TAG",
                         help="onnxruntime-gpu for this Python too, e.g. cp311 (Blender 4.2-5.0) or cp313 "
                              "(Blender 5.1+); repeat it (default: the Python running this command)")
    install.add_argument("--platform", choices=pins.PLATFORMS, default=None,
                         help="install for another platform (a NAS serving Windows nodes, from Linux)")
    install.add_argument("--dry-run", action="store_true",
                         help="say what would be downloaded (each wheel's file, size and pinned SHA-256), download "
                              "nothing")
    install.add_argument("--stall-timeout", type=float, default=None, metavar="SECONDS",
                         help=f"give a download up when no byte arrived for this long (default: ${STALL_ENV}, else "
                              f"{STALL_SECONDS:.0f})")
    uninstall = add_command(actions, "uninstall", "remove the NVIDIA GPU runtime of this platform")
    uninstall.add_argument("--platform", choices=pins.PLATFORMS, default=None, help="another platform's runtime")
    status = add_command(actions, "status", "which execution providers are usable here, and why the others are not")
    status.add_argument("--models-dir", type=Path, default=None,
                        help=f"models folder whose sessions are made (default: ${MODELS_DIR_ENV}, else the per-user "
                             "data folder)")
    status.add_argument("--providers", choices=choices.names(choices.PROVIDERS), default="auto",
                        help="the provider setting the model sessions are made with (default auto)")
    status.add_argument("--no-sessions", dest="sessions", action="store_false",
                        help="make no model session (faster; says less)")
    for sub in (install, uninstall, status):
        sub.add_argument("--runtime-dir", type=Path, default=None,
                         help=f"runtime folder (default: ${GPU_RUNTIME_DIR_ENV}, else the per-user data folder's "
                              "gpu-runtime)")
        sub.add_argument("--json", action="store_true", help="print one JSON object")
    install.set_defaults(run=run_install)
    uninstall.set_defaults(run=run_uninstall)
    status.set_defaults(run=run_status)


def run_install(args: argparse.Namespace) -> int:
    try:
        installer = GpuRuntimeInstaller(args.runtime_dir, platform=args.platform, stall=args.stall_timeout)
        # the driver read once (nvidia-smi) for the plan shown and the install, which then says why its CUDA
        driver = read_driver() if installer.location.platform == this_platform() else None
        plan = installer.plan(args.cuda, args.pythons, driver)
    except KeyboardInterrupt:
        raise Interrupted("interrupted before the download began: nothing was downloaded or installed") from None
    try:
        return _install(args, installer, driver, plan)
    except KeyboardInterrupt:  # the install itself says what it leaves (Interrupted): this one came from outside
        # its bounds, or a second Ctrl-C while it stopped
        raise Interrupted("interrupted: run `facecache gpu install` again (it removes anything this run left "
                          "part-way and fetches only the wheels not kept whole), or `facecache gpu uninstall` to "
                          "remove it all") from None


def _install(args: argparse.Namespace, installer: GpuRuntimeInstaller, driver, plan) -> int:
    if args.dry_run:
        if args.json:
            print_json(args, {"folder": str(installer.location.folder), **plan.as_dict()})
        else:
            print(f"CUDA {plan.cuda} ({plan.reason}) into {installer.location.folder}: "
                  + (f"{len(plan.wheels)} wheels, {human_bytes(plan.download_bytes)} to download, each checked "
                     "against its pinned size and SHA-256:" if plan.wheels else "already installed"))
            for wheel in plan.wheels:
                print(f"  {wheel.filename}  {wheel.size} bytes  sha256:{wheel.sha256}")
        return 0
    if not args.json:
        print(f"CUDA {plan.cuda} ({plan.reason}): {human_bytes(plan.download_bytes)} to download into "
              f"{installer.location.folder}", file=sys.stderr)
    if sys.stderr.isatty() and not args.json:
        bar = ProgressBar(sys.stderr)
        try:
            report = installer.install(args.cuda, args.pythons, progress=bar, driver=driver)
        finally:
            bar.finish()
    else:
        lines = InstallLines(sys.stderr)
        try:
            report = installer.install(args.cuda, args.pythons, progress=lines, driver=driver)
        finally:
            lines.close()
    if args.json:
        print_json(args, report.as_dict())
        return 0
    state = "installed" if report.plan.wheels else "already installed"
    print(f"NVIDIA GPU runtime (CUDA {report.plan.cuda}, onnxruntime-gpu {pins.ONNXRUNTIME[report.plan.cuda]}) "
          f"{state} in {report.folder} for {', '.join(report.pythons)}: {human_bytes(report.disk_bytes)} on disk")
    print("check it with `facecache gpu status`; remove it with `facecache gpu uninstall`")
    return 0


class InstallLines:
    """Off a terminal (a log, a pipe, a farm): the bytes downloaded so far, every few seconds and again while
    nothing arrives (facecache.progress.ProgressLine), then one line a wheel unpacked."""

    LABEL = "installing the NVIDIA GPU runtime"

    def __init__(self, stream):
        self.stream = stream
        self.bytes = ProgressLine(self.LABEL, stream, terminal=False, counts=bytes_of)

    def __call__(self, event: Progress) -> None:
        if event.total:
            self.bytes(event.done, event.total, event.file)
        else:  # a step without bytes: unpacking a wheel
            self.bytes.close()
            self.stream.write(f"{self.LABEL}: {event.file}\n")
            self.stream.flush()

    def close(self) -> None:
        self.bytes.close()


def run_uninstall(args: argparse.Namespace) -> int:
    installer = GpuRuntimeInstaller(args.runtime_dir, platform=args.platform)
    freed = installer.uninstall()
    if args.json:
        print_json(args, {"folder": str(installer.location.folder), "freed_bytes": freed})
    elif freed:
        print(f"removed the NVIDIA GPU runtime from {installer.location.folder} ({human_bytes(freed)} freed)")
    else:
        print(f"no NVIDIA GPU runtime in {installer.location.folder}")
    return 0


def run_status(args: argparse.Namespace) -> int:
    from facecache.gpu.status import gpu_status

    report = gpu_status(args.runtime_dir, args.models_dir, args.providers, args.sessions)
    if args.json:
        print_json(args, report)
        return 0
    for line in describe(report):
        print(line)
    return 0


def describe(report: dict) -> list[str]:
    """The status report in a few lines."""
    lines = []
    driver = report["driver"]
    lines.append(f"NVIDIA driver   {driver['version']} (" + ", ".join(
        f"{g['name']} {g['compute_capability']}".strip() for g in driver["gpus"]) + ")"
                 if driver["present"] else f"NVIDIA driver   none: {driver['problem']}")
    runtime = report["runtime"]
    if runtime["installed"]:
        lines.append(f"NVIDIA runtime  CUDA {runtime['cuda']}, onnxruntime-gpu {runtime['onnxruntime']} for "
                     f"{', '.join(runtime['pythons'])} in {runtime['platform_folder']} "
                     f"({human_bytes(runtime['disk_bytes'])})" + (f"; {runtime['problem']}" if runtime["problem"] else ""))
    else:
        plan = report.get("install_plan", {})
        size = f" ({human_bytes(plan['download_bytes'])} download, CUDA {plan['cuda']})" if "download_bytes" in plan else ""
        lines.append(f"NVIDIA runtime  not installed in {runtime['folder']}" + (
            f": `facecache gpu install`{size}" if report.get("cuda_choice") else ""))
    ort = report["onnxruntime"]
    lines.append(f"onnxruntime     {ort['version']} from {ort['path']}" if "version" in ort else f"onnxruntime     {ort['error']}")
    libraries = report.get("libraries", {})
    for library in libraries.get("libraries", []) + [libraries.get("driver_library") or {"loaded": True}]:
        if not library["loaded"]:
            lines.append(f"  {library['name']}: did not load ({library['error']})"
                         + (" (optional)" if library["optional"] else ""))
    for name, state in report["providers"].items():
        mark = {True: "usable", False: "NOT usable", None: "not checked"}[state["usable"]]
        lines.append(f"{name:<26} {mark}: {state['reason']}")
    for name, model in report.get("sessions", {}).get("models", {}).items():
        lines.append(f"  {name}: {model['error']}" if "error" in model else
                     f"  {name}: runs on {', '.join(model['runs_on'])} (asked {', '.join(model['asked'])})")
    return lines
