// Anthropic's Messages API through its official SDK on a real model (stories260K): the
// text chat.completions gives for the same greedy messages, whole and streamed
// (messages.stream().finalMessage()), countTokens counting the prompt it runs, stop_sequence and max_tokens stop reasons, a forced
// tool call as a tool_use block whose result goes back in, and a 400 for an image block.
import assert from 'node:assert/strict';
import { client, loadAnthropic, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const Anthropic = await loadAnthropic();
const OpenAI = await loadOpenAI();
requireModel();
const server = await startServer(['-c', '1024']);
const anthropic = new Anthropic({ baseURL: server.baseURL, apiKey: 'none', maxRetries: 0 });
const openai = client(OpenAI, server);

await runCases([
  ['messages.create matches chat.completions, whole and streamed', async () => {
    const chat = await openai.chat.completions.create({ model: 'x', max_tokens: 16, temperature: 0,
      messages: [{ role: 'system', content: 'Tell a story.' }, { role: 'user', content: 'Once upon a time' }] });
    const req = { model: 'x', max_tokens: 16, temperature: 0, system: 'Tell a story.',
      messages: [{ role: 'user', content: 'Once upon a time' }] };
    const m = await anthropic.messages.create(req);
    assert.equal(m.type, 'message');
    const counted = await anthropic.messages.countTokens({ model: 'x', system: req.system, messages: req.messages });
    assert.equal(counted.input_tokens, m.usage.input_tokens);
    assert.equal(m.content[0].text, chat.choices[0].message.content);
    assert.equal(m.usage.output_tokens, chat.usage.completion_tokens);
    assert.equal(m.stop_reason, chat.choices[0].finish_reason === 'length' ? 'max_tokens' : 'end_turn');
    let text = '';
    const stream = anthropic.messages.stream(req).on('text', (t) => { text += t; });
    const final = await stream.finalMessage();
    assert.equal(text, m.content[0].text);
    assert.equal(final.content[0].text, m.content[0].text);
    assert.equal(final.stop_reason, m.stop_reason);
  }],
  ['a stop sequence is named, and the text ends before it', async () => {
    const req = { model: 'x', max_tokens: 24, temperature: 0, messages: [{ role: 'user', content: 'Once upon a time' }] };
    const whole = (await anthropic.messages.create(req)).content[0].text;
    assert.ok(whole.length >= 8, whole);
    const stop = whole.slice(4, 7);
    const m = await anthropic.messages.create({ ...req, stop_sequences: [stop] });
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.equal(m.stop_sequence, stop);
    assert.equal(m.content[0].text, whole.slice(0, whole.indexOf(stop)));
  }],
  ['a forced tool call is a tool_use block, whole and streamed, and its result goes back in', async () => {
    const tools = [{ name: 'get_weather', description: 'Current weather of a city', input_schema: { type: 'object',
      properties: { city: { enum: ['Paris', 'Oslo'] }, unit: { enum: ['c', 'f'] } }, required: ['city', 'unit'] } }];
    const req = { model: 'x', max_tokens: 200, temperature: 0, tools, tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }] };
    const m = await anthropic.messages.create(req);
    assert.equal(m.stop_reason, 'tool_use');
    const use = m.content.find((b) => b.type === 'tool_use');
    assert.equal(use.name, 'get_weather');
    assert.ok(['Paris', 'Oslo'].includes(use.input.city) && ['c', 'f'].includes(use.input.unit), JSON.stringify(use.input));
    const streamed = await anthropic.messages.stream(req).finalMessage();
    assert.deepEqual(streamed.content.find((b) => b.type === 'tool_use').input, use.input);
    const next = await anthropic.messages.create({ model: 'x', max_tokens: 8, temperature: 0, tools, messages: [
      ...req.messages, { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '21 C' }] }] });
    assert.ok(next.usage.input_tokens > m.usage.input_tokens);
  }],
  ['an image block is a 400', async () => {
    await assert.rejects(anthropic.messages.create({ model: 'x', max_tokens: 8, messages: [{ role: 'user',
      content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] }),
    (e) => e instanceof Anthropic.BadRequestError);
  }],
], [server]);
