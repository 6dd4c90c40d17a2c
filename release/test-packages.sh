#!/usr/bin/env bash
# Installs what release/dist.sh builds the way users will, offline, and
# drives it with the official TypeScript SDK client (tests/peers/node/
# package-checks.mjs): an answer over --max-frame fails its own request and
# the next call works, --clip condenses, SIGTERM to the launcher reaches the
# server. Run by scripts/test-all.sh.
#
#   bash release/test-packages.sh
#
# It builds the Linux x86_64 wheel and npm packages first (release/dist.sh
# x86_64-unknown-linux-musl), unless DRAINPIPE_PACKAGES=DIR names a dist
# output already built (as release/dist.sh leaves it). Then, from that
# output alone, in fresh directories, with nothing from any registry:
#   1. npm: the packed tarballs into a fresh prefix (`npm install --offline`);
#      `npx drainpipe`, the shim's signals and exit code, DRAINPIPE_BINARY, the message
#      when the platform package is missing, and `install` writing npx;
#   2. pip: the wheel into a fresh venv (`pip install --no-index`);
#   3. uvx: `uvx --offline --from WHEEL drainpipe` (uv from PyPI when missing),
#      and `install` writing uvx;
#   4. when the output has them: the aarch64 binary under qemu-aarch64 (the
#      same client checks), the Windows one under wine (a message framed
#      through it), the macOS binaries' Mach-O headers (`file`, and the
#      libraries they load). The macOS binaries are linked, not run: nothing
#      here runs them.
# Each step has a timeout and stops the script when it fails or runs over.
#
# Environment: DRAINPIPE_DIST_PROFILE (dist.sh's; CI sets `release`),
# CARGO_TARGET_DIR (dist.sh's), DRAINPIPE_PACKAGES.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
peers="$repo/tests/peers/node"

say() { printf '\n--- packages: %s\n' "$*"; }
die() { printf 'packages: FAILED: %s\n' "$*" >&2; exit 1; }
# bounded SECONDS WHAT COMMAND…: runs it, failing loudly on error or timeout.
bounded() {
    local seconds="$1" what="$2" status=0
    shift 2
    timeout --kill-after=10 "$seconds" "$@" || status=$?
    [ "$status" -ne 124 ] && [ "$status" -ne 137 ] || die "$what: still running after ${seconds}s"
    [ "$status" -eq 0 ] || die "$what: exit status $status"
}

[ -d "$peers/node_modules/@modelcontextprotocol/sdk" ] ||
    die "the SDK client is missing: run bash tests/peers/setup.sh first"
scratch="$(mktemp -d)"
cleanup() {
    # Anything a failed step left running, found by the tag its server has.
    pkill -TERM -f "drainpipe-package-test-$$" 2>/dev/null || true
    rm -rf "$scratch"
}
trap cleanup EXIT

say "host-adapter/js: what its package holds (npm pack --dry-run)"
# Its dist/ is built by `npm run build` (prepack runs that too).
[ -f host-adapter/js/dist/framer/framer.js ] || die "host-adapter/js/dist is not built: run npm run build there first"
listed="$(cd host-adapter/js && npm pack --dry-run --json --ignore-scripts 2>/dev/null |
    node -e 'const [p] = JSON.parse(require("fs").readFileSync(0)); console.log(p.version); for (const f of p.files) console.log(f.path)')"
for want in package.json README.md index.js index.d.ts mcp.js budget.js dist/framer/framer.js \
    dist/framer/framer.core.wasm dist/drainpipe/drainpipe.js; do
    grep -qxF "$want" <<<"$listed" || die "host-adapter/js's package lacks $want"
done
! grep -E '^(test|scripts|browser|fixtures|node_modules)/' <<<"$listed" || die "host-adapter/js packs its tests or tools"
cargo_version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
[ "$(head -1 <<<"$listed")" = "$cargo_version" ] || die "host-adapter/js is version $(head -1 <<<"$listed"), Cargo $cargo_version"
echo "packages: host-adapter/js packs $(($(wc -l <<<"$listed") - 1)) files, version $cargo_version"

