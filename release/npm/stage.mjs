// Lays out the npm packages for one version, ready for `npm pack`:
//
//   node release/npm/stage.mjs --version 0.1.0 --out DIR [PLATFORM=BINARY …]
//
// DIR/drainpipe is the main package (release/npm/drainpipe with its version
// and its optional dependencies set to exactly --version); DIR/PLATFORM is
// one package per binary given, e.g. linux-x64=target/…/drainpipe, named
// @drainpipe/PLATFORM, with `os` and `cpu` from the platform's name. The
// names are Node's own (`process.platform`-`process.arch`), so the shim
// finds its package without a table, and npm installs only the one whose
// `os` and `cpu` match.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"];

const argv = process.argv.slice(2);
const option = (name) => {
  const at = argv.indexOf(name);
  if (at < 0 || at + 1 >= argv.length) throw new Error(`usage: stage.mjs --version V --out DIR [PLATFORM=BINARY …] (missing ${name})`);
  return argv.splice(at, 2)[1];
};
const version = option("--version");
const out = option("--out");
const binaries = argv.map((word) => {
  const [platform, binary] = word.split("=");
  if (!PLATFORMS.includes(platform) || !binary) throw new Error(`not PLATFORM=BINARY with a known platform: ${word}`);
  return { platform, binary };
});

const write = (path, json) => writeFileSync(path, JSON.stringify(json, null, 2) + "\n");
const main = JSON.parse(readFileSync(join(here, "drainpipe", "package.json"), "utf8"));

rmSync(out, { recursive: true, force: true });
const mainDir = join(out, "drainpipe");
mkdirSync(join(mainDir, "bin"), { recursive: true });
copyFileSync(join(here, "drainpipe", "bin", "drainpipe.js"), join(mainDir, "bin", "drainpipe.js"));
chmodSync(join(mainDir, "bin", "drainpipe.js"), 0o755);
copyFileSync(join(here, "README.md"), join(mainDir, "README.md"));
main.version = version;
main.optionalDependencies = Object.fromEntries(PLATFORMS.map((p) => [`@drainpipe/${p}`, version]));
write(join(mainDir, "package.json"), main);

for (const { platform, binary } of binaries) {
  const [os, cpu] = platform.split("-");
  const file = os === "win32" ? "drainpipe.exe" : "drainpipe";
  const dir = join(out, platform);
  mkdirSync(join(dir, "bin"), { recursive: true });
  copyFileSync(binary, join(dir, "bin", file));
  chmodSync(join(dir, "bin", file), 0o755);
  write(join(dir, "package.json"), {
    name: `@drainpipe/${platform}`,
    version,
    description: `The drainpipe binary for ${platform} (installed by the drainpipe package)`,
    license: main.license,
    os: [os],
    cpu: [cpu],
    files: [`bin/${file}`],
    preferUnplugged: true,
  });
}
console.log(`staged drainpipe ${version} and ${binaries.map((b) => b.platform).join(", ") || "no platform package"} in ${out}`);
