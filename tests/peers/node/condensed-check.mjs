// The checks both SDK clients make of a condensed `read_text`-style result
// (see sdk-client.mjs and sdk-v2-client.mjs): the text is a useful prefix of
// the original, or its beginning and its end around a mark whose numbers are
// exact (`--keep ends`, the default), its mirror in `structuredContent` is
// cut alike, and the marker says what was cut, in a notice block that only
// links to the cut values may follow. Throws on the first failed check.

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/**
 * Returns the marker and the kept text's length. `unit` is the budget's:
 * "bytes" (the whole response), "chars" (the texts as decoded here, counted
 * by String.length, and structuredContent as JSON text) or "tokens" (counted
 * by the caller, from what `shown` gives). `mirrored: false` for a tool
 * that answers with no `structuredContent`.
 */
export function checkCondensed(result, original, budget, unit = "bytes", { mirrored = true } = {}) {
  const text = result.content[0].text;
  const kept = keptParts(text, original);
  check(text.length > 1000, `a useful text: ${text.length} characters`);
  const mirrors = Object.values(result.structuredContent ?? {}).filter((v) => typeof v === "string");
  if (mirrored) check(mirrors.length === 1 && mirrors[0] === text, "the mirror in structuredContent is cut alike");
  else check(result.structuredContent === undefined, "no structuredContent where the server sent none");
  const marker = result._meta?.["io.drainpipe/truncated"];
  check(marker && marker.originalBytes > budget, `the marker: ${JSON.stringify(marker)}`);
  if (unit === "bytes") check(marker.keptBytes <= budget, `within ${budget} bytes: ${JSON.stringify(marker)}`);
  const { texts, structured } = shown(result);
  const chars = texts.reduce((n, t) => n + t.length, 0);
  if (unit === "chars") {
    check(chars <= budget, `the texts within ${budget} characters: ${chars}`);
    check(structured.length <= budget, `structuredContent within ${budget} characters: ${structured.length}`);
  }
  // The notice, then the links to what was cut (when the proxy spills).
  const at = result.content.findIndex((b) => b.type === "text" && b.text.startsWith("[drainpipe]"));
  check(at > 0, `a notice block: ${JSON.stringify(result.content.map((b) => b.type))}`);
  const links = result.content.slice(at + 1);
  check(links.every((b) => b.type === "resource_link"), "only links after the notice");
  return { marker, keptChars: text.length, shownChars: chars, links: links.length, kept };
}

const MARK = /\n\[… drainpipe left out (\d+) bytes here, from byte (\d+) …\]\n/g;

/**
 * What of `original` the kept `text` holds: its beginning (`keep: "head"`),
 * or a beginning and an end around a mark whose numbers (UTF-8 bytes) are
 * exact: `from` is the beginning's length, `leftOut` what lies between.
 */
export function keptParts(text, original) {
  const utf8 = (s) => Buffer.byteLength(s, "utf8");
  if (original.startsWith(text)) return { keep: "head", headBytes: utf8(text), tailBytes: 0 };
  for (const m of text.matchAll(MARK)) {
    const head = text.slice(0, m.index);
    const tail = text.slice(m.index + m[0].length);
    const leftOut = Number(m[1]);
    const from = Number(m[2]);
    if (
      original.startsWith(head) &&
      original.endsWith(tail) &&
      from === utf8(head) &&
      leftOut > 0 &&
      utf8(original) === from + leftOut + utf8(tail)
    ) {
      return { keep: head.length > 0 ? "ends" : "tail", headBytes: from, tailBytes: utf8(tail), leftOut, from };
    }
  }
  throw new Error("check failed: the kept text is neither a prefix of the file nor its ends around a true mark");
}

/** What a host shows the model: the texts of `content`, and `structuredContent` as JSON. */
export function shown(result) {
  const texts = result.content
    .map((b) => (b.type === "text" ? b.text : b.type === "resource" ? b.resource?.text : undefined))
    .filter((t) => typeof t === "string");
  const structured = result.structuredContent === undefined ? "" : JSON.stringify(result.structuredContent);
  return { texts, structured };
}
