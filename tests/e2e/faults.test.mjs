// Fault injection (KEEL_FAULT): failed requests get an error (HTTP 500 or an SSE error
// event the client raises), the others complete with the same text as on a fault-free
// server, /health stays 200 and the server keeps serving.
import assert from 'node:assert/strict';
import { client, collectStream, loadOpenAI, metric, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const args = ['-c', '512', '-np', '4', '--queue', '32', '-b', '16', '--heartbeat', '0.05', '--check-kv'];
const clean = await startServer(args);
const faulty = await startServer(args, { env: { KEEL_FAULT: 'step:0.002,seed=7' } });

const prompts = Array.from({ length: 24 }, (_, i) => `Once upon a time, there was a ${['cat', 'dog', 'bird'][i % 3]} called ${i}`);
const req = (p) => ({ model: 'x', prompt: p, max_tokens: 24, temperature: 0 });

await runCases([
  ['failures are isolated: errors for some, exact text for the rest', async () => {
    const good = client(OpenAI, clean), bad = client(OpenAI, faulty);
    const expected = await Promise.all(prompts.map(async (p) => (await good.completions.create(req(p))).choices[0].text));
    let failures = 0, successes = 0;
    await Promise.all(prompts.map(async (p, i) => {
      try {
        const text = i % 2 === 0
          ? (await bad.completions.create(req(p))).choices[0].text
          : (await collectStream(await bad.completions.create({ ...req(p), stream: true }))).text;
        assert.equal(text, expected[i], `request ${i}`);
        successes++;
      } catch (e) {
        if (e instanceof assert.AssertionError) throw e;
        assert.ok(e instanceof OpenAI.APIError, `request ${i}: ${e}`);
        assert.match(String(e.message), /fault|generation failed/i);
        failures++;
      }
    }));
    console.log(`  ${successes} completed, ${failures} failed by injected faults`);
    assert.ok(failures > 0, 'no injected fault reached a request');
    assert.equal((await fetch(`${faulty.baseURL}/health`)).status, 200);
    assert.ok(await metric(faulty, 'keel_isolated_failures_total') > 0);
  }],
  ['the faulty server still answers (retries until one gets through)', async () => {
    const bad = client(OpenAI, faulty);
    let ok = false;
    for (let i = 0; i < 20 && !ok; i++) {
      try {
        const r = await bad.completions.create({ model: 'x', prompt: 'Hi', max_tokens: 2, temperature: 0 });
        ok = r.choices[0].text.length >= 0;
      } catch (e) {
        assert.ok(e instanceof OpenAI.APIError);
      }
    }
    assert.ok(ok, 'no request succeeded in 20 tries');
  }],
], [clean, faulty]);
