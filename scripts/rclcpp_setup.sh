#!/usr/bin/env bash
# Builds ROS 2 Jazzy's C++ client library (rclcpp 28.1.6 with rclcpp_components,
# rclcpp_action, rclcpp_lifecycle) and what it needs that no wheel serves
# (statistics_msgs and composition_interfaces from rcl_interfaces, libstatistics_collector,
# class_loader) from the unmodified archives in ../shared/third_party/ros2-jazzy/, against the
# pip-installed .ros2/jazzy, with ros2_tracing's tracepoints on (docs/rclcpp.md).
# Called by scripts/setup.sh after scripts/ros2_setup.sh.
#
# The install is kept outside the checkout, once per machine:
#   ${XDG_CACHE_HOME:-~/.cache}/roscope/rclcpp-jazzy-<hash>
# where <hash> covers the archives' sha256s, this script, the CMake mends and the Jazzy
# requirements, so a fresh clone elsewhere on the machine (CI) reuses it. It is built in a
# temporary directory beside it and renamed when complete: a directory with that name is
# always a complete install. Where the archives are absent, it says so and exits 0.
#
# usage: scripts/rclcpp_setup.sh            build (or find) the install; prints its path
#        scripts/rclcpp_setup.sh --prefix   print the install's path if it is there (exit 0),
#                                           else why not (stderr, exit 1); builds nothing
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SELF="$ROOT/scripts/rclcpp_setup.sh"
MENDS="$ROOT/instrument/ros2/cmake/wheel_mends.cmake"
REQS=("$ROOT/instrument/ros2/requirements-jazzy.txt" "$ROOT/instrument/ros2/requirements-jazzy-rclcpp.txt")
TP="${ROSCOPE_THIRD_PARTY:-$ROOT/../shared/third_party}/ros2-jazzy"
ENV="$ROOT/.ros2/jazzy"
ARCHIVES=(rcl_interfaces-jazzy libstatistics_collector-1.7.3 class_loader-2.7.0 rclcpp-28.1.6)
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/roscope"
JOBS="${ROSCOPE_BUILD_JOBS:-$(nproc)}"

say() { echo "rclcpp_setup: $*"; }

