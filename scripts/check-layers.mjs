#!/usr/bin/env node
// Fails on an import cycle between the files of a crate.
//
//   node scripts/check-layers.mjs [--levels] [CRATE_SRC_DIR...]
//
// With no argument it checks every crate of the workspace (each `src/` under
// the repository that holds a lib.rs or main.rs). A file names another when
// its code (comments and strings aside) holds a path into it: `crate::a::b`,
// `super::x`, `self::x`, a child's `mod x;` or `use x::…` in its parent.
// A path is read as written: it names the file it lands in, which for a
// path through a re-export (`crate::Name` that lib.rs re-exports) is the
// file that re-exports it. The files must form a DAG; a strongly connected
// component of more than one file is printed with one edge of each of its
// files, and the exit status is 1. Re-exports are a crate's public face
// only: a file that names an item through a re-export (anything but a `pub
// use`, which is a re-export itself) is printed with the file that defines
// the item, and the exit status is 1. With --levels (and no cycle, no path
// through a re-export), every file is printed
// with its level: 0 names no other file, and a file's level is one more
// than the highest it names. docs/ARCHITECTURE.md draws the layers.
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, relative, dirname, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function rustFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return rustFiles(path);
    return name.endsWith('.rs') ? [path] : [];
  });
}

// The module path of a file: src/a/mod.rs and src/a.rs are `a`, src/a/b.rs
// is `a::b`, the crate root is ``.
function modulePath(src, file) {
  const parts = relative(src, file).replace(/\.rs$/, '').split(/[\\/]/);
  const last = parts[parts.length - 1];
  if (last === 'mod' || (parts.length === 1 && (last === 'lib' || last === 'main'))) parts.pop();
  return parts.join('::');
}

