import { ConfigurableModuleAsyncOptions, ConfigurableModuleBuilder } from '@nestjs/common';
import { ResilienceModuleOptions } from './resilience.options';

/**
 * The Nest configurable-module base of {@link ResilienceModule} (`forRoot`, `forRootAsync`) and its options token.
 */
export const {
  ConfigurableModuleClass: ResilienceConfigurableModule,
  MODULE_OPTIONS_TOKEN: RESILIENCE_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<ResilienceModuleOptions>({ moduleName: 'Resilience' })
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

/** What `ResilienceModule.forRootAsync` accepts: `useFactory` with `inject`, `useClass` or `useExisting`, plus `imports` and `isGlobal`. */
export type ResilienceModuleAsyncOptions = ConfigurableModuleAsyncOptions<ResilienceModuleOptions, 'create'> & {
  isGlobal?: boolean;
};
