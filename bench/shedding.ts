import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock } from '../lib/kernel/clock';
import { LoadShedder } from '../lib/features/load-shedding/load-shedder';
import { DoorMiddleware, loadSheddingDoor } from '../lib/features/load-shedding/load-shedding.door';
import { LoadSheddingOptions, readLoadSheddingOptions } from '../lib/features/load-shedding/load-shedding.options';
import { measure } from './measure';
import { ns, printHeading, printTable, spread, verdict } from './report';
import { BenchSection } from './section';

const ADDED_NS_TARGET = 300;

/** A kept-alive connection that stays open: every request of the bench arrives on it. */
class OpenSocket extends EventEmitter {
  readonly closed = false;
}

const socket = new OpenSocket();

/** A response that ends as soon as the handler is reached, as Node's would after writing, on its connection. */
class EndedResponse extends EventEmitter {
  statusCode = 200;
  readonly writableFinished = true;
  readonly socket = socket;
}

function door(options: LoadSheddingOptions): DoorMiddleware {
  return loadSheddingDoor(
    new LoadShedder(readLoadSheddingOptions(options), systemClock, Math.random),
    'normal',
    'x-request-deadline-ms',
  );
}

/** One request through `middleware`: a fresh request object, the handler reached, the answer finished. */
function request(middleware: DoorMiddleware, res: EndedResponse): Promise<number> {
  let reached = 0;
  middleware({ headers: {}, socket } as unknown as IncomingMessage, res as unknown as ServerResponse, () => reached++);
  res.emit('close');
  res.removeAllListeners('close');
  return Promise.resolve(reached);
}

/**
 * What the load shedder's door costs a request on the admitted path: a
 * request object through a pass-through middleware (the bare request), and
 * through the door with a fixed cap, with the adaptive limits, and with
 * priorities and an event-loop signal on top. The door's own work is the
 * difference from the bare request.
 */
export const shedding: BenchSection = {
  name: 'shedding',
  summary: 'ns per request that the load shedder adds at the door: fixed cap, Gradient2, Vegas, priorities',
  async run() {
    const res = new EndedResponse();
    const bare: DoorMiddleware = (_req, _res, next) => next();
    const subjects: Array<[string, DoorMiddleware]> = [
      ['bare request (pass-through middleware)', bare],
      ['door, fixed cap', door({ maxConcurrentRequests: 1000 })],
      ['door, adaptive gradient2', door({ adaptive: { algorithm: 'gradient2' } })],
      ['door, adaptive vegas', door({ adaptive: { algorithm: 'vegas' } })],
      [
        'door, gradient2 + priorities + event-loop delay',
        door({
          adaptive: {},
          priorities: { low: 0.5, normal: 0.3, high: 0.1 },
          eventLoopDelay: { threshold: '100ms' },
        }),
      ],
    ];
    const results = await measure(
      subjects.map(([label, middleware]) => ({ label, call: () => request(middleware, res), expect: 1 })),
    );
    const baseline = results[0].nsPerCall;
    printHeading('Load shedding: the door on the admitted path (ns per request, median)');
    printTable(
      [
        { heading: 'path' },
        { heading: 'ns/request', align: 'right' },
        { heading: 'added', align: 'right' },
        { heading: 'spread', align: 'right' },
      ],
      results.map((r, i) => [r.label, ns(r.nsPerCall), i === 0 ? '—' : ns(r.nsPerCall - baseline), spread(r.spread)]),
    );
    const adaptive = results[2].nsPerCall - baseline;
    console.log('');
    console.log(
      verdict(
        `admission with the adaptive limit adds ≤ ${ADDED_NS_TARGET} ns`,
        `${ns(adaptive)} ns`,
        adaptive <= ADDED_NS_TARGET,
      ),
    );
  },
};
