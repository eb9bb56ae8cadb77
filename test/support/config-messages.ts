import { ResilienceModuleOptions, ResilienceRegistry } from '../../lib';

/** A registry over `options` as a user wrote them (unchecked), with `warn` hearing its warnings. */
export const registry = (options: unknown, warn?: (m: string) => void): ResilienceRegistry =>
  new ResilienceRegistry(options as ResilienceModuleOptions, warn);

/** The message of the error `build` throws; fails the test when it throws none. */
export const messageOf = (build: () => unknown): string => {
  try {
    build();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a failure');
};
