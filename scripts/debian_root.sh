#!/usr/bin/env bash
# A Debian 13 root for what the host (Debian 12, Python 3.11) cannot run: the bpy 5.2.3 module (Blender 5.1+
# run Python 3.13 with numpy 2) and a real `blender` binary (Debian's 4.3.2, on the system's Python 3.13).
# Built from Debian's packages with mmdebstrap; needs root (as CI runs), like the NAS tests' sshfs.
#
#   scripts/debian_root.sh ensure          build the root when it is missing or was left half-built, and bring
#                                          its packages and virtual environments up to date
#   scripts/debian_root.sh run CMD [ARG]   run CMD inside the root, in this checkout (ensure runs first when the
#                                          root is missing or unfinished; it is not run on a finished one)
#
# Inside, this checkout is at its own path (so paths printed or passed in mean the same on both sides), the
# host's /tmp is /tmp, and the environment is clean but for the project's own
# variables (VSE_FACESWAP_*, FACECACHE_*, FACESWAP_*, BLENDER_*, PYTEST_*). What it holds:
#   /usr/bin/blender      Debian's Blender 4.3.2 (python3-numpy as its numpy; python3-pip, which the extension's
#                         model and sample downloads run on Blender's Python)
#   /opt/bpy5.2           python3.13 venv: bpy 5.2.3 (numpy as it brings it), the engine's requirements, the
#                         `test`, `farm` and `remote` extras (the remote tests look into the bucket with botocore)
#   /opt/bpy5.1           the same with bpy 5.1.2 and without ONNX Runtime (the add-on's engine runs on the
#                         wheels the built zip vendors, as in the 4.2 and 4.5 LTS environments)
#   /opt/blender4.3       python3.13 venv over the system's packages: the `test`, `farm` and `remote` extras and the
#                         engine's requirements but ONNX Runtime, for pytest run inside Debian's Blender
#                         (scripts/pytest_in_blender.py; the add-on's engine runs on the zip's own wheels)
#   sshd, sshfs, node     the NAS and Flamenco tests, as on the host
#   Xvfb, Mesa, xdotool, ImageMagick, tesseract   the GUI suite (tests/gui, ./dev gui-test)
#
# VSE_FACESWAP_DEBIAN_ROOT names the root's folder (default: build/debian13 in this checkout); point several
# checkouts at one folder to share it. A root is complete once mmdebstrap has finished: it is built in
# <root>.part and renamed, and a <root>.part left by a broken build is removed before the next one.
#
# Mounts (/dev, /proc, /sys, /tmp, this checkout) are made in a private mount namespace
# (`unshare --mount`) that ends with the command: the host never sees them, nothing is left mounted after a
# crash or a kill, and `rm -rf build` stays safe while a command runs. mmdebstrap runs in one as well.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd -P)
ROOT=${VSE_FACESWAP_DEBIAN_ROOT:-$REPO/build/debian13}
MIRROR=http://deb.debian.org/debian
# What the root holds besides `minbase`; a change here is installed into an existing root on the next ensure.
PACKAGES=(
    python3.13 python3.13-venv ca-certificates
    # the X client libraries the bpy module links to
    libx11-6 libxrender1 libxxf86vm1 libxfixes3 libxi6 libxkbcommon0 libsm6 libgl1 libegl1 libwayland-client0
    libglib2.0-0 libxext6
    blender python3-numpy python3-pip
    openssh-server sshfs nodejs
    # the extension in Blender's own Windows build (scripts/windows_blender.py): Wine 10 reads images, Wine 8 cannot
    wine wine64
    # the GUI suite (tests/gui): Blender's real window on a virtual X display drawn by Mesa's llvmpipe, pointer
    # and keys through xdotool, screenshots and crops with ImageMagick, OCR with tesseract
    xvfb libgl1-mesa-dri xdotool imagemagick tesseract-ocr
)
BPY=5.2.3  # the whole Blender suite runs on it
BPY_PREVIOUS=5.1.2  # the `every_blender` tests run on it

die() { echo "debian_root.sh: $*" >&2; exit 1; }

mounted_under() {  # mounted_under DIR: whether anything is mounted at DIR or below it, as this process sees it
    awk -v dir="$1" '$5 == dir || index($5, dir "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo
}

remove_tree() {  # remove_tree DIR: delete a (half-built) root, never through a mount
    local dir=$1
    [ -e "$dir" ] || return 0
    if mounted_under "$dir"; then
        die "$dir has something mounted inside it; unmount it (findmnt -R $dir) before it can be rebuilt"
    fi
    rm -rf --one-file-system "$dir"
}

