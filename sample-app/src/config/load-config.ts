import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** Loads `resilience.yaml` for `@nestjs/config` (path overridable with RESILIENCE_CONFIG). */
export function loadResilienceYaml(): Record<string, unknown> {
  const file = process.env.RESILIENCE_CONFIG ?? join(__dirname, 'resilience.yaml');
  return parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}
