import { BadRequestException, Body, Controller, Get, Inject, NotFoundException, Param, Post } from '@nestjs/common';
import { INVENTORY_API, PAYMENT_PROVIDER } from './tokens';
import { DependencyBehaviour, SimulatedDependency } from './simulated-dependency';

/** Breaks and mends the simulated dependencies: `POST /admin/dependencies/payments {"down": true}`. */
@Controller('admin/dependencies')
export class DependenciesController {
  private readonly byName: Record<string, SimulatedDependency>;

  constructor(@Inject(INVENTORY_API) inventory: SimulatedDependency, @Inject(PAYMENT_PROVIDER) payments: SimulatedDependency) {
    this.byName = { inventory, payments };
  }

  @Get()
  list(): Record<string, DependencyBehaviour & { url: string }> {
    return Object.fromEntries(Object.entries(this.byName).map(([name, d]) => [name, { ...d.current, url: d.url }]));
  }

  @Post(':name')
  configure(@Param('name') name: string, @Body() change: Partial<DependencyBehaviour>): DependencyBehaviour {
    const dependency = this.byName[name];
    if (dependency === undefined) throw new NotFoundException(`no dependency '${name}' (known: ${Object.keys(this.byName).join(', ')})`);
    try {
      return dependency.configure(change ?? {});
    } catch (error) {
      throw new BadRequestException((error as Error).message);
    }
  }
}
