/*
 * What `tsc` accepts and refuses for `@Fallback`. Nothing here runs: each
 * `@ts-expect-error` must meet an error, or the compile fails, so every
 * refused case pins its rule. Compiled by `tsc -p tsconfig.json` and, on the
 * other supported majors, by test/types/type-tests.spec.ts.
 */
import { Observable, of } from 'rxjs';
import { BulkheadFullError, CallNotPermittedError, Fallback, ResilienceError } from 'resilience4nest';

interface Stock {
  sku: string;
  level: number;
}

class OutOfStockError extends Error {
  readonly sku = 'unknown';
}

/** Not an error: no `name`, no `message`. */
class Basket {
  readonly items: string[] = [];
}

export class NamedHandlers {
  @Fallback(CallNotPermittedError, 'unknownStock')
  async stock(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // A Promise method's handler may answer with the value or a Promise of it.
  @Fallback(Error, 'unknownStockLater')
  async stockLater(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // The handler's last parameter is the error, typed by the classes listed.
  @Fallback([CallNotPermittedError, BulkheadFullError], 'refused')
  async refusable(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // A handler may ignore the arguments and the error.
  @Fallback(ResilienceError, 'nothing')
  async count(): Promise<number> {
    return 1;
  }

  // @ts-expect-error a misspelt handler: 'unknownStok' is not a method of the class
  @Fallback(CallNotPermittedError, 'unknownStok')
  async misspelt(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // @ts-expect-error the handler answers a string where the method answers a Stock
  @Fallback(CallNotPermittedError, 'label')
  async wrongAnswer(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // @ts-expect-error a property that is not a method cannot answer
  @Fallback(CallNotPermittedError, 'shelf')
  async notAMethod(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // @ts-expect-error the handler takes a number where the method gets a string
  @Fallback(CallNotPermittedError, 'byCount')
  async wrongParameters(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // @ts-expect-error the handler expects a CallNotPermittedError, but any Error reaches it
  @Fallback(Error, 'refusedOnly')
  async tooNarrowError(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  readonly shelf = 'A1';

  unknownStock(sku: string): Stock {
    return { sku, level: 0 };
  }

  unknownStockLater(sku: string, error: Error): Promise<Stock> {
    return Promise.resolve({ sku: `${sku}: ${error.message}`, level: 0 });
  }

  refused(sku: string, error: CallNotPermittedError | BulkheadFullError): Stock {
    return { sku: `${sku} (${error.name})`, level: 0 };
  }

  nothing(): number {
    return 0;
  }

  label(sku: string): string {
    return sku;
  }

  byCount(count: number): Stock {
    return { sku: String(count), level: count };
  }

  refusedOnly(sku: string, error: CallNotPermittedError): Stock {
    return { sku: `${sku} ${error.retryAfterMs}`, level: 0 };
  }
}

export class ObservableMethods {
  // An Observable method's handler may answer with a value, a Promise or an Observable.
  @Fallback(Error, 'asValue')
  @Fallback(OutOfStockError, 'asObservable')
  @Fallback(CallNotPermittedError, 'asPromise')
  watch(sku: string): Observable<Stock> {
    return of({ sku, level: 1 });
  }

  // @ts-expect-error the handler's Observable carries strings, the method's carries Stock
  @Fallback(Error, 'labels')
  watchWrong(sku: string): Observable<Stock> {
    return of({ sku, level: 1 });
  }

  asValue(sku: string): Stock {
    return { sku, level: 0 };
  }

  asObservable(sku: string, error: OutOfStockError): Observable<Stock> {
    return of({ sku: `${sku} ${error.sku}`, level: 0 });
  }

  asPromise(sku: string): Promise<Stock> {
    return Promise.resolve({ sku, level: 0 });
  }

  labels(sku: string): Observable<string> {
    return of(sku);
  }
}

export class PromiseMethods {
  // @ts-expect-error a Promise method cannot answer with an Observable: it would resolve to the Observable itself
  @Fallback(Error, 'asObservable')
  async stock(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  asObservable(sku: string): Observable<Stock> {
    return of({ sku, level: 0 });
  }
}

const unknownStock = (sku: string): Stock => ({ sku, level: 0 });

export class FunctionHandlers {
  @Fallback(CallNotPermittedError, unknownStock)
  async stock(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // The function gets the method's arguments, then the error.
  @Fallback(OutOfStockError, (sku: string, error: OutOfStockError) =>
    Promise.resolve({ sku: error.sku + sku, level: 0 }),
  )
  async typed(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  @Fallback(Error, () => of({ sku: 'none', level: 0 }))
  watch(sku: string): Observable<Stock> {
    return of({ sku, level: 1 });
  }

  // Parameters without annotations are \`any\`: only the answer is checked.
  @Fallback(Error, (sku, error) => ({ sku: `${sku} ${error}`, level: 0 }))
  async untyped(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // @ts-expect-error the function takes a number where the method gets a string
  @Fallback(CallNotPermittedError, (count: number) => ({ sku: String(count), level: 0 }))
  async wrongParameters(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // @ts-expect-error the function needs a second argument that the method never gets
  @Fallback(CallNotPermittedError, (sku: string, shelf: string, error: Error) => ({
    sku: sku + shelf + error.name,
    level: 0,
  }))
  async tooManyParameters(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }

  // @ts-expect-error the function answers a number where the method answers a Stock
  @Fallback(CallNotPermittedError, () => 0)
  async wrongAnswer(sku: string): Promise<Stock> {
    return { sku, level: 1 };
  }
}

export class ErrorLists {
  @Fallback([CallNotPermittedError, OutOfStockError, TypeError], 'none')
  async listed(): Promise<string> {
    return 'ok';
  }

  // @ts-expect-error a class that is not an error
  @Fallback(Basket, 'none')
  async notAnError(): Promise<string> {
    return 'ok';
  }

  // @ts-expect-error a list holding a class that is not an error
  @Fallback([CallNotPermittedError, Basket], 'none')
  async notAllErrors(): Promise<string> {
    return 'ok';
  }

  // @ts-expect-error an error instance, not its class
  @Fallback(new Error('down'), 'none')
  async anInstance(): Promise<string> {
    return 'ok';
  }

  none(): string {
    return 'none';
  }
}
