// Function calling through the official OpenAI client: tools shown to the model, calls read
// back as tool_calls (whole and streamed), tool_choice required / named forcing one call,
// the client's own tool runner completing a round trip, and clear 400s for bad tool fields.
import assert from 'node:assert/strict';
import { client, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '1024', '-np', '2', '--heartbeat', '0.05']);
const api = client(OpenAI, server);

// Arguments without free strings: a forced call always completes on the tiny model.
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather of a city',
    parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Oslo'] }, unit: { enum: ['c', 'f'] } },
      required: ['city', 'unit'] } } },
  { type: 'function', function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {} } } },
];
// What the schemas allow, checked on the parsed arguments.
function checkArguments(call) {
  const args = JSON.parse(call.function.arguments);
  if (call.function.name === 'get_weather') {
    assert.deepEqual(Object.keys(args), ['city', 'unit']);
    assert.ok(['Paris', 'Oslo'].includes(args.city) && ['c', 'f'].includes(args.unit), call.function.arguments);
  } else {
    assert.equal(typeof args, 'object');
  }
  return args;
}
const MESSAGES = [{ role: 'user', content: 'What is the weather in Paris?' }];

// get_time's arguments are any object, which the tiny story model never closes by itself:
// a bias on '}' closes it as soon as the constraint allows.
const tok = await (await fetch(`${server.baseURL}/tokenize`, { method: 'POST',
  body: JSON.stringify({ content: '}', with_pieces: true }) })).json();
const CLOSE_BIAS = { [tok.tokens.find((t) => t.piece === '}').id]: 100 };

