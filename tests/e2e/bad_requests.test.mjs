// A corpus of bad requests over raw HTTP: each gets its status and an OpenAI error
// object, nothing reaches the engine, and the server stays up and correct afterwards.
import assert from 'node:assert/strict';
import { client, eventually, loadOpenAI, metric, postRequest, rawRequest, requireModel, runCases, startServer, statusOf } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '256', '-np', '1', '--queue', '1', '--max-body', '64K', '--heartbeat', '0.05']);
const msgs = '"messages":[{"role":"user","content":"hi"}]';

const corpus = [
  ['/v1/chat/completions', '{', 400, 'invalid_json'],
  ['/v1/chat/completions', '', 400, 'invalid_json'],
  ['/v1/chat/completions', 'null', 400, 'invalid_json'],
  ['/v1/chat/completions', Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]), 400, 'invalid_utf8'],
  ['/v1/chat/completions', '{"messages":"hi"}', 400, 'invalid_type'],
  ['/v1/chat/completions', '{"messages":[]}', 400, 'invalid_value'],
  ['/v1/chat/completions', `{${msgs},"temperature":"warm"}`, 400, 'invalid_type'],
  ['/v1/chat/completions', `{${msgs},"max_tokens":-1}`, 400, 'invalid_value'],
  ['/v1/chat/completions', `{${msgs},"n":17}`, 400, 'invalid_value'],
  ['/v1/chat/completions', `{${msgs},"logit_bias":{"99999":1}}`, 400, 'invalid_value'],
  ['/v1/chat/completions', `{${msgs},"stream_options":{"include_usage":true}}`, 400, 'invalid_value'],
  ['/v1/chat/completions', `{"messages":${'['.repeat(5000)}${']'.repeat(5000)}}`, 400, 'invalid_json'],
  ['/v1/completions', `{"prompt":[${'"a",'.repeat(64)}"a"]}`, 400, 'invalid_value'],
  ['/v1/completions', '{"prompt":"a","suffix":"b"}', 400, 'unsupported'],
  ['/v1/completions', '{"prompt":[1,2,1000000]}', 400, 'invalid_value'],
  ['/v1/completions', `{"prompt":"${'word '.repeat(400)}"}`, 400, 'context_length_exceeded'],
  ['/v1/completions', `{"prompt":"${'x'.repeat(70000)}"}`, 413, 'request_too_large'],
  ['/v1/completions', '{"prompt":"hi","stop":[""]}', 400, 'invalid_value'],
  ['/tokenize', '{"content":["x"]}', 400, 'invalid_type'],
  ['/detokenize', '{"tokens":"abc"}', 400, 'invalid_type'],
  ['/v1/embeddings', '{}', 404, 'not_found'],
];

const garbage = [
  'GET / HTTP/1.1\r\n\r\n',
  'BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n',
  'POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n',
  'POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
  `GET /health HTTP/1.1\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`,
  '\x00\x01\x02\x03\r\n\r\n',
  'POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 10\r\n\r\n{"a"',  // body cut short, then closed
];

await runCases([
  ['each bad request gets its status and error object', async () => {
    for (const [path, body, status, code] of corpus) {
      const raw = await rawRequest(server.port, postRequest(path, body));
      assert.equal(statusOf(raw), status, `${path} ${String(body).slice(0, 60)}: ${raw.slice(0, 300)}`);
      const json = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));
      assert.equal(json.error.code, code, `${path} ${String(body).slice(0, 60)}: ${JSON.stringify(json)}`);
      assert.ok('message' in json.error && 'type' in json.error && 'param' in json.error);
    }
  }],
  ['garbage on the wire never takes the server down', async () => {
    for (const g of garbage) {
      const raw = await rawRequest(server.port, Buffer.from(g, 'latin1'), { ms: 20000, halfClose: true });
      if (raw.length) assert.ok(statusOf(raw) >= 400, `${JSON.stringify(g.slice(0, 40))}: ${raw.slice(0, 200)}`);
    }
    assert.equal((await fetch(`${server.baseURL}/health`)).status, 200);
  }],
  ['more than --parallel + --queue requests in flight → 429 at once', async () => {
    // Its own server with room for 2000-token requests: seconds of work even for the fastest
    // kernels, so neither held request ends before the check.
    const held = await startServer(['-c', '2048', '-np', '1', '--queue', '1', '--heartbeat', '0.05']);
    try {
      const api = client(OpenAI, held);
      const aborts = [new AbortController(), new AbortController()];
      // One generating (-np 1) and one queued (--queue 1), both until aborted.
      const running = await Promise.all(aborts.map((a, i) => api.completions.create({ model: 'x', prompt: `Tim ${i}`,
        max_tokens: 2000, temperature: 0, ignore_eos: true, stream: true }, { signal: a.signal })));
      const drained = running.map(async (s) => { try { for await (const _ of s) { /* drain */ } } catch { /* aborted */ } });
      await eventually(async () => (await metric(held, 'keel_queue_depth')) === 1, 'one request queued');
      await assert.rejects(api.completions.create({ model: 'x', prompt: 'Hi', max_tokens: 2 }),
        (e) => e instanceof OpenAI.RateLimitError && e.status === 429);
      aborts.forEach((a) => a.abort());
      await Promise.all(drained);
      // The server notices a departed client at its next write; then the capacity is back.
      await eventually(async () => (await metric(held, 'keel_cancellations_total')) >= 2, 'aborted requests to end');
    } finally {
      await held.stop();
    }
  }],
  ['the server still generates correctly afterwards', async () => {
    const r = await fetch(`${server.baseURL}/v1/completions`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8, temperature: 0 }) });
    assert.equal(r.status, 200);
    const j = await r.json();
    assert.equal(j.usage.completion_tokens, 8);
  }],
], [server]);
