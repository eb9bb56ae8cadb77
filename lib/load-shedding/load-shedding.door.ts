import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { DeadlineExceededError, OverloadedError } from '../errors';
import { answerWithProblem as answer } from '../filter/problem-response';
import { Admission, LoadShedder } from './load-shedder';
import { isPriorityLevel, PriorityLevel } from './priority.decorator';

/** A deadline header that says no time is left. */
const NO_TIME_LEFT = /^\s*0+\s*$/;

/** Marks a request that has passed the door, so that no second middleware counts it again. */
const ADMITTED = Symbol('resilience4nest:admitted');

/** On a connection: the places its requests hold, given back when it closes. */
const HELD = Symbol('resilience4nest:held-places');

type DoorRequest = IncomingMessage & { [ADMITTED]?: true; originalUrl?: string };
type DoorSocket = Socket & { [HELD]?: Set<Place> };

/** A Connect-style middleware, as Nest runs on Express and (through middie) on Fastify. */
export type DoorMiddleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/**
 * The load shedder's door for requests of class `priority` (or of the class
 * the priority header names): drops a request whose deadline has already
 * passed (504), refuses one the shedder does not admit (503 + Retry-After,
 * problem+json with the reason), and gives the place back when the answer
 * ends. It answers refusals itself, through Node's own response API, so it
 * needs no exception filter and works on every HTTP platform.
 */
export function loadSheddingDoor(
  shedder: LoadShedder,
  priority: PriorityLevel,
  deadlineHeader: string,
): DoorMiddleware {
  const { priorityHeader, retryAfterMs } = shedder.options;
  return (req: DoorRequest, res, next) => {
    if (req[ADMITTED]) return next();
    const asked = priorityHeader === undefined ? undefined : req.headers[priorityHeader];
    const level = isPriorityLevel(asked) ? asked : priority;
    const deadline = req.headers[deadlineHeader];
    if (typeof deadline === 'string' && NO_TIME_LEFT.test(deadline)) {
      shedder.refuseExpired(level);
      return answer(
        req,
        res,
        new DeadlineExceededError('loadShedding', `request arrived with no time left in '${deadlineHeader}'`),
      );
    }
    const admission = shedder.tryAdmit(level);
    if (typeof admission === 'string') return answer(req, res, new OverloadedError(admission, level, retryAfterMs));
    req[ADMITTED] = true;
    hold(new Place(shedder, admission, res), req.socket);
    next();
  };
}

/**
 * One admitted request's place, given back exactly once: when its response
 * closes (after 'finish', or when the client goes away while it is written),
 * or when its connection closes first. Node never closes a pipelined response
 * still queued behind another when the client hangs up, so the response
 * alone would keep the place for good.
 */
class Place {
  private held = true;

  constructor(
    private readonly shedder: LoadShedder,
    private readonly admission: Admission,
    readonly res: ServerResponse,
  ) {}

  release(): void {
    if (!this.held) return;
    this.held = false;
    const res = this.res;
    // An overload answer from further in, or a client that gave up, is what the adaptive limit backs off from.
    this.shedder.release(this.admission, !res.writableFinished || res.statusCode === 503 || res.statusCode === 504);
  }
}

/** Ties `place` to its response and to its connection: one listener per connection, however many requests it pipelines. */
function hold(place: Place, socket: DoorSocket | null): void {
  const res = place.res;
  if (socket === null || typeof socket.once !== 'function') {
    res.once('close', () => place.release());
    return;
  }
  if (socket.closed) {
    // The client left before the door: nothing will be written, so the place is not kept.
    place.release();
    return;
  }
  let held = socket[HELD];
  if (held === undefined) {
    const places = (held = socket[HELD] = new Set());
    socket.once('close', () => {
      for (const p of places) p.release();
      places.clear();
    });
  }
  const places = held;
  places.add(place);
  res.once('close', () => {
    places.delete(place);
    place.release();
  });
}
