// A minimal client for `brig serve --listen unix:///PATH`, with nothing but
// Node's standard library: legacy-era initialize, then tools/list, then an
// optional tools/call given as a tool name and JSON arguments.
// Usage: node examples/socket_client.mjs /run/user/1000/brig.sock [TOOL 'JSON']
import net from 'node:net';

const [socketPath, tool, args] = process.argv.slice(2);
if (!socketPath) {
  console.error('usage: node socket_client.mjs SOCKET [TOOL JSON_ARGUMENTS]');
  process.exit(2);
}

const socket = net.createConnection(socketPath);
const pending = new Map();
let nextId = 1;
let buffered = '';

socket.on('data', (chunk) => {
  buffered += chunk.toString('utf8');
  let newline;
  while ((newline = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    const message = JSON.parse(line);
    if (message.id !== undefined && pending.has(message.id)) {
      pending.get(message.id)(message);
      pending.delete(message.id);
    }
  }
});
socket.on('error', (e) => {
  console.error(`cannot talk to ${socketPath}: ${e.message}`);
  process.exit(1);
});

function send(message) {
  socket.write(JSON.stringify(message) + '\n');
}

function request(method, params) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    send({ jsonrpc: '2.0', id, method, params });
  });
}

const init = await request('initialize', {
  protocolVersion: '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'brig-example-socket-client', version: '1.0.0' },
});
if (init.error) throw new Error(`initialize: ${init.error.message}`);
send({ jsonrpc: '2.0', method: 'notifications/initialized' });
console.log(`connected to ${init.result.serverInfo.name} ${init.result.serverInfo.version}`);

const list = await request('tools/list', {});
for (const t of list.result.tools) console.log(`tool ${t.name}: ${t.description ?? ''}`);

if (tool) {
  const call = await request('tools/call', { name: tool, arguments: JSON.parse(args ?? '{}') });
  console.log(JSON.stringify(call.error ?? call.result, null, 2));
}
socket.end();
