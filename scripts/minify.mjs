// node scripts/minify.mjs FILE...: minifies ES modules in place (rolldown's
// oxc minifier; function and class names kept, so `Client.name` and stack
// traces still say what they are). The build runs it on what a page loads
// without a bundler (dist/web, dist/client/web): the sources in js/ stay
// commented and readable, and the Node entries are copied as they are.
import { readFileSync, writeFileSync } from 'node:fs';
import { minifySync } from 'rolldown/utils';

for (const file of process.argv.slice(2)) {
  const { code, errors } = minifySync(file, readFileSync(file, 'utf8'), {
    module: true,
    compress: { keepNames: { function: true, class: true } },
    mangle: { keepNames: true },
  });
  if (errors.length > 0) throw new Error(`minify ${file}: ${errors.map((e) => e.message).join('; ')}`);
  // The minifier writes strings as template literals; an asset's
  // `new URL('…', import.meta.url)` keeps its quotes, the form bundlers and
  // copy scripts (examples/extension/setup.mjs) look for.
  writeFileSync(file, code.replace(/new URL\(`([^`$\\']*)`,import\.meta\.url\)/g, "new URL('$1',import.meta.url)"));
}
