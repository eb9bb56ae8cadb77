/*
 * yaml is an optional peer: without it the package loads, a parsed document
 * is still read, and only reading application.yml text fails, saying what to
 * install.
 */
jest.mock('yaml', () => {
  throw Object.assign(new Error("Cannot find module 'yaml' from 'lib/spring/spring-document.ts'"), {
    code: 'MODULE_NOT_FOUND',
  });
});

import type * as Lib from '../../lib';

describe('without the yaml package', () => {
  const load = (): typeof Lib => require('../../lib') as typeof Lib;

  it('the peer really is unresolvable here', () => {
    expect(() => require('yaml')).toThrow("Cannot find module 'yaml'");
  });

  it('reads a document already parsed', () => {
    const { fromSpringConfig } = load();
    expect(fromSpringConfig({ 'resilience4j.retry.instances.a.max-attempts': 2 })).toEqual({
      binding: 'spring',
      retry: { instances: { a: { 'max-attempts': 2 } } },
    });
  });

  it('fails on YAML text, naming the package to install', () => {
    const { fromSpringConfig } = load();
    expect(() => fromSpringConfig('resilience4j.retry.instances.a.max-attempts: 2')).toThrow(
      /fromSpringConfig\(text\) \(reading application.yml text\) needs the optional peer dependency 'yaml'.*npm install yaml/,
    );
  });
});