if [ -z "${DRAINPIPE_PACKAGES:-}" ]; then
    say "building the Linux x86_64 wheel and the npm packages (release/dist.sh)"
    export DRAINPIPE_DIST_OUT="$scratch/out"
    bounded 3600 "release/dist.sh x86_64-unknown-linux-musl" bash release/dist.sh x86_64-unknown-linux-musl
    out="$scratch/out"
else
    out="$DRAINPIPE_PACKAGES"
fi
version="$(node -p 'require(process.argv[1]).version' "$out/npm-staged/drainpipe/package.json")"
wheel="$(ls "$out"/wheels/drainpipe-"$version"-*musllinux_1_2_x86_64.whl)"
main_tgz="$out/npm/drainpipe-$version.tgz"
x64_tgz="$out/npm/drainpipe-linux-x64-$version.tgz"
[ -f "$main_tgz" ] && [ -f "$x64_tgz" ] || die "no packed npm packages in $out/npm"
server=(node "$peers/oversized-server.mjs")

# checks WHAT COMMAND…: the SDK client's checks through `COMMAND proxy`:
# once with a frame limit (an oversize answer fails its request), once with
# a content budget (the answer is condensed; with --clip it would be even
# over the frame limit).
checks() {
    local what="$1"
    shift
    bounded 180 "$what: an answer over --max-frame" node "$peers/package-checks.mjs" over-frame -- \
        "$@" proxy --max-frame 2MiB -- "${server[@]}"
    bounded 180 "$what: an answer over --clip" node "$peers/package-checks.mjs" clip -- \
        "$@" proxy --clip 64KiB -- "${server[@]}"
    printf 'packages: %s: an oversize answer failed its request, the next call worked, --clip condensed\n' "$what"
    case " ${DRAINPIPE_DIST_FEATURES:-default} " in
        *" default "* | *" tokens "*)
            bounded 180 "$what: an answer over --clip in tokens" node "$peers/package-checks.mjs" tokens -- \
                "$@" proxy --clip 4000tokens -- "${server[@]}"
            printf 'packages: %s: --clip 4000tokens condensed\n' "$what" ;;
        *) printf 'packages: %s: built without tokens (DRAINPIPE_DIST_FEATURES=%s): no check in tokens\n' \
            "$what" "$DRAINPIPE_DIST_FEATURES" ;;
    esac
}

# signal_reaches_server WHAT COMMAND…: starts COMMAND proxy -- server (stdin
# held open), SIGTERMs COMMAND's process once the server runs, and expects
# COMMAND to end and no process of the server to be left.
signal_reaches_server() {
    local what="$1" tag="drainpipe-package-test-$$-$RANDOM" pid status=0 waited=0
    shift
    mkfifo "$scratch/stdin-$tag"
    "$@" proxy -- node "$peers/oversized-server.mjs" "$tag" \
        <"$scratch/stdin-$tag" >/dev/null 2>"$scratch/stderr-$tag" &
    pid=$!
    exec {hold}>"$scratch/stdin-$tag"
    until pgrep -f "oversized-server.mjs $tag" >/dev/null; do
        sleep 0.1
        waited=$((waited + 1))
        [ "$waited" -lt 300 ] || die "$what: the server never started ($(cat "$scratch/stderr-$tag"))"
    done
    kill -TERM "$pid"
    waited=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.1
        waited=$((waited + 1))
        [ "$waited" -lt 300 ] || die "$what: still running 30s after SIGTERM"
    done
    wait "$pid" || status=$?
    exec {hold}>&-
    waited=0
    while pgrep -f "oversized-server.mjs $tag" >/dev/null; do
        sleep 0.1
        waited=$((waited + 1))
        [ "$waited" -lt 100 ] || die "$what: the server outlived SIGTERM by 10s: $(pgrep -af "$tag")"
    done
    # 143 = 128 + SIGTERM: the launcher died of the signal its child died of,
    # or exited with the code the proxy reports for it.
    [ "$status" -eq 143 ] || die "$what: exit status $status after SIGTERM, not 143"
    printf 'packages: %s: SIGTERM ended it (status %s) and its server\n' "$what" "$status"
}

