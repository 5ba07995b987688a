// An MCP client Transport over a Unix domain socket with the stdio framing
// (one JSON-RPC message per line). Framing and message validation come from
// the SDK under test (its ReadBuffer / serializeMessage), so a socket client
// is exactly as strict as that SDK's own stdio client.
import net from 'node:net';

export class UnixSocketTransport {
  /**
   * @param {string} path  socket path
   * @param {{ReadBuffer: Function, serializeMessage: Function}} framing  the SDK's stdio framing
   */
  constructor(path, framing) {
    this._path = path;
    this._framing = framing;
    this._readBuffer = new framing.ReadBuffer();
    this._socket = undefined;
    this.onclose = undefined;
    this.onerror = undefined;
    this.onmessage = undefined;
    this.protocolVersion = undefined;
  }

  start() {
    if (this._socket) throw new Error('UnixSocketTransport already started');
    return new Promise((resolve, reject) => {
      const socket = net.createConnection(this._path);
      this._socket = socket;
      socket.once('connect', () => {
        socket.off('error', reject);
        socket.on('error', (error) => this.onerror?.(error));
        resolve();
      });
      socket.once('error', reject);
      socket.on('data', (chunk) => {
        this._readBuffer.append(chunk);
        for (;;) {
          let message;
          try {
            message = this._readBuffer.readMessage();
          } catch (error) {
            this.onerror?.(error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      socket.on('close', () => {
        this._readBuffer.clear();
        this.onclose?.();
      });
    });
  }

  send(message) {
    return new Promise((resolve, reject) => {
      if (!this._socket || this._socket.destroyed) {
        reject(new Error('UnixSocketTransport is not connected'));
        return;
      }
      this._socket.write(this._framing.serializeMessage(message), (error) =>
        error ? reject(error) : resolve()
      );
    });
  }

  close() {
    const socket = this._socket;
    if (!socket || socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      socket.once('close', () => resolve());
      socket.end();
      // A server that never closes its side must not hang the test.
      setTimeout(() => socket.destroy(), 5000).unref();
    });
  }

  // Called by both SDKs once the protocol version is negotiated.
  setProtocolVersion(version) {
    this.protocolVersion = version;
  }
}
