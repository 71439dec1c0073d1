#!/bin/sh
# In the Debian 13 root: one Blender window on a virtual X display, playing one GUI scenario.
#   in_window.sh JOB.json FILE.blend BLENDER_USER_DIR WIDTHxHEIGHT
# Xvfb (with GLX: Mesa's llvmpipe draws Blender's OpenGL) picks a free display itself; Blender opens FILE.blend
# in a window of the screen's size at (0, 0) with the extension installed in BLENDER_USER_DIR, and driver.py
# plays the scenario the job names, then quits Blender. Xvfb ends with it. Exit status: Blender's.
set -eu
job=$1 blend=$2 user=$3 size=$4
here=$(dirname "$0")
out=$(dirname "$job")
width=${size%x*} height=${size#*x}

exec 3>"$out/display"
Xvfb -displayfd 3 -screen 0 "${size}x24" +extension GLX -nolisten tcp -noreset >"$out/xvfb.log" 2>&1 &
xvfb=$!
trap 'kill $xvfb 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$out/display" ] && break; sleep 0.1; done
[ -s "$out/display" ] || { echo "Xvfb did not start:" >&2; cat "$out/xvfb.log" >&2; exit 1; }
export DISPLAY=":$(cat "$out/display")"

status=0
BLENDER_USER_RESOURCES=$user timeout 600 blender -noaudio -w -p 0 0 "$width" "$height" "$blend" \
    --python-exit-code 1 --python "$here/driver.py" -- "$job" || status=$?
exit $status