# in_root [--no-repo] CMD...: run CMD chrooted in the root, in a private mount namespace.
in_root() {
    local repo_mount=1
    if [ "${1:-}" = --no-repo ]; then repo_mount=0; shift; fi
    local certs=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
    # The host's CA bundle (it may hold a proxy's authority that pip and the engine's installers need).
    [ -r "$certs" ] && cp "$certs" "$ROOT/etc/ssl/certs/ca-certificates.crt"
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    [ "$repo_mount" = 0 ] || mkdir -p "$ROOT$REPO"
    local env=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
               "TERM=${TERM:-dumb}" SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
               REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt
               "PIP_DEFAULT_TIMEOUT=${PIP_DEFAULT_TIMEOUT:-60}" DEBIAN_FRONTEND=noninteractive)
    local name
    while IFS= read -r name; do env+=("$name=${!name}"); done < <(compgen -e | grep -E '^(VSE_FACESWAP|FACECACHE|FACESWAP|BLENDER|PYTEST)_')
    local workdir=/
    [ "$repo_mount" = 0 ] || workdir=$REPO
    unshare --mount --propagation private -- bash -euc '
        root=$1 repo=$2; shift 2
        mount --rbind /dev "$root/dev"
        mount -t proc proc "$root/proc"
        mount --rbind /sys "$root/sys"
        mount --bind /tmp "$root/tmp"
        if [ -n "$repo" ]; then mount --bind "$repo" "$root$repo"; fi
        exec chroot "$root" /usr/bin/env -i "$@"
    ' in_root "$ROOT" "$([ "$repo_mount" = 1 ] && echo "$REPO")" \
        "${env[@]}" /bin/sh -c 'cd "$0" && exec "$@"' "$workdir" "$@"
}

build_base() {  # mmdebstrap into <root>.part, then rename: a root that exists is a finished one
    command -v mmdebstrap >/dev/null || {
        echo "== installing mmdebstrap for the Debian 13 root =="
        # waits for another apt or dpkg to let go of its lock, as ./dev's installs do
        apt-get -o DPkg::Lock::Timeout=600 update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends mmdebstrap >/dev/null
    }
    remove_tree "$ROOT.part"
    echo "== building the Debian 13 root in $ROOT (mmdebstrap, ${#PACKAGES[@]} packages and their dependencies) =="
    local include
    include=$(IFS=,; echo "${PACKAGES[*]}")
    unshare --mount --propagation private -- \
        mmdebstrap --quiet --variant=minbase --include="$include" trixie "$ROOT.part" "$MIRROR"
    printf '%s\n' "${PACKAGES[@]}" > "$ROOT.part/etc/vse_faceswap-packages"
    mv "$ROOT.part" "$ROOT"
}

install_packages() {  # an existing root whose package list is older than PACKAGES
    local wanted
    wanted=$(printf '%s\n' "${PACKAGES[@]}")
    [ "$wanted" = "$(cat "$ROOT/etc/vse_faceswap-packages" 2>/dev/null)" ] && return 0
    echo "== installing the Debian 13 root's new packages =="
    in_root --no-repo sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" >/dev/null' \
        apt "${PACKAGES[@]}"
    echo "$wanted" > "$ROOT/etc/vse_faceswap-packages"
}

READY=opt/vse_faceswap-venvs-ready  # in the root, once its venvs were last brought up to date in full

refresh_venvs() {  # create (or finish) the venvs, then install what they lack (a no-op when nothing changed)
    rm -f "$ROOT/$READY"
    in_root bash -euc '
        venv() {  # venv DIR REQUIREMENTS_OPTIONS [VENV_OPTIONS]: a venv whose pip runs (one cut short is made
            dir=$1 options=$2; shift 2  # again), with the requirements of the engine and the test extras
            "$dir/bin/python" -m pip --version >/dev/null 2>&1 || python3.13 -m venv --clear "$@" "$dir"
            python3.13 scripts/requirements.py --extras test farm remote $options > "$dir/requirements.txt"
        }
        pip_install() { "$1/bin/python" -m pip install --quiet --no-warn-conflicts -r "$1/requirements.txt" "${@:2}"; }
        venv /opt/bpy5.2 ""
        pip_install /opt/bpy5.2 "bpy==$0"
        venv /opt/bpy5.1 --no-onnxruntime
        pip_install /opt/bpy5.1 "bpy==$1"
        venv /opt/blender4.3 --no-onnxruntime --system-site-packages
        /usr/bin/python3 -c "import numpy; print(\"numpy==\" + numpy.__version__)" > /opt/blender4.3/constraints.txt
        pip_install /opt/blender4.3 -c /opt/blender4.3/constraints.txt
    ' "$BPY" "$BPY_PREVIOUS"
    touch "$ROOT/$READY"
}

ensure() {
    [ "$(id -u)" = 0 ] || die "building or entering the Debian 13 root needs root (chroot, mounts): run as root"
    mkdir -p "$(dirname "$ROOT")"
    exec 9>"$ROOT.lock"
    flock 9  # one build at a time, whichever checkout shares the root
    [ -d "$ROOT" ] || build_base
    install_packages
    refresh_venvs
    flock -u 9
}

case "${1:-}" in
    ensure) ensure ;;
    run)
        [ $# -ge 2 ] || die "usage: scripts/debian_root.sh run CMD [ARG...]"
        [ -e "$ROOT/$READY" ] || ensure
        in_root "${@:2}"
        ;;
    *) sed -n '5,8p' "$0" >&2; exit 2 ;;
esac
