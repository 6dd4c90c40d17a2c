// A Worker in front of a remote MCP server: forwards /mcp (POST, GET,
// DELETE: Streamable HTTP) to the `UPSTREAM` service and guards what comes
// back with drainpipe-framer/edge. An answer over MAX_EVENT_BYTES becomes
// the JSON-RPC error for its request; a tools/call result over CLIP bytes
// is condensed to a valid result within them. Everything else, headers
// and the session id included, passes unchanged.
import { MAX_REQUEST_BYTES, guardResponse, peekRequest } from 'drainpipe-framer/edge/index.js';

const number = (text, fallback) => (text === undefined || text === '' ? fallback : Number(text));

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname !== '/mcp') return new Response('not found\n', { status: 404 });
    const headers = new Headers(request.headers);
    headers.delete('host');
    let body = request.body;
    let carried = {};
    const length = Number(request.headers.get('content-length'));
    // A request is small: read it (at most MAX_REQUEST_BYTES) to learn
    // the id the answer must carry even when the answer is dropped.
    if (request.method === 'POST' && Number.isFinite(length) && length <= MAX_REQUEST_BYTES) {
      body = new Uint8Array(await request.arrayBuffer());
      carried = peekRequest(body);
    }
    const upstream = new URL(env.UPSTREAM_PATH ?? '/mcp', 'http://upstream');
    upstream.search = url.search;
    const response = await env.UPSTREAM.fetch(upstream, { method: request.method, headers, body });
    return guardResponse(response, {
      request: carried,
      maxEventBytes: number(env.MAX_EVENT_BYTES, 16 << 20),
      clip: number(env.CLIP, undefined),
      log: (line) => console.log(`drainpipe: ${line}`),
    });
  },
};