say "npm: the packed tarballs, offline, into a fresh prefix"
prefix="$scratch/npm-prefix"
npm_offline=(--offline --cache "$scratch/npm-cache" --no-audit --no-fund --loglevel=error)
mkdir -p "$prefix"
bounded 300 "npm install" npm install "${npm_offline[@]}" --prefix "$prefix" "$main_tgz" "$x64_tgz"
[ "$(ls "$prefix/node_modules/@drainpipe")" = linux-x64 ] ||
    die "npm installed $(ls "$prefix/node_modules/@drainpipe") of the platform packages, not linux-x64 alone"
got="$(cd "$prefix" && bounded 60 "npx drainpipe --version" npx --offline drainpipe --version)"
[ "$got" = "drainpipe $version" ] || die "npx drainpipe --version said: $got"
(cd "$prefix" && checks "npx drainpipe" npx --offline drainpipe)
signal_reaches_server "the npm shim" "$prefix/node_modules/.bin/drainpipe"
(cd "$prefix" && signal_reaches_server "npx drainpipe" npx --offline drainpipe)
status=0
(cd "$prefix" && timeout 60 npx --offline drainpipe proxy -- sh -c 'exit 7' </dev/null >/dev/null 2>&1) || status=$?
[ "$status" -eq 7 ] || die "npx drainpipe proxy -- (a server that exits 7) exited $status, not 7"
echo "packages: npx drainpipe exits with the server's own code (7)"
got="$(cd "$prefix" && DRAINPIPE_BINARY=/bin/echo bounded 60 "DRAINPIPE_BINARY" npx --offline drainpipe from-echo)"
[ "$got" = from-echo ] || die "DRAINPIPE_BINARY was not run: $got"
config="$scratch/claude_desktop_config.json"
printf '{"mcpServers": {"s": {"command": "node", "args": ["s.js"]}}}\n' >"$config"
got="$(cd "$prefix" && bounded 60 "npx drainpipe install --dry-run" npx --offline drainpipe install --dry-run --config "$config")"
grep -qF "\"args\": [\"-y\", \"drainpipe@$version\", \"proxy\"" <<<"$got" ||
    die "install from npx did not write npx -y drainpipe@$version: $got"
echo "packages: install run through npx writes npx -y drainpipe@$version proxy …"

say "npm: without the platform package, the shim names it"
bare="$scratch/npm-bare"
mkdir -p "$bare"
bounded 300 "npm install (main package alone)" npm install "${npm_offline[@]}" --prefix "$bare" "$main_tgz"
status=0
message="$(cd "$bare" && timeout 60 npx --offline drainpipe --version 2>&1)" || status=$?
[ "$status" -eq 1 ] && grep -qF "the package @drainpipe/linux-x64" <<<"$message" ||
    die "the missing platform package was not named (status $status): $message"
echo "packages: the shim names @drainpipe/linux-x64 when it is missing"

say "pip: the wheel, offline, into a fresh venv"
python3 -m venv "$scratch/venv"
bounded 300 "pip install" "$scratch/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$wheel"
got="$(bounded 30 "venv drainpipe --version" "$scratch/venv/bin/drainpipe" --version)"
[ "$got" = "drainpipe $version" ] || die "the wheel's drainpipe --version said: $got"
checks "the wheel's drainpipe" "$scratch/venv/bin/drainpipe"

say "uvx: the wheel, offline, from a fresh cache"
uv_bin="$(command -v uvx || true)"
if [ -z "$uv_bin" ]; then
    [ -x "$repo/release/.venv/bin/uvx" ] ||
        bounded 300 "pip install uv" "$repo/release/.venv/bin/pip" install --quiet --disable-pip-version-check uv
    uv_bin="$repo/release/.venv/bin/uvx"
fi
export UV_CACHE_DIR="$scratch/uv-cache" UV_TOOL_DIR="$scratch/uv-tools" UV_PYTHON_DOWNLOADS=never
uvx=("$uv_bin" --offline --from "$wheel" drainpipe)
got="$(bounded 120 "uvx drainpipe --version" "${uvx[@]}" --version)"
[ "$got" = "drainpipe $version" ] || die "uvx drainpipe --version said: $got"
checks "uvx drainpipe" "${uvx[@]}"
signal_reaches_server "uvx drainpipe" "${uvx[@]}"
got="$(bounded 60 "uvx drainpipe install --dry-run" "${uvx[@]}" install --dry-run --config "$config")"
grep -qF "\"command\": \"uvx\"" <<<"$got" && grep -qF "\"args\": [\"drainpipe@$version\", \"proxy\"" <<<"$got" ||
    die "install from uvx did not write uvx drainpipe@$version: $got"
