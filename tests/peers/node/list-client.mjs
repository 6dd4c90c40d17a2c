// A host on the official TypeScript SDK client (1.x) calling a tool that
// returns a long list, once straight to the server and once through
// `drainpipe proxy --clip`, and checking that nothing was lost: every
// array the proxy shortened (`content`, and each array in
// `structuredContent`) keeps whole items only, and every item it left out
// is read back, whole and equal to the direct call's, through the
// `resource_link` the result carries for that array (`resources/read`,
// page by page); `drainpipe_read` finds the last item by pattern; the
// notice counts each array's items.
//
//   node list-client.mjs --tool NAME --args JSON [--direct JSON-ARGV] [--expect-hits N]
//        [--deadline-s S] -- <drainpipe proxy --clip … -- server command…>
//
// `--expect-hits N`: the Python peer's `hits(N)` as the SDK writes it, built
// here; for a list too large for the client to take straight from the
// server (the TypeScript client closes its transport past 10 MiB). With
// `--direct` too, it is checked to be what the server answers.
//
// The last stdout line is a JSON summary, which the Rust test
// (tests/tests/peer_lists.rs) reads. Every check throws on failure (exit 1).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { isDeepStrictEqual } from "node:util";

const argv = process.argv.slice(2);
const split = argv.indexOf("--");
if (split < 1 || split === argv.length - 1) {
  console.error("usage: node list-client.mjs --tool NAME --args JSON --direct JSON-ARGV -- <command…>");
  process.exit(2);
}
const options = argv.slice(0, split);
const [command, ...args] = argv.slice(split + 1);
const option = (name, fallback) => {
  const at = options.indexOf(name);
  return at >= 0 ? options[at + 1] : fallback;
};
const tool = option("--tool");
const toolArgs = JSON.parse(option("--args", "{}"));
const direct = JSON.parse(option("--direct", "[]"));
const expectHits = option("--expect-hits");
const deadlineS = Number(option("--deadline-s", "240"));
if (!tool || (direct.length === 0 && expectHits === undefined)) {
  console.error("list-client.mjs: --tool and --direct or --expect-hits are required");
  process.exit(2);
}

/// `hits(count)` of tests/peers/python/server.py, as the Python SDK writes
/// it: a block per hit (its JSON, indented by two) and the list.
function pythonHits(count) {
  const hits = [];
  for (let n = 0; n < count; n++) {
    hits.push({ path: `src/file-${n}.rs`, line: n, text: `item-${n}: fn «ünïcødé» "q"\t${n}` });
  }
  return {
    content: hits.map((hit) => ({ type: "text", text: JSON.stringify(hit, null, 2) })),
    structuredContent: { result: hits },
    isError: false,
  };
}

const CALL = { timeout: 120_000 };
const SMALL = { timeout: 30_000 };
const NEXT = "io.drainpipe/next";
const NOTICE = "[drainpipe]";

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}
const preview = (value) => JSON.stringify(value)?.slice(0, 300);

async function connect(argv) {
  const client = new Client({ name: "drainpipe-release-list-client", version: "0.0.0" });
  const [command, ...args] = argv;
  await client.connect(new StdioClientTransport({ command, args, stderr: "inherit", env: process.env }));
  return client;
}

/// A value linked by `uri`, read whole with `resources/read`, page by page.
async function readWhole(client, uri) {
  let text = "";
  let pages = 0;
  for (let at = uri; at !== undefined; pages++) {
    check(pages < 100_000, `${uri}: no end after ${pages} pages`);
    const page = await client.readResource({ uri: at }, SMALL);
    const [contents] = page.contents;
    check(typeof contents?.text === "string", `${at}: a text page: ${preview(page.contents)}`);
    text += contents.text;
    at = page._meta?.[NEXT];
  }
  return { text, pages };
}

