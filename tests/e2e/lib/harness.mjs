// Shared helpers for keel's end-to-end tests: start `keel serve` on a free loopback port,
// wait for /health, talk to it with the official OpenAI client or raw HTTP, stop it.
// Every wait is bounded (a hang fails the test); nothing asserts on speed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SKIP = 77;  // CTest SKIP_RETURN_CODE

export const KEEL_BIN = process.env.KEEL_BIN ?? path.resolve(here, '../../../build/keel');
export const SHARED = process.env.KEEL_SHARED ?? path.resolve(here, '../../../../shared');
export const MODEL = path.join(SHARED, 'models/stories260K.gguf');

export async function loadOpenAI() {
  try {
    return (await import('openai')).default;
  } catch {
    console.log('SKIP: the openai npm package is not installed (run scripts/setup.sh)');
    process.exit(SKIP);
  }
}

export async function loadAnthropic() {
  try {
    return (await import('@anthropic-ai/sdk')).default;
  } catch {
    console.log('SKIP: the @anthropic-ai/sdk npm package is not installed (run scripts/setup.sh)');
    process.exit(SKIP);
  }
}

export function requireModel() {
  if (!existsSync(KEEL_BIN)) throw new Error(`keel binary not found at ${KEEL_BIN}`);
  if (!existsSync(MODEL)) {
    console.log(`SKIP: reference model missing: ${MODEL}`);
    process.exit(SKIP);
  }
}

export function withTimeout(promise, ms, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Servers still running when the test process ends (a failed case) are killed with it.
const spawned = new Set();
process.on('exit', () => { for (const p of spawned) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL'); });

// Starts `keel serve -m MODEL --port 0 ...args`; resolves once /health is 200.
export async function startServer(args = [], { env = {}, model = MODEL, waitReady = true } = {}) {
  const proc = spawn(KEEL_BIN, ['serve', '-m', model, '--host', '127.0.0.1', '--port', '0', ...args], {
    env: { ...process.env, KEEL_LOG: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(proc);
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await withTimeout(new Promise((resolve, reject) => {
    const onData = (d) => {
      log += d.toString();
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    };
    proc.stderr.on('data', onData);
    proc.stdout.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`keel serve exited (${code}) before listening:\n${log}`)));
  }), 60000, 'keel serve to listen');
  const server = {
    proc, port, exited,
    baseURL: `http://127.0.0.1:${port}`,
    log: () => log,
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return withTimeout(exited, 60000, 'keel serve to exit');
    },
  };
  if (waitReady) await waitHealthy(server);
  return server;
}

export async function waitHealthy(server, ms = 120000) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(`${server.baseURL}/health`);
      if (r.status === 200) return;
    } catch { /* not up yet */ }
    if (Date.now() > end) throw new Error(`server not healthy within ${ms} ms:\n${server.log()}`);
    await sleep(50);
  }
}

export function client(OpenAI, server, apiKey = 'none') {
  return new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
}

// `keel run` output (the generated text only) for the same parameters.
export function keelRun(prompt, { n = 24, temp = 0, seed = 0, topK = 0, topP = 1, minP = 0, extra = [] } = {}) {
  const r = spawnSync(KEEL_BIN, ['run', '-m', MODEL, '-p', prompt, '-n', String(n), '--temp', String(temp),
    '--top-k', String(topK), '--top-p', String(topP), '--min-p', String(minP), '-s', String(seed), ...extra],
  { encoding: 'utf8', timeout: 120000 });
  if (r.status !== 0) throw new Error(`keel run failed (${r.status}): ${r.stderr}`);
  if (!r.stdout.startsWith(prompt)) throw new Error(`keel run output does not start with the prompt: ${r.stdout}`);
  return r.stdout.slice(prompt.length, -1);  // the prompt echo and the final newline removed
}

// Text of a streamed completion (chat or legacy), plus its finish reason and usage.
export async function collectStream(stream) {
  let text = '', finish = null, usage = null, chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices ?? []) {
      text += c.delta?.content ?? c.text ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}

// Raw HTTP over one socket, so framing (heartbeats, chunk boundaries) is visible.
// onData(allSoFar, socket) may end the exchange early by returning true.
// halfClose: send FIN after the payload (a client that has nothing more to say).
export function rawRequest(port, payload, { onData = () => false, ms = 60000, halfClose = false } = {}) {
  return withTimeout(new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    sock.on('connect', () => (halfClose ? sock.end(payload) : sock.write(payload)));
    sock.on('data', (d) => {
      data = Buffer.concat([data, d]);
      if (onData(data.toString('latin1'), sock)) { sock.destroy(); resolve(data.toString('latin1')); }
    });
    sock.on('end', () => resolve(data.toString('latin1')));
    sock.on('close', () => resolve(data.toString('latin1')));
    sock.on('error', (e) => (data.length ? resolve(data.toString('latin1')) : reject(e)));
  }), ms, 'raw HTTP exchange');
}

export function postRequest(pathname, body, headers = {}) {
  const b = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return Buffer.concat([Buffer.from(`POST ${pathname} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${b.length}\r\n${extra}Connection: close\r\n\r\n`), b]);
}

export function statusOf(raw) {
  const m = raw.match(/^HTTP\/1\.1 (\d{3})/);
  return m ? Number(m[1]) : -1;
}

export async function metric(server, name) {
  const text = await (await fetch(`${server.baseURL}/metrics`)).text();
  const m = text.match(new RegExp(`^${name.replace(/[{}"=]/g, (c) => '\\' + c)} (\\S+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
}

export async function eventually(fn, what, ms = 30000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`not reached within ${ms} ms: ${what}`);
    await sleep(20);
  }
}

// Runs named async cases in order; prints each; exits non-zero on the first failure
// after stopping the servers registered in `cleanup`.
export async function runCases(cases, cleanup = []) {
  let failed = false;
  for (const [name, fn] of cases) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok   ${name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed = true;
      console.log(`FAIL ${name}: ${e.stack ?? e}`);
      break;
    }
  }
  for (const s of cleanup) {
    try { await s.stop(); } catch (e) { console.log(`cleanup: ${e}`); }
  }
  if (failed) {
    for (const s of cleanup) console.log(`--- server log (port ${s.port}) ---\n${s.log().slice(-4000)}`);
  }
  process.exit(failed ? 1 : 0);
}
