// Starting brig-test-server for the conformance tests, and watching the wire.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

// The server under test: $BRIG_TEST_SERVER (set by ctest), else the build
// tree's bin/ next to this conformance/ folder.
export function serverPath() {
  const fromEnv = process.env.BRIG_TEST_SERVER;
  const exe = fromEnv || path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'brig-test-server');
  if (!existsSync(exe)) throw new Error(`brig-test-server not found at ${exe} (set BRIG_TEST_SERVER)`);
  return exe;
}

// A fresh private directory under /tmp: short enough for socket paths.
export function makeTempDir() {
  return mkdtempSync('/tmp/brig-conf-');
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true });
}

// Polls until the socket accepts a connection (generous deadline).
async function waitForSocket(socketPath, deadlineMs) {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.createConnection(socketPath);
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > end) throw new Error(`no socket at ${socketPath} after ${deadlineMs} ms`);
    await sleep(20);
  }
}

// brig-test-server listening on a Unix socket in dir. stop() sends SIGTERM
// and resolves with the exit code (brig exits 0 on SIGTERM).
export async function startSocketServer(dir) {
  const socketPath = path.join(dir, 's.sock');
  const child = spawn(serverPath(), ['serve', '--workspace', dir, '--listen', `unix://${socketPath}`], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  try {
    await Promise.race([
      waitForSocket(socketPath, 60_000),
      exited.then(({ code, signal }) => {
        throw new Error(`brig-test-server exited early (code ${code}, signal ${signal})`);
      }),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return {
    socketPath,
    async stop() {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const result = await exited;
      clearTimeout(killer);
      return result;
    },
  };
}

// Records every message the client sends and receives on transport, from
// the moment the SDK installs its handler (so the handshake is included).
// Returns the log: [{dir: 'in' | 'out', message, batch}]. batch numbers the
// runs of inbound messages handed to the SDK with no microtask between them
// (one read of the pipe or socket): the SDKs handle a response at once but a
// notification a microtask later, so within one batch a response overtakes
// the notifications before it (see lateProgress in scenarios.mjs).
export function tapTransport(transport) {
  const log = [];
  let batch = 0;
  let inBatch = false;
  const originalSend = transport.send.bind(transport);
  transport.send = (message, options) => {
    log.push({ dir: 'out', message });
    return originalSend(message, options);
  };
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler,
    set: (fn) => {
      const inner = fn?.brigInner ?? fn;
      if (!inner) {
        handler = inner;
        return;
      }
      const wrapped = (message, extra) => {
        if (!inBatch) {
          inBatch = true;
          batch += 1;
          queueMicrotask(() => {
            inBatch = false;
          });
        }
        log.push({ dir: 'in', message, batch });
        return inner(message, extra);
      };
      wrapped.brigInner = inner;
      handler = wrapped;
    },
  });
  return log;
}

// Resolves after ms, for waits past a deadline the server must have kept.
export { sleep };
