// Which family's wasm module serves a config: localdp.js loads that module
// alone. The family is the one that claims the config in the Rust registry
// (core/src/metric/registry.rs): by its "protocol", whose names are disjoint
// across families, but that frequency claims its own and "auto" without a
// "range", numeric with one. GRR has a module of its own, the frequency
// family's with GRR alone (the frequency module serves it too). Only a
// choice of module: the module's Rust checks the config, and a config no
// family claims (no protocol, an unknown one, not an object) goes to the
// module of every family, whose error names what is wrong; so does a config
// whose budget has "delta", which only that module charges (a module of one
// family refuses it, code 313). tests/js/families.test.mjs holds the table to
// the Rust registry's names, and each family's module to every family's.
const FAMILY_OF = {
  grr: 'grr', sue: 'frequency', oue: 'frequency', blh: 'frequency', olh: 'frequency',
  hr: 'frequency', hrr: 'frequency', ss: 'frequency', dbitflip: 'frequency',
  duchi: 'numeric', laplace: 'numeric', piecewise: 'numeric', hybrid: 'numeric', one_bit_mean: 'numeric',
  rappor: 'rappor',
  cms: 'heavy', hcms: 'heavy', pem: 'heavy', treehist: 'heavy', sfp: 'heavy', heavy_hitters: 'heavy',
  square_wave: 'distribution', hierarchical: 'distribution', distribution: 'distribution',
  pckv_grr: 'key_value', pckv_ue: 'key_value', key_value: 'key_value',
  marginals_oue: 'marginals', marginals_olh: 'marginals', marginals: 'marginals',
};

/**
 * The keys that choose a module, as the core reads them
 * (wasm/client/src/convert.rs): through JSON, so a key that is undefined, or
 * that toJSON drops, is absent here too (and a config's long lists are not
 * copied). Undefined where that is no object.
 */
function chooser(config) {
  try {
    const object = config !== null && typeof config === 'object' ? JSON.parse(JSON.stringify(config, ['protocol', 'range', 'budget', 'delta'])) : undefined;
    return object !== null && typeof object === 'object' ? object : undefined;
  } catch {
    return undefined;
  }
}

/** Whether the chosen keys' budget has "delta". */
function delta(object) {
  const budget = object?.budget;
  return budget !== null && typeof budget === 'object' && Object.hasOwn(budget, 'delta');
}

/** Whether `config`'s budget has "delta": the module of every family charges it. */
export function composes(config) {
  return delta(chooser(config));
}

/** The family whose module serves `config`, or undefined (the module of every family). */
export function familyOf(config) {
  const object = chooser(config);
  if (object === undefined || !Object.hasOwn(object, 'protocol') || delta(object)) return undefined;
  const { protocol } = object;
  const ranged = Object.hasOwn(object, 'range');
  if (protocol === 'auto') return ranged ? 'numeric' : 'frequency';
  const family = typeof protocol === 'string' && Object.hasOwn(FAMILY_OF, protocol) ? FAMILY_OF[protocol] : undefined;
  // Frequency claims its protocols without a "range", numeric with one.
  return ((family === 'frequency' || family === 'grr') && ranged) || (family === 'numeric' && !ranged) ? undefined : family;
}
