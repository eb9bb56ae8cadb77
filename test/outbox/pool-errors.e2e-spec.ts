import { ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { Pool } from 'pg';
import { serverOrSkip } from '../support/server-env';
import { withTimeout } from '../support/wait';

const FIXTURE = join(__dirname, 'fixtures', 'terminated-pool.ts');

interface Report {
  pid?: number;
  alive?: boolean;
  warnings?: string[];
}

describe('a pool given to a store survives a terminated connection', () => {
  const url = serverOrSkip('postgres');
  if (url === undefined) return;

  let admin: Pool;
  let child: ChildProcess | undefined;
  beforeAll(() => {
    admin = new Pool({ connectionString: url, max: 1 });
  });
  afterAll(() => admin.end());
  afterEach(() => child?.kill('SIGKILL'));

  it.each([
    ['outbox', 'PostgresOutboxStore'],
    ['idempotency', 'PostgresIdempotencyStore'],
  ])(
    'the %s store listens for the pool error and logs it once',
    async (which, store) => {
      const messages: Report[] = [];
      let exit: number | null | undefined;
      child = fork(FIXTURE, [which], {
        execArgv: ['-r', require.resolve('ts-node/register/transpile-only')],
        env: { ...process.env, DATABASE_URL: url },
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const next = () =>
        new Promise<Report>((resolve) => {
          const take = () => (messages.length > 0 ? resolve(messages.shift()!) : setTimeout(take, 10));
          take();
        });
      child.on('message', (message: Report) => messages.push(message));
      child.on('error', () => undefined);
      const exited = new Promise<void>((resolve) => child!.on('exit', (code) => ((exit = code), resolve())));

      const { pid } = await withTimeout(next(), 20_000, 'the child started');
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      // The backend is gone; the child waits for its socket to see it before it queries again.
      await withTimeout(
        (async () => {
          for (;;) {
            const { rows } = await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid]);
            if (rows[0].n === 0) return;
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        })(),
        5000,
        'the backend gone',
      );
      // A crashed child has closed its channel: nothing to ask.
      if (child.connected) child.send('query', () => undefined);
      const report = await withTimeout(
        Promise.race([next(), exited.then((): Report => ({}))]),
        10_000,
        'the child answered',
      );
      expect({ exit, stderr: /uncaught|Error: terminating connection/i.test(stderr) ? stderr : '' }).toEqual({
        exit: undefined,
        stderr: '',
      });
      expect(report.alive).toBe(true);
      expect(report.warnings).toHaveLength(1);
      expect(report.warnings?.[0]).toMatch(new RegExp(`${store}: a connection of its pg pool failed`));
      expect(report.warnings?.[0]).toMatch(/terminating connection due to administrator command/);
    },
    40_000,
  );
});
