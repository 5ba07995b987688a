// The conformance scenarios every official client runs against brig, over
// stdio and over the Unix socket. Each client file supplies an adapter that
// hides the small API differences between SDK 1.x and client 2.x.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { makeTempDir, removeDir, startSocketServer, sleep } from './brig_server.mjs';

// The test tools brig-test-server registers, in registry order.
const TEST_TOOLS = ['echo', 'add', 'slow', 'progress', 'fail'];

// Pids whose command line contains needle (read from /proc; a process that
// ends mid-scan is skipped).
function pidsWithCmdline(needle) {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').includes(needle)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

// Polls cond until it holds or deadlineMs passes; resolves to whether it held.
async function eventually(cond, deadlineMs = 20_000) {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (cond()) return true;
    await sleep(20);
  }
  return cond();
}

// Whether the progress notification note (an inbound wire entry) reached
// the client in the same batch as its call's result, after it on the wire.
// Both SDKs handle a response as soon as it is read but a notification a
// microtask later, so such a note finds its progress handler already removed
// and is dropped with an "unknown token" error
// (modelcontextprotocol/typescript-sdk#2580). A server cannot avoid it: it
// sent the note first; the client read both at once.
function lateProgress(wire, note) {
  const token = note.message.params.progressToken;
  const request = wire.find(
    (e) => e.dir === 'out' && 'id' in e.message && e.message.params?._meta?.progressToken === token
  );
  if (!request) return false;
  const answer = wire.find(
    (e) => e.dir === 'in' && e.message.id === request.message.id && ('result' in e.message || 'error' in e.message)
  );
  return answer !== undefined && answer.batch === note.batch && wire.indexOf(note) < wire.indexOf(answer);
}

/**
 * adapter: {
 *   name, expectedVersion,
 *   connectStdio(dir) / connectSocket(socketPath) -> {client, transport, wire, negotiatedVersion()}
 *   callTool(client, params, options), rawRequest(client, method, params),
 *   validator: {getValidator(schema) -> (value) -> {valid}},
 *   checkWire(wire)  // era-specific checks of every message seen
 * }
 */
