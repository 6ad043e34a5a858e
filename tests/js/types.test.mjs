// The .d.ts a user sees: strict TypeScript accepts correct use and rejects
// the mistakes marked @ts-expect-error in types-check.ts, under the
// settings projects use, with no `lib` added and no `skipLibCheck`: a DOM
// project on the default target, a Node-only project (no DOM), and each
// moduleResolution of a modern project.
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin/tsc');
// @types/node resolves from the repository's node_modules (a devDependency), as typescript does.
const typeRoots = dirname(dirname(createRequire(import.meta.url).resolve('@types/node/package.json')));

const SETTINGS = {
  'a DOM project on the default target (moduleResolution bundler)': ['--module', 'esnext', '--moduleResolution', 'bundler'],
  'a Node-only project (lib es2022, types node)': ['--lib', 'es2022', '--types', 'node', '--typeRoots', typeRoots, '--module', 'nodenext', '--moduleResolution', 'nodenext'],
  'moduleResolution node16': ['--module', 'node16', '--moduleResolution', 'node16'],
  'moduleResolution nodenext': ['--module', 'nodenext', '--moduleResolution', 'nodenext'],
};

for (const [name, settings] of Object.entries(SETTINGS)) {
  test(`types check under ${name}`, () => {
    execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', 'false', ...settings, join(here, 'types-check.ts')], { stdio: 'inherit' });
  });
}
