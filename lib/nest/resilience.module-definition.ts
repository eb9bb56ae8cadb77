import { ConfigurableModuleAsyncOptions, ConfigurableModuleBuilder } from '@nestjs/common';
import { ResilienceModuleOptions } from '../options/resilience.options';

// Two exports, not one destructuring: api-extractor reads a doc comment only on a single-name declaration.
const { ConfigurableModuleClass, MODULE_OPTIONS_TOKEN } = new ConfigurableModuleBuilder<ResilienceModuleOptions>({
  moduleName: 'Resilience',
})
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();

/** The Nest configurable-module base of {@link ResilienceModule}: it provides `forRoot` and `forRootAsync`. */
export const ResilienceConfigurableModule = ConfigurableModuleClass;

/** Injection token of the options given to `ResilienceModule.forRoot` or `forRootAsync`. */
export const RESILIENCE_MODULE_OPTIONS = MODULE_OPTIONS_TOKEN;

/** What `ResilienceModule.forRootAsync` accepts: `useFactory` with `inject`, `useClass` or `useExisting`, plus `imports` and `isGlobal`. */
export type ResilienceModuleAsyncOptions = ConfigurableModuleAsyncOptions<ResilienceModuleOptions, 'create'> & {
  isGlobal?: boolean;
};
