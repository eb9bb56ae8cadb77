import { freePort } from './wait';
import { RunningBroker, ServerProcess } from './broker-process';

const READY_TIMEOUT_MS = 15_000;

/** Starts `nats-server` (from PATH, or `NATS_SERVER_BIN`) on a free port of 127.0.0.1. */
export async function startNats(): Promise<RunningBroker> {
  const bin = process.env.NATS_SERVER_BIN ?? 'nats-server';
  const port = await freePort();
  const server = new ServerProcess(
    bin,
    ['-a', '127.0.0.1', '-p', String(port)],
    {},
    'install the nats-server package, or set NATS_SERVER_BIN',
  );
  try {
    await server.waitForPort(port, READY_TIMEOUT_MS, 'nats-server');
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { port, stop: () => server.stop() };
}