/// The arrays of a result that may be shortened: `content` (without the
/// proxy's notice and links), and each array in `structuredContent`, by
/// the name the proxy's links give them.
function arrays(result) {
  const found = [];
  const content = result.content ?? [];
  const notice = content.findIndex((b) => b.type === "text" && b.text.startsWith(NOTICE));
  found.push(["content", notice >= 0 ? content.slice(0, notice) : content]);
  const walk = (value, path) => {
    if (Array.isArray(value)) found.push([path, value]);
    else if (value && typeof value === "object") {
      for (const [key, inner] of Object.entries(value)) walk(inner, `${path}/${key}`);
    }
  };
  walk(result.structuredContent, "structuredContent");
  return found;
}

async function main(summary) {
  // The original, straight from the server, or built here.
  let original;
  if (direct.length > 0) {
    const plain = await connect(direct);
    original = await plain.callTool({ name: tool, arguments: toolArgs }, undefined, CALL);
    await plain.close();
    check(!original.isError, `the direct call failed: ${preview(original.content)}`);
  }
  if (expectHits !== undefined) {
    const built = pythonHits(Number(expectHits));
    if (original) {
      for (const key of ["content", "structuredContent"]) {
        check(isDeepStrictEqual(built[key], original[key]), `--expect-hits: the ${key} built here is not the server's`);
      }
      summary.expect_checked = true;
    }
    original ??= built;
  }
  summary.original_bytes = Buffer.byteLength(JSON.stringify(original));

  // Through the proxy.
  const client = await connect([command, ...args]);
  const start = process.hrtime.bigint();
  const result = await client.callTool({ name: tool, arguments: toolArgs }, undefined, CALL);
  summary.call_ms = Number(process.hrtime.bigint() - start) / 1e6;
  summary.result_bytes = Buffer.byteLength(JSON.stringify(result));
  check(!result.isError, `the proxied call failed: ${preview(result.content)}`);
  const content = result.content;
  const noticeBlock = content.find((b) => b.type === "text" && b.text.startsWith(NOTICE));
  check(noticeBlock !== undefined, `a notice: ${preview(content.map((b) => b.type))}`);
  summary.notice = noticeBlock.text;
  const links = content.filter((b) => b.type === "resource_link");
  summary.links = links.map(({ uri, name, size }) => ({ uri, name, size }));

  const before = new Map(arrays(original));
  summary.arrays = [];
  for (const [name, kept] of arrays(result)) {
    const whole = before.get(name);
    check(whole !== undefined, `${name}: not in the direct call's result`);
    const entry = { name, items: whole.length, kept: kept.length };
    summary.arrays.push(entry);
    // Whole items only, the original's, in order.
    const rest = links.find((l) => l.name.startsWith(`${name} from item `));
    const first = rest ? Number(rest.name.slice(`${name} from item `.length)) : whole.length;
    check(Number.isInteger(first) && first <= kept.length, `${name}: kept ${kept.length} items, the rest linked from item ${first}`);
    for (let i = 0; i < first; i++) {
      // A block whose text was cut is checked below, through its link.
      if (links.some((l) => l.name.startsWith(`${name}/${i}/`))) continue;
      check(isDeepStrictEqual(kept[i], whole[i]), `${name}: item ${i} is not the original's: ${preview(kept[i])} vs ${preview(whole[i])}`);
    }
    if (kept.length < whole.length || rest) {
      check(rest !== undefined, `${name}: kept ${kept.length} of ${whole.length} items and no link to the rest: ${preview(summary.links)}`);
      const { text, pages } = await readWhole(client, rest.uri);
      const items = JSON.parse(text);
      check(items.length === whole.length - first, `${name}: ${items.length} items linked from ${first}, ${whole.length - first} expected`);
      for (let i = 0; i < items.length; i++) {
        check(isDeepStrictEqual(items[i], whole[first + i]), `${name}: linked item ${first + i} differs: ${preview(items[i])}`);
      }
      check(text.split("\n").length === items.length + 2, `${name}: the rest is one item a line`);
      entry.first = first;
      entry.pages = pages;
      // The notice counts the array's items and says where the rest is.
      const said = `${name}: kept ${kept.length} of ${whole.length} items`;
      check(summary.notice.includes(said), `${name}: the notice says "${said}": ${summary.notice}`);
      check(summary.notice.includes(`the rest from item ${first} at ${rest.uri}`), `${name}: the notice names the rest's link: ${summary.notice}`);
      // A search for the last item finds its line in the rest.
      if (name === "content") {
        const last = whole.length - 1;
        const found = await client.callTool(
          { name: "drainpipe_read", arguments: { uri: rest.uri, pattern: `item-${last}:` } },
          undefined,
          SMALL,
        );
        const lines = found.content[0].text.split("\n").filter((l) => /^\d+: /.test(l));
        check(lines.length === 1, `drainpipe_read finds item ${last} once: ${preview(found.content)}`);
        entry.pattern_ok = true;
      }
    }
  }
  // An object left out in part (a `dict` a tool returns): its members kept
  // are the original's, and the rest holds every other one.
  summary.objects = [];
  for (const link of links) {
    const match = /^(structuredContent(?:\/.*)?) from member (\d+)$/.exec(link.name);
    if (!match) continue;
    const [, name, first] = match;
    const at = (result) => name.split("/").slice(1).reduce((v, key) => v?.[key], result.structuredContent);
    const whole = at(original);
    const kept = at(result);
    check(whole && kept && typeof kept === "object", `${name}: an object in both results`);
    const rest = JSON.parse((await readWhole(client, link.uri)).text);
    for (const [key, value] of Object.entries(kept)) {
      check(isDeepStrictEqual(value, whole[key]), `${name}/${key}: kept, but not the original's`);
    }
    for (const [key, value] of Object.entries(rest)) {
      check(isDeepStrictEqual(value, whole[key]), `${name}/${key}: linked, but not the original's`);
    }
    const keys = Object.keys(whole);
    const missing = keys.filter((key) => !(key in kept) && !(key in rest));
    check(missing.length === 0, `${name}: ${missing.length} members neither kept nor linked: ${preview(missing)}`);
    const keptCount = Object.keys(kept).length;
    check(Number(first) === keptCount, `${name}: kept ${keptCount} members, the rest from member ${first}`);
    const said = `${name}: kept ${keptCount} of ${keys.length} members, the rest from member ${first} at ${link.uri}`;
    check(summary.notice.includes(said), `${name}: the notice says "${said}": ${summary.notice}`);
    summary.objects.push({ name, members: keys.length, kept: keptCount });
  }
  // A cut text (a block's, or its mirror in structuredContent): its link
  // holds it whole. The link's name is the text's place in the result.
  summary.texts = [];
  for (const link of links) {
    if (/ from (item|member) \d+$/.test(link.name)) continue;
    const want = link.name.split("/").reduce((v, key) => v?.[key], original);
    check(typeof want === "string", `${link.name}: no text there in the direct call's result`);
    const { text } = await readWhole(client, link.uri);
    check(text === want, `${link.name}: the linked text is not the original's (${text.length} of ${want.length} characters)`);
    summary.texts.push(link.name);
  }
  // Each item of both copies is kept or read back, checked above; the
  // links are one per shortened array or object, and one per cut text.
  const shortened = summary.arrays.filter((a) => a.first !== undefined).length;
  const expected = shortened + summary.objects.length + summary.texts.length;
  check(links.length === expected, `one link per shortened array or object and per cut text: ${links.length} links, ${expected} expected: ${preview(summary.links)}`);
  await client.close();
}

const summary = { ok: false };
const deadline = setTimeout(() => {
  console.error(`list-client.mjs: no end within ${deadlineS} s`);
  console.log(JSON.stringify(summary));
  process.exit(1);
}, deadlineS * 1000);
try {
  await main(summary);
  summary.ok = true;
} catch (error) {
  console.error(error?.stack ?? String(error));
}
clearTimeout(deadline);
console.log(JSON.stringify(summary));
process.exit(summary.ok ? 0 : 1);
