// llama-server's own surface on a real model (stories260K): POST /completion gives the text
// /v1/completions gives for the same greedy request, whole and streamed (no [DONE]), and
// reports a stop string as stop_type "word"; the official client also works with the
// bare host as its base URL (llama-server serves the routes without /v1 too).
import assert from 'node:assert/strict';
import { collectStream, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '256']);

async function completion(body) {
  const res = await fetch(`${server.baseURL}/completion`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

await runCases([
  ['/completion matches /v1/completions for a greedy request, whole and streamed', async () => {
    const api = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: 'none', maxRetries: 0 });
    const v1 = await api.completions.create({ model: 'x', prompt: 'Once upon a time', max_tokens: 24, temperature: 0 });
    const whole = await completion({ prompt: 'Once upon a time', n_predict: 24, temperature: 0 });
    assert.equal(whole.status, 200, whole.text);
    const j = JSON.parse(whole.text);
    assert.equal(j.content, v1.choices[0].text);
    assert.equal(j.tokens_predicted, v1.usage.completion_tokens);
    assert.equal(j.tokens_evaluated, v1.usage.prompt_tokens);
    assert.equal(j.stop, true);
    assert.ok(['eos', 'limit'].includes(j.stop_type), j.stop_type);

    const streamed = await completion({ prompt: 'Once upon a time', n_predict: 24, temperature: 0, stream: true });
    assert.equal(streamed.status, 200);
    assert.ok(!streamed.text.includes('[DONE]'));
    const events = streamed.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)));
    assert.ok(events.length >= 2);
    assert.equal(events.at(-1).stop, true);
    assert.ok(events.slice(0, -1).every((e) => e.stop === false));
    assert.equal(events.map((e) => e.content).join(''), j.content);
  }],
  ['a stop string ends the text and is named', async () => {
    const r = await completion({ prompt: 'Once upon a time', n_predict: 48, temperature: 0, stop: ['girl'] });
    const j = JSON.parse(r.text);
    assert.equal(r.status, 200, r.text);
    assert.equal(j.stop_type, 'word', r.text);
    assert.equal(j.stopping_word, 'girl');
    assert.ok(!j.content.includes('girl'), j.content);
  }],
  ['the official client with the bare host as base URL', async () => {
    const bare = new OpenAI({ baseURL: server.baseURL, apiKey: 'none', maxRetries: 0 });
    const r = await bare.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
    assert.equal(r.object, 'chat.completion');
    const s = await collectStream(await bare.completions.create({ model: 'x', prompt: 'Once', max_tokens: 4, stream: true }));
    assert.equal(typeof s.text, 'string');
    const models = await bare.models.list();
    assert.equal(models.data.length, 1);
  }],
], [server]);
