import { HttpService } from '@nestjs/axios';
import { Injectable, NotFoundException } from '@nestjs/common';
import { AxiosError, isAxiosError } from 'axios';
import { catchError, defer, map, Observable, throwError } from 'rxjs';
import { Bulkhead, deadlineHeaders, Fallback, ResilienceError, Retry, Timeout } from 'resilience4nest';
import { DownstreamHttpError } from '../downstream/http-client';
import { Dependencies } from '../downstream/dependencies';

/** A stock level; `available: 'unknown'` says so plainly instead of guessing a zero. */
export interface StockLevel {
  sku: string;
  available: number | 'unknown';
  source: 'inventory' | 'fallback';
}

/**
 * Calls the inventory through `@nestjs/axios`: the method returns an
 * Observable, and each subscription (each attempt of the retry) is one
 * request, cancelled (its socket closed) when its attempt runs out of time.
 */
@Injectable()
export class InventoryClient {
  constructor(
    private readonly http: HttpService,
    private readonly dependencies: Dependencies,
  ) {}

  @Fallback([ResilienceError, DownstreamHttpError, AxiosError], 'unknownStock')
  @Retry('inventory')
  @Timeout('inventory')
  @Bulkhead('inventory')
  stockLevel(sku: string): Observable<StockLevel> {
    const url = `${this.dependencies.inventory.url}/stock/${encodeURIComponent(sku)}`;
    // Deferred, so each attempt sends the time left of its own limit.
    return defer(() => this.http.get<{ available: number }>(url, { headers: deadlineHeaders() })).pipe(
      map(({ data }) => ({ sku, available: data.available, source: 'inventory' as const })),
      catchError((error: unknown) => {
        if (!isAxiosError(error) || error.response === undefined) return throwError(() => error);
        // "no such SKU" is the dependency's answer on the merits, not an outage: no retry, no fallback.
        if (error.response.status === 404) return throwError(() => new NotFoundException(`unknown sku ${sku}`));
        return throwError(() => new DownstreamHttpError('inventory', error.response!.status, error.response!.data));
      }),
    );
  }

  /** The inventory could not answer (timeout, overload, bulkhead full, connection failure). */
  unknownStock(sku: string): StockLevel {
    return { sku, available: 'unknown', source: 'fallback' };
  }
}
