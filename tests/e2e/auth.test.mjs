// --api-key: every route but /health needs `Authorization: Bearer KEY`; without the flag
// any key (or none) is accepted.
import assert from 'node:assert/strict';
import { client, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const locked = await startServer(['-c', '256', '-np', '1'], { env: { KEEL_API_KEY: 'test-key-123' } });
const open = await startServer(['-c', '256', '-np', '1']);

await runCases([
  ['wrong or missing key → 401 from every guarded route', async () => {
    await assert.rejects(client(OpenAI, locked, 'wrong').completions.create({ model: 'x', prompt: 'Hi', max_tokens: 2 }),
      (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
    await assert.rejects(client(OpenAI, locked, 'wrong').models.list(), (e) => e.status === 401);
    for (const path of ['/metrics', '/slots', '/v1/models']) {
      assert.equal((await fetch(`${locked.baseURL}${path}`)).status, 401, path);
    }
    assert.equal((await fetch(`${locked.baseURL}/health`)).status, 200);
  }],
  ['right key works', async () => {
    const r = await client(OpenAI, locked, 'test-key-123').completions.create({ model: 'x', prompt: 'Hi', max_tokens: 2, temperature: 0 });
    assert.equal(r.usage.completion_tokens, 2);
    const m = await fetch(`${locked.baseURL}/metrics`, { headers: { Authorization: 'Bearer test-key-123' } });
    assert.equal(m.status, 200);
  }],
  ['no --api-key: any key is fine', async () => {
    const r = await client(OpenAI, open, 'anything').completions.create({ model: 'x', prompt: 'Hi', max_tokens: 2, temperature: 0 });
    assert.equal(r.usage.completion_tokens, 2);
    assert.equal((await fetch(`${open.baseURL}/metrics`)).status, 200);
  }],
], [locked, open]);
