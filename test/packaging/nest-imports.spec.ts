import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import {
  HEADERS_METADATA,
  HTTP_CODE_METADATA,
  PATH_METADATA,
  RESPONSE_PASSTHROUGH_METADATA,
  ROUTE_ARGS_METADATA,
} from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import {
  NEST_HEADERS_METADATA,
  NEST_HTTP_CODE_METADATA,
  NEST_PATH_METADATA,
  NEST_RESPONSE_PASSTHROUGH_METADATA,
  NEST_ROUTE_ARGS_METADATA,
  NestRouteParamtype,
} from '../../lib/features/idempotency/nest-route-metadata';

const LIB = join(__dirname, '../../lib');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('imports of NestJS in lib/', () => {
  it('use only the packages’ public entry points, which NestJS 11 and 12 both export', () => {
    const deep: string[] = [];
    for (const file of sourcesUnder(LIB)) {
      const source = readFileSync(file, 'utf8');
      for (const match of source.matchAll(/(?:from|import|require\()\s*'(@nestjs\/[^/']+\/[^']*)'/g)) {
        deep.push(`${relative(LIB, file)}: ${match[1]}`);
      }
    }
    expect(sourcesUnder(LIB).length).toBeGreaterThan(50);
    expect(deep).toEqual([]);
  });

  it('read route metadata under the keys @nestjs/common writes', () => {
    expect(NEST_PATH_METADATA).toBe(PATH_METADATA);
    expect(NEST_ROUTE_ARGS_METADATA).toBe(ROUTE_ARGS_METADATA);
    expect(NEST_RESPONSE_PASSTHROUGH_METADATA).toBe(RESPONSE_PASSTHROUGH_METADATA);
    expect(NEST_HTTP_CODE_METADATA).toBe(HTTP_CODE_METADATA);
    expect(NEST_HEADERS_METADATA).toBe(HEADERS_METADATA);
    expect(NestRouteParamtype.RESPONSE).toBe(RouteParamtypes.RESPONSE);
    expect(NestRouteParamtype.NEXT).toBe(RouteParamtypes.NEXT);
  });
});
