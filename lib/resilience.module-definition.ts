import { ConfigurableModuleBuilder } from '@nestjs/common';
import { ResilienceModuleOptions } from './resilience.options';

export const {
  ConfigurableModuleClass: ResilienceConfigurableModule,
  MODULE_OPTIONS_TOKEN: RESILIENCE_MODULE_OPTIONS,
  OPTIONS_TYPE: RESILIENCE_OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE: RESILIENCE_ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<ResilienceModuleOptions>({ moduleName: 'Resilience' })
  .setClassMethodName('forRoot')
  .setExtras({ isGlobal: true }, (definition, extras) => ({ ...definition, global: extras.isGlobal }))
  .build();
