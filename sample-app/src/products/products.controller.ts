import { Controller, Get, NotFoundException, Param, Query } from '@nestjs/common';
import { Priority } from 'resilience4nest';
import { lastValueFrom } from 'rxjs';
import { InventoryClient } from '../inventory/inventory.client';
import { ExchangeRatesClient } from '../rates/exchange-rates.client';
import { RecommendationsClient } from '../recommendations/recommendations.client';

/** Catalogue prices in pence. */
const PRICES_GBP: Record<string, number> = { 'sku-1': 1999, 'sku-2': 4500, 'sku-3': 750 };

/** A product page: each part degrades on its own, and says so. */
export interface ProductPage {
  sku: string;
  available: number | 'unknown';
  price: { currency: string; amount: number; fresh: boolean; rateAgeMs?: number };
  recommendations?: string[];
}

@Controller('products')
export class ProductsController {
  constructor(
    private readonly inventory: InventoryClient,
    private readonly rates: ExchangeRatesClient,
    private readonly recommendations: RecommendationsClient,
  ) {}

  @Get(':sku')
  async page(@Param('sku') sku: string, @Query('currency') currency = 'GBP'): Promise<ProductPage> {
    const pence = PRICES_GBP[sku];
    if (pence === undefined) throw new NotFoundException(`unknown sku ${sku}`);
    const wanted = currency.toUpperCase();
    const [stock, rate, recommendations] = await Promise.all([
      lastValueFrom(this.inventory.stockLevel(sku)),
      wanted === 'GBP' ? undefined : this.rates.rate(wanted),
      this.recommendations.alsoBought(sku),
    ]);
    const price =
      rate === undefined
        ? { currency: 'GBP', amount: pence / 100, fresh: true }
        : {
            currency: wanted,
            amount: Math.round(pence * rate.rate) / 100,
            fresh: rate.fresh,
            ...(rate.fresh ? {} : { rateAgeMs: Math.round(rate.ageMs) }),
          };
    return { sku, available: stock.available, price, ...(recommendations === undefined ? {} : { recommendations }) };
  }

  /** Recommendations on their own, for pages that load them after the product: the first thing shed under overload. */
  @Get(':sku/recommendations')
  @Priority('low')
  async recommendationsFor(@Param('sku') sku: string): Promise<{ sku: string; recommendations: string[] }> {
    if (PRICES_GBP[sku] === undefined) throw new NotFoundException(`unknown sku ${sku}`);
    return { sku, recommendations: (await this.recommendations.alsoBought(sku)) ?? [] };
  }
}
