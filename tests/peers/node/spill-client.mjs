// A host on an official TypeScript SDK client (`Client` + `StdioClientTransport`)
// reading a whole file through `drainpipe proxy --clip`, past the budget:
// the condensed result links to the full text (`resource_link`), which it
// reads back page by page with `resources/read` and in ranges and searches
// with the proxy's `drainpipe_read` tool.
//
//   node spill-client.mjs --file PATH --marker TEXT --budget N [--tool read_text_file]
//        [--sdk v1|v2] [--deadline-s S] -- <drainpipe proxy --clip … -- server command…>
//
// `--sdk v1` (the default): the 1.x SDK (`@modelcontextprotocol/sdk`), which
// opens with the 2025 `initialize`. `--sdk v2`: the v2 client
// (`@modelcontextprotocol/client`) pinned to revision 2026-07-28, which opens
// with `server/discover` and sends the protocol envelope in every request's
// `_meta`; in that era the proxy's own answers must pass the client's
// checks of 2026-07-28 results. The tool must take `{path}` and return the
// file's text.
//
// `--marker` is an ASCII line found once in the file. Every check throws on
// failure (exit 1). The last stdout line is a JSON summary, which the Rust
// test (tests/tests/peer_spill.rs) reads.
//
// Run against the server directly (no proxy), it fails at the resource_link
// check, which shows the steps before it work.

import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { keptParts } from "./condensed-check.mjs";

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 1 || split === argv.length - 1) {
  console.error("usage: node spill-client.mjs --file PATH --marker TEXT --budget N [--tool NAME] -- <command…>");
  process.exit(2);
}
const options = argv.slice(0, split);
const [command, ...args] = argv.slice(split + 1);
const option = (name, fallback) => {
  const at = options.indexOf(name);
  return at >= 0 ? options[at + 1] : fallback;
};
const path = option("--file");
const marker = option("--marker");
const budget = Number(option("--budget"));
const tool = option("--tool", "read_text_file");
const deadlineS = Number(option("--deadline-s", "240"));
const sdk = option("--sdk", "v1");
if (sdk !== "v1" && sdk !== "v2") {
  console.error(`spill-client.mjs: --sdk ${sdk}: v1 or v2`);
  process.exit(2);
}
if (!path || !marker || !(budget > 0)) {
  console.error("spill-client.mjs: --file, --marker and --budget are required");
  process.exit(2);
}

// Every request is bounded: a hang is a failure with a message, not a stuck test.
const CALL = { timeout: 120_000 };
const SMALL = { timeout: 30_000 };

/// The revision the v2 client is pinned to.
const MODERN = "2026-07-28";

const NEXT = "io.drainpipe/next";
const TRUNCATED = "io.drainpipe/truncated";
const RANGE = "io.drainpipe/range";

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

const elapsedMs = (start) => Number(process.hrtime.bigint() - start) / 1e6;
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const utf8 = (text) => Buffer.from(text, "utf8");
const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const preview = (value) => JSON.stringify(value)?.slice(0, 300);

/// The first offset at or after `at` whose byte is ASCII (so no code point
/// boundary moves it), or the file's end.
function asciiAtOrAfter(file, at) {
  let i = Math.max(0, Math.min(at, file.length));
  while (i < file.length && file[i] >= 0x80) i++;
  return i;
}

/// The first offset where `a` and `b` differ, or -1.
function firstDifference(a, b) {
  if (Buffer.compare(a, b) === 0) return -1;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function sameBytes(got, want, what) {
  const at = firstDifference(got, want);
  check(
    at === -1,
    `${what}: ${got.length} bytes received, ${want.length} expected, first difference at byte ${at} ` +
      `(got ${preview(got.subarray(at, at + 40).toString("utf8"))}, want ${preview(want.subarray(at, at + 40).toString("utf8"))})`,
  );
}

/// The one text block of a `drainpipe_read` result, checked to be a result.
function readText(result, what) {
  check(!result.isError, `${what}: drainpipe_read answered isError: ${preview(result.content)}`);
  const first = result.content?.[0];
  check(first?.type === "text" && typeof first.text === "string", `${what}: a text block first: ${preview(result.content)}`);
  return first.text;
}

/// The client of `--sdk`, and its `callTool(params, options)` (the 1.x
/// client takes a result schema between the two).
async function open() {
  const name = { name: "drainpipe-release-spill-client", version: "0.0.0" };
  const server = { command, args, stderr: "inherit", env: process.env };
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const client = new Client(name);
    const callTool = (params, options) => client.callTool(params, undefined, options);
    return { client, transport: new StdioClientTransport(server), callTool, opening: "initialize" };
  }
  const { Client } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const client = new Client(name, { versionNegotiation: { mode: { pin: MODERN } } });
  const callTool = (params, options) => client.callTool(params, options);
  return { client, transport: new StdioClientTransport(server), callTool, opening: "server/discover" };
}

