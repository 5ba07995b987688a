// The official @modelcontextprotocol/sdk 1.x client (legacy era: initialize
// handshake, negotiates 2025-11-25) against brig-test-server.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { CallToolResultSchema, ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { UnixSocketTransport } from './lib/socket_transport.mjs';
import { serverPath, tapTransport } from './lib/brig_server.mjs';
import { runScenarios } from './lib/scenarios.mjs';

const CLIENT_INFO = { name: 'brig-conformance-sdk1', version: '1.0.0' };

async function connect(transport) {
  const wire = tapTransport(transport);
  let negotiated;
  // Called by the SDK with initialize's protocolVersion once it accepted it.
  transport.setProtocolVersion = (version) => {
    negotiated = version;
  };
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  await client.connect(transport);
  return { client, transport, wire, negotiatedVersion: () => negotiated };
}

runScenarios({
  name: '@modelcontextprotocol/sdk 1.x',
  expectedVersion: '2025-11-25',
  connectStdio: (dir) =>
    connect(new StdioClientTransport({ command: serverPath(), args: ['serve', '--workspace', dir], cwd: dir, env: process.env })),
  connectSocket: (socketPath) => connect(new UnixSocketTransport(socketPath, { ReadBuffer, serializeMessage })),
  callTool: (client, params, options) => client.callTool(params, CallToolResultSchema, options),
  rawRequest: (client, method, params) => client.request({ method, params }, ResultSchema),
  validator: new AjvJsonSchemaValidator(),
  checkWire(wire) {
    const init = wire.find((e) => e.dir === 'out' && e.message.method === 'initialize');
    assert.ok(init, 'no initialize sent');
    const reply = wire.find((e) => e.dir === 'in' && e.message.id === init.message.id);
    assert.equal(reply.message.result.protocolVersion, '2025-11-25');
    assert.equal(typeof reply.message.result.serverInfo?.name, 'string');
    assert.ok(reply.message.result.capabilities?.tools, 'initialize result lacks the tools capability');
    for (const { message } of wire.filter((e) => e.dir === 'in')) {
      assert.equal(message.jsonrpc, '2.0');
      if ('id' in message) assert.notEqual(message.id, null);
    }
  },
});
