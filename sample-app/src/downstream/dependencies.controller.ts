import { BadRequestException, Body, Controller, Get, NotFoundException, Param, Post } from '@nestjs/common';
import { Dependencies } from './dependencies';
import { DependencyBehaviour } from './simulated-dependency';

/** Breaks and mends the simulated dependencies: `POST /admin/dependencies/payments {"down": true}`. */
@Controller('admin/dependencies')
export class DependenciesController {
  constructor(private readonly dependencies: Dependencies) {}

  @Get()
  list(): Record<string, DependencyBehaviour & { url: string }> {
    return Object.fromEntries(this.dependencies.all().map((d) => [d.name, { ...d.current, url: d.url }]));
  }

  @Post(':name')
  configure(@Param('name') name: string, @Body() change: Partial<DependencyBehaviour>): DependencyBehaviour {
    const dependency = this.dependencies.byName(name);
    if (dependency === undefined) {
      throw new NotFoundException(
        `no dependency '${name}' (known: ${this.dependencies
          .all()
          .map((d) => d.name)
          .join(', ')})`,
      );
    }
    try {
      return dependency.configure(change ?? {});
    } catch (error) {
      throw new BadRequestException((error as Error).message);
    }
  }
}
