import { Controller, Get, Param } from '@nestjs/common';
import { Observable } from 'rxjs';
import { InventoryClient, StockLevel } from './inventory.client';

@Controller('inventory')
export class InventoryController {
  constructor(private readonly inventory: InventoryClient) {}

  @Get(':sku')
  stock(@Param('sku') sku: string): Observable<StockLevel> {
    return this.inventory.stockLevel(sku);
  }
}