echo "packages: install run through uvx writes uvx drainpipe@$version proxy …"
unset UV_CACHE_DIR UV_TOOL_DIR

if [ -f "$out/bin/linux-arm64/drainpipe" ]; then
    say "Linux aarch64 under qemu-aarch64"
    command -v qemu-aarch64 >/dev/null ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user >/dev/null; }
    arm=(qemu-aarch64 "$out/bin/linux-arm64/drainpipe")
    file -b "$out/bin/linux-arm64/drainpipe" | grep -q 'ARM aarch64.*statically linked' ||
        die "not a static aarch64 binary: $(file -b "$out/bin/linux-arm64/drainpipe")"
    got="$(bounded 60 "qemu drainpipe --version" "${arm[@]}" --version)"
    [ "$got" = "drainpipe $version" ] || die "qemu-aarch64 drainpipe --version said: $got"
    checks "aarch64 under qemu" "${arm[@]}"
fi
for platform in darwin-x64 darwin-arm64; do
    [ -f "$out/bin/$platform/drainpipe" ] || continue
    say "$platform: linked, header checked (not run here)"
    want='Mach-O 64-bit x86_64 executable'
    [ "$platform" = darwin-arm64 ] && want='Mach-O 64-bit arm64 executable'
    file -b "$out/bin/$platform/drainpipe" | grep -qF "$want" ||
        die "$platform: $(file -b "$out/bin/$platform/drainpipe"), not $want"
    # The libraries it loads are named in its header (the first pages): the
    # system's own (libSystem, libiconv), no framework, which zig could not
    # have linked without Apple's SDK and which would not load everywhere.
    ! head -c 65536 "$out/bin/$platform/drainpipe" | grep -aq '/System/Library/Frameworks/' ||
        die "$platform: links an Apple framework"
    head -c 65536 "$out/bin/$platform/drainpipe" | grep -aq '/usr/lib/libSystem.B.dylib' ||
        die "$platform: no libSystem in its header"
    echo "packages: $platform: $want, loading libSystem and no framework"
done
if [ -f "$out/bin/win32-x64/drainpipe.exe" ]; then
    say "win32-x64: header checked, and a frame through it under wine"
    file -b "$out/bin/win32-x64/drainpipe.exe" | grep -qF 'PE32+ executable (console) x86-64' ||
        die "win32-x64: $(file -b "$out/bin/win32-x64/drainpipe.exe")"
    # As in scripts/test-all.sh: wine 8.0 lacks the DLL Rust's std takes
    # random bytes from, so a stand-in is built beside the .exe (a copy, the
    # output stays as built); a private prefix, ended after.
    [ -x /usr/lib/wine/wine64 ] ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wine64 gcc-mingw-w64-x86-64 >/dev/null; }
    mkdir -p "$scratch/win"
    cp "$out/bin/win32-x64/drainpipe.exe" "$scratch/win/"
    x86_64-w64-mingw32-gcc -shared -O2 -o "$scratch/win/bcryptprimitives.dll" \
        test-support/wine/bcryptprimitives.c -ladvapi32
    export WINEPREFIX="$scratch/wine-prefix" WINEDEBUG=-all
    message='{"jsonrpc":"2.0","id":1,"method":"ping"}'
    got="$(printf '%s\n' "$message" | bounded 300 "wine drainpipe.exe frame" /usr/lib/wine/wine64 "$scratch/win/drainpipe.exe" frame 2>/dev/null | tr -d '\r')"
    /usr/lib/wine/wineserver64 -k 2>/dev/null || true
    unset WINEPREFIX
    [ "$got" = "$message" ] || die "win32-x64 under wine: drainpipe.exe frame gave: $got"
    echo "packages: win32-x64: PE32+ x86-64; under wine it frames a message through"
fi
say "every package check passed"
