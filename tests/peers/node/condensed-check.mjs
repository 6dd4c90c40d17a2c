// The checks both SDK clients make of a condensed `read_text`-style result
// (see sdk-client.mjs and sdk-v2-client.mjs): the text is a useful prefix of
// the original, its mirror in `structuredContent` is cut alike, and the
// marker says what was cut, in a notice block that only links to the cut
// values may follow. Throws on the first failed check.

function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/** Returns the marker and the kept text's length. */
export function checkCondensed(result, original, budget) {
  const text = result.content[0].text;
  check(original.startsWith(text), "the kept text is a prefix of the file");
  check(text.length > 1000, `a useful prefix: ${text.length} characters`);
  const mirrors = Object.values(result.structuredContent ?? {}).filter((v) => typeof v === "string");
  check(mirrors.length === 1 && mirrors[0] === text, "the mirror in structuredContent is cut alike");
  const marker = result._meta?.["io.drainpipe/truncated"];
  check(marker && marker.originalBytes > budget && marker.keptBytes <= budget, `the marker: ${JSON.stringify(marker)}`);
  // The notice, then the links to what was cut (when the proxy spills).
  const at = result.content.findIndex((b) => b.type === "text" && b.text.startsWith("[drainpipe]"));
  check(at > 0, `a notice block: ${JSON.stringify(result.content.map((b) => b.type))}`);
  const links = result.content.slice(at + 1);
  check(links.every((b) => b.type === "resource_link"), "only links after the notice");
  return { marker, keptChars: text.length, links: links.length };
}
