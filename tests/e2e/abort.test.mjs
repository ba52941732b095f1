// Clients that go away (AbortController) while queued, during prefill and during decode:
// each request is cancelled by the engine at a step boundary, the next request's output
// equals a fresh run's, and a retry of the aborted prompt is served from the prefix cache.
import assert from 'node:assert/strict';
import { client, collectStream, eventually, loadOpenAI, metric, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '2048', '-np', '1', '--queue', '4', '-b', '16', '--heartbeat', '0.02']);
const api = client(OpenAI, server);

const LONG = Array.from({ length: 50 }, (_, i) => `Tom had ${i} red balls and a big box.`).join(' ');
const SHORT = 'Once upon a time';

async function fresh(prompt, n = 16) {
  return (await api.completions.create({ model: 'x', prompt, max_tokens: n, temperature: 0 })).choices[0].text;
}

// Starts a stream and aborts it when `when(chunkCount)` says so (0 = on the response headers).
async function abortedStream(body, abortAfterChunks) {
  const abort = new AbortController();
  const stream = await api.completions.create({ ...body, stream: true }, { signal: abort.signal });
  if (abortAfterChunks === 0) {
    abort.abort();
    return;
  }
  let n = 0;
  try {
    for await (const _ of stream) {
      if (++n >= abortAfterChunks) abort.abort();
    }
  } catch (e) {
    if (!(e instanceof OpenAI.APIUserAbortError) && e.name !== 'AbortError') throw e;
  }
}

async function cancellationsReach(n) {
  await eventually(async () => (await metric(server, 'keel_cancellations_total')) >= n, `cancellations >= ${n}`);
}

// Reference outputs on a clean server state.
const expectedShort = await fresh(SHORT);
const expectedLong = await fresh(LONG);

await runCases([
  ['abort during decode, then a fresh request and a cached retry', async () => {
    const before = await metric(server, 'keel_cancellations_total');
    await abortedStream({ model: 'x', prompt: SHORT + ' there was', max_tokens: 1000, temperature: 0, ignore_eos: true }, 5);
    await cancellationsReach(before + 1);
    assert.equal(await fresh(SHORT), expectedShort);
    const retry = await api.completions.create({ model: 'x', prompt: SHORT + ' there was', max_tokens: 8, temperature: 0 });
    assert.ok(retry.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(retry.usage));
  }],
  ['abort during prefill (at the headers of a long prompt), then fresh and cached', async () => {
    const before = await metric(server, 'keel_cancellations_total');
    const prompt = LONG + ' The end of the long story came';
    await abortedStream({ model: 'x', prompt, max_tokens: 16, temperature: 0 }, 0);
    await eventually(async () => (await metric(server, 'keel_cancellations_total')) >= before + 1 ||
      (await metric(server, 'keel_requests_total{outcome="length"}')) > 0, 'aborted request to end');
    assert.equal(await fresh(LONG), expectedLong);
    const retry = await api.completions.create({ model: 'x', prompt, max_tokens: 16, temperature: 0 });
    assert.ok(retry.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(retry.usage));
  }],
  ['abort while queued, then fresh', async () => {
    const before = await metric(server, 'keel_cancellations_total');
    const lengthBefore = (await metric(server, 'keel_requests_total{outcome="length"}')) || 0;
    const blockAbort = new AbortController();
    const blocker = await api.completions.create({ model: 'x', prompt: 'A big dog', max_tokens: 1500, temperature: 0,
      ignore_eos: true, stream: true }, { signal: blockAbort.signal });
    const blockerDone = (async () => { try { for await (const _ of blocker) { /* drain */ } } catch { /* aborted */ } })();
    await eventually(async () => (await metric(server, 'keel_slots{state="busy"}')) === 1, 'blocker running');
    // Queued behind the blocker; abort once it has its headers (and a heartbeat or two).
    const queuedAbort = new AbortController();
    const queued = api.completions.create({ model: 'x', prompt: 'Lily and Ben', max_tokens: 8, temperature: 0, stream: true },
      { signal: queuedAbort.signal });
    await eventually(async () => (await metric(server, 'keel_queue_depth')) === 1, 'request queued');
    queuedAbort.abort();
    await queued.then(async (s) => { try { for await (const _ of s) { /* none */ } } catch { /* aborted */ } }, () => {});
    await cancellationsReach(before + 1);
    blockAbort.abort();
    await blockerDone;
    // The blocker is cancelled, or (a fast or a loaded machine) ran out its max_tokens first.
    await eventually(async () => (await metric(server, 'keel_cancellations_total')) >= before + 2 ||
      ((await metric(server, 'keel_requests_total{outcome="length"}')) || 0) > lengthBefore, 'blocker to end');
    assert.equal(await fresh(SHORT), expectedShort);
    assert.equal(await metric(server, 'keel_queue_depth'), 0);
  }],
  ['streamed output after all the aborts equals the fresh one', async () => {
    const s = await collectStream(await api.completions.create({ model: 'x', prompt: LONG, max_tokens: 16, temperature: 0, stream: true }));
    assert.equal(s.text, expectedLong);
  }],
], [server]);
