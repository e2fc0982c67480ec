// ctest sse_resume_node: Server-Sent Events resumed across seqd killed with
// SIGKILL, read by an SSE client nobody here wrote (the `eventsource` package,
// pinned in package.json, installed by scripts/node-deps).
//
// Starts seqd on SQLite in a temporary directory, with a tokens file (a reader
// token with msg:read, a sender token with msg:send). An EventSource reads
// GET /conversations/{conv}/events (the reader token in an Authorization
// header, through the package's fetch override) while a sender posts MESSAGES
// messages, paced. seqd is killed with SIGKILL twice mid-stream, each time
// 1-3 ms after a send was written, and restarted on the same port and store;
// the EventSource reconnects by itself after the server's retry: hint,
// sending Last-Event-ID, and receives again before the next kill. A send
// whose outcome is unknown (the connection died) is sent again with the same
// client_msg_id until it is acknowledged.
//
// Passes when every acknowledged message arrived exactly once, in seq order
// (seqs strictly increasing, no duplicate, received ⊇ acked, each seq carrying
// the client_msg_id it was acked with, no message stored twice) and the
// stream was reconnected at least twice. Prints a one-line summary (acked, received, duplicates,
// reconnects) and exits 0, or prints why and exits 1. Never skips: a missing
// node_modules is a failure that names scripts/node-deps.
//
// Usage: node tests/node/sse_resume_test.mjs [SEQD_BINARY]
//        (default: $SEQD_BINARY, then build/seqd)
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..', '..');
const SEQD = process.argv[2] || process.env.SEQD_BINARY || path.join(REPO, 'build', 'seqd');
const CONV = 'sg_sse_resume';
const MESSAGES = 300;
const KILL_AT = [90, 190];    // each kill: just after this message's send was written
const SEND_GAP_MS = 8;        // pacing between sends
const DOWN_MS = 700;          // how long seqd stays dead
const RETRY_MS = 300;         // seqd's retry: hint
const DEADLINE_MS = 50_000;   // the whole run

let EventSource;
try {
  ({ EventSource } = await import('eventsource'));
} catch (e) {
  console.error(`FAIL: cannot load the eventsource package (${e.message}); ` +
                'run scripts/node-deps to install tests/node/node_modules');
  process.exit(1);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const started = Date.now();
function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exitCode = 1;
  throw new Error(msg);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const secret = (name) => `sqd_${name}-${randomBytes(12).toString('hex')}`;
const sha256 = (s) => createHash('sha256').update(s).digest('hex');

class Server {
  constructor(dir, port, tokensFile) {
    this.dir = dir;
    this.port = port;
    this.tokensFile = tokensFile;
    this.logPath = path.join(dir, 'seqd.log');
    this.proc = null;
  }

  async start() {
    const log = openSync(this.logPath, 'a');
    this.proc = spawn(SEQD, [
      '--store', 'sqlite:' + path.join(this.dir, 'seqd.db'), '--http-port', String(this.port),
      '--tcp-port', '0', '--threads', '2', '--log-level', 'warn', '--tokens-file', this.tokensFile,
      // The retry: hint the client must follow: reconnect 300 ms after a loss.
      '--sse-retry-ms', String(RETRY_MS),
    ], { stdio: ['ignore', log, log] });
    this.exited = new Promise((r) => this.proc.once('exit', (code, sig) => r({ code, sig })));
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      if (this.proc.exitCode !== null) fail('seqd exited at start: ' + this.logs());
      try {
        const r = await fetch(`http://127.0.0.1:${this.port}/healthz`,
                              { signal: AbortSignal.timeout(1000) });
        await r.arrayBuffer();
        if (r.status === 200) return;
      } catch { /* not listening yet */ }
      await sleep(50);
    }
    fail('seqd did not become healthy: ' + this.logs());
  }

  async kill() {
    this.proc.kill('SIGKILL');
    const { sig } = await this.exited;
    if (sig !== 'SIGKILL') fail('seqd was not killed by SIGKILL: ' + sig);
  }

  logs() {
    try { return readFileSync(this.logPath, 'utf8').slice(-3000); } catch { return ''; }
  }
}

