// The core's error messages by code, for the client's wasm module: its
// errors carry a stable `code` and their `params` as text, and no message
// (src/error.rs, `Error::code`), so that the module holds no message text.
// The same templates as src/error.rs's MESSAGES, `{i}` being parameter i,
// inside the words of their group, but the 4xx codes, which only
// aggregation throws (the full module, whose errors come with their
// message). tests/js/error-codes.test.mjs checks each code's message
// against Rust's. Codes are never renumbered nor
// reused: a new message takes a new code.

const MESSAGES = {
  100: 'malformed configuration: {0}',
  101: '{0} must be > 0, got {1}',
  102: '{0} must be a finite number > 0, got {1}',
  103: '{0} must be in [{1}, {2}], got {3}',
  104: '{0} of a {4} metric must be in [{1}, {2}], got {3}',
  105: '{0} must be in ({1}, {2})',
  106: '{0} {1} is outside [0, 1]',
  107: '{0} and {1} must satisfy 0 ≤ {0} < {1} ≤ 1',
  108: 'domain size must be between {1} and {2}, got {3}',
  109: 'the marginals would hold {3} cells, more than the {2} allowed (fewer attributes, smaller domains or a lower way)',
  110: 'd must be in {1}..={2} (the domain\'s size)',
  111: '"granularity" must be an integer in {1}..={2}',
  112: 'hashes must be in {1}..=min(bits, 64)',
  113: 'a grid needs at least {1} steps',
  117: '{0} must be in {1}..={2}',
  118: 'a domain needs between {1} and {2} labels, got {3}',
  119: '{0} needs between {1} and {2} entries, got {3}',
  120: 'range must list at least one attribute',
  121: 'a uniform draw needs a non-empty range',
  122: '{0} must not be empty',
  123: 'domain labels must be distinct (label #{1} repeats an earlier one)',
  124: '{0} must be distinct',
  125: '{0} must hold two finite numbers',
  126: '{0} is empty: lo {1} must be below hi {2}',
  127: 'memoize applies to a numeric metric only through one_bit_mean of one number, not {1}',
  128: '"{0}" does not apply to {1}',
  130: '"{0}" applies to {1} only',
  131: '{0} must be {1}',
  132: '{0} is too small: the long-run epsilon exceeds {1}',
  133: '{1} needs "{0}" in the config',
  134: '{0}[{1}] must hold two finite numbers',
  135: '{0}[{3}] is empty: lo {1} must be below hi {2}',
  200: 'expected an integer in 0..{0}',
  201: 'not one of the {0} labels',
  202: 'expected an index below {0}',
  203: 'not one of the {0} labels, though it matches one but for letter case: labels compare exactly',
  210: 'not a number',
  211: 'a value must be a finite number',
  212: 'expected {0} number, got {1}',
  213: 'expected {0} numbers, got {1}',
  214: 'expected {0} finite number',
  215: 'expected {0} finite numbers',
  216: 'a value of this metric must be a JSON object',
  217: 'a map must name each key at most once',
  218: 'a value must be at most {0} bytes of UTF-8 (or set "truncate": true)',
  219: 'an event may hold only the metric\'s {0} fields',
  220: 'field "{0}" is missing',
  222: 'field "{0}" is not in its domain',
  223: 'field "{0}" must be a finite number',
  300: 'privacy budget exceeded: this report would spend {0} more, with {1} of {2} spent in the window',
  310: 'a stored memo is corrupt',
  312: 'the stored state is of an earlier release: the module of every family reads it',
  313: 'a budget with "delta" is charged by the module of every family, which Client.open and Client.load import (where import() is refused, as in a service worker, import localdp/client/web instead)',
  500: 'secure random source unavailable: {0}',
};

/**
 * Gives an error the wasm core threw without a message (the client
 * module's: a `code` and its `params`) its message; returns the error. Any
 * other error, the full module's included, is returned as it is.
 */
export function withMessage(error) {
  if (error?.message === '' && typeof error.code === 'number' && Array.isArray(error.params)) {
    const code = error.code;
    const template = MESSAGES[code];
    if (template === undefined) {
      error.message = `localdp error ${code}`;
    } else {
      // The words of the code's group around the template, as src/error.rs's `frame`.
      const [prefix, suffix] = (code > 100 && code < 200) || code === 310 ? ['invalid configuration: ', '']
        : code >= 200 && code < 210 ? ['value is not in the domain (', ')']
          : code >= 210 && code < 230 ? ['invalid value: ', ''] : ['', ''];
      error.message = prefix + template.replace(/\{(\d)\}/g, (_, i) => error.params[i]) + suffix;
    }
    // V8 wrote the stack's first line when the error was made, as its name
    // alone ("RangeError"); consoles print it (other engines list frames).
    const stack = error.stack;
    const end = typeof stack === 'string' ? (stack + '\n').indexOf('\n') : -1;
    if (end > 0 && !stack.slice(0, end).includes(':')) {
      error.stack = `${stack.slice(0, end)}: ${error.message}${stack.slice(end)}`;
    }
  }
  return error;
}
