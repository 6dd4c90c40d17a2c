// The example worker's forwarding rules (examples/worker/forward.js), in
// Node: where a request goes, under which Host, and which it refuses. The
// edge test (edge-test/run.mjs) checks the same in workerd against an SDK
// server that validates Host and Origin.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { route, send } from '../examples/worker/forward.js';

const UPSTREAM = { fetch: async () => new Response('') };
const at = (url, env) => {
  const { url: upstream, response } = route(new Request(url), env);
  assert.equal(response, undefined, `refused: ${response?.status}`);
  return upstream.href;
};
const refused = async (url, env) => {
  const { url: upstream, response } = route(new Request(url), env);
  assert.equal(upstream, undefined);
  return { status: response.status, text: await response.text() };
};

test('UPSTREAM_URL gives the path and the Host; the client\'s query follows the URL\'s own', () => {
  const env = { UPSTREAM, UPSTREAM_URL: 'http://127.0.0.1:3000/mcp' };
  assert.equal(at('http://127.0.0.1:8787/mcp', env), 'http://127.0.0.1:3000/mcp');
  assert.equal(at('http://127.0.0.1:8787/mcp?x=1&y=a%20b', env), 'http://127.0.0.1:3000/mcp?x=1&y=a%20b');
  const keyed = { UPSTREAM, UPSTREAM_URL: 'https://mcp.example.com/v1/mcp?key=k#frag' };
  assert.equal(at('http://127.0.0.1:8787/mcp', keyed), 'https://mcp.example.com/v1/mcp?key=k');
  assert.equal(at('http://127.0.0.1:8787/mcp?x=1&key=mine', keyed), 'https://mcp.example.com/v1/mcp?key=k&x=1&key=mine');
  // Without a service binding the runtime's fetch sends it: same URL.
  assert.equal(at('http://127.0.0.1:8787/mcp?x=1', { UPSTREAM_URL: 'http://127.0.0.1:3000/mcp' }), 'http://127.0.0.1:3000/mcp?x=1');
});

test('without UPSTREAM_URL the request keeps the client\'s Host, on UPSTREAM_PATH', () => {
  for (const unset of [undefined, null, '']) {
    assert.equal(at('http://127.0.0.1:8787/mcp?x=1', { UPSTREAM, UPSTREAM_URL: unset }), 'http://127.0.0.1:8787/mcp?x=1');
  }
  assert.equal(at('https://guard.example.com/mcp', { UPSTREAM, UPSTREAM_PATH: '/v2/mcp' }), 'https://guard.example.com/v2/mcp');
});

test('configuration mistakes are said, with 500', async () => {
  const url = 'http://127.0.0.1:8787/mcp';
  assert.match((await refused(url, { UPSTREAM, UPSTREAM_URL: 'http://h/mcp', UPSTREAM_PATH: '/mcp' })).text, /not both/);
  assert.match((await refused(url, { UPSTREAM, UPSTREAM_URL: 'localhost:3000/mcp' })).text, /not http/);
  assert.match((await refused(url, { UPSTREAM, UPSTREAM_URL: '127.0.0.1:3000' })).text, /not a URL/);
  assert.match((await refused(url, { UPSTREAM, UPSTREAM_URL: 'not a url' })).text, /not a URL/);
  assert.match((await refused(url, {})).text, /no upstream/);
  assert.equal((await refused(url, {})).status, 500);
});

test('ALLOWED_HOSTS refuses any other Host as the SDK server would; other paths are 404', async () => {
  const env = { UPSTREAM, UPSTREAM_URL: 'http://127.0.0.1:3000/mcp', ALLOWED_HOSTS: 'localhost, 127.0.0.1,[::1]' };
  for (const ok of ['http://localhost:8787/mcp', 'http://127.0.0.1:8787/mcp', 'http://[::1]:8787/mcp']) at(ok, env);
  const answer = await refused('http://evil.example:8787/mcp', env);
  assert.equal(answer.status, 403);
  assert.deepEqual(JSON.parse(answer.text), { jsonrpc: '2.0', error: { code: -32000, message: 'Invalid Host: evil.example' }, id: null });
  at('http://evil.example:8787/mcp', { ...env, ALLOWED_HOSTS: '' });
  assert.equal((await refused('http://127.0.0.1:8787/other', env)).status, 404);
});

test('send: the Host is the URL\'s, Origin and the rest pass unchanged', async () => {
  let sent;
  const env = { UPSTREAM: { fetch: async (url, init) => { sent = { url, init }; return new Response('ok'); } } };
  const request = new Request('http://127.0.0.1:8787/mcp', { method: 'POST',
    headers: { origin: 'http://127.0.0.1:8787', 'mcp-session-id': 's', 'content-type': 'application/json' }, body: '{}' });
  const url = new URL('http://127.0.0.1:3000/mcp');
  await send(env, url, request, '{}');
  assert.equal(sent.url, url);
  assert.equal(sent.init.method, 'POST');
  assert.equal(sent.init.headers.get('host'), null);
  assert.equal(sent.init.headers.get('origin'), 'http://127.0.0.1:8787');
  assert.equal(sent.init.headers.get('mcp-session-id'), 's');
});
