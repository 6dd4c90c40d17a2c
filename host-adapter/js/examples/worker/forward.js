// How the example workers forward a request: shared by worker.js (the
// guard) and passthrough.js (its unguarded baseline), so the two forward
// alike.
//
// Where, and under which Host:
//
// UPSTREAM_URL set (a var, e.g. `http://127.0.0.1:3000/mcp`): the request
// goes to that URL, so the upstream sees the Host it would from any client
// calling it directly (`127.0.0.1:3000`), which an SDK server with DNS
// rebinding protection accepts. Its path replaces the client's; the
// client's query string is appended to the URL's own, after an `&`:
// UPSTREAM_URL `http://h/mcp?key=k` and a client's `/mcp?x=1` give
// `http://h/mcp?key=k&x=1` (a name in both is then sent twice, the URL's
// first). A fragment in UPSTREAM_URL is dropped. Setting UPSTREAM_PATH as
// well is refused as a mistake: the URL carries the path.
//
// UPSTREAM_URL unset: the request keeps the Host the client used (the
// worker's own host, as `env.UPSTREAM.fetch(request)` would pass it), on
// UPSTREAM_PATH (default `/mcp`), through the `UPSTREAM` service binding.
// The binding's name never reaches the upstream as a Host.
//
// Either way, when the `UPSTREAM` service binding exists it carries the
// request (workerd reaches loopback only through a service); otherwise the
// runtime's `fetch` does (a Cloudflare deployment with UPSTREAM_URL alone).
//
// `Origin` passes unchanged, like every header but Host: it names the page
// that made the request, not the address the request went to. An upstream
// that checks it (the SDK's DNS rebinding protection may) judges the real
// caller, exactly as if the page had called the URL the worker sends to.
// Rewriting it would let any page through that check; dropping it would
// too.
//
// Which clients: ALLOWED_HOSTS (comma-separated hostnames, no ports,
// `[::1]` in brackets) is the Host check a loopback SDK server makes,
// moved to the worker. A worker on loopback in front of a loopback server
// is what a DNS-rebinding page reaches (`Host: evil.example:8787`), and
// since the upstream now sees its own Host, its check cannot catch it:
// with ALLOWED_HOSTS the worker answers such a request 403, -32000
// `Invalid Host: <name>`, as the server would have. config.capnp sets
// `localhost,127.0.0.1,[::1]`; unset (a deployment on a public name) any
// Host is served.

const refusal = (status, message) => Response.json(
  { jsonrpc: '2.0', error: { code: -32000, message }, id: null }, { status });

/**
 * `{ url }`, the URL the upstream is sent `request` at, or `{ response }`,
 * the answer that refuses it: not /mcp (404), a Host ALLOWED_HOSTS does not
 * list (403), a configuration mistake (500).
 */
export function route(request, env) {
  const client = new URL(request.url);
  if (client.pathname !== '/mcp') return { response: new Response('not found\n', { status: 404 }) };
  const allowed = (env.ALLOWED_HOSTS ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '');
  if (allowed.length > 0 && !allowed.includes(client.hostname)) {
    return { response: refusal(403, `Invalid Host: ${client.hostname}`) };
  }
  try {
    return { url: upstreamUrl(client, env) };
  } catch (error) {
    console.log(`drainpipe: ${error.message}`);
    return { response: new Response(`${error.message}\n`, { status: 500 }) };
  }
}

function upstreamUrl(client, env) {
  const configured = env.UPSTREAM_URL ?? ''; // workerd's fromEnvironment gives null when unset
  let url;
  if (configured !== '') {
    if (env.UPSTREAM_PATH) throw new Error('set UPSTREAM_URL or UPSTREAM_PATH, not both: UPSTREAM_URL carries the path');
    try {
      url = new URL(configured);
    } catch {
      throw new Error(`UPSTREAM_URL is not a URL: ${configured}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`UPSTREAM_URL is not http(s): ${configured}`);
    url.hash = '';
  } else {
    if (!env.UPSTREAM) throw new Error('no upstream: set UPSTREAM_URL, or bind the UPSTREAM service');
    url = new URL(env.UPSTREAM_PATH || '/mcp', client.origin);
  }
  url.search = [url.search.slice(1), client.search.slice(1)].filter((part) => part !== '').join('&');
  return url;
}

/** Sends `request`'s method and headers, with `body`, to `url`: the Host is the URL's. */
export function send(env, url, request, body) {
  const headers = new Headers(request.headers);
  headers.delete('host');
  const init = { method: request.method, headers, body };
  return env.UPSTREAM ? env.UPSTREAM.fetch(url, init) : fetch(url, init);
}
