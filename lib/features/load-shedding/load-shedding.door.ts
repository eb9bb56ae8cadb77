import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { DeadlineExceededError, OverloadedError } from '../../kernel/errors';
import { answerWithProblem as answer } from '../../kernel/problem-response';
import { Admission, LoadShedder } from './load-shedder';
import { ResolvedPriorityHeader } from './load-shedding.options';
import { PRIORITY_LEVELS, PriorityLevel } from './priority.decorator';

/** A deadline header that says no time is left. */
const NO_TIME_LEFT = /^\s*0+\s*$/;

/** Marks a request that has passed the door, so that no second middleware counts it again. */
const ADMITTED = Symbol('resilience4nest:admitted');

/** On a response: the place its request holds. */
const PLACE = Symbol('resilience4nest:place');

/** On a connection: the places its requests hold, given back when it closes. */
const HELD = Symbol('resilience4nest:held-places');

type DoorRequest = IncomingMessage & { [ADMITTED]?: true; originalUrl?: string };
type DoorSocket = Socket & { [HELD]?: Set<Place> };
type DoorResponse = ServerResponse & { [PLACE]?: Place };

/** A Connect-style middleware, as Nest runs on Express and (through middie) on Fastify. */
export type DoorMiddleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/**
 * The load shedder's door for requests of class `priority` (or of the class
 * the priority header names, within its cap): drops a request whose deadline has already
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
  const headerName = priorityHeader?.name;
  const claims = claimable(priority, priorityHeader);
  return (req: DoorRequest, res, next) => {
    if (req[ADMITTED]) return next();
    const level = headerName === undefined ? priority : (claims.get(req.headers[headerName]) ?? priority);
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
    hold(shedder, admission, res, req.socket);
    next();
  };
}

/**
 * The class a request of a route of class `route` gets for each value of the
 * priority header: the value itself up to the header's cap, or the route's
 * own class when that is higher; the cap for anything above it.
 */
function claimable(route: PriorityLevel, header: ResolvedPriorityHeader | undefined): Map<unknown, PriorityLevel> {
  const claims = new Map<unknown, PriorityLevel>();
  if (header === undefined) return claims;
  // PRIORITY_LEVELS runs from the highest class to the lowest.
  const ceiling = Math.min(PRIORITY_LEVELS.indexOf(route), PRIORITY_LEVELS.indexOf(header.max));
  PRIORITY_LEVELS.forEach((level, rank) => claims.set(level, PRIORITY_LEVELS[Math.max(rank, ceiling)]));
  return claims;
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
    /** The places held on the same connection, this one among them; undefined without a connection. */
    readonly neighbours: Set<Place> | undefined,
  ) {}

  release(): void {
    if (!this.held) return;
    this.held = false;
    this.neighbours?.delete(this);
    const res = this.res;
    // An overload answer from further in, or a client that gave up, is what the adaptive limit backs off from.
    this.shedder.release(this.admission, !res.writableFinished || res.statusCode === 503 || res.statusCode === 504);
  }
}

/**
 * Ties a new place to its response and to its connection: one listener per
 * connection, however many requests it pipelines, and no closure per request.
 */
function hold(
  shedder: LoadShedder,
  admission: Admission,
  res: DoorResponse,
  socket: DoorSocket | null | undefined,
): void {
  if (socket?.closed === true) {
    // The client left before the door: nothing will be written, so the place is not kept.
    new Place(shedder, admission, res, undefined).release();
    return;
  }
  // A response written on its connection closes with it; only one queued behind another (pipelined) may never close.
  if ((res.socket !== null && res.socket !== undefined) || typeof socket?.on !== 'function') {
    res[PLACE] = new Place(shedder, admission, res, undefined);
    res.on('close', onResponseClose);
    return;
  }
  let places = socket[HELD];
  if (places === undefined) {
    places = socket[HELD] = new Set();
    socket.on('close', onConnectionClose);
  }
  const place = new Place(shedder, admission, res, places);
  places.add(place);
  res[PLACE] = place;
  res.on('close', onResponseClose);
}

function onResponseClose(this: DoorResponse): void {
  this[PLACE]?.release();
}

function onConnectionClose(this: DoorSocket): void {
  const places = this[HELD];
  if (places === undefined) return;
  for (const place of places) place.release();
}
