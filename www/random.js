// Draws for the simulated users' *true* values. Randomization itself is the
// package's job (its Client); this only picks what simulated people answer.
// Every draw comes from crypto.getRandomValues, the browser's CSPRNG.

const pool = new Uint32Array(1024);
let next = pool.length;

function word() {
  if (next === pool.length) {
    crypto.getRandomValues(pool);
    next = 0;
  }
  return pool[next++];
}

/** A uniform double in [0, 1) with 53 random bits. */
export function uniform() {
  return ((word() >>> 5) * 67108864 + (word() >>> 6)) / 9007199254740992;
}

/** An index drawn with probabilities proportional to `weights` (not all zero). */
export function categorical(weights) {
  const total = weights.reduce((a, b) => a + b, 0);
  let u = uniform() * total;
  for (let i = 0; i < weights.length; i++) {
    if (u < weights[i]) return i;
    u -= weights[i];
  }
  return weights.findLastIndex((w) => w > 0);
}

/** A standard normal draw (Box–Muller). */
export function normal() {
  const u = 1 - uniform(); // (0, 1]
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
}