missing=()
for a in "${ARCHIVES[@]}"; do [ -f "$TP/$a.tar.gz" ] || missing+=("$a.tar.gz"); done
if [ ${#missing[@]} -gt 0 ]; then
  msg="rclcpp skipped: the third-party sources it is built from are absent ($TP: no ${missing[*]}); the rclcpp example and its tests will skip (docs/rclcpp.md)"
  if [ "${1:-}" = "--prefix" ]; then echo "$msg" >&2; exit 1; fi
  say "$msg"; exit 0
fi

hash=$(
  {
    for a in "${ARCHIVES[@]}"; do sha256sum < "$TP/$a.tar.gz"; done
    sha256sum < "$SELF"; sha256sum < "$MENDS"
    for r in "${REQS[@]}"; do sha256sum < "$r"; done
  } | sha256sum | cut -c1-16
)
PREFIX="$CACHE_ROOT/rclcpp-jazzy-$hash"

if [ "${1:-}" = "--prefix" ]; then
  if [ -f "$PREFIX/roscope-rclcpp.json" ]; then echo "$PREFIX"; exit 0; fi
  echo "rclcpp is not built for this checkout: no $PREFIX (make setup, or bash scripts/rclcpp_setup.sh)" >&2
  exit 1
fi

t0=$(date +%s%N)
elapsed() { local t1; t1=$(date +%s%N); echo "$(( (t1 - t0) / 1000000000 )).$(( (t1 - t0) / 100000000 % 10 ))"; }

[ -x "$ENV/bin/python" ] || { echo "rclcpp_setup: no $ENV (scripts/ros2_setup.sh jazzy first)" >&2; exit 1; }
# ament_cmake and the rosidl generators in .ros2/jazzy (also what the C++ examples build with).
stamp="$ENV/.roscope-rclcpp-build-installed"
if ! cmp -s "${REQS[1]}" "$stamp"; then
  say "installing ament_cmake and the rosidl generators into $ENV (${REQS[1]#"$ROOT"/})"
  "$ENV/bin/python" -m pip install -q --disable-pip-version-check -r "${REQS[1]}"
  cp "${REQS[1]}" "$stamp"
fi

if [ -f "$PREFIX/roscope-rclcpp.json" ]; then
  say "rclcpp (Jazzy) cached in $PREFIX ($(elapsed) s)"
  exit 0
fi

mkdir -p "$CACHE_ROOT"
# One build at a time on a machine; a second setup waits, then finds the first one's install.
exec 9>"$CACHE_ROOT/.rclcpp-jazzy.lock"
flock 9
if [ -f "$PREFIX/roscope-rclcpp.json" ]; then
  say "rclcpp (Jazzy) cached in $PREFIX (built by another setup meanwhile; $(elapsed) s)"
  exit 0
fi
rm -rf "$PREFIX"   # an older layout without its manifest: never taken as complete
WORK=$(mktemp -d "$CACHE_ROOT/.rclcpp-jazzy-$hash.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE="$WORK/install"
LOG="$WORK/build.log"
say "building rclcpp (Jazzy) from $TP against $ENV into $PREFIX (first time on this machine; about 10 min on 2 cores)"

tar -xzf "$TP/rcl_interfaces-jazzy.tar.gz" -C "$WORK"
tar -xzf "$TP/libstatistics_collector-1.7.3.tar.gz" -C "$WORK"
tar -xzf "$TP/class_loader-2.7.0.tar.gz" -C "$WORK"
tar -xzf "$TP/rclcpp-28.1.6.tar.gz" -C "$WORK"

# The wheels' bundled libraries (OpenSSL, tinyxml2, ... for Fast DDS and rcl) are found by the
# linker through -rpath-link; at run time a program finds them through its own RPATH.
libdirs="$ENV/lib"
for d in "$ENV"/lib/python3*/site-packages/*.libs; do libdirs="$libdirs:$d"; done
export AMENT_PREFIX_PATH="$STAGE:$ENV"
export CMAKE_PREFIX_PATH="$STAGE:$ENV"
export PATH="$ENV/bin:$PATH"
export PYTHONPATH="$STAGE/lib/python3.11/site-packages${PYTHONPATH:+:$PYTHONPATH}"
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)

built=()
build_pkg() {  # name source_dir
  local name=$1 src=$2 s
  s=$(date +%s%N)
  if ! { cmake "${GEN[@]}" -S "$src" -B "$WORK/build/$name" \
           -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
           -DCMAKE_INSTALL_PREFIX="$STAGE" -DCMAKE_PREFIX_PATH="$STAGE;$ENV" \
           -DPython3_EXECUTABLE="$ENV/bin/python" -DCMAKE_PROJECT_INCLUDE="$MENDS" \
           -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$libdirs" \
           -DCMAKE_MODULE_LINKER_FLAGS="-Wl,-rpath-link,$libdirs" \
           -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$libdirs" \
           -DCMAKE_INSTALL_RPATH='$ORIGIN' \
         && cmake --build "$WORK/build/$name" -j "$JOBS" \
         && cmake --install "$WORK/build/$name"; } >>"$LOG" 2>&1; then
    echo "rclcpp_setup: building $name failed; the end of its log:" >&2
    tail -40 "$LOG" >&2
    return 1
  fi
  built+=("$name $(( ($(date +%s%N) - s) / 1000000 ))")
  say "  $name built ($(( ($(date +%s%N) - s) / 1000000000 )) s)"
}

build_pkg statistics_msgs "$WORK/rcl_interfaces/statistics_msgs"
build_pkg composition_interfaces "$WORK/rcl_interfaces/composition_interfaces"
build_pkg libstatistics_collector "$WORK/libstatistics_collector"
build_pkg rclcpp "$WORK/rclcpp/rclcpp"
# class_loader asks for console_bridge_vendor, which no wheel serves; Debian's
# libconsole-bridge-dev is the console_bridge it would vendor. A stand-in package says so.
mkdir -p "$STAGE/share/console_bridge_vendor/cmake"
echo "# roscope's stand-in (scripts/rclcpp_setup.sh): console_bridge is the system's" \
  > "$STAGE/share/console_bridge_vendor/cmake/console_bridge_vendorConfig.cmake"
build_pkg class_loader "$WORK/class_loader"
build_pkg rclcpp_components "$WORK/rclcpp/rclcpp_components"
build_pkg rclcpp_action "$WORK/rclcpp/rclcpp_action"
build_pkg rclcpp_lifecycle "$WORK/rclcpp/rclcpp_lifecycle"

# The manifest is written last: its presence is what says the install is complete.
{
  echo "{"
  echo "  \"hash\": \"$hash\","
  echo "  \"built_against\": \"$ENV\","
  echo "  \"built_at\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "  \"build_seconds\": $(elapsed),"
  echo "  \"packages_ms\": {"
  n=${#built[@]}; i=0
  for b in "${built[@]}"; do
    i=$((i + 1)); sep=","; [ $i -eq $n ] && sep=""
    echo "    \"${b% *}\": ${b##* }$sep"
  done
  echo "  }"
  echo "}"
} > "$STAGE/roscope-rclcpp.json"
mv -T "$STAGE" "$PREFIX"
say "rclcpp (Jazzy) built in $(elapsed) s into $PREFIX"
