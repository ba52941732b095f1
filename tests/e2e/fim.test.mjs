// Fill in the middle (`suffix`) through the official client, on a generated model that
// carries StarCoder's vocabulary (random weights: the text is noise, the framing is not):
// the prompt is exactly <fim_prefix>prefix<fim_suffix>suffix<fim_middle>, streamed or not;
// a model without FIM tokens answers 400 unsupported. llama-server's /infill gives the
// same middle for the same hole.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KEEL_BIN, SHARED, SKIP, client, collectStream, loadOpenAI, requireModel, runCases, startServer } from './lib/harness.mjs';

const OpenAI = await loadOpenAI();
requireModel();
const vocab = path.join(SHARED, 'reference/vocab/ggml-vocab-starcoder.gguf');
if (!fs.existsSync(vocab)) process.exit(SKIP);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-fim-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
const model = path.join(dir, 'starcoder-vocab.gguf');
const made = spawnSync(KEEL_BIN, ['make-model', '--vocab', vocab, '-o', model], { encoding: 'utf8' });
if (made.status !== 0) throw new Error(`make-model failed: ${made.stderr}`);
const server = await startServer(['-c', '512'], { model });
const plain = await startServer(['-c', '256']);  // stories260K: no FIM tokens
const api = client(OpenAI, server);

await runCases([
  ['suffix frames the prompt with the FIM tokens, streamed or not', async () => {
    const prefix = 'def add(a, b):\n    return ', suffix = '\n\nprint(add(1, 2))\n';
    const tok = await (await fetch(`${server.baseURL}/tokenize`, { method: 'POST', body: JSON.stringify({
      content: `<fim_prefix>${prefix}<fim_suffix>${suffix}<fim_middle>`, parse_special: true }) })).json();
    const req = { model: 'x', prompt: prefix, suffix, max_tokens: 8, temperature: 0 };
    const whole = await api.completions.create(req);
    assert.equal(whole.usage.prompt_tokens, tok.tokens.length);
    assert.equal(whole.usage.completion_tokens, 8);
    const streamed = await collectStream(await api.completions.create({ ...req, stream: true }));
    assert.equal(streamed.text, whole.choices[0].text);
  }],
  ['/infill (llama-server) gives the middle /v1/completions gives for the same greedy hole', async () => {
    const prefix = 'def add(a, b):\n    return ', suffix = '\n\nprint(add(1, 2))\n';
    const v1 = await api.completions.create({ model: 'x', prompt: prefix, suffix, max_tokens: 8, temperature: 0 });
    const res = await fetch(`${server.baseURL}/infill`, { method: 'POST', body: JSON.stringify({
      input_prefix: prefix, input_suffix: suffix, n_predict: 8, temperature: 0 }) });
    assert.equal(res.status, 200);
    const j = await res.json();
    assert.equal(j.content, v1.choices[0].text);
    assert.equal(j.tokens_evaluated, v1.usage.prompt_tokens);
    // Other files' context goes first: the prompt grows, the reply still comes.
    const withExtra = await (await fetch(`${server.baseURL}/infill`, { method: 'POST', body: JSON.stringify({
      input_prefix: prefix, input_suffix: suffix, n_predict: 4, temperature: 0,
      input_extra: [{ filename: 'util.py', text: 'import os\n' }] }) })).json();
    assert.ok(withExtra.tokens_evaluated > j.tokens_evaluated, JSON.stringify(withExtra));
    const plainRes = await fetch(`${plain.baseURL}/infill`, { method: 'POST', body: JSON.stringify({ input_prefix: 'a' }) });
    assert.equal(plainRes.status, 400);
    assert.equal((await plainRes.json()).error.code, 'unsupported');
  }],
  ['without FIM tokens, suffix is a 400 naming it', async () => {
    await assert.rejects(client(OpenAI, plain).completions.create({ model: 'x', prompt: 'a', suffix: 'b', max_tokens: 4 }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'suffix' && e.code === 'unsupported');
  }],
], [server, plain]);