async function spill({ client, callTool, opening }, summary) {
  const file = readFileSync(path);
  const size = statSync(path).size;
  check(file.length === size, `read the whole file: ${file.length} of ${size} bytes`);
  summary.file_bytes = size;

  // The read: condensed, with a link to the full text.
  let start = process.hrtime.bigint();
  const result = await callTool({ name: tool, arguments: { path } }, CALL);
  summary.call_ms = elapsedMs(start);
  const links = result.content.filter((block) => block.type === "resource_link");
  summary.links = links.map(({ uri, name, size }) => ({ uri, name, size }));
  const link = links.find((block) => block.size === size);
  check(
    link !== undefined,
    `no resource_link of the file's size (${size} bytes) in the result; content types: ${preview(result.content.map((b) => b.type))}, links: ${preview(summary.links)}`,
  );
  check(/^drainpipe:\/\/result\/[^/?]+\/\d+$/.test(link.uri), `the link's uri: ${link.uri}`);
  check(link.mimeType === "text/plain", `the link's mimeType: ${link.mimeType}`);
  check(typeof link.name === "string" && link.name.length > 0 && !link.name.startsWith("/"), `the link's name: ${link.name}`);
  const truncated = result._meta?.[TRUNCATED];
  check(truncated !== undefined, `the result says it was cut (_meta["${TRUNCATED}"]): _meta = ${preview(result._meta)}`);
  summary.truncated = truncated;
  const capabilities = client.getServerCapabilities();
  summary.capabilities = Object.keys(capabilities ?? {});
  check(capabilities?.resources !== undefined, `${opening} declares resources: ${preview(capabilities)}`);

  // The full text, page by page with resources/read.
  start = process.hrtime.bigint();
  const pages = [];
  let received = 0;
  let uri = link.uri;
  const maxPages = Math.ceil(size / 1024) + 10;
  while (uri !== undefined) {
    check(pages.length < maxPages, `more than ${maxPages} pages for ${size} bytes: no progress at byte ${received}`);
    const page = await client.readResource({ uri }, SMALL);
    check(page.contents?.length === 1, `page ${pages.length}: one contents entry: ${preview(page.contents)}`);
    const [contents] = page.contents;
    check(contents.uri === uri, `page ${pages.length}: contents.uri ${contents.uri} is the uri asked, ${uri}`);
    check(contents.mimeType === "text/plain", `page ${pages.length}: mimeType ${contents.mimeType}`);
    check(typeof contents.text === "string", `page ${pages.length}: a text page: ${preview(Object.keys(contents))}`);
    const bytes = utf8(contents.text);
    check(bytes.length <= budget, `page ${pages.length}: ${bytes.length} bytes of text, over the ${budget}-byte budget`);
    pages.push(bytes);
    received += bytes.length;
    uri = page._meta?.[NEXT];
    if (uri !== undefined) {
      check(bytes.length > 0, `page ${pages.length - 1}: empty, yet a next page`);
      check(uri === `${link.uri}?offset=${received}`, `page ${pages.length - 1}: next is ${uri}, expected ${link.uri}?offset=${received}`);
    }
  }
  summary.read_ms = elapsedMs(start);
  const whole = Buffer.concat(pages);
  summary.pages = pages.length;
  summary.bytes = whole.length;
  summary.sha256 = sha256(whole);
  summary.file_sha256 = sha256(file);
  summary.sha256_equal = summary.sha256 === summary.file_sha256;
  sameBytes(whole, file, "the pages put together");
  check(summary.sha256_equal && whole.length === size, "the pages are the file");

  // The proxy's tool.
  const { tools } = await client.listTools(undefined, SMALL);
  const read = tools.find((t) => t.name === "drainpipe_read");
  check(read !== undefined, `tools/list has drainpipe_read: ${preview(tools.map((t) => t.name))}`);
  const properties = read.inputSchema?.properties ?? {};
  for (const [name, type] of [["uri", "string"], ["offset", "integer"], ["length", "integer"], ["pattern", "string"]]) {
    check(properties[name]?.type === type, `drainpipe_read's ${name} is a ${type}: ${preview(properties[name])}`);
  }
  check(read.inputSchema.required?.includes("uri"), `drainpipe_read requires uri: ${preview(read.inputSchema.required)}`);
  const readTool = (args) => callTool({ name: "drainpipe_read", arguments: args }, SMALL);

  // Exact ranges, both ends on ASCII bytes: in the middle (multibyte
  // characters inside) and up to the end of the file.
  summary.ranges = [];
  const middle = asciiAtOrAfter(file, Math.floor(size * 0.37));
  const tail = asciiAtOrAfter(file, size - 5000);
  for (const [offset, end] of [[middle, asciiAtOrAfter(file, middle + 10_000)], [tail, size]]) {
    const length = end - offset;
    const got = await readTool({ uri: link.uri, offset, length });
    const text = readText(got, `range ${offset}+${length}`);
    sameBytes(utf8(text), file.subarray(offset, end), `range ${offset}+${length}`);
    check(got.content.length === 1, `range ${offset}+${length}: not shortened, one block: ${preview(got.content.slice(1))}`);
    const range = got._meta?.[RANGE];
    check(
      range?.offset === offset && range?.length === length && range?.size === size,
      `range ${offset}+${length}: _meta["${RANGE}"] = ${preview(range)}, expected ${preview({ offset, length, size })}`,
    );
    summary.ranges.push({ offset, length });
  }

  // A range longer than the budget: shortened, at a code point boundary, and said.
  {
    const offset = asciiAtOrAfter(file, Math.floor(size * 0.1));
    const length = 4 * budget;
    const got = await readTool({ uri: link.uri, offset, length });
    const bytes = utf8(readText(got, `long range ${offset}+${length}`));
    check(bytes.length > 0 && bytes.length < length && bytes.length <= budget, `long range: ${bytes.length} bytes for ${length} asked, budget ${budget}`);
    sameBytes(bytes, file.subarray(offset, offset + bytes.length), `long range ${offset}+${length}`);
    const notice = got.content[1];
    check(notice?.type === "text" && notice.text.length > 0, `long range: a second text block says it was shortened: ${preview(got.content.slice(1))}`);
    summary.long_range = { offset, asked: length, got: bytes.length, range: got._meta?.[RANGE] ?? null, notice: notice.text };
  }
  summary.range_ok = true;

  // The kept text's mark says from which byte the rest is: read there, it
  // goes on where the kept beginning stops.
  {
    const kept = keptParts(result.content[0].text, file.toString("utf8"));
    summary.kept = kept;
    if (kept.keep === "ends") {
      const got = await readTool({ uri: link.uri, offset: kept.from, length: 300 });
      const bytes = utf8(readText(got, `the rest from byte ${kept.from}`));
      check(got._meta?.[RANGE]?.offset === kept.from, `the rest starts at byte ${kept.from}: ${preview(got._meta)}`);
      sameBytes(bytes, file.subarray(kept.from, kept.from + bytes.length), `the rest from byte ${kept.from}`);
    }
  }

  // Search: the marker's line, at its offset.
  {
    const at = file.indexOf(marker);
    check(at >= 0 && file.indexOf(marker, at + 1) === -1, `the marker is in the file once (at ${at})`);
    const lineStart = file.lastIndexOf(0x0a, at) + 1;
    const lineEnd = file.indexOf(0x0a, at) === -1 ? file.length : file.indexOf(0x0a, at);
    const line = file.subarray(lineStart, lineEnd).toString("utf8");
    const pattern = escapeRegex(marker);
    const text = readText(await readTool({ uri: link.uri, pattern }), `pattern ${pattern}`);
    const listed = text.split("\n").filter((l) => /^\d+: /.test(l));
    check(listed.length === 1, `pattern ${pattern}: one matching line, got ${listed.length}: ${preview(text)}`);
    const offset = Number(listed[0].slice(0, listed[0].indexOf(":")));
    const shown = listed[0].slice(listed[0].indexOf(": ") + 2);
    check(shown === line, `pattern ${pattern}: the line shown ${preview(shown)} is the marker's line ${preview(line)}`);
    check(offset === lineStart, `pattern ${pattern}: offset ${offset}, the marker's line starts at byte ${lineStart}`);
    sameBytes(file.subarray(offset, offset + utf8(line).length), utf8(line), `the bytes at the offset reported for ${pattern}`);
    check(!/\[drainpipe\] more matches/.test(text), `pattern ${pattern}: no "more matches" line: ${preview(text)}`);
    summary.pattern = { pattern, offset, line };
  }

  // Search: a pattern on every line, more matches than fit.
  {
    const pattern = "a tab\\t";
    const text = readText(await readTool({ uri: link.uri, pattern }), `pattern ${pattern}`);
    check(utf8(text).length <= budget, `pattern ${pattern}: ${utf8(text).length} bytes over the budget`);
    const lines = text.split("\n").filter((l) => l.length > 0);
    const listed = lines.filter((l) => /^\d+: /.test(l));
    check(listed.length > 10, `pattern ${pattern}: many matching lines, got ${listed.length}: ${preview(text)}`);
    let previous = -1;
    for (const entry of listed) {
      const offset = Number(entry.slice(0, entry.indexOf(":")));
      const shown = utf8(entry.slice(entry.indexOf(": ") + 2));
      check(offset > previous, `pattern ${pattern}: offsets ascend (${offset} after ${previous})`);
      check(offset === 0 || file[offset - 1] === 0x0a, `pattern ${pattern}: ${offset} is a line start`);
      sameBytes(file.subarray(offset, offset + shown.length), shown, `the line at ${offset} for ${pattern}`);
      check(offset + shown.length === file.length || file[offset + shown.length] === 0x0a, `pattern ${pattern}: the whole line at ${offset}`);
      previous = offset;
    }
    const more = /^\[drainpipe\] more matches after byte (\d+)/.exec(lines[lines.length - 1]);
    check(more !== null, `pattern ${pattern}: the last line says there are more matches: ${preview(lines[lines.length - 1])}`);
    check(Number(more[1]) >= previous, `pattern ${pattern}: more matches after byte ${more[1]}, past the last listed (${previous})`);
    summary.many_matches = { pattern, listed: listed.length, more_after: Number(more[1]) };
  }
  summary.pattern_ok = true;

  // Unknown uris: a tool error naming it, a JSON-RPC error for resources/read.
  const unknown = "drainpipe://result/nope-1/0";
  const toolError = await readTool({ uri: unknown, offset: 0, length: 10 });
  check(toolError.isError === true, `drainpipe_read of an unknown uri is an error result: ${preview(toolError)}`);
  check(toolError.content?.some((b) => b.type === "text" && b.text.includes(unknown)), `the error names the uri: ${preview(toolError.content)}`);
  try {
    const page = await client.readResource({ uri: unknown }, SMALL);
    throw new Error(`check failed: resources/read of ${unknown} answered: ${preview(page)}`);
  } catch (error) {
    if (String(error.message).startsWith("check failed")) throw error;
    check(!/timed out/i.test(error.message), `resources/read of ${unknown}: an error, not a timeout: ${error.message}`);
    summary.unknown_error = { code: error.code, message: error.message };
  }
  summary.unknown_rejected = true;

  // The session still works.
  const again = await readTool({ uri: link.uri, offset: 0, length: 1 });
  check(readText(again, "a byte after the errors") === file.subarray(0, 1).toString("utf8"), "the first byte, after the errors");
}

const summary = { peer: sdk === "v1" ? "typescript-sdk" : "typescript-sdk-v2", tool };
const deadline = setTimeout(() => {
  summary.ok = false;
  summary.error = `spill-client.mjs: not done within ${deadlineS} s`;
  console.log(JSON.stringify(summary));
  process.exit(1);
}, deadlineS * 1000);
let client;
try {
  const opened = await open();
  client = opened.client;
  await client.connect(opened.transport, SMALL);
  if (sdk === "v2") {
    summary.protocol = client.getNegotiatedProtocolVersion();
    check(summary.protocol === MODERN, `pinned to ${MODERN}, negotiated ${summary.protocol}`);
  }
  await spill(opened, summary);
  summary.ok = true;
} catch (error) {
  summary.ok = false;
  summary.error = String(error?.stack ?? error);
  process.exitCode = 1;
} finally {
  await client?.close().catch(() => {});
  clearTimeout(deadline);
}
console.log(JSON.stringify(summary));
