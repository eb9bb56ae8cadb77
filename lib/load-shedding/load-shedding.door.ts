import type { IncomingMessage, ServerResponse } from 'node:http';
import { DeadlineExceededError, OverloadedError } from '../errors';
import { answerWithProblem as answer } from '../filter/problem-response';
import { Admission, LoadShedder } from './load-shedder';
import { isPriorityLevel, PriorityLevel } from './priority.decorator';

/** A deadline header that says no time is left. */
const NO_TIME_LEFT = /^\s*0+\s*$/;

/** Marks a request that has passed the door, so that no second middleware counts it again. */
const ADMITTED = Symbol('resilience4nest:admitted');

type DoorRequest = IncomingMessage & { [ADMITTED]?: true; originalUrl?: string };

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
    // Node emits 'close' once per response: after 'finish', or when the client goes away first.
    res.on('close', () => release(shedder, admission, res));
    next();
  };
}

function release(shedder: LoadShedder, admission: Admission, res: ServerResponse): void {
  // An overload answer from further in, or a client that gave up, is what the adaptive limit backs off from.
  shedder.release(admission, !res.writableFinished || res.statusCode === 503 || res.statusCode === 504);
}
