#!/usr/bin/env bash
# Runs every test drainpipe has, on a fresh machine with Rust: installs what the
# tests need (wasm targets, Node packages, cargo-fuzz), then runs them.
# Usage: bash scripts/test-all.sh
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain: wasm targets"
rustup target add wasm32-unknown-unknown wasm32-wasip2

step "framer builds as no_std for wasm32"
cargo build --quiet -p drainpipe-framer --no-default-features --target wasm32-unknown-unknown

step "cargo test (workspace)"
cargo test --workspace
