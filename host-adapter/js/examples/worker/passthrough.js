// The same forwarding as worker.js with no guard: the baseline the guard's
// cost is measured against (BENCHMARKS.md).
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname !== '/mcp') return new Response('not found\n', { status: 404 });
    const headers = new Headers(request.headers);
    headers.delete('host');
    const upstream = new URL(env.UPSTREAM_PATH ?? '/mcp', 'http://upstream');
    upstream.search = url.search;
    return env.UPSTREAM.fetch(upstream, { method: request.method, headers, body: request.body });
  },
};