// Tool calls of a stream, assembled from their deltas as clients do.
async function streamedCalls(stream) {
  const calls = [];
  let finish = null, content = '';
  for await (const chunk of stream) {
    for (const c of chunk.choices ?? []) {
      content += c.delta?.content ?? '';
      for (const d of c.delta?.tool_calls ?? []) {
        const call = (calls[d.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
        call.id += d.id ?? '';
        call.type += d.type ?? '';
        call.function.name += d.function?.name ?? '';
        call.function.arguments += d.function?.arguments ?? '';
      }
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { calls, finish, content };
}

await runCases([
  ['tool_choice required: one call to a listed function, whole and streamed alike', async () => {
    const req = { model: 'x', messages: MESSAGES, tools: TOOLS, tool_choice: 'required', temperature: 0,
      max_tokens: 64, logit_bias: CLOSE_BIAS };
    const whole = await api.chat.completions.create(req);
    const choice = whole.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.match(call.id, /^call_[A-Za-z0-9]{24}$/);
    assert.equal(call.type, 'function');
    assert.ok(['get_weather', 'get_time'].includes(call.function.name), call.function.name);
    checkArguments(call);
    const streamed = await streamedCalls(await api.chat.completions.create({ ...req, stream: true }));
    assert.equal(streamed.finish, 'tool_calls');
    assert.equal(streamed.content, '');
    assert.equal(streamed.calls.length, 1);
    assert.equal(streamed.calls[0].type, 'function');
    assert.equal(streamed.calls[0].function.name, call.function.name);
    assert.equal(streamed.calls[0].function.arguments, call.function.arguments);
    // The client's stream helper assembles the same message.
    const final = await api.chat.completions.stream({ ...req, stream: true }).finalChatCompletion();
    assert.equal(final.choices[0].message.tool_calls[0].function.name, call.function.name);
  }],
  ['tool_choice naming a function calls that one, arguments per its schema; n choices each call it', async () => {
    for (const name of ['get_weather', 'get_time']) {
      const r = await api.chat.completions.create({ model: 'x', messages: MESSAGES, tools: TOOLS, temperature: 0.7,
        seed: 9, n: 2, max_tokens: 200, logit_bias: name === 'get_time' ? CLOSE_BIAS : undefined,
        tool_choice: { type: 'function', function: { name } } });
      assert.equal(r.choices.length, 2);
      for (const c of r.choices) {
        assert.equal(c.finish_reason, 'tool_calls');
        assert.equal(c.message.tool_calls[0].function.name, name);
        checkArguments(c.message.tool_calls[0]);
      }
      assert.notEqual(r.choices[0].message.tool_calls[0].id, r.choices[1].message.tool_calls[0].id);
    }
    // Streamed, a forced call's arguments arrive piece by piece (OpenAI's deltas) and add
    // up to the whole response's string.
    const req = { model: 'x', messages: MESSAGES, tools: TOOLS, temperature: 0.7, seed: 3, max_tokens: 200,
      tool_choice: { type: 'function', function: { name: 'get_weather' } } };
    const whole = await api.chat.completions.create(req);
    let pieces = 0;
    const stream = await api.chat.completions.create({ ...req, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const chunk of chunks) pieces += (chunk.choices[0]?.delta?.tool_calls ?? []).length;
    const streamed = await streamedCalls((async function* () { yield* chunks; })());
    assert.ok(pieces > 2, `${pieces} tool_call deltas`);
    assert.equal(streamed.calls[0].function.arguments, whole.choices[0].message.tool_calls[0].function.arguments);
    assert.equal(streamed.calls[0].id.length, 29);
    assert.equal(streamed.finish, 'tool_calls');
  }],
  ["the client's tool runner: call, result sent back, conversation continues", async () => {
    let called = 0;
    const runner = api.chat.completions.runTools({
      model: 'x', messages: MESSAGES, max_tokens: 64, temperature: 0, logit_bias: CLOSE_BIAS,
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      tools: [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: {} },
        function: () => { called++; return '12:00'; }, parse: JSON.parse } }],
    });
    await runner.done();
    assert.equal(called, 1);
    const msgs = runner.messages;
    assert.equal(msgs.at(-1).role, 'tool');
    assert.equal(msgs.at(-1).content, '12:00');
    assert.equal(msgs.at(-1).tool_call_id, msgs.at(-2).tool_calls[0].id);
    // The history (assistant tool_calls + tool result) is accepted and answered.
    const next = await api.chat.completions.create({ model: 'x', messages: msgs, tools: TOOLS, max_tokens: 8, temperature: 0 });
    assert.ok(['stop', 'length', 'tool_calls'].includes(next.choices[0].finish_reason));
    assert.ok(next.usage.prompt_tokens > 0);
  }],
  ['auto and none: a reply without calls is plain content, streamed or not', async () => {
    for (const tool_choice of ['auto', 'none', undefined]) {
      const req = { model: 'x', messages: MESSAGES, tools: TOOLS, tool_choice, max_tokens: 16, temperature: 0 };
      const whole = await api.chat.completions.create(req);
      const streamed = await streamedCalls(await api.chat.completions.create({ ...req, stream: true }));
      assert.equal(streamed.content, whole.choices[0].message.content ?? '');
      assert.equal(streamed.finish, whole.choices[0].finish_reason);
    }
  }],
  ['bad tool fields are 400s naming the field', async () => {
    const bad = async (extra, param) => {
      await assert.rejects(api.chat.completions.create({ model: 'x', messages: MESSAGES, max_tokens: 4, ...extra }),
        (e) => e instanceof OpenAI.BadRequestError && e.param === param, `${JSON.stringify(extra)} → ${param}`);
    };
    await bad({ tools: TOOLS, tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice');
    await bad({ tool_choice: 'required' }, 'tool_choice');
    await bad({ tools: TOOLS, tool_choice: 'sometimes' }, 'tool_choice');
    await bad({ tools: [{ type: 'function', function: { name: 'has space' } }] }, 'tools[0].function.name');
    await bad({ tools: [TOOLS[0], TOOLS[0]] }, 'tools[1].function.name');
    await bad({ tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] }, 'tools[0].function.parameters');
    await bad({ tools: [{ type: 'function' }] }, 'tools[0].function');
    await bad({ messages: [{ role: 'assistant', tool_calls: [{ type: 'function', function: {} }] }] },
      'messages[0].tool_calls[0].function.name');
  }],
  ['tools, json_schema, echo and batched prompts concurrently: every request succeeds', async () => {
    const schema = { type: 'object', required: ['x'], properties: { x: { anyOf: [{ type: 'integer' }, { type: 'null' },
      { $ref: '#/$defs/o' }] } }, $defs: { o: { type: 'object', properties: { y: { $ref: '#/$defs/o' } } } } };
    const drain = async (p) => { const r = await p; if (r?.[Symbol.asyncIterator]) for await (const _ of r); };
    const kinds = [
      (i) => api.chat.completions.create({ model: 'x', messages: MESSAGES, tools: TOOLS, tool_choice: 'required',
        max_tokens: 40, temperature: 1, seed: i, stream: i % 2 === 0 }),
      (i) => api.chat.completions.create({ model: 'x', messages: MESSAGES, max_tokens: 40, temperature: 1, seed: i, n: 2,
        response_format: { type: 'json_schema', json_schema: { name: 'n', schema } } }),
      (i) => api.completions.create({ model: 'x', prompt: ['Once upon', 'The dog'], echo: true, logprobs: 3,
        max_tokens: i % 4, n: 2, seed: i, stream: i % 3 === 0 }),
      (i) => api.chat.completions.create({ model: 'x', messages: MESSAGES, tools: TOOLS, max_tokens: 20, seed: i, stream: true }),
    ];
    const jobs = [];
    for (let w = 0; w < 6; ++w) {
      jobs.push((async () => { for (let i = w; i < 48; i += 6) await drain(kinds[i % kinds.length](i)); })());
    }
    await Promise.all(jobs);
    const metrics = await (await fetch(`${server.baseURL}/metrics`)).text();
    assert.match(metrics, /keel_isolated_failures_total 0/);
    assert.match(metrics, /keel_requests_total\{outcome="error"\} 0/);
  }],
], [server]);