// Code without comments, string and char literals (a path in a doc comment
// or a message is not an import), without `#[cfg(test)]` modules (a unit
// test may use what sits above its file, as tests/ does), and with `super`
// inside an inline module (`mod sealed { use super::X; }`) read as the
// file's own module.
function code(source) {
  let text = '';
  for (let i = 0; i < source.length; ) {
    const rest = source.slice(i, i + 3);
    if (rest.startsWith('//')) {
      while (i < source.length && source[i] !== '\n') i++;
    } else if (rest.startsWith('/*')) {
      let depth = 0;
      do {
        if (source.startsWith('/*', i)) (depth++, (i += 2));
        else if (source.startsWith('*/', i)) (depth--, (i += 2));
        else i++;
      } while (depth > 0 && i < source.length);
      text += ' ';
    } else if (/^b?r#*"/.test(source.slice(i, i + 40)) && !/\w/.test(source[i - 1] ?? '')) {
      const [open] = source.slice(i).match(/^b?r(#*)"/);
      const close = '"' + open.slice(open.indexOf('r') + 1, -1);
      const end = source.indexOf(close, i + open.length);
      i = end < 0 ? source.length : end + close.length;
      text += '""';
    } else if (source[i] === '"') {
      for (i++; i < source.length && source[i] !== '"'; i++) if (source[i] === '\\') i++;
      i++;
      text += '""';
    } else if (/^'(?:[^'\\]|\\[^']+)'/.test(source.slice(i, i + 12))) {
      i += source.slice(i, i + 12).match(/^'(?:[^'\\]|\\[^']+)'/)[0].length;
      text += "' '";
    } else {
      text += source[i++];
    }
  }
  let out = '';
  let at = 0;
  for (const m of text.matchAll(/(#\[cfg\(test\)\]\s*)?\bmod\s+\w+\s*\{/g)) {
    if (m.index < at) continue;
    let depth = 0;
    let end = m.index + m[0].length - 1;
    for (; end < text.length; end++) {
      if (text[end] === '{') depth++;
      else if (text[end] === '}' && --depth === 0) break;
    }
    const body = text.slice(m.index, end + 1);
    out += text.slice(at, m.index) + (m[1] ? ' ' : body.replace(/\bsuper::/g, 'self::').replace(/\buse\s+super\s*;/g, ' '));
    at = end + 1;
  }
  return out + text.slice(at);
}

// `use` trees expanded into full paths, each with the name it brings in:
// `use a::{b, c::{d as e, f}}` gives [a::b, b], [a::c::d, e], [a::c::f, f].
function expandUse(tree) {
  return expandTree(tree.replace(/\s+as\s+(\w+)/g, '@$1').replace(/\s+/g, '')).map((leaf) => {
    const [path, alias] = leaf.split('@');
    return [path, alias ?? path.split('::').pop()];
  });
}

function expandTree(tree) {
  const open = tree.indexOf('{');
  if (open < 0) return [tree.replace(/::\*$/, '')];
  const prefix = tree.slice(0, open);
  const inner = tree.slice(open + 1, tree.lastIndexOf('}'));
  const items = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i <= inner.length; i++) {
    const c = inner[i];
    if (c === '{') depth++;
    else if (c === '}') depth--;
    else if ((c === ',' || i === inner.length) && depth === 0) {
      const item = inner.slice(start, i);
      if (item) items.push(item);
      start = i + 1;
    }
  }
  return items.flatMap((item) => expandTree(item === 'self' ? prefix.replace(/::$/, '') : prefix + item));
}

export function checkCrate(src) {
  const files = rustFiles(src);
  const byModule = new Map(files.map((f) => [modulePath(src, f), f]));
  const crateRoot = byModule.get('');
  const texts = new Map(files.map((f) => [f, code(readFileSync(f, 'utf8'))]));

  // The file a full module path (`a::b::Name`) lands in: its longest prefix
  // that is a file.
  const fileOf = (path) => {
    const parts = path.split('::').filter(Boolean);
    for (let n = parts.length; n > 0; n--) {
      const f = byModule.get(parts.slice(0, n).join('::'));
      if (f) return f;
    }
    return crateRoot;
  };

  // A path as written in `from` (crate::, super::, self:: or a child's
  // name), as a path from the crate root; null when it leaves the crate.
  const absolute = (from, path) => {
    const here = modulePath(src, from).split('::').filter(Boolean);
    let parts = path.split('::');
    let base;
    if (parts[0] === 'crate') {
      base = [];
      parts = parts.slice(1);
    } else if (parts[0] === 'super' || parts[0] === 'self') {
      base = here;
      for (; parts[0] === 'super'; parts = parts.slice(1)) base = base.slice(0, -1);
      if (parts[0] === 'self') parts = parts.slice(1);
    } else if (byModule.has([...here, parts[0]].join('::'))) {
      base = here; // `use grr::X` in a parent names its child
    } else {
      return null;
    }
    return [...base, ...parts].join('::');
  };

  // What each file re-exports (`pub use a::b::Name;`, `pub(crate) use`):
  // a path through it names the re-exporting file, and is reported with
  // the file that defines the name.
  const reexports = new Map(files.map((f) => [f, new Map()]));
  for (const [file, text] of texts) {
    for (const m of text.matchAll(/\bpub(?:\([\w:]+\))?\s+use\s+([^;]+);/g)) {
      for (const [path, name] of expandUse(m[1])) {
        const full = absolute(file, path);
        if (full !== null) reexports.get(file).set(name, full);
      }
    }
  }

  // `#[macro_export]` macros live at the crate root by path (`crate::NAME`)
  // but are defined in their own file.
  const macros = new Map();
  for (const [file, text] of texts) {
    for (const m of text.matchAll(/#\[macro_export\](?:\s*#\[[^\]]*\])*\s*macro_rules!\s*(\w+)/g)) macros.set(m[1], file);
  }

  // The file an absolute path lands in as written (a `#[macro_export]`
  // macro's is the file of its definition), and the file that defines
  // what it names, through any re-exports.
  const written = (full) => macros.get(full) ?? fileOf(full);
  const defining = (full, depth = 0) => {
    const file = written(full);
    const inside = full.split('::').filter(Boolean).slice(modulePath(src, file).split('::').filter(Boolean).length);
    const next = inside.length > 0 && reexports.get(file).get(inside[0]);
    if (next && depth < 16) return defining([next, ...inside.slice(1)].join('::'), depth + 1);
    return full;
  };

  const edges = new Map(files.map((f) => [f, new Map()]));
  const throughReexports = [];
  for (const [file, text] of texts) {
    const add = (path, why, face = false) => {
      const full = absolute(file, path);
      if (full === null) return;
      const target = written(full);
      if (target !== file && !edges.get(file).has(target)) edges.get(file).set(target, why);
      const direct = defining(full);
      const defined = written(direct);
      if (!face && defined !== target && defined !== file) throughReexports.push({ file, path, via: target, direct: `crate::${direct}` });
    };
    for (const m of text.matchAll(/\b(pub\s+)?use\s+([^;]+);/g)) for (const [p] of expandUse(m[2])) add(p, `use ${p}`, Boolean(m[1]));
    const uses = text.replace(/\buse\s+[^;]+;/g, ' ');
    for (const m of uses.matchAll(/\b(?:crate|super|self)(?:::\w+)+/g)) add(m[0], m[0]);
    for (const m of text.matchAll(/\bmod\s+(\w+)\s*;/g)) add(`self::${m[1]}`, `mod ${m[1]}`);
  }

  // Tarjan's strongly connected components.
  let index = 0;
  const stack = [];
  const info = new Map();
  const components = [];
  const visit = (v) => {
    info.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of edges.get(v).keys()) {
      if (!info.has(w)) {
        visit(w);
        info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
      } else if (info.get(w).onStack) {
        info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
      }
    }
    if (info.get(v).low === info.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        info.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component);
    }
  };
  for (const f of files) if (!info.has(f)) visit(f);
  return { files, edges, components, throughReexports };
}

function crates() {
  const found = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      if (['node_modules', 'target', '.git', 'dist', 'fuzz'].includes(name)) continue;
      const path = join(dir, name);
      if (!statSync(path).isDirectory()) continue;
      if (name === 'src' && (existsSync(join(path, 'lib.rs')) || existsSync(join(path, 'main.rs')))) found.push(path);
      else walk(path);
    }
  };
  walk(root);
  return found.sort();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const levels = args[0] === '--levels' && args.shift();
  const dirs = args.length > 0 ? args : crates();
  let failed = false;
  for (const src of dirs) {
    const { files, edges, components, throughReexports } = checkCrate(src);
    const name = relative(root, src) || src;
    const count = [...edges.values()].reduce((n, m) => n + m.size, 0);
    for (const { file, path, via, direct } of throughReexports) {
      failed = true;
      console.error(`layers: ${name}: ${relative(src, file)} names ${path} through ${relative(src, via)}'s re-export: name it ${direct}`);
    }
    if (components.length === 0 && throughReexports.length === 0) {
      console.log(`layers: ${name}: ${files.length} files, ${count} edges, no cycle`);
      if (levels) printLevels(src, files, edges);
      continue;
    }
    if (components.length > 0) failed = true;
    for (const component of components) {
      console.error(`layers: ${name}: an import cycle through ${component.length} files:`);
      const members = new Set(component);
      for (const f of component.sort()) {
        const out = [...edges.get(f)].filter(([t]) => members.has(t));
        console.error(`  ${relative(src, f)} -> ${out.map(([t, why]) => `${relative(src, t)} (${why})`).join(', ')}`);
      }
    }
  }
  if (failed) {
    console.error('layers: a file may name only files below it, each item from the file that defines it (docs/ARCHITECTURE.md)');
    process.exit(1);
  }
}

// Each file's level (the longest chain of files it names), lowest first.
function printLevels(src, files, edges) {
  const level = new Map();
  const of = (f) => {
    if (!level.has(f)) level.set(f, Math.max(-1, ...[...edges.get(f).keys()].map(of)) + 1);
    return level.get(f);
  };
  const rows = files.map((f) => [of(f), relative(src, f)]).sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1]));
  for (let l = 0; l <= rows[rows.length - 1][0]; l++) {
    console.log(`  ${String(l).padStart(2)}  ${rows.filter((r) => r[0] === l).map((r) => r[1]).join('  ')}`);
  }
}
