import { createServer, Socket } from 'node:net';

/** A TCP proxy in front of a Redis server that can drop one reply and close its connection. */
export interface CuttingProxy {
  /** The proxy's URL, for a client that should go through it. */
  readonly url: string;
  /**
   * Arms a cut: the next reply to `command` that is not a null reply is
   * dropped, and both ends of its connection are closed, as a network or a
   * stopping server loses a reply the server already acted on. Resolves
   * once it happened; later connections pass through untouched.
   */
  cutNextReplyTo(command: string): Promise<void>;
  /** Stops accepting and closes every connection. */
  close(): Promise<void>;
}

/** Starts a {@link CuttingProxy} on a free port of 127.0.0.1 that forwards to `targetPort` there. */
export async function startCuttingProxy(targetPort: number): Promise<CuttingProxy> {
  const sockets = new Set<Socket>();
  let armed: { command: string; done: () => void } | undefined;
  const server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    // The name of the last command the client sent on this connection: the one the next reply most likely answers.
    let lastCommand = '';
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', closeBoth).on('close', closeBoth);
    upstream.on('error', closeBoth).on('close', closeBoth);
    client.on('data', (chunk: Buffer) => {
      for (const match of chunk.toString('latin1').matchAll(/\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n/g))
        lastCommand = match[1].toUpperCase();
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      const nullReply = chunk.toString('latin1').startsWith('*-1\r\n');
      if (armed !== undefined && lastCommand === armed.command && !nullReply) {
        const { done } = armed;
        armed = undefined;
        closeBoth();
        done();
        return;
      }
      client.write(chunk);
    });
    upstream.connect(targetPort, '127.0.0.1');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    cutNextReplyTo: (command) => new Promise<void>((done) => (armed = { command: command.toUpperCase(), done })),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
