// SIGTERM: the server stops accepting, lets in-flight requests finish within
// --shutdown-timeout, cancels what is still running after it (the client gets an error
// event), and exits 0.
import assert from 'node:assert/strict';
import { client, collectStream, loadOpenAI, requireModel, runCases, startServer, withTimeout } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const req = { model: 'x', prompt: 'Once upon a time', max_tokens: 20, temperature: 0 };

await runCases([
  ['an in-flight stream finishes within the grace period; exit 0', async () => {
    const server = await startServer(['-c', '256', '--np', '2', '--shutdown-timeout', '60']);
    const api = client(OpenAI, server);
    const solo = (await api.completions.create(req)).choices[0].text;
    const stream = await api.completions.create({ ...req, stream: true });
    let text = '', first = true;
    for await (const chunk of stream) {
      if (first) { server.proc.kill('SIGTERM'); first = false; }
      text += chunk.choices[0]?.text ?? '';
    }
    assert.equal(text, solo);
    const { code } = await server.stop();
    assert.equal(code, 0);
  }],
  ['a request still running after the grace period is cancelled with an error event; exit 0', async () => {
    const server = await startServer(['-c', '128', '--np', '1', '--context-shift', '--shutdown-timeout', '0.2']);
    const api = client(OpenAI, server);
    // Never ends by itself: no EOS, no token limit worth the name, context shifted.
    const stream = await api.completions.create({ model: 'x', prompt: 'One day', max_tokens: 2000000000, temperature: 0,
      ignore_eos: true, stream: true });
    let chunks = 0;
    const consumed = (async () => {
      for await (const _ of stream) {
        if (++chunks === 3) server.proc.kill('SIGTERM');
      }
    })();
    await assert.rejects(withTimeout(consumed, 60000, 'the stream to end'),
      (e) => e instanceof OpenAI.APIError && /cancelled|shutting down/.test(e.message));
    const { code } = await server.stop();
    assert.equal(code, 0);
    // Not accepting any more.
    await assert.rejects(fetch(`${server.baseURL}/health`));
  }],
], []);