// Posts MESSAGES messages; each is re-sent with its client_msg_id until acked.
class Sender {
  constructor(base, token) {
    this.base = base;
    this.token = token;
    this.acked = new Map();  // seq -> client_msg_id
    this.unknown = 0;        // sends whose outcome was unknown (then re-sent)
    this.duplicates = 0;     // re-sends answered "duplicate": the first had been stored
    this.onFirstSend = () => {};  // called as message i is first sent
  }

  async send(i) {
    const cid = `${CONV}-${i}`;
    const body = JSON.stringify({ sender_id: 'node', client_msg_id: cid, payload: cid });
    for (let attempt = 0; ; attempt++) {
      if (Date.now() - started > DEADLINE_MS) fail(`send ${cid} never acknowledged`);
      let status = 0, text = '';
      try {
        const sending = fetch(`${this.base}/conversations/${CONV}/messages`, {
          method: 'POST', body, signal: AbortSignal.timeout(3000),
          headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + this.token },
        });
        if (attempt === 0) this.onFirstSend(i);
        const r = await sending;
        status = r.status;
        text = await r.text();
      } catch { status = 0; }
      if (status === 200 || status === 201) {
        const m = JSON.parse(text);
        if (m.duplicate) this.duplicates++;
        this.acked.set(m.seq, cid);
        return;
      }
      if (status !== 0 && status !== 503) fail(`send ${cid}: HTTP ${status} ${text}`);
      this.unknown++;
      await sleep(50);
    }
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'seqd-sse-node-'));
let server, es;
try {
  const readerSecret = secret('reader'), senderSecret = secret('sender');
  const tokensFile = path.join(dir, 'tokens');
  writeFileSync(tokensFile, [
    `reader ${sha256(readerSecret)} msg:read:${CONV}`,
    `sender ${sha256(senderSecret)} msg:send:${CONV}`, ''].join('\n'));
  server = new Server(dir, await freePort(), tokensFile);
  await server.start();
  const base = `http://127.0.0.1:${server.port}`;

  // The stream: every message event, its id, opens and errors.
  const received = [];       // {seq, cid, id}
  let opens = 0, errors = 0, closedForGood = null;
  es = new EventSource(`${base}/conversations/${CONV}/events`, {
    fetch: (url, init) => fetch(url, {
      ...init, headers: { ...init.headers, Authorization: 'Bearer ' + readerSecret } }),
  });
  es.onopen = () => { opens++; };
  es.onerror = (e) => {
    errors++;
    if (es.readyState === EventSource.CLOSED) closedForGood = `${e.code ?? ''} ${e.message ?? ''}`;
  };
  es.addEventListener('message', (e) => {
    const m = JSON.parse(e.data);
    received.push({ seq: m.seq, cid: m.client_msg_id, id: e.lastEventId });
  });
  es.addEventListener('dropped', () => { errors++; });
  const opened = Date.now();
  while (opens === 0) {
    if (closedForGood !== null) fail('the stream failed: ' + closedForGood);
    if (Date.now() - opened > 10_000) fail('the EventSource never opened');
    await sleep(20);
  }

  // Send, killing seqd twice on the way.
  const sender = new Sender(base, senderSecret);
  let sent = 0;
  const sending = (async () => {
    for (; sent < MESSAGES; sent++) {
      await sender.send(sent);
      await sleep(SEND_GAP_MS);
    }
  })();
  // Each kill lands 1-3 ms after a send was issued: its outcome is unknown
  // to the sender (stored or not), which sends it again with its client_msg_id.
  const reached = new Map();
  const killPoints = KILL_AT.map((at) => new Promise((r) => reached.set(at, r)));
  sender.onFirstSend = (i) => reached.get(i)?.();
  const kills = [];
  for (const [k, point] of killPoints.entries()) {
    await point;
    await sleep(1 + k);
    const seen = received.length;
    await server.kill();
    kills.push({ acked: sender.acked.size, received: seen });
    await sleep(DOWN_MS);
    await server.start();
    // The client reconnects by itself (within a few retry intervals) and
    // receives again before the next kill, so each kill cuts a live stream.
    const back = Date.now();
    while (opens < kills.length + 1 || received.length <= kills.at(-1).received) {
      if (closedForGood !== null) fail('the stream failed: ' + closedForGood);
      if (Date.now() - back > 10_000) fail(`no events within 10 s of restart ${kills.length}`);
      await sleep(10);
    }
  }
  await sending;

  // Everything acked arrives; then a moment for anything extra (a repeat).
  const maxAcked = Math.max(...sender.acked.keys());
  while (!received.some((r) => r.seq >= maxAcked)) {
    if (closedForGood !== null) fail('the stream failed: ' + closedForGood);
    if (Date.now() - started > DEADLINE_MS) break;
    await sleep(20);
  }
  await sleep(500);
  es.close();

  const seqs = received.map((r) => r.seq);
  const seen = new Set();
  let duplicates = 0, disorder = 0, badIds = 0;
  for (let i = 0; i < received.length; i++) {
    if (seen.has(seqs[i])) duplicates++;
    seen.add(seqs[i]);
    if (i > 0 && seqs[i] <= seqs[i - 1]) disorder++;
    if (received[i].id !== String(seqs[i])) badIds++;
  }
  const missing = [...sender.acked.keys()].filter((s) => !seen.has(s)).sort((a, b) => a - b);
  const extra = received.filter((r) => !sender.acked.has(r.seq));
  const cids = new Set(received.map((r) => r.cid));
  const wrong = received.filter((r) => sender.acked.has(r.seq) && sender.acked.get(r.seq) !== r.cid);
  const reconnects = opens - 1;
  const summary = `acked ${sender.acked.size}, received ${received.length}, ` +
    `duplicates ${duplicates}, out of order ${disorder}, missing ${missing.length}, ` +
    `reconnects ${reconnects} (error events ${errors}), kills ${kills.length} ` +
    `(at acked/received ${kills.map((k) => `${k.acked}/${k.received}`).join(', ')}), ` +
    `failed or unknown sends re-sent ${sender.unknown} ` +
    `(${sender.duplicates} answered duplicate), ${((Date.now() - started) / 1000).toFixed(1)} s`;
  console.log('sse_resume_node: ' + summary);

  if (sender.acked.size !== MESSAGES) fail(`${sender.acked.size} of ${MESSAGES} sends acked`);
  if (duplicates) fail(`${duplicates} duplicate events`);
  if (disorder) fail(`${disorder} events out of seq order: ${seqs.join(',')}`);
  if (missing.length) fail(`acked but never received: seqs ${missing.slice(0, 20).join(',')}`);
  if (wrong.length) fail(`seq ${wrong[0].seq} carried ${wrong[0].cid}, acked as another message`);
  // Every send was acked in the end, so nothing else may arrive: an extra
  // seq would be a message stored twice (a re-send not recognised).
  if (extra.length) fail(`received seq ${extra[0].seq} (${extra[0].cid}) that no send was acked with`);
  if (cids.size !== received.length) fail('one client_msg_id arrived under two seqs');
  if (badIds) fail(`${badIds} events whose id is not their seq`);
  if (reconnects < KILL_AT.length) fail(`only ${reconnects} reconnects for ${KILL_AT.length} kills`);
  // Each kill cut a live stream: events arrived before the first and after the last.
  if (kills[0].received === 0) fail('nothing was received before the first kill');
  if (kills.at(-1).received >= received.length) fail('nothing was received after the last kill');
  console.log('PASS');
} catch (e) {
  if (!process.exitCode) {
    console.error('FAIL: ' + (e.stack || e));
    process.exitCode = 1;
  }
  if (server) console.error('seqd log (end):\n' + server.logs());
} finally {
  if (es) es.close();
  if (server?.proc && server.proc.exitCode === null) server.proc.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
}
// Pending keep-alive sockets must not hold the process open.
process.exit(process.exitCode ?? 0);
