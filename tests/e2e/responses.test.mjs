// OpenAI's Responses API through the official client on a real model (stories260K):
// responses.create gives the text chat.completions gives for the same greedy messages,
// streamed events accumulate to the same text (also through responses.stream()), a
// max_output_tokens cut is "incomplete", a forced function call round-trips, and hosted
// tools are a 400 naming them.
import assert from 'node:assert/strict';
import { client, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '1024']);
const api = client(OpenAI, server);

await runCases([
  ['responses.create matches chat.completions, whole and streamed', async () => {
    const messages = [{ role: 'system', content: 'Tell a story.' }, { role: 'user', content: 'Once upon a time' }];
    const chat = await api.chat.completions.create({ model: 'x', messages, max_tokens: 16, temperature: 0 });
    const r = await api.responses.create({ model: 'x', instructions: 'Tell a story.', input: 'Once upon a time',
      max_output_tokens: 16, temperature: 0 });
    assert.equal(r.object, 'response');
    assert.equal(r.output_text, chat.choices[0].message.content);
    assert.equal(r.usage.output_tokens, chat.usage.completion_tokens);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens);
    assert.equal(r.status, chat.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');

    const stream = await api.responses.create({ model: 'x', instructions: 'Tell a story.',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Once upon a time' }] }],
      max_output_tokens: 16, temperature: 0, stream: true });
    let text = '', last = null;
    for await (const e of stream) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      last = e;
    }
    assert.equal(text, r.output_text);
    assert.ok(['response.completed', 'response.incomplete'].includes(last.type), last.type);
    assert.equal(last.response.output_text ?? last.response.output[0].content[0].text, r.output_text);

    const helper = api.responses.stream({ model: 'x', instructions: 'Tell a story.', input: 'Once upon a time',
      max_output_tokens: 16, temperature: 0 });
    const final = await helper.finalResponse();
    assert.equal(final.output_text, r.output_text);
  }],
  ['max_output_tokens cuts the reply: status incomplete', async () => {
    const r = await api.responses.create({ model: 'x', input: 'Once upon a time', max_output_tokens: 3, temperature: 0 });
    assert.equal(r.status, 'incomplete');
    assert.equal(r.incomplete_details.reason, 'max_output_tokens');
    assert.equal(r.usage.output_tokens, 3);
  }],
  ['a forced function call comes back as a function_call item, whole and streamed, and its output goes back in', async () => {
    // Arguments without free strings: a forced call always completes on the tiny model.
    const tools = [{ type: 'function', name: 'get_weather', description: 'Current weather of a city',
      parameters: { type: 'object', properties: { city: { enum: ['Paris', 'Oslo'] }, unit: { enum: ['c', 'f'] } },
        required: ['city', 'unit'] } }];
    const req = { model: 'x', input: 'What is the weather in Paris?', tools, tool_choice: 'required', temperature: 0,
      max_output_tokens: 200 };
    const r = await api.responses.create(req);
    assert.equal(r.status, 'completed', JSON.stringify(r.output));
    const calls = r.output.filter((o) => o.type === 'function_call');
    assert.equal(calls.length, 1, JSON.stringify(r.output));
    assert.equal(calls[0].name, 'get_weather');
    const args = JSON.parse(calls[0].arguments);
    assert.ok(['Paris', 'Oslo'].includes(args.city) && ['c', 'f'].includes(args.unit), calls[0].arguments);

    const final = await api.responses.stream(req).finalResponse();
    const streamed = final.output.filter((o) => o.type === 'function_call');
    assert.equal(streamed.length, 1);
    assert.equal(streamed[0].arguments, calls[0].arguments);

    const next = await api.responses.create({ model: 'x', tools, temperature: 0, max_output_tokens: 8,
      input: [{ role: 'user', content: 'What is the weather in Paris?' }, calls[0],
        { type: 'function_call_output', call_id: calls[0].call_id, output: '{"temp": 21}' }] });
    assert.equal(typeof next.output_text, 'string');
    assert.ok(next.usage.input_tokens > r.usage.input_tokens);
  }],
  ['hosted tools are a 400 naming them', async () => {
    await assert.rejects(api.responses.create({ model: 'x', input: 'a', tools: [{ type: 'web_search' }] }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools[0]' && e.code === 'unsupported');
  }],
], [server]);
