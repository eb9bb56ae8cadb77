'use strict';
/**
 * Babel plugin for Jest's CommonJS runtime: rewrites `import.meta.url`,
 * `.dirname`, `.filename` and `.resolve` in the ES modules Jest turns into
 * CommonJS. It goes through `process.getBuiltinModule` so that it does not
 * depend on the module's `require` binding, which ES modules may redeclare.
 */
module.exports = function importMetaToCommonJs({ template }) {
  const url = "process.getBuiltinModule('node:url')";
  const replacements = {
    url: template.expression(`${url}.pathToFileURL(__filename).href`),
    dirname: template.expression('__dirname'),
    filename: template.expression('__filename'),
    resolve: template.expression(
      `(specifier) => ${url}.pathToFileURL(process.getBuiltinModule('node:module').createRequire(__filename).resolve(specifier)).href`,
    ),
  };
  return {
    name: 'import-meta-to-commonjs',
    visitor: {
      MetaProperty(path) {
        const member = path.parentPath;
        const name = member.isMemberExpression() && !member.node.computed ? member.node.property.name : undefined;
        const build = name === undefined ? undefined : replacements[name];
        if (build === undefined) throw path.buildCodeFrameError('no CommonJS equivalent for this use of import.meta');
        member.replaceWith(build());
      },
    },
  };
};
