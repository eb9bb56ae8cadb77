import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from './wait';
import { RunningBroker, ServerProcess } from './broker-process';

/** RabbitMQ boots an Erlang node: tens of seconds on a busy machine. */
const READY_TIMEOUT_MS = 120_000;

/** A RabbitMQ node a suite started. */
export interface RunningRabbitMq extends RunningBroker {
  /** Stops the node and starts it again on the same ports and data directory (durable queues and persistent messages survive). */
  restart(): Promise<void>;
}

/**
 * Starts `rabbitmq-server` (Debian's package; `RABBITMQ_SERVER_BIN` to use
 * another) as a node of its own under `root`: its own epmd on a free port,
 * the AMQP listener on a free port of 127.0.0.1, no plugins, its cookie in
 * `root`. Both run in their own process groups, which `stop` ends.
 */
export async function startRabbitMq(root: string): Promise<RunningRabbitMq> {
  const bin = process.env.RABBITMQ_SERVER_BIN ?? '/usr/lib/rabbitmq/bin/rabbitmq-server';
  const [port, distPort, epmdPort] = [await freePort(), await freePort(), await freePort()];
  const dir = join(root, `rabbitmq-${port}`);
  await mkdir(join(dir, 'log'), { recursive: true });
  await writeFile(join(dir, 'enabled_plugins'), '[].\n');
  await writeFile(join(dir, 'rabbitmq.conf'), `listeners.tcp.1 = 127.0.0.1:${port}\nloopback_users = none\n`);
  const env = {
    ...process.env,
    HOME: dir,
    ERL_EPMD_PORT: String(epmdPort),
    RABBITMQ_NODENAME: `resilience4nest${port}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
    RABBITMQ_LOG_BASE: join(dir, 'log'),
    RABBITMQ_LOGS: '-',
    RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
    RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq'),
  };
  const hint = 'install the rabbitmq-server package, or set RABBITMQ_SERVER_BIN';
  const epmd = new ServerProcess('epmd', ['-port', String(epmdPort)], { env, detached: true }, hint);
  const launch = () => new ServerProcess(bin, [], { env, cwd: dir, detached: true }, hint);
  let server = launch();
  const stop = async () => {
    await server.stop();
    await epmd.stop();
  };
  try {
    await epmd.waitForPort(epmdPort, 10_000, 'epmd');
    await server.waitForPort(port, READY_TIMEOUT_MS, 'rabbitmq-server');
  } catch (error) {
    await stop();
    throw error;
  }
  const restart = async () => {
    await server.stop();
    server = launch();
    await server.waitForPort(port, READY_TIMEOUT_MS, 'rabbitmq-server');
  };
  return { port, stop, restart };
}
