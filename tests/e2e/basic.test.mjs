// Stream and non-stream through the official OpenAI client give the same text, equal to
// `keel run` for the same parameters; response shapes as the client expects them.
import assert from 'node:assert/strict';
import { client, collectStream, keelRun, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '512', '-np', '2', '--heartbeat', '0.05']);
const api = client(OpenAI, server);
const PROMPT = 'Once upon a time';

await runCases([
  ['completion equals keel run (greedy), stream and non-stream', async () => {
    const expected = keelRun(PROMPT, { n: 24 });
    const whole = await api.completions.create({ model: 'x', prompt: PROMPT, max_tokens: 24, temperature: 0 });
    assert.equal(whole.object, 'text_completion');
    assert.equal(whole.choices[0].text, expected);
    assert.equal(whole.usage.completion_tokens, 24);
    assert.equal(whole.choices[0].finish_reason, 'length');
    const streamed = await collectStream(await api.completions.create({
      model: 'x', prompt: PROMPT, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true } }));
    assert.equal(streamed.text, expected);
    assert.equal(streamed.finish, 'length');
    assert.equal(streamed.usage.completion_tokens, 24);
    assert.equal(streamed.usage.prompt_tokens, whole.usage.prompt_tokens);
  }],
  ['sampled completion with a seed equals keel run with that seed', async () => {
    const params = { temp: 0.8, seed: 1234, topK: 40, topP: 0.95, minP: 0.05, n: 32 };
    const expected = keelRun(PROMPT, params);
    const req = { model: 'x', prompt: PROMPT, max_tokens: 32, temperature: 0.8, seed: 1234, top_k: 40, top_p: 0.95, min_p: 0.05 };
    const whole = await api.completions.create(req);
    assert.equal(whole.choices[0].text, expected);
    const streamed = await collectStream(await api.completions.create({ ...req, stream: true }));
    assert.equal(streamed.text, expected);
  }],
  ['chat: stream and non-stream give the same text', async () => {
    const req = { model: 'x', messages: [{ role: 'user', content: 'Tell me a story about a cat.' }], max_tokens: 20, temperature: 0 };
    const whole = await api.chat.completions.create(req);
    assert.equal(whole.object, 'chat.completion');
    assert.equal(whole.choices[0].message.role, 'assistant');
    assert.ok(whole.id.startsWith('chatcmpl-'));
    const streamed = await collectStream(await api.chat.completions.create({ ...req, stream: true }));
    assert.equal(streamed.text, whole.choices[0].message.content);
    assert.ok(['stop', 'length'].includes(streamed.finish));
  }],
  ['stop strings end the text before the stop', async () => {
    const full = (await api.completions.create({ model: 'x', prompt: PROMPT, max_tokens: 40, temperature: 0 })).choices[0].text;
    const cut = full.indexOf(' ', 8);
    assert.ok(cut > 0, full);
    const stop = full.slice(cut, cut + 3);
    const r = await api.completions.create({ model: 'x', prompt: PROMPT, max_tokens: 40, temperature: 0, stop: [stop] });
    assert.equal(r.choices[0].text, full.slice(0, full.indexOf(stop)));
    assert.equal(r.choices[0].finish_reason, 'stop');
  }],
  ['chat logprobs', async () => {
    const r = await api.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3 });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, r.usage.completion_tokens);
    for (const t of content) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 3);
      assert.ok(Array.isArray(t.bytes));
    }
    // logprobs alone (no top_logprobs): each chosen token's logprob, the same values.
    const alone = await api.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 5, temperature: 0, logprobs: true });
    const lone = alone.choices[0].logprobs.content;
    assert.deepEqual(lone.map((t) => t.token), content.map((t) => t.token));
    assert.deepEqual(lone.map((t) => t.logprob), content.map((t) => t.logprob));
    assert.ok(lone.every((t) => t.top_logprobs.length === 0));
    assert.ok(lone.some((t) => t.logprob < 0));
  }],
  ['response_format json_object: a JSON object, streamed or not', async () => {
    // The tiny story model never closes an object by itself: a bias on '}' makes it close
    // as soon as the constraint allows, so the run ends with a parseable object.
    const tok = await (await fetch(`${server.baseURL}/tokenize`, { method: 'POST',
      body: JSON.stringify({ content: '}', with_pieces: true }) })).json();
    const close = tok.tokens.find((t) => t.piece === '}').id;
    const req = { model: 'x', messages: [{ role: 'user', content: 'Give me JSON' }], max_tokens: 64, temperature: 0,
      logit_bias: { [close]: 100 }, response_format: { type: 'json_object' } };
    const whole = await api.chat.completions.create(req);
    assert.equal(whole.choices[0].finish_reason, 'stop');
    assert.deepEqual(JSON.parse(whole.choices[0].message.content), {});
    const streamed = await collectStream(await api.chat.completions.create({ ...req, stream: true }));
    assert.equal(streamed.text, whole.choices[0].message.content);
    // Unbiased and sampled, cut by max_tokens: still the start of an object.
    const free = await api.chat.completions.create({ ...req, logit_bias: undefined, temperature: 0.8, seed: 3, max_tokens: 40 });
    assert.match(free.choices[0].message.content, /^\s*\{/);
  }],
  ['response_format json_schema: the object follows the schema (keys in order), streamed or not', async () => {
    // No free strings, bounded arrays and numbers: every document ends. The tiny story model
    // pads each gap with ~20 whitespace tokens (allowed, bounded per gap): a bias against
    // whitespace pieces keeps it inside the context.
    const ws = await (await fetch(`${server.baseURL}/tokenize`, { method: 'POST',
      body: JSON.stringify({ content: ' \n\r\t', with_pieces: true }) })).json();
    const noSpace = Object.fromEntries(ws.tokens.filter((t) => t.piece.trim() === '').map((t) => [t.id, -100]));
    const schema = { type: 'object', additionalProperties: false, required: ['ok', 'color', 'n', 'list'],
      properties: { ok: { type: 'boolean' }, color: { enum: ['red', 'green', null] }, n: { type: 'integer' },
        list: { type: 'array', items: { type: 'boolean' }, maxItems: 2 }, more: { type: 'integer' } } };
    const req = { model: 'x', messages: [{ role: 'user', content: 'A JSON object, please' }], max_tokens: 300,
      temperature: 0.8, logit_bias: noSpace,
      response_format: { type: 'json_schema', json_schema: { name: 'thing', strict: true, schema } } };
    for (const seed of [4, 5, 6]) {
      const whole = await api.chat.completions.create({ ...req, seed });
      assert.equal(whole.choices[0].finish_reason, 'stop');
      const v = JSON.parse(whole.choices[0].message.content);
      const keys = Object.keys(v);
      assert.deepEqual(keys.slice(0, 4), ['ok', 'color', 'n', 'list']);
      assert.ok(keys.length === 4 || (keys.length === 5 && keys[4] === 'more'), keys.join());
      assert.equal(typeof v.ok, 'boolean');
      assert.ok(['red', 'green', null].includes(v.color));
      assert.ok(Number.isInteger(v.n));
      assert.ok(Array.isArray(v.list) && v.list.length <= 2 && v.list.every((x) => typeof x === 'boolean'));
      const streamed = await collectStream(await api.chat.completions.create({ ...req, seed, stream: true }));
      assert.equal(streamed.text, whole.choices[0].message.content);
    }
    await assert.rejects(api.chat.completions.create({ ...req, response_format: { type: 'json_schema',
      json_schema: { name: 'x', schema: { type: 'string' } } } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format' && /root must be an object/.test(e.message));
  }],
  ['models list and retrieve', async () => {
    const models = [];
    for await (const m of api.models.list()) models.push(m);
    assert.equal(models.length, 1);
    assert.equal(models[0].id, 'stories260K');
    const m = await api.models.retrieve('stories260K');
    assert.equal(m.id, 'stories260K');
    // created: when the model was loaded (unix seconds), as OpenAI's is a timestamp.
    const now = Date.now() / 1000;
    assert.ok(m.created > now - 3600 && m.created <= now + 1, `created ${m.created}`);
  }],
  ['n choices: each is the single request with seed + i, streamed or not; usage counts the prompt once', async () => {
    const base = { model: 'x', prompt: PROMPT, max_tokens: 12, temperature: 0.9, seed: 77 };
    const whole = await api.completions.create({ ...base, n: 3 });
    assert.equal(whole.choices.length, 3);
    const solo = [];
    for (let i = 0; i < 3; ++i) {
      assert.equal(whole.choices[i].index, i);
      solo.push((await api.completions.create({ ...base, seed: 77 + i })).choices[0].text);
      assert.equal(whole.choices[i].text, solo[i]);
    }
    assert.ok(new Set(solo).size > 1, 'the seeds give different texts');
    assert.equal(whole.usage.completion_tokens, 36);
    const one = await api.completions.create(base);
    assert.equal(whole.usage.prompt_tokens, one.usage.prompt_tokens);
    // Streamed chat: chunks of the choices interleave, each tagged with its index.
    const chat = { model: 'x', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 10, temperature: 0.9, seed: 5 };
    const texts = ['', ''];
    const finishes = [null, null];
    let usage = null;
    for await (const chunk of await api.chat.completions.create({ ...chat, n: 2, stream: true,
      stream_options: { include_usage: true } })) {
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? '';
        if (c.finish_reason) finishes[c.index] = c.finish_reason;
      }
    }
    const chatWhole = await api.chat.completions.create({ ...chat, n: 2 });
    assert.deepEqual(texts, chatWhole.choices.map((c) => c.message.content));
    assert.deepEqual(finishes, ['length', 'length']);
    assert.equal(usage.completion_tokens, 20);
  }],
  ['several prompts: n choices each, in prompt order, each equal to its single request', async () => {
    const prompts = [PROMPT, 'The little dog'];
    const base = { model: 'x', max_tokens: 8, temperature: 0.9, seed: 11 };
    const batch = await api.completions.create({ ...base, prompt: prompts.slice(0, 2), n: 2 });
    assert.equal(batch.choices.length, 4);
    let promptTokens = 0;
    for (let p = 0; p < 2; ++p) {
      for (let j = 0; j < 2; ++j) {
        const solo = await api.completions.create({ ...base, prompt: prompts[p], seed: 11 + j });
        const c = batch.choices[p * 2 + j];
        assert.equal(c.index, p * 2 + j);
        assert.equal(c.text, solo.choices[0].text, `prompt ${p} choice ${j}`);
        if (j === 0) promptTokens += solo.usage.prompt_tokens;
      }
    }
    assert.equal(batch.usage.prompt_tokens, promptTokens);  // each prompt once
    assert.equal(batch.usage.completion_tokens, 32);
    // Token-id prompts, streamed: the chunks of each index add up to the whole response.
    const tokens = [[1, 450, 217], [1, 90, 38]];
    const whole = await api.completions.create({ ...base, prompt: tokens });
    const texts = ['', ''];
    for await (const chunk of await api.completions.create({ ...base, prompt: tokens, stream: true })) {
      for (const c of chunk.choices) texts[c.index] += c.text;
    }
    assert.deepEqual(texts, whole.choices.map((c) => c.text));
  }],
  ['echo + logprobs scores the prompt (as lm-eval does); its numbers equal the generation\'s', async () => {
    // Generate greedily with logprobs, then score prompt + generated text with max_tokens 0:
    // the continuation's token logprobs are the same numbers, streamed or not.
    const gen = await api.completions.create({ model: 'x', prompt: PROMPT, max_tokens: 6, temperature: 0, logprobs: 1 });
    const continuation = gen.choices[0].logprobs;
    const req = { model: 'x', prompt: PROMPT + gen.choices[0].text, max_tokens: 0, echo: true, logprobs: 1, temperature: 0 };
    const scored = await api.completions.create(req);
    const c = scored.choices[0];
    assert.equal(c.text, PROMPT + gen.choices[0].text);
    assert.equal(c.finish_reason, 'length');
    assert.equal(scored.usage.completion_tokens, 0);
    const lp = c.logprobs;
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.tokens.length, scored.usage.prompt_tokens);
    assert.ok(lp.token_logprobs.slice(1).every((x) => typeof x === 'number' && x <= 0));
    assert.deepEqual(lp.tokens.slice(-6), continuation.tokens);
    assert.deepEqual(lp.token_logprobs.slice(-6), continuation.token_logprobs);
    assert.deepEqual(lp.top_logprobs.slice(-6), continuation.top_logprobs);
    for (let i = 1; i < lp.text_offset.length; ++i) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
    let text = '', chunks = [];
    for await (const chunk of await api.completions.create({ ...req, stream: true })) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.choices[0]?.logprobs) chunks.push(chunk.choices[0].logprobs);
    }
    assert.equal(text, c.text);
    assert.deepEqual(chunks.flatMap((l) => l.token_logprobs), lp.token_logprobs);
    // echo without logprobs, and generation after the echo.
    const more = await api.completions.create({ model: 'x', prompt: PROMPT, max_tokens: 6, temperature: 0, echo: true });
    assert.equal(more.choices[0].text, PROMPT + gen.choices[0].text);
  }],
  ['graceful stop exits 0', async () => {
    const { code } = await server.stop('SIGTERM');
    assert.equal(code, 0);
  }],
], [server]);
