// Incident 000: a request whose wait for its first token spans several heartbeat
// intervals gets `: keep-alive` comments before the first token, is never cancelled by
// them, and then receives its full text. The wait is made long deterministically: the
// request queues behind another that runs until the test aborts it (-np 1).
import assert from 'node:assert/strict';
import { client, collectStream, loadOpenAI, metric, postRequest, rawRequest, requireModel, runCases, startServer, statusOf, withTimeout } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '2048', '--np', '1', '--queue', '4', '-b', '8', '--heartbeat', '0.02']);
const api = client(OpenAI, server);
const PROMPT = 'Once upon a time, there was a little dog';

// Body after the headers, de-chunked enough for counting: comments and data lines.
function events(raw) {
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  return body.split('\n').filter((l) => l.startsWith(': keep-alive') || l.startsWith('data: '));
}

await runCases([
  ['heartbeats while queued, then the full text, nothing cancelled', async () => {
    const solo = await api.completions.create({ model: 'x', prompt: PROMPT, max_tokens: 16, temperature: 0 });
    const cancelledBefore = await metric(server, 'keel_cancellations_total');

    // The blocker: generates until aborted.
    const abort = new AbortController();
    const blocker = await api.completions.create({ model: 'x', prompt: 'One day', max_tokens: 1500, temperature: 0,
      ignore_eos: true, stream: true }, { signal: abort.signal });
    const blockerDone = (async () => { try { for await (const _ of blocker) { /* drain */ } } catch { /* aborted */ } })();

    let released = false;
    const raw = await rawRequest(server.port, postRequest('/v1/completions',
      JSON.stringify({ prompt: PROMPT, max_tokens: 16, temperature: 0, stream: true })), {
      onData: (all) => {
        // Release the slot only after three heartbeats: the wait spans several intervals.
        if (!released && events(all).filter((l) => l.startsWith(':')).length >= 3) {
          released = true;
          abort.abort();
        }
        return all.includes('data: [DONE]');
      },
      ms: 120000,
    });
    await withTimeout(blockerDone, 30000, 'blocker to end');
    assert.equal(statusOf(raw), 200);
    const lines = events(raw);
    const firstData = lines.findIndex((l) => l.startsWith('data: {'));
    assert.ok(firstData >= 3, `heartbeats before the first token: ${lines.slice(0, 5)}`);
    let text = '';
    for (const l of lines.filter((x) => x.startsWith('data: {'))) {
      for (const c of JSON.parse(l.slice(6)).choices) text += c.text ?? '';
    }
    assert.equal(text, solo.choices[0].text);
    assert.ok(raw.includes('"finish_reason":"length"'));
    // Only the blocker was cancelled.
    assert.equal(await metric(server, 'keel_cancellations_total'), cancelledBefore + 1);
    assert.ok(await metric(server, 'keel_heartbeats_total') >= 3);
  }],
  ['a long prefill streams its full text (chunked over many steps)', async () => {
    const long = Array.from({ length: 25 }, (_, i) => `The cat number ${i} sat on the mat.`).join(' ');
    const req = { model: 'x', prompt: long, max_tokens: 12, temperature: 0 };
    const whole = await api.completions.create(req);
    const streamed = await collectStream(await api.completions.create({ ...req, stream: true }));
    assert.ok(whole.usage.prompt_tokens > 200, `prompt tokens ${whole.usage.prompt_tokens}`);
    assert.equal(streamed.text, whole.choices[0].text);
    assert.equal(streamed.finish, 'length');
  }],
  ['heartbeats during a long prefill (many 4-token steps, 1 ms heartbeat), then the full text', async () => {
    const fast = await startServer(['-c', '2048', '--np', '1', '-b', '4', '--heartbeat', '0.001']);
    try {
      const prompt = Array.from({ length: 60 }, (_, i) => `A frog number ${i} jumped over the log.`).join(' ');
      const expected = (await client(OpenAI, server).completions.create({ model: 'x', prompt, max_tokens: 12, temperature: 0 })).choices[0].text;
      const raw = await rawRequest(fast.port, postRequest('/v1/completions',
        JSON.stringify({ prompt, max_tokens: 12, temperature: 0, stream: true })), {
        onData: (all) => all.includes('data: [DONE]'), ms: 120000 });
      const lines = events(raw);
      const firstData = lines.findIndex((l) => l.startsWith('data: {'));
      // ~170 engine steps of prefill against a 1 ms interval.
      assert.ok(firstData >= 1, `no heartbeat before the first token: ${lines.slice(0, 3)}`);
      let text = '';
      for (const l of lines.filter((x) => x.startsWith('data: {'))) {
        for (const c of JSON.parse(l.slice(6)).choices) text += c.text ?? '';
      }
      assert.equal(text, expected);
      assert.equal(await metric(fast, 'keel_cancellations_total'), 0);
    } finally {
      await fast.stop();
    }
  }],
], [server]);
