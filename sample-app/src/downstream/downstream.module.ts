import { Global, Module, OnApplicationShutdown } from '@nestjs/common';
import { DependenciesController } from './dependencies.controller';
import { Dependencies } from './dependencies';

/** Starts the simulated third parties on free loopback ports and stops them on shutdown. */
@Global()
@Module({
  controllers: [DependenciesController],
  providers: [{ provide: Dependencies, useFactory: () => Dependencies.start() }],
  exports: [Dependencies],
})
export class DownstreamModule implements OnApplicationShutdown {
  constructor(private readonly dependencies: Dependencies) {}

  async onApplicationShutdown(): Promise<void> {
    await this.dependencies.close();
  }
}
