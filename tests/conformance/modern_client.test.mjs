// The official @modelcontextprotocol/client 2.x (modern era 2026-07-28,
// reached by its 'auto' version negotiation: server/discover probe, no
// initialize) against brig-test-server.
import assert from 'node:assert/strict';
import { Client, ReadBuffer, serializeMessage } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { UnixSocketTransport } from './lib/socket_transport.mjs';
import { serverPath, tapTransport } from './lib/brig_server.mjs';
import { runScenarios } from './lib/scenarios.mjs';

const CLIENT_INFO = { name: 'brig-conformance-client2', version: '2.0.0' };
const MODERN = '2026-07-28';

// Accepts any result: for methods the SDK has no schema for.
const ANY_RESULT = { '~standard': { version: 1, vendor: 'brig-conformance', validate: (value) => ({ value }) } };

async function connect(transport) {
  const wire = tapTransport(transport);
  const client = new Client(CLIENT_INFO, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  await client.connect(transport);
  return {
    client,
    transport,
    wire,
    negotiatedVersion: () => `${client.getNegotiatedProtocolVersion()} (${client.getProtocolEra()} era)`,
  };
}

runScenarios({
  name: '@modelcontextprotocol/client 2.x',
  expectedVersion: `${MODERN} (modern era)`,
  connectStdio: (dir) =>
    connect(new StdioClientTransport({ command: serverPath(), args: ['serve', '--workspace', dir], cwd: dir, env: process.env })),
  connectSocket: (socketPath) => connect(new UnixSocketTransport(socketPath, { ReadBuffer, serializeMessage })),
  callTool: (client, params, options) => client.callTool(params, options),
  rawRequest: (client, method, params) => client.request({ method, params }, ANY_RESULT),
  validator: new AjvJsonSchemaValidator(),
  checkWire(wire) {
    assert.ok(
      !wire.some((e) => e.dir === 'out' && e.message.method === 'initialize'),
      'the modern client fell back to initialize'
    );
    for (const { message } of wire.filter((e) => e.dir === 'out' && 'method' in e.message && 'id' in e.message)) {
      assert.equal(message.params?._meta?.['io.modelcontextprotocol/protocolVersion'], MODERN, message.method);
    }
    const results = wire.filter((e) => e.dir === 'in' && 'result' in e.message);
    assert.ok(results.length > 0);
    for (const { message } of results) {
      assert.equal(message.result.resultType, 'complete', `result of ${message.id} lacks resultType`);
      assert.equal(typeof message.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'string');
    }
  },
});
