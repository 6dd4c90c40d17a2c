#!/usr/bin/env bash
# Builds what drainpipe ships, from a Linux x86_64 machine: one binary per
# platform, the wheel that carries it, and the npm packages.
#
#   bash release/dist.sh                       # all five targets
#   bash release/dist.sh x86_64-unknown-linux-musl
#
# Targets, and what links them:
#   x86_64-unknown-linux-musl, aarch64-unknown-linux-musl   static, run on any
#       Linux (glibc or musl); linked by zig (cargo-zigbuild)
#   x86_64-apple-darwin, aarch64-apple-darwin   linked by zig without an
#       Apple SDK, which works because the CLI links no Apple framework
#   x86_64-pc-windows-gnu                       linked by mingw (Debian)
#
# Each target is built once, by maturin (the wheel); the binary for the npm
# package and for release/out/bin is taken out of that wheel, so all three
# carry the same bytes. Out, in $DRAINPIPE_DIST_OUT (default release/out):
#   wheels/drainpipe-V-py3-none-TAG.whl
#   bin/PLATFORM/drainpipe[.exe]        PLATFORM as Node names it: linux-x64, …
#   npm/*.tgz                           drainpipe and @drainpipe/PLATFORM
#   sizes.tsv                           bytes, stripped and gzipped, per binary
#
# Environment:
#   CARGO_TARGET_DIR         default target/dist: a build directory of its own,
#                            so a dist build never waits on another build's lock
#   DRAINPIPE_DIST_PROFILE   default dist (see Cargo.toml); `release` builds faster
#   DRAINPIPE_DIST_FEATURES  default "default": every feature of the CLI (the
#                            sandbox, OpenTelemetry, token budgets, proxy --url
#                            and serve); a list such as "tokens" builds only
#                            those; "none" builds without any
#
# Needs rustup, node with npm, python3; installs the Rust targets, and
# maturin, cargo-zigbuild and ziglang (from PyPI, into release/.venv), and
# Debian's mingw for Windows, when missing.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"

say() { printf 'dist: %s\n' "$*"; }
die() { printf 'dist: %s\n' "$*" >&2; exit 1; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target/dist}"
profile="${DRAINPIPE_DIST_PROFILE:-dist}"
features="${DRAINPIPE_DIST_FEATURES:-default}"
out="${DRAINPIPE_DIST_OUT:-$repo/release/out}"
version="$(cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "drainpipe-cli"))')"

all=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-pc-windows-gnu
    x86_64-apple-darwin aarch64-apple-darwin)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# The platform's name in Node's terms (the npm package's), and the wheel's
# platform tag(s) for maturin.
platform() {
    case "$1" in
        x86_64-unknown-linux-musl) echo linux-x64 ;;
        aarch64-unknown-linux-musl) echo linux-arm64 ;;
        x86_64-pc-windows-gnu) echo win32-x64 ;;
        x86_64-apple-darwin) echo darwin-x64 ;;
        aarch64-apple-darwin) echo darwin-arm64 ;;
        *) die "unknown target $1 (known: ${all[*]})" ;;
    esac
}

# --- tools -------------------------------------------------------------------
tools="$repo/release/.venv"
if [ ! -x "$tools/bin/maturin" ] || [ ! -x "$tools/bin/cargo-zigbuild" ]; then
    say "installing maturin, cargo-zigbuild and ziglang into release/.venv"
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet --disable-pip-version-check \
        'maturin>=1.9,<2' 'cargo-zigbuild>=0.20' 'ziglang>=0.13'
fi
export PATH="$tools/bin:$PATH"
rustup target add wasm32-unknown-unknown "${targets[@]}" >/dev/null 2>&1 ||
    rustup target add wasm32-unknown-unknown "${targets[@]}"
if [[ " ${targets[*]} " == *windows-gnu* ]] && ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-mingw-w64-x86-64 >/dev/null
fi

# The macOS builds must link no Apple framework (zig has no SDK to offer).
for target in "${targets[@]}"; do
    [[ "$target" == *apple-darwin ]] || continue
    if cargo tree -p drainpipe-cli --target "$target" -e normal --prefix none |
        grep -E '^(core-foundation|security-framework|system-configuration|iana-time-zone)'; then
        die "the CLI's tree for $target pulls in the Apple framework crates above"
    fi
done

# --- build -------------------------------------------------------------------
mkdir -p "$out/wheels" "$out/bin"
for target in "${targets[@]}"; do
    name="$(platform "$target")"
    say "building $target ($name), profile $profile, features: $features"
    flags=(--profile "$profile" --target "$target")
    case "$features" in
        default) ;;
        none) flags+=(--no-default-features) ;;
        *) flags+=(--no-default-features --features "$features") ;;
    esac
    case "$target" in
        # Static musl binaries run on glibc systems too: tag both.
        *linux-musl) flags+=(--zig --compatibility manylinux2014 musllinux_1_2) ;;
        *apple-darwin) flags+=(--zig) ;;
    esac
    fresh="$(mktemp -d)"
    # From release/python: maturin reads the pyproject.toml where it runs,
    # and that file points it at cli/Cargo.toml.
    (cd release/python && maturin build "${flags[@]}" --out "$fresh")
    made="$(ls "$fresh"/drainpipe-"$version"-*.whl)" || die "maturin built no wheel for $target"
    mv "$made" "$out/wheels/" && made="$out/wheels/$(basename "$made")" && rmdir "$fresh"
    exe=drainpipe
    [[ "$target" == *windows* ]] && exe=drainpipe.exe
    mkdir -p "$out/bin/$name"
    python3 - "$made" "$exe" "$out/bin/$name/$exe" <<'EOF'
import shutil, sys, zipfile
wheel, exe, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    [member] = [m for m in z.namelist() if m.endswith(".data/scripts/" + exe)]
    with z.open(member) as src, open(dest, "wb") as dst:
        shutil.copyfileobj(src, dst)
EOF
    chmod +x "$out/bin/$name/$exe"
done

# --- sizes -------------------------------------------------------------------
printf 'platform\tbytes\tgzip -9 bytes\n' >"$out/sizes.tsv"
for dir in "$out"/bin/*/; do
    file="$(ls "$dir"drainpipe*)"
    printf '%s\t%s\t%s\n' "$(basename "$dir")" "$(stat -c %s "$file")" \
        "$(gzip -9 <"$file" | wc -c)" >>"$out/sizes.tsv"
done
cat "$out/sizes.tsv"

# --- npm ---------------------------------------------------------------------
binaries=()
for dir in "$out"/bin/*/; do
    binaries+=("$(basename "$dir")=$(ls "$dir"drainpipe*)")
done
node release/npm/stage.mjs --version "$version" --out "$out/npm-staged" "${binaries[@]}"
rm -rf "$out/npm" && mkdir -p "$out/npm"
for dir in "$out"/npm-staged/*/; do
    (cd "$dir" && npm pack --silent --pack-destination "$out/npm" >/dev/null)
done
say "done: $(ls "$out/wheels" | wc -l) wheel(s), $(ls "$out/npm" | wc -l) npm package(s) in ${out#"$repo"/}"
