// 16 concurrent streams whose prompts share prefixes: every one completes and equals its
// solo output (batch invariance + prefix reuse + continuous batching, seen from outside).
import assert from 'node:assert/strict';
import { client, collectStream, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '1024', '-np', '4', '--queue', '32', '-b', '32', '--heartbeat', '0.05']);
const api = client(OpenAI, server);

const BASE = 'Once upon a time, there was a little girl named Lily. She loved to play';
const requests = Array.from({ length: 16 }, (_, i) => {
  const prompt = i % 4 === 0 ? BASE : `${BASE} with her ${['ball', 'cat', 'dog', 'mom'][i % 4]} number ${i}.`;
  // Half greedy, half sampled with their own seeds.
  const sampling = i % 2 === 0 ? { temperature: 0 } : { temperature: 0.9, seed: 100 + i, top_p: 0.9 };
  return { model: 'x', prompt, max_tokens: 20 + (i % 5), ...sampling };
});

await runCases([
  ['16 concurrent streams equal their solo outputs', async () => {
    const solo = [];
    for (const r of requests) solo.push((await api.completions.create(r)).choices[0].text);
    const streams = await Promise.all(requests.map(async (r) =>
      collectStream(await api.completions.create({ ...r, stream: true, stream_options: { include_usage: true } }))));
    streams.forEach((s, i) => {
      assert.equal(s.text, solo[i], `request ${i}`);
      assert.ok(['length', 'stop'].includes(s.finish), `request ${i} finish ${s.finish}`);
      assert.ok(s.usage && s.usage.completion_tokens > 0, `request ${i} usage`);
    });
    // Shared prefixes came from the cache for at least some of them.
    const cached = streams.reduce((n, s) => n + s.usage.prompt_tokens_details.cached_tokens, 0);
    assert.ok(cached > 0, 'no prompt tokens served from the cache');
  }],
  ['16 concurrent chat requests (non-stream) equal their streamed twins', async () => {
    const chats = requests.map((r) => ({ model: 'x', messages: [{ role: 'user', content: r.prompt }], max_tokens: 12,
      temperature: r.temperature, seed: r.seed }));
    const [whole, streamed] = await Promise.all([
      Promise.all(chats.map((c) => api.chat.completions.create(c))),
      Promise.all(chats.map(async (c) => collectStream(await api.chat.completions.create({ ...c, stream: true })))),
    ]);
    whole.forEach((w, i) => assert.equal(streamed[i].text, w.choices[0].message.content, `chat ${i}`));
  }],
], [server]);