export function runScenarios(adapter) {
  for (const kind of ['stdio', 'unix socket']) {
    describe(`${adapter.name} over ${kind}`, { timeout: 300_000 }, () => {
      let dir;
      let socketServer;
      let conn;
      const errors = [];

      before(async () => {
        dir = makeTempDir();
        if (kind === 'stdio') {
          conn = await adapter.connectStdio(dir);
        } else {
          socketServer = await startSocketServer(dir);
          conn = await adapter.connectSocket(socketServer.socketPath);
        }
        conn.client.onerror = (error) => errors.push(error);
      });

      after(async () => {
        await conn?.client.close();
        if (socketServer) {
          const { code, signal } = await socketServer.stop();
          assert.equal(signal, null, 'brig-test-server was killed, not stopped by SIGTERM');
          assert.equal(code, 0, 'brig-test-server exit code after SIGTERM');
        }
        if (dir) removeDir(dir);
      });

      it(`negotiates ${adapter.expectedVersion}`, () => {
        assert.equal(conn.negotiatedVersion(), adapter.expectedVersion);
      });

      it('lists every tool, and the client accepts each schema', async () => {
        const { tools } = await conn.client.listTools();
        const names = tools.map((t) => t.name);
        const positions = TEST_TOOLS.map((name) => names.indexOf(name));
        assert.ok(positions.every((p) => p >= 0), `missing test tools in ${names}`);
        assert.deepEqual([...positions].sort((a, b) => a - b), positions, 'tools not in registry order');
        assert.equal(new Set(names).size, names.length, 'duplicate tool names');
        for (const tool of tools) {
          assert.equal(tool.inputSchema.type, 'object', `${tool.name}: inputSchema.type`);
          adapter.validator.getValidator(tool.inputSchema);
          if (tool.outputSchema) {
            assert.equal(tool.outputSchema.type, 'object', `${tool.name}: outputSchema.type`);
            adapter.validator.getValidator(tool.outputSchema);
          }
        }
        // The schemas mean what the contract says.
        const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
        const valid = (tool, args) => adapter.validator.getValidator(byName[tool].inputSchema)(args).valid;
        assert.ok(valid('echo', { text: 'hi' }));
        assert.ok(!valid('echo', {}));
        assert.ok(valid('add', { a: 1, b: 2.5 }));
        assert.ok(!valid('add', { a: 'x', b: 1 }));
        assert.ok(!valid('add', { a: 1, b: 2, c: 3 }));
        assert.ok(valid('slow', { seconds: 1 }));
        assert.ok(valid('progress', { steps: 3 }));
        assert.ok(!valid('progress', { steps: 1.5 }));
      });

      it('calls echo and add (structured content checked against outputSchema)', async () => {
        const echo = await adapter.callTool(conn.client, { name: 'echo', arguments: { text: 'héllo ✓' } });
        assert.ok(!echo.isError);
        assert.deepEqual(echo.content, [{ type: 'text', text: 'héllo ✓' }]);
        assert.deepEqual(echo.structuredContent, { text: 'héllo ✓' });

        const add = await adapter.callTool(conn.client, { name: 'add', arguments: { a: 2, b: 40.5 } });
        assert.ok(!add.isError);
        assert.equal(add.structuredContent.sum, 42.5);
        assert.equal(add.content[0].type, 'text');
        assert.equal(Number(add.content[0].text), 42.5);
      });

      it('answers bad add arguments with an isError result naming the field', async () => {
        const result = await adapter.callTool(conn.client, { name: 'add', arguments: { a: 'x', b: 1 } });
        assert.equal(result.isError, true);
        const text = result.content.map((c) => c.text).join(' ');
        assert.match(text, /\ba\b/, `error text does not name field a: ${text}`);

        const failed = await adapter.callTool(conn.client, { name: 'fail', arguments: { message: 'on purpose' } });
        assert.equal(failed.isError, true);
        assert.match(failed.content.map((c) => c.text).join(' '), /on purpose/);
      });

      it('answers an unknown tool with -32602', async () => {
        await assert.rejects(
          adapter.callTool(conn.client, { name: 'no-such-tool', arguments: {} }),
          (error) => error.code === -32602
        );
      });

      it('cancels slow through an AbortSignal, and the work really stops', async () => {
        // Control: uncancelled, the same call does write its marker.
        const control = path.join(dir, 'control');
        const done = await adapter.callTool(conn.client, { name: 'slow', arguments: { seconds: 0.2, marker: control } });
        assert.ok(!done.isError);
        assert.ok(existsSync(control), 'slow did not write its marker');

        const marker = path.join(dir, 'cancelled');
        const seconds = 1.5;
        const abort = new AbortController();
        const call = adapter.callTool(
          conn.client,
          { name: 'slow', arguments: { seconds, marker } },
          { signal: abort.signal }
        );
        await sleep(300);
        abort.abort();
        await assert.rejects(call);
        const sent = conn.wire.find(
          (e) => e.dir === 'out' && e.message.method === 'tools/call' && e.message.params?.arguments?.marker === marker
        );
        assert.ok(sent, 'the cancelled tools/call is not on the wire');
        const cancel = conn.wire.find(
          (e) => e.dir === 'out' && e.message.method === 'notifications/cancelled' && e.message.params?.requestId === sent.message.id
        );
        assert.ok(cancel, 'the client sent no notifications/cancelled');

        // Well past the time the call would have taken.
        await sleep(seconds * 1000 + 3000);
        assert.ok(!existsSync(marker), 'the cancelled call still wrote its marker');
        const answered = conn.wire.filter((e) => e.dir === 'in' && e.message.id === sent.message.id);
        assert.deepEqual(answered, [], 'brig answered a cancelled request');

        const after = await adapter.callTool(conn.client, { name: 'echo', arguments: { text: 'still here' } });
        assert.equal(after.structuredContent.text, 'still here');
      });

      it('receives progress in order', async () => {
        const steps = 8;
        const seen = [];
        const result = await adapter.callTool(
          conn.client,
          { name: 'progress', arguments: { steps, interval_ms: 10 } },
          { onprogress: (p) => seen.push(p) }
        );
        assert.ok(!result.isError);
        assert.equal(result.content[0].text, `done ${steps}`);
        assert.deepEqual(result.structuredContent, { steps });

        const expected = Array.from({ length: steps }, (_, i) => [i + 1, steps, `step ${i + 1}`]);
        // On the wire: every step, in order, all before the result.
        const request = conn.wire.find(
          (e) => e.dir === 'out' && e.message.method === 'tools/call' && e.message.params?.name === 'progress'
        );
        const token = request.message.params._meta.progressToken;
        assert.notEqual(token, undefined, 'the client sent no progressToken');
        const inbound = conn.wire.filter((e) => e.dir === 'in');
        const notes = inbound.filter(
          (e) => e.message.method === 'notifications/progress' && e.message.params.progressToken === token
        );
        assert.deepEqual(
          notes.map(({ message: { params: p } }) => [p.progress, p.total, p.message]),
          expected
        );
        const answerAt = inbound.findIndex((e) => e.message.id === request.message.id);
        assert.ok(notes.every((n) => inbound.indexOf(n) < answerAt), 'progress sent after the result');

        // Through onprogress: in order, every step but those the client read
        // in the same batch as the result (lateProgress).
        const late = notes.filter((n) => lateProgress(conn.wire, n));
        assert.deepEqual(
          seen.map((p) => [p.progress, p.total, p.message]),
          expected.slice(0, steps - late.length),
          `${late.length} of ${steps} steps read with the result`
        );
      });

      it('writes, reads, edits and lists workspace files through the jail; failures are isError results', async () => {
        const call = (name, args) => adapter.callTool(conn.client, { name, arguments: args });
        const text = (result) => result.content.map((c) => c.text ?? '').join('');

        const written = await call('write_file', { path: 'conf/a.txt', content: 'alpha\nbeta\n', create_parents: true });
        assert.ok(!written.isError, text(written));
        assert.equal(readFileSync(path.join(dir, 'conf', 'a.txt'), 'utf8'), 'alpha\nbeta\n');

        const read = await call('read_file', { path: 'conf/a.txt' });
        assert.ok(!read.isError, text(read));
        // One copy (docs/tools.md): the text is the first text block, and
        // structuredContent, which the client validated against the output
        // schema, holds what was read.
        assert.equal(read.content[0].text, 'alpha\nbeta\n');
        assert.equal(read.structuredContent.content, undefined);
        assert.equal(read.structuredContent.total_lines, 2);

        // A 1 MiB file read whole arrives once: at most 1.1 times its size.
        const big = 'const value = compute(argument) + offset;\n'.repeat(25000);
        writeFileSync(path.join(dir, 'big.txt'), big);
        const bigRead = await call('read_file', { path: 'big.txt', limit: 1000000 });
        assert.ok(!bigRead.isError, text(bigRead).slice(0, 500));
        assert.equal(bigRead.content[0].text, big);
        assert.ok(JSON.stringify(bigRead).length <= big.length * 1.1, `${JSON.stringify(bigRead).length} bytes`);

        const edited = await call('edit_file', { path: 'conf/a.txt', edits: [{ old_text: 'beta', new_text: 'gamma' }] });
        assert.ok(!edited.isError, text(edited));
        assert.match(text(edited), /-beta\n\+gamma/);
        assert.equal(readFileSync(path.join(dir, 'conf', 'a.txt'), 'utf8'), 'alpha\ngamma\n');

        const listed = await call('list_directory', { path: 'conf' });
        assert.ok(!listed.isError, text(listed));
        assert.deepEqual(listed.structuredContent.entries.map((e) => e.path), ['a.txt']);

        const missing = await call('read_file', { path: 'conf/none.txt' });
        assert.equal(missing.isError, true);
        assert.match(text(missing), /none\.txt/);

        writeFileSync(path.join(dir, 'twice.txt'), 'x x\n');
        const ambiguous = await call('edit_file', { path: 'twice.txt', edits: [{ old_text: 'x', new_text: 'y' }] });
        assert.equal(ambiguous.isError, true);
        assert.equal(readFileSync(path.join(dir, 'twice.txt'), 'utf8'), 'x x\n');

        const denied = await call('write_file', { path: '/usr/brig-conformance', content: 'x' });
        assert.equal(denied.isError, true);
        assert.match(text(denied), /read_only/);
        assert.ok(!existsSync('/usr/brig-conformance'));
      });

      it('runs commands in jails: exit codes, timeouts, a bad regex, and cancellation leaves no process', async () => {
        const call = (name, args, options) => adapter.callTool(conn.client, { name, arguments: args }, options);
        const text = (result) => result.content.map((c) => c.text ?? '').join('');

        const ok = await call('exec', { command: 'echo hello; echo oops >&2' });
        assert.ok(!ok.isError, text(ok));
        assert.match(ok.content[0].text, /--- stdout ---\nhello\n/);
        assert.match(ok.content[0].text, /--- stderr ---\noops\n/);
        assert.equal(ok.structuredContent.stdout, undefined);
        assert.equal(ok.structuredContent.stdout_bytes, 6);
        assert.equal(ok.structuredContent.exit_code, 0);

        const failed = await call('exec', { argv: ['sh', '-c', 'exit 7'] });
        assert.equal(failed.isError, true);
        assert.equal(failed.structuredContent.exit_code, 7);

        const slow = await call('exec', { command: 'sleep 60', timeout: 1 });
        assert.equal(slow.isError, true);
        assert.equal(slow.structuredContent.timed_out, true);

        const bad = await call('search', { pattern: '(unclosed' });
        assert.equal(bad.isError, true);
        assert.match(text(bad), /missing \)/);

        const tag = `brig-conf-cancel-${process.pid}-${kind.replace(' ', '-')}`;
        const abort = new AbortController();
        const running = call('exec', { command: `sleep 300; echo ${tag}` }, { signal: abort.signal });
        assert.ok(await eventually(() => pidsWithCmdline(tag).length > 0), 'the command never started');
        abort.abort();
        await assert.rejects(running);
        assert.ok(await eventually(() => pidsWithCmdline(tag).length === 0), 'the cancelled command still runs');
      });

      it('finds files, searches contents, and follows a long command as a job', async () => {
        const call = (name, args) => adapter.callTool(conn.client, { name, arguments: args });
        const text = (result) => result.content.map((c) => c.text ?? '').join('');
        writeFileSync(path.join(dir, 'notes.md'), 'alpha\nneedle here\n');

        const found = await call('find_files', { pattern: '**/*.md' });
        assert.ok(!found.isError, text(found));
        assert.deepEqual(found.structuredContent.files.map((f) => f.path), ['notes.md']);

        const hits = await call('search', { pattern: 'needle' });
        assert.ok(!hits.isError, text(hits));
        assert.deepEqual(hits.structuredContent.files.map((f) => f.path), ['notes.md']);
        assert.equal(hits.structuredContent.files[0].lines[0].line, 2);
        assert.equal(hits.structuredContent.files[0].lines[0].text, undefined);
        assert.match(text(hits), /2:needle here/);

        const started = await call('exec', { command: 'echo first; sleep 1; echo second', yield_after: 0.2 });
        assert.ok(!started.isError, text(started));
        const id = started.structuredContent.job;
        assert.ok(id, `no job handle: ${text(started)}`);
        const waited = await call('job', { action: 'wait', id, seconds: 30 });
        assert.ok(!waited.isError, text(waited));
        assert.equal(waited.structuredContent.exit_code, 0);
        const all = await call('job', { action: 'read', id });
        assert.match(text(all), /first\nsecond/);
      });

      if (kind === 'unix socket') {
        it('kills a running command when its client disconnects, and keeps serving others', async () => {
          const other = await adapter.connectSocket(socketServer.socketPath);
          const tag = `brig-conf-disconnect-${process.pid}`;
          const running = adapter
            .callTool(other.client, { name: 'exec', arguments: { command: `sleep 300; echo ${tag}` } })
            .catch(() => 'disconnected');
          assert.ok(await eventually(() => pidsWithCmdline(tag).length > 0), 'the command never started');
          await other.client.close();
          assert.equal(await running, 'disconnected');
          assert.ok(await eventually(() => pidsWithCmdline(tag).length === 0), 'the command outlived its client');
          const still = await adapter.callTool(conn.client, { name: 'echo', arguments: { text: 'still here' } });
          assert.equal(still.structuredContent.text, 'still here');
        });
      }

      it('sees -32601 for an unknown method', async () => {
        await assert.rejects(adapter.rawRequest(conn.client, 'brig/no-such-method', {}), (error) => {
          assert.equal(error.code, -32601, `got ${error}`);
          return true;
        });
      });

      it('runs many calls at once on one connection', async () => {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            adapter.callTool(conn.client, { name: 'echo', arguments: { text: `n${i}` } })
          )
        );
        assert.deepEqual(
          results.map((r) => r.structuredContent.text),
          Array.from({ length: 20 }, (_, i) => `n${i}`)
        );
      });

      it('keeps the wire clean', () => {
        adapter.checkWire(conn.wire);
        // The one error the SDKs raise for a race no server can avoid: a
        // progress notification read in the same batch as its call's result.
        const late = (error) => {
          const m = /progress notification for an unknown token: (\{.*\})$/.exec(String(error.message));
          if (!m) return false;
          const { params } = JSON.parse(m[1]);
          const note = conn.wire.find(
            (e) =>
              e.dir === 'in' &&
              e.message.method === 'notifications/progress' &&
              e.message.params.progressToken === params.progressToken &&
              e.message.params.progress === params.progress
          );
          return note !== undefined && lateProgress(conn.wire, note);
        };
        assert.deepEqual(errors.filter((e) => !late(e)).map(String), [], 'the client reported protocol errors');
      });
    });
  }
}
