// The .d.ts a user sees: strict TypeScript accepts correct use and rejects
// the mistakes marked @ts-expect-error in types-check.ts.
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin/tsc');

for (const resolution of ['nodenext', 'bundler']) {
  test(`types check under moduleResolution ${resolution}`, () => {
    execFileSync(process.execPath, [
      tsc, '--noEmit', '--strict', '--skipLibCheck', 'false', '--target', 'esnext', '--lib', 'esnext,dom',
      '--module', resolution === 'bundler' ? 'esnext' : 'nodenext', '--moduleResolution', resolution,
      join(here, 'types-check.ts'),
    ], { stdio: 'inherit' });
  });
}
