#!/usr/bin/env bash
# The test suite as on a fresh machine with nothing but Go installed: in a
# private mount namespace (this process tree only; nothing changes outside
# it) the vendor libraries (libXNNPACK, libpthreadpool, libffi), the C
# compilers, node/npm and protoc with its Go plugins, and the external test
# material ../shared are made to vanish, every SWITCHYARD_* variable is
# cleared, and `go test -count=1 ./...` must pass: every test that needs one
# of them skips with its reason. Then it checks that the hiding is real:
# with SWITCHYARD_REQUIRE_BACKENDS naming xnnpack and cabi, their tests must
# fail, naming the missing libraries and gcc.
#
# Usage: .ci/fresh-machine.sh [PACKAGES...]   (default ./...)
# Needs unshare(1) (util-linux) and mount rights: run as root (`unshare -m`)
# or where unprivileged user namespaces are allowed (`unshare -rm`).
#
# How entries vanish: an overlay whose top layer holds whiteouts for them is
# mounted over their directory (the dynamic loader, purego's dlopen and
# exec.LookPath then find nothing); where overlayfs is unavailable, the
# directory is replaced by a tmpfs of symlinks to all its other entries
# (SWITCHYARD_FRESH_FARM=1 forces that way, to test it).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"

if [ "${SWITCHYARD_FRESH_NS:-}" != 1 ]; then
  scratch="$(mktemp -d /tmp/switchyard-fresh.XXXXXX)"
  trap 'rmdir "$scratch" 2>/dev/null || true' EXIT
  if [ "$(id -u)" = 0 ]; then ns=(unshare --mount --propagation private)
  else ns=(unshare --map-root-user --mount --propagation private); fi
  start=$(date +%s)
  rc=0
  SWITCHYARD_FRESH_NS=1 SWITCHYARD_FRESH_SCRATCH="$scratch" "${ns[@]}" "$0" "$@" || rc=$?
  echo "fresh-machine run: $(( $(date +%s) - start )) s, exit status $rc"
  exit $rc
fi

scratch="$SWITCHYARD_FRESH_SCRATCH"
mount -t tmpfs switchyard-fresh "$scratch"
layer=0
hidden=()
modes=""

