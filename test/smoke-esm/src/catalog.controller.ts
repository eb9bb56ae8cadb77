import { Body, Controller, Get, Param, Post } from '@nestjs/common';
import { Idempotent } from 'resilience4nest';
import { CatalogService } from './catalog.service.js';
import { Price } from './supplier.js';

@Controller()
export class CatalogController {
  orders = 0;

  constructor(private readonly catalog: CatalogService) {}

  @Get('prices/:policy/:sku')
  price(
    @Param('policy') policy: 'retried' | 'timed' | 'guarded' | 'bounded' | 'withFallback',
    @Param('sku') sku: string,
  ): Promise<Price> {
    return this.catalog[policy](sku);
  }

  @Post('orders')
  @Idempotent()
  async order(@Body() body: { sku: string }): Promise<{ order: number; sku: string }> {
    return { order: ++this.orders, sku: body.sku };
  }
}
