// node scripts/minify.mjs FILE...: minifies ES modules in place (rolldown's
// oxc minifier; function and class names kept, so `Client.name` and stack
// traces still say what they are). The build runs it on what a page loads
// without a bundler (dist/web, dist/client/web): the sources in js/ stay
// commented and readable, and the Node entries are copied as they are.
// A module's static imports of the client and storage JS beside it
// (client.mjs, storage.mjs, families.js) are bundled into it first, so that
// an entry is one file and its bindings another: a GRR page fetches three
// scripts, not five, and loads 0.3 KB less gzipped. The bindings stay files
// of their own (`localdp/client/web` imports a family's by need), as do
// messages.mjs (its table is tested as shipped) and dynamic imports.
import { readFileSync, writeFileSync } from 'node:fs';
import { rolldown } from 'rolldown';
import { minifySync } from 'rolldown/utils';

const BUNDLED = /(^|\/)(client\.mjs|storage\.mjs|families\.js)$/;

for (const file of process.argv.slice(2)) {
  const bundle = await rolldown({ input: file, external: (id, importer) => importer !== undefined && !BUNDLED.test(id), logLevel: 'warn' });
  const { output } = await bundle.generate({ format: 'es' });
  await bundle.close();
  if (output.length !== 1) throw new Error(`minify ${file}: expected one chunk, got ${output.length}`);
  const { code, errors } = minifySync(file, output[0].code, {
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