# hide DIR GLOB...: the entries of DIR matching the globs vanish.
hide() {
  local dir="$1"; shift
  [ -d "$dir" ] || return 0
  dir="$(realpath "$dir")"
  local names=() pat f
  declare -A seen=()
  shopt -s nullglob dotglob
  for pat in "$@"; do
    for f in "$dir"/$pat; do
      f="${f##*/}"
      if { [ -e "$dir/$f" ] || [ -L "$dir/$f" ]; } && [ -z "${seen[$f]:-}" ]; then
        seen[$f]=1
        names+=("$f")
      fi
    done
  done
  shopt -u nullglob dotglob
  [ ${#names[@]} -gt 0 ] || return 0
  layer=$((layer + 1))
  local wh="$scratch/whiteout$layer" n ok=1
  mkdir "$wh"
  for n in "${names[@]}"; do mknod "$wh/$n" c 0 0 2>/dev/null || ok=0; done
  if [ $ok = 1 ] && [ "${SWITCHYARD_FRESH_FARM:-}" != 1 ] && mount -t overlay "fresh$layer" -o "lowerdir=$wh:$dir" "$dir" 2>/dev/null; then
    modes="$modes overlay:$dir"
  else
    local orig="$scratch/orig$layer" farm="$scratch/farm$layer" e skip
    mkdir "$orig" "$farm"
    mount --bind "$dir" "$orig"
    shopt -s nullglob dotglob
    for e in "$orig"/*; do
      skip=0
      for n in "${names[@]}"; do [ "${e##*/}" = "$n" ] && skip=1; done
      [ $skip = 1 ] || ln -s "$e" "$farm/${e##*/}"
    done
    shopt -u nullglob dotglob
    mount --bind "$farm" "$dir"
    modes="$modes symlinks:$dir"
  fi
  for n in "${names[@]}"; do hidden+=("$dir/$n"); done
}

# The vendor libraries, wherever the loader finds them.
vendor='libXNNPACK* libpthreadpool* libffi* libvulkan*'
libdirs=()
while read -r p; do libdirs+=("$(dirname "$(realpath "$p")")" "$(dirname "$p")"); done < <(
  ldconfig -p 2>/dev/null | awk '/(libXNNPACK|libpthreadpool|libffi|libvulkan)/ {print $NF}')
libdirs+=(/usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib /usr/local/lib /usr/lib64)
declare -A done_dirs=()
for d in "${libdirs[@]}"; do
  [ -d "$d" ] || continue
  d="$(realpath "$d")"
  [ -z "${done_dirs[$d]:-}" ] || continue
  done_dirs[$d]=1
  # shellcheck disable=SC2086
  hide "$d" $vendor
done

# The peers' libraries fetched into the cache (.ci/install.d/tflite.sh).
if [ -d "${HOME}/.cache/switchyard/tflite-peer" ]; then
  hide "$(realpath "${HOME}/.cache/switchyard/tflite-peer")" 'libtensorflowlite_c*'
fi

# The tools a fresh machine lacks, in every PATH directory.
tools='gcc gcc-* cc c89 c99 c89-gcc c99-gcc *-linux-gnu-gcc* g++ g++-* c++ *-linux-gnu-g++* clang clang-* tcc node nodejs npm npx protoc protoc-* protoc-gen-go protoc-gen-go-grpc glslangValidator spirv-val'
IFS=: read -r -a pathdirs <<<"$PATH"
for d in "${pathdirs[@]}"; do
  [ -d "$d" ] || continue
  d="$(realpath "$d")"
  [ -z "${done_dirs[$d]:-}" ] || continue
  done_dirs[$d]=1
  # shellcheck disable=SC2086
  hide "$d" $tools
done

# The external test material: an empty directory.
if [ -d "$root/../shared" ]; then
  mount -t tmpfs -o ro,size=64k switchyard-fresh-shared "$(realpath "$root/../shared")"
fi

# A new user's environment: none of the project's knobs, no C toolchain.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^SWITCHYARD_' || true)
unset CC CXX CGO_ENABLED LD_LIBRARY_PATH LD_PRELOAD

fail() { echo "fresh-machine: $*" >&2; exit 1; }
for f in "${hidden[@]}"; do [ ! -e "$f" ] || fail "$f is still visible"; done
for t in gcc cc node protoc protoc-gen-go; do
  ! command -v "$t" >/dev/null 2>&1 || fail "$t is still on PATH ($(command -v "$t"))"
done
[ -z "$(ls -A "$root/../shared" 2>/dev/null)" ] || fail "../shared is still visible"
[ "$(go env CGO_ENABLED)" = 0 ] || fail "go still finds a C compiler"
echo "fresh-machine: hidden ${#hidden[@]} entries (${hidden[*]##*/}) by${modes}; ../shared emptied"

# The README's test command.
go test -count=1 "${@:-./...}"

# The hiding is real for the loader and for gcc: required, the backends fail.
out="$(SWITCHYARD_REQUIRE_BACKENDS=xnnpack go test -count=1 -run '^TestOpsAgainstCPU$' ./plugins/xnnpack 2>&1)" &&
  fail "xnnpack tests passed with the libraries hidden: $out"
for lib in libpthreadpool.so.0 libXNNPACK.so.0 libffi.so.8; do
  grep -q "cannot open $lib (Debian: apt-get install" <<<"$out" || fail "xnnpack's required failure does not name $lib: $out"
done
out="$(SWITCHYARD_REQUIRE_BACKENDS=cabi go test -count=1 -run '^TestDelegateErrorReachesApp$' ./plugins/cabi 2>&1)" &&
  fail "cabi tests passed with gcc hidden: $out"
grep -q "gcc is not installed" <<<"$out" || fail "cabi's required failure does not name gcc: $out"
out="$(SWITCHYARD_REQUIRE_BACKENDS=vulkan go test -count=1 -run '^TestOpsAgainstCPU$' ./plugins/vulkan 2>&1)" &&
  fail "vulkan tests passed with the loader hidden: $out"
grep -q "cannot open libvulkan.so.1 (Debian: apt-get install libvulkan1)" <<<"$out" || fail "vulkan's required failure does not name libvulkan.so.1: $out"
echo "fresh-machine: with SWITCHYARD_REQUIRE_BACKENDS=xnnpack / cabi / vulkan their tests fail, naming the three libraries / gcc / the loader"
