#!/usr/bin/env node
// The `drainpipe` command of the npm package: starts the native binary from
// the per-platform package npm installed beside this one (an optional
// dependency pinned to this exact version) and gets out of the way.
//
// - The binary gets this process's stdin, stdout and stderr themselves
//   (`stdio: "inherit"`): no JavaScript sits on the pipes between a host
//   and `drainpipe proxy`.
// - SIGINT, SIGTERM and SIGHUP sent to this process are passed on to the
//   binary, which ends the server it guards.
// - This process exits with the binary's exit code, or dies of the same
//   signal the binary died of.
// - DRAINPIPE_BINARY=/path/to/drainpipe runs that binary instead.
//
// Nothing is downloaded, here or at install time.
"use strict";

const { spawn } = require("node:child_process");

// The platforms with a package, by Node's own names (`process.platform`,
// `process.arch`), which are also the packages' names and their `os`/`cpu`.
const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"];

function fail(message) {
  process.stderr.write(`drainpipe: ${message}\n`);
  process.exit(1);
}

function binaryPath() {
  const override = process.env.DRAINPIPE_BINARY;
  if (override) return override;
  const platform = `${process.platform}-${process.arch}`;
  const pkg = `@drainpipe/${platform}`;
  const file = process.platform === "win32" ? "drainpipe.exe" : "drainpipe";
  if (!PLATFORMS.includes(platform)) {
    fail(
      `no prebuilt binary for ${platform} (there is a package for ${PLATFORMS.join(", ")}). ` +
        "Build one with `cargo install --locked --profile dist --path cli` from the source " +
        "and set DRAINPIPE_BINARY to its path.",
    );
  }
  try {
    return require.resolve(`${pkg}/bin/${file}`);
  } catch {
    fail(
      `the package ${pkg}, which holds the binary for this platform, is not installed. ` +
        "npm leaves optional dependencies out with --omit=optional or --no-optional, and " +
        "when a lockfile was made on another platform: install drainpipe again without " +
        `those, or add ${pkg} yourself, or set DRAINPIPE_BINARY to a drainpipe binary.`,
    );
  }
}

const binary = binaryPath();
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit", windowsHide: true });

const forwarded = ["SIGINT", "SIGTERM", "SIGHUP"];
const forward = (signal) => {
  // The binary may be gone already; its exit is reported below.
  try {
    child.kill(signal);
  } catch {}
};
for (const signal of forwarded) process.on(signal, forward);

child.on("error", (error) => fail(`cannot start ${binary}: ${error.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die of the same signal, so the caller sees what the binary saw.
    for (const name of forwarded) process.removeListener(name, forward);
    process.kill(process.pid, signal);
    // A signal that does not end a Node process where it is delivered.
    setTimeout(() => process.exit(1), 1000).unref();
    return;
  }
  process.exit(code ?? 1);
});
