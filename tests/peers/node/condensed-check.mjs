// The checks both SDK clients make of a condensed `read_text`-style result
// (see sdk-client.mjs and sdk-v2-client.mjs): the text is a useful prefix of
// the original, its mirror in `structuredContent` is cut alike, and the
// marker says what was cut. Throws on the first failed check.

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
  const notice = result.content[result.content.length - 1].text;
  check(notice.startsWith("[drainpipe]"), `the notice block: ${notice}`);
  return { marker, keptChars: text.length };
}
