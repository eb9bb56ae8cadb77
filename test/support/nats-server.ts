import { freePort } from './wait';
import { RunningBroker, ServerProcess } from './broker-process';

const READY_TIMEOUT_MS = 15_000;

/** A `nats-server` a suite started; with JetStream it keeps its store across `restart`. */
export interface RunningNats extends RunningBroker {
  /** Stops the server and starts it again on the same port (and JetStream store). */
  restart(): Promise<void>;
}

/**
 * Starts `nats-server` (from PATH, or `NATS_SERVER_BIN`) on a free port of
 * 127.0.0.1; with `jetStream`, JetStream is on (`-js`) with its file store
 * in that directory.
 */
export async function startNats(options: { readonly jetStream?: string } = {}): Promise<RunningNats> {
  const bin = process.env.NATS_SERVER_BIN ?? 'nats-server';
  const port = await freePort();
  const args = ['-a', '127.0.0.1', '-p', String(port)];
  if (options.jetStream !== undefined) args.push('-js', '-sd', options.jetStream);
  let server = await launch(bin, args, port);
  return {
    port,
    stop: () => server.stop(),
    restart: async () => {
      await server.stop();
      server = await launch(bin, args, port);
    },
  };
}

async function launch(bin: string, args: readonly string[], port: number): Promise<ServerProcess> {
  const server = new ServerProcess(bin, args, {}, 'install the nats-server package, or set NATS_SERVER_BIN');
  try {
    await server.waitForPort(port, READY_TIMEOUT_MS, 'nats-server');
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}
