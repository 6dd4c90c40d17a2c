// A Worker in front of a remote MCP server: forwards /mcp (POST, GET,
// DELETE: Streamable HTTP) to the upstream and guards what comes back
// with drainpipe-framer/edge. An answer over MAX_EVENT_BYTES becomes the
// JSON-RPC error for its request; a tools/call result over CLIP bytes is
// condensed to a valid result within them. Everything else, headers and
// the session id included, passes unchanged.
//
// Its vars and bindings (forward.js says it in full):
//   UPSTREAM_URL   the server's URL, e.g. `http://127.0.0.1:3000/mcp`: the
//                  request goes there with that Host (`127.0.0.1:3000`),
//                  as a loopback SDK server with DNS rebinding protection
//                  requires; the client's query string is appended to
//                  the URL's own
//   UPSTREAM       a service binding; when bound it carries the request
//                  (workerd needs one to reach loopback), to UPSTREAM_URL
//                  when set, else to UPSTREAM_PATH (default `/mcp`) under
//                  the Host the client used, the worker's own
//   ALLOWED_HOSTS  the hostnames clients may call the worker by (e.g.
//                  `localhost,127.0.0.1,[::1]`); others get 403: the DNS
//                  rebinding check the upstream can no longer make
// `Origin` passes unchanged: an upstream that checks it judges the page
// that made the request.
import { MAX_REQUEST_BYTES, guardResponse, peekRequest } from 'drainpipe-framer/edge/index.js';
import { route, send } from './forward.js';

const number = (text, fallback) => (text === undefined || text === '' ? fallback : Number(text));

export default {
  async fetch(request, env) {
    const { url: upstream, response: refused } = route(request, env);
    if (refused) return refused;
    let body = request.body;
    let carried = {};
    const length = Number(request.headers.get('content-length'));
    // A request is small: read it (at most MAX_REQUEST_BYTES) to learn
    // the id the answer must carry even when the answer is dropped.
    if (request.method === 'POST' && Number.isFinite(length) && length <= MAX_REQUEST_BYTES) {
      body = new Uint8Array(await request.arrayBuffer());
      carried = peekRequest(body);
    }
    const response = await send(env, upstream, request, body);
    return guardResponse(response, {
      request: carried,
      maxEventBytes: number(env.MAX_EVENT_BYTES, 16 << 20),
      clip: number(env.CLIP, undefined),
      log: (line) => console.log(`drainpipe: ${line}`),
    });
  },
};
