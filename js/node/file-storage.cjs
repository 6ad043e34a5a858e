// Node's storage for `Client.open` (its default there): one JSON file of
// the same strings as every other storage (the secret, the reset count, each
// metric's state: no raw value), shared by every process of the machine
// that names it. Each update holds a lock file beside it (created with
// O_EXCL, holding its owner's pid and host), reads the file, calls `fn`, and writes
// the result to a temporary file that is flushed and renamed over the old
// one: a reader sees the old file or the new, never a part, and no report is
// released before its memo and ledger entry are on disk.
'use strict';

const fs = require('node:fs/promises');
const { randomBytes } = require('node:crypto');
const { dirname, join } = require('node:path');
const { homedir, hostname } = require('node:os');

/** How long an update waits for another process's lock before it gives up, in ms. */
const LOCK_WAIT = 10_000;
/**
 * How old a lock (or breaker) file must be before it is broken when its
 * holder cannot be checked, in ms: one of another host (a container with its
 * own process ids, a machine sharing the folder), or one a crash left
 * unwritten. A live holder updates in milliseconds.
 */
const STALE_AGE = 60_000;
/** This host's name, in the lock files this process writes. */
const HOST = hostname();

/**
 * A storage in the file `path` (its directory is created, mode 0700; the
 * file is mode 0600: it holds the install's secret).
 * @param {string} path
 */
function fileStorage(path) {
  if (typeof path !== 'string' || path === '') throw new TypeError('fileStorage needs the path of a file');
  return {
    async update(keys, fn) {
      await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
      const release = await lock(`${path}.lock`);
      try {
        const stored = await read(path);
        const values = {};
        // A file that is not a JSON object reads as corrupt text under every key: the client starts afresh and counts a reset.
        for (const key of keys) values[key] = stored === undefined ? '' : text(stored[key]);
        const writes = fn(values);
        if (Object.keys(writes).length > 0) await replace(path, JSON.stringify({ ...stored, ...writes }));
      } finally {
        await release();
      }
    },
  };
}

/**
 * Where `Client.open` keeps its state in Node when no storage is given:
 * `~/.localdp/state.json`, once its folder is made and a file written in it
 * (then removed); else why not (a read-only file system, a home folder that
 * cannot be written): the client then keeps its state in memory.
 */
function defaultFileStorage() {
  defaultStorage ??= probeDefaultStorage();
  return defaultStorage;
}

/** The answer of `defaultFileStorage`, found once per process. */
let defaultStorage;

async function probeDefaultStorage() {
  const folder = join(homedir(), '.localdp');
  const probe = join(folder, `.probe.${process.pid}.${randomBytes(6).toString('hex')}`);
  try {
    await fs.mkdir(folder, { recursive: true, mode: 0o700 });
    await fs.writeFile(probe, '', { flag: 'wx', mode: 0o600 });
    await fs.unlink(probe);
  } catch (error) {
    return `${folder} cannot be created or written (${error.code ?? error.message})`;
  }
  return fileStorage(join(folder, 'state.json'));
}

/** The file's object: `{}` when there is no file, `undefined` when it is not a JSON object. */
async function read(path) {
  let content;
  try {
    content = await fs.readFile(path, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return {};
    throw error;
  }
  try {
    const object = JSON.parse(content);
    return object !== null && typeof object === 'object' && !Array.isArray(object) ? object : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `content` to `path` as one step: a flushed temporary file renamed over it, the rename flushed too. */
async function replace(path, content) {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const file = await fs.open(temporary, 'w', 0o600);
  try {
    await file.writeFile(content);
    await file.sync();
  } finally {
    await file.close();
  }
  await fs.rename(temporary, path);
  if (process.platform !== 'win32') {
    const directory = await fs.open(dirname(path), 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  }
}

/**
 * Takes the lock file `lockPath` (O_EXCL; it holds the owner's pid and
 * host), waiting while a live process holds it; resolves to its release. A
 * lock whose holder is gone (it crashed) is broken, by one process at a
 * time (the holder of `lockPath.break`), after checking that it is still
 * that lock.
 */
async function lock(lockPath) {
  const mine = `${process.pid} ${HOST} ${randomBytes(6).toString('hex')}`;
  const deadline = Date.now() + LOCK_WAIT;
  for (let wait = 1; ; wait = Math.min(2 * wait, 50)) {
    if (await create(lockPath, mine)) return () => fs.unlink(lockPath);
    await breakStale(lockPath);
    if (Date.now() > deadline) {
      const error = new Error(`the lock file ${lockPath} was held for ${LOCK_WAIT / 1000} s by a running process; if none of yours uses this storage, delete the file`);
      error.name = 'StorageLocked';
      throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** Creates `path` holding `content` if it does not exist; resolves to whether it did. */
async function create(path, content) {
  try {
    await fs.writeFile(path, content, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (error) {
    if (error.code === 'EEXIST') return false;
    throw error;
  }
}

/** Deletes the lock file `lockPath` if its holder is gone. */
async function breakStale(lockPath) {
  const held = await holder(lockPath);
  if (held === undefined || !gone(held)) return;
  const breaker = `${lockPath}.break`;
  if (!(await create(breaker, `${process.pid} ${HOST} breaking`))) {
    // Another process is breaking it; a breaker left by a crash is removed.
    const breaking = await holder(breaker);
    if (breaking !== undefined && gone(breaking)) await fs.rm(breaker, { force: true });
    return;
  }
  try {
    // Only a breaker deletes a lock it did not take, so the one read is still there unless its owner released it.
    if ((await holder(lockPath))?.content === held.content) await fs.rm(lockPath, { force: true });
  } finally {
    await fs.rm(breaker, { force: true });
  }
}

/** A lock file's content and age in ms; `undefined` when it is gone. */
async function holder(path) {
  try {
    const [content, stat] = await Promise.all([fs.readFile(path, 'utf8'), fs.stat(path)]);
    return { content, age: Date.now() - stat.mtimeMs };
  } catch (error) {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Whether a lock file's holder is gone: its process has ended, where it
 * names one of this host (or no host: written by a release before hosts
 * were); else (another host's, whose processes this one cannot see, or a
 * file a crash left unwritten) once the file is older than STALE_AGE.
 */
function gone({ content, age }) {
  const [pid, host, ...rest] = content.split(' ');
  const id = Number(pid);
  const local = rest.length === 0 || host === HOST;
  return Number.isSafeInteger(id) && id > 0 && local ? !alive(id) : age > STALE_AGE;
}

/** Whether process `pid` runs (EPERM: it does, as another user's). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** A stored value as text, as storage.mjs reads it: absent stays `undefined`, a non-string reads as corrupt text. */
function text(value) {
  return value === undefined || typeof value === 'string' ? value : String(value);
}

module.exports = { fileStorage, defaultFileStorage };
