// The operator's dashboard (`localdp serve` at /dashboard): every metric of
// the collector's --metrics file with its estimate and 95% intervals, n, the
// rejections by reason, the per-source limits' refusals (429), the local ε,
// the central ε once a shuffler reports one, and a plain note while n is
// below what the planner says the metric needs. It reads the API any client
// reads, with the token a reader sends; the token stays in this tab
// (sessionStorage), never in localStorage.

const REFRESH_MS = 2000;
/** Rows of a frequency plot at most: past them, the largest estimates. */
const MAX_ROWS = 25;
const TOKEN_KEY = 'localdp-dashboard-token';
const count = new Intl.NumberFormat('en');
const percent = (x, digits = 1) => `${(100 * x).toFixed(digits)}%`;
const $ = (selector) => document.querySelector(selector);

const state = { token: sessionStorage.getItem(TOKEN_KEY), cards: new Map(), refreshing: null, timer: null };

/** An element with text or attributes, and children. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

/** Places `node` along its track, in percent (CSSOM: the page's policy allows it). */
function place(node, from, to = from) {
  node.style.left = `${Math.min(from, to)}%`;
  if (to !== from) node.style.width = `${Math.abs(to - from)}%`;
  return node;
}

/** A linear scale from [lo, hi] to 0–100%. */
function scale(lo, hi) {
  return (v) => Math.max(0, Math.min(100, (100 * (v - lo)) / (hi - lo || 1)));
}

/** A GET of the API with the token, if any: { ok, status, body }. */
async function api(path) {
  const headers = state.token ? { authorization: `Bearer ${state.token}` } : {};
  const response = await fetch(path, { headers, cache: 'no-store' });
  const body = await response.json().catch(() => ({ error: response.statusText }));
  return { ok: response.ok, status: response.status, body };
}

// --- access ---------------------------------------------------------------

function showLogin(error) {
  document.body.dataset.state = 'login';
  $('#login').hidden = false;
  $('#login-error').textContent = error ?? '';
  $('#access').textContent = 'Signed out.';
  $('#sign-out').hidden = true;
  $('#refresh').hidden = true;
  $('#metrics').replaceChildren();
  state.cards.clear();
  $('#token').focus();
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  clearInterval(state.timer);
  showLogin();
}

async function signIn(event) {
  event.preventDefault();
  const token = $('#token').value.trim();
  if (!token) return;
  state.token = token;
  $('#token').value = '';
  if (await start()) sessionStorage.setItem(TOKEN_KEY, token);
}

/** Opens the dashboard: false (and the login form) if the collector wants a token it was not given. */
async function start() {
  const listed = await api('/api/metrics');
  if (listed.status === 401) {
    const had = state.token;
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = null;
    showLogin(had ? 'The collector refused this token: it is not one of its --token-file.' : undefined);
    return false;
  }
  if (!listed.ok) {
    $('#access').textContent = `The collector answered ${listed.status}: ${listed.body.error ?? ''}`;
    document.body.dataset.state = 'error';
    return false;
  }
  $('#login').hidden = true;
  $('#access').textContent = state.token
    ? 'Signed in with a token, kept in this tab only.'
    : 'This collector has no tokens (--token-file): anyone who reaches it reads these counts and estimates. Everything is shown.';
  document.body.dataset.access = state.token ? 'token' : 'open';
  $('#sign-out').hidden = !state.token;
  $('#refresh').hidden = false;
  build(listed.body.metrics);
  await show(listed.body.metrics);
  clearInterval(state.timer);
  state.timer = setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
  document.body.dataset.state = 'ready';
  return true;
}

// --- cards ------------------------------------------------------------------

const FACTS = [['n', 'n'], ['epsilon', 'local ε'], ['central', 'central ε'], ['rejected', 'rejected'], ['limited', 'refused (429)']];

function build(metrics) {
  const main = $('#metrics');
  main.replaceChildren();
  state.cards.clear();
  if (metrics.length === 0) main.append(el('p', { class: 'muted', text: 'The metrics file holds no metrics.' }));
  for (const m of metrics) {
    const facts = el('dl', { class: 'facts' });
    const slots = {};
    for (const [key, label] of FACTS) {
      slots[key] = el('dd', { class: key });
      facts.append(el('div', {}, el('dt', { text: label }), slots[key]));
    }
    const card = el('article', { class: 'panel metric', 'data-metric': m.name, 'data-kind': m.kind },
      el('header', {},
        el('h2', { text: m.title ?? m.name }),
        el('p', { class: 'muted' }, el('code', { text: m.name }), ` · ${m.kind} · ${m.protocol}`)),
      facts,
      slots.small = el('p', { class: 'too-small', hidden: '' }),
      slots.plot = el('div', { class: 'plot' }),
      slots.note = el('p', { class: 'note muted' }));
    state.cards.set(m.name, slots);
    main.append(card);
  }
}

/** What a metric's counts say: n, ε, rejections, refusals, the shuffler, the planner's note. */
function describe(m, slots) {
  slots.n.textContent = count.format(m.n);
  slots.n.closest('article').dataset.n = String(m.n);
  const epsilon = Number(m.epsilon.toPrecision(3));
  slots.epsilon.textContent = m.kind === 'rappor' ? `ε₁ = ${epsilon}` : `ε = ${epsilon}`;
  const reasons = Object.entries(m.rejected ?? {}).filter(([, k]) => k > 0);
  slots.rejected.replaceChildren(...(reasons.length === 0 ? ['none'] : reasons.map(([reason, k]) =>
    el('span', { class: 'reason', 'data-reason': reason, text: `${reason.replaceAll('_', ' ')} ${count.format(k)}` }))));
  const limited = m.limited ?? { requests: 0, reports: 0, reports_carried: 0 };
  const refused = limited.requests + limited.reports;
  slots.limited.dataset.count = String(refused);
  slots.limited.textContent = refused === 0 ? 'none'
    : `${count.format(refused)} post${refused === 1 ? '' : 's'} (request limit ${count.format(limited.requests)}, report limit ${count.format(limited.reports)})` +
      (limited.reports_carried > 0 ? `; the ${count.format(limited.reports_carried)} reports in them not counted` : '');
  slots.central.replaceChildren(...central(m.shuffled));
  const small = Number.isFinite(m.min_users) && m.n < m.min_users;
  slots.small.hidden = !small;
  slots.small.replaceChildren(...(small
    ? [`n = ${count.format(m.n)}: below the ~${count.format(m.min_users)} users this metric needs before its estimate means anything (see `,
      el('code', { text: 'localdp plan' }), ').']
    : []));
}

/** The central ε of shuffled reports, as the collector's "shuffled" describes them. */
function central(shuffled) {
  if (shuffled === undefined || shuffled === null) return ['no shuffler'];
  const batches = `${count.format(shuffled.reports)} reports in ${count.format(shuffled.batches)} batches, the smallest ${count.format(shuffled.smallest_batch)}${senders(shuffled.shufflers)}`;
  const parts = shuffled.central
    ? [el('b', { text: `ε = ${shuffled.central.epsilon.toPrecision(3)}` }), `, δ = ${shuffled.central.delta.toExponential(0)} (${batches})`]
    : [`none yet (${batches})`];
  // The collector's note (its conditions, in full) is the caveat's tooltip.
  parts.push(el('span', { class: 'muted caveat', title: shuffled.note ?? '', text: ' Only if the shuffler is run by someone other than the collector.' }));
  return parts;
}

/** Which shuffler tokens sent the batches, by fingerprint (the collector never shows a token). */
function senders(shufflers) {
  if (!shufflers?.length) return '';
  if (shufflers.length === 1) return `, from shuffler token ${shufflers[0].fingerprint}`;
  return `, from shuffler tokens ${shufflers.map((s) => `${s.fingerprint} (${count.format(s.batches)})`).join(', ')}`;
}

// --- estimates ----------------------------------------------------------------

/** Bounds and at most five ticks for shares, at round steps. */
function shareAxis(values) {
  const lo = Math.min(0, ...values);
  const hi = Math.max(0.05, ...values);
  const step = [0.05, 0.1, 0.2, 0.25, 0.5, 1, 2].find((s) => Math.ceil(hi / s) - Math.floor(lo / s) <= 4) ?? 5;
  return { lo: Math.floor(lo / step) * step, hi: Math.ceil(hi / step) * step, step };
}

/** One row of a plot: a label, a track and a figure. */
function row(label, track, figure, attributes = {}) {
  return el('div', { class: 'bar-row', ...attributes }, el('span', { class: 'label', text: label }), track, el('span', { class: 'figure', text: figure }));
}

/** Estimated shares as bars, each with its 95% interval as a whisker. */
function shares(rows, total) {
  const shown = rows.length > MAX_ROWS ? [...rows].sort((a, b) => b.frequency - a.frequency).slice(0, MAX_ROWS) : rows;
  const axis = shareAxis(shown.flatMap((r) => [r.frequency, ...r.ci95]));
  const x = scale(axis.lo, axis.hi);
  const plot = el('div', { class: 'bars' });
  for (const r of shown) {
    const label = String(r.value);
    const half = (r.ci95[1] - r.ci95[0]) / 2;
    const track = el('div', { class: 'track' },
      place(el('span', { class: 'zero' }), x(0)),
      place(el('span', { class: 'bar' }), x(0), x(r.frequency)),
      place(el('span', { class: 'whisker' }), x(r.ci95[0]), x(r.ci95[1])));
    plot.append(row(label, track, `${percent(r.frequency)} ± ${percent(half)}`, {
      'data-value': label, title: `${label}: ${percent(r.frequency, 2)}, 95% interval ${percent(r.ci95[0], 2)} to ${percent(r.ci95[1], 2)}`,
    }));
  }
  const ticks = el('div', { class: 'ticks' });
  for (let v = axis.lo; v <= axis.hi + 1e-9; v += axis.step) ticks.append(place(el('span', { text: percent(Math.abs(v) < 1e-12 ? 0 : v, 0) }), x(v)));
  plot.append(row('', ticks, ''));
  const more = total - shown.length;
  return more > 0 ? [plot, el('p', { class: 'muted', text: `The ${shown.length} largest of ${total} values; ${more} more not shown.` })] : [plot];
}

/** Digits that show a figure to about a tenth of its standard error. */
const digits = (se) => Math.max(0, Math.min(4, 1 - Math.floor(Math.log10(se || 1))));

/** A track over the range [lo, hi] (drawn by `x`) with a value and its 95% interval. */
function interval(x, lo, hi, value, ci95) {
  return el('div', { class: 'track' },
    place(el('span', { class: 'range' }), x(lo), x(hi)),
    place(el('span', { class: 'whisker' }), x(ci95[0]), x(ci95[1])),
    place(el('span', { class: 'dot' }), x(value)));
}

/** The ends of a range, under its tracks. */
const ends = (lo, hi, unit) => el('div', { class: 'ends' }, el('span', { text: `${lo}` }), el('span', { text: `${hi}${unit}` }));

/** A numeric metric: each attribute's mean ± the 95% half-width. */
function means(m, estimate) {
  const ranges = Array.isArray(m.config.range?.[0]) ? m.config.range : [m.config.range];
  const unit = m.unit ? ` ${m.unit}` : '';
  return (estimate.attributes ?? [estimate]).map(({ mean, std_error: se, ci95 }, a) => {
    const d = digits(se);
    const name = ranges.length > 1 ? `attribute ${a}: ` : 'mean ';
    const [lo, hi] = ranges[a];
    const x = scale(Math.min(lo, ci95[0]), Math.max(hi, ci95[1]));
    return el('div', { class: 'interval' },
      el('p', { class: 'figure', text: `${name}${mean.toFixed(d)}${unit} ± ${((ci95[1] - ci95[0]) / 2).toFixed(d)}${unit} (95%)` }),
      interval(x, lo, hi, mean, ci95),
      ends(lo, hi, unit));
  });
}

/** A distribution: the histogram with each bin's interval, every quantile and the mean with theirs. */
function distribution(m, estimate) {
  const [lo, hi] = m.config.range;
  const unit = m.unit ? ` ${m.unit}` : '';
  const top = Math.max(1e-9, ...estimate.histogram.map((b) => b.ci95[1]));
  const y = (f) => Math.max(0, Math.min(100, (100 * f) / top));
  const rise = (node, from, to) => { node.style.bottom = `${y(from)}%`; node.style.height = `${y(to) - y(from)}%`; return node; };
  // Square Wave's EMS smooths the bins: its intervals add the smoothing's
  // estimated bias, and hold a bin's share only 87.5–91.7% of the time where
  // the density bends within a bin or two (the note below, docs/distributions.md).
  const level = estimate.protocol === 'square_wave' ? '≈95%' : '95%';
  const hist = el('div', { class: 'hist' }, ...estimate.histogram.map((b) => el('div', {
    class: 'column', title: `${b.lo}–${b.hi}${unit}: ${percent(b.frequency)}, ${level} interval ${percent(b.ci95[0])} to ${percent(b.ci95[1])}`,
  }, rise(el('span', { class: 'bin' }), 0, b.frequency), rise(el('span', { class: 'whisker' }), b.ci95[0], b.ci95[1]))));
  const round = (v) => count.format(Math.round(v));
  const points = [...estimate.quantiles.map((q) => ({ label: `p${Math.round(q.q * 100)}`, q: String(q.q), ...q })), ...(estimate.mean ? [{ label: 'mean', ...estimate.mean }] : [])];
  const x = scale(Math.min(lo, ...points.map((p) => p.ci95[0])), Math.max(hi, ...points.map((p) => p.ci95[1])));
  const rows = points.map((p) => row(p.label, interval(x, lo, hi, p.value, p.ci95),
    `${round(p.value)}${unit} (${round(p.ci95[0])} to ${round(p.ci95[1])})`, p.q ? { 'data-q': p.q } : {}));
  return [hist, ends(lo, hi, unit), el('div', { class: 'bars quantiles' }, ...rows)];
}

/** A key-value metric: each key's share of users as a bar, then the mean of its values among its holders. */
function keyValues(m, estimate) {
  const [lo, hi] = m.config.range;
  const unit = m.unit ? ` ${m.unit}` : '';
  const keys = estimate.keys;
  const held = shares(keys.map((k) => ({ value: k.key, frequency: k.frequency.estimate, ci95: k.frequency.ci95 })), keys.length);
  const x = scale(Math.min(lo, ...keys.map((k) => k.mean.ci95[0])), Math.max(hi, ...keys.map((k) => k.mean.ci95[1])));
  const rows = keys.map((k) => {
    const d = digits(k.mean.se);
    return row(k.key, interval(x, lo, hi, k.mean.estimate, k.mean.ci95),
      `${k.mean.estimate.toFixed(d)} ± ${((k.mean.ci95[1] - k.mean.ci95[0]) / 2).toFixed(d)}${unit}`, { 'data-key': k.key });
  });
  return [...held, el('div', { class: 'bars key-means' }, ...rows), ends(lo, hi, unit)];
}

/** The plot and its note for an answer of `/estimate`. */
function estimated(m, answer) {
  if (answer.status === 409) return { plot: [el('p', { class: 'empty', text: 'No reports yet.' })], note: '' };
  if (!answer.ok) return { plot: [el('p', { class: 'error', text: `Estimate: ${answer.status}, ${answer.body.error ?? 'failed'}` })], note: '' };
  const e = answer.body;
  switch (m.kind) {
    case 'numeric':
      return { plot: means(m, e), note: 'The mean of the clipped values, unbiased, with its 95% interval.' };
    case 'distribution':
      return {
        plot: distribution(m, e),
        note: e.protocol === 'square_wave'
          ? 'Columns: each bin\'s share with its ≈95% interval. Below: the quantiles and the mean, each with its interval (in brackets). Square Wave\'s EMS smooths the bins, and each interval adds the smoothing\'s estimated bias: in the tests (5,000 values, ε = 1, 32 bins) each bin\'s interval held its share in at least 96.5% of collections on a smooth density and a steep tail, but only 87.5–91.7% where it bends within a bin or two (a peak about a bin wide, the foot of a mode); see docs/distributions.md.'
          : 'Columns: each bin\'s share with its 95% interval. Below: the quantiles and the mean, each with its 95% interval (in brackets).',
      };
    case 'heavy-hitter':
      // Sketches (cms, hcms) estimate every candidate of the config; discovery finds values.
      if (e.estimates) return { plot: shares(e.estimates, e.estimates.length), note: `Each candidate's share, estimated by ${e.protocol}'s sketch, with its 95% interval.` };
      return e.heavy_hitters.length === 0
        ? { plot: [el('p', { class: 'empty', text: 'No value is frequent enough among these reports to be found yet.' })], note: '' }
        : { plot: shares(e.heavy_hitters, e.heavy_hitters.length), note: `The values found without a list, by ${e.protocol}, with their shares and 95% intervals.` };
    case 'marginals':
      // Each field's own histogram (the joint grids are the demo's and the JSON's).
      return {
        plot: e.histograms.flatMap((h) => [el('h4', { text: h.attribute }), ...shares(h.values, h.values.length)]),
        note: `Each field's share, from every pair of fields (${e.protocol}), with its 95% interval; the joint histograms are in the estimate's JSON.`,
      };
    case 'key_value':
      return { plot: keyValues(m, e), note: `Bars: the share of users holding each key; below: the mean of each key's values among its holders (${e.protocol}). Each with its 95% interval.` };
    case 'rappor':
      return {
        plot: e.estimates.length ? shares(e.estimates, e.estimates.length) : [el('p', { class: 'empty', text: 'No candidate detected yet.' })],
        note: `Candidates the decoder fits above 0 (ε∞ = ${e.epsilon_infinity.toFixed(2)} per value over time); ${e.not_detected.length} not detected. An interval starts at 0 unless its candidate passes a test over all the candidates (95%, Bonferroni).`,
      };
    default:
      return { plot: shares(e.estimates, e.estimates.length), note: 'Bars: each value\'s estimated share; whiskers: its 95% interval.' };
  }
}

// --- refresh --------------------------------------------------------------------

async function show(metrics) {
  const answers = await Promise.all(metrics.map((m) => (m.n === 0
    ? { ok: false, status: 409, body: {} }
    : api(`/api/metrics/${encodeURIComponent(m.name)}/estimate`))));
  metrics.forEach((m, i) => {
    const slots = state.cards.get(m.name);
    if (!slots) return;
    describe(m, slots);
    // One card that cannot be drawn says so, and the others are still drawn.
    let shown;
    try { shown = estimated(m, answers[i]); }
    catch (e) { shown = { plot: [el('p', { class: 'error', text: `Cannot draw this estimate: ${e.message}` })], note: '' }; }
    slots.plot.replaceChildren(...shown.plot.filter(Boolean));
    slots.note.textContent = shown.note;
  });
  $('#updated').textContent = `Updated ${new Date().toLocaleTimeString()}.`;
  document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed ?? 0) + 1);
}

function refresh() {
  state.refreshing ??= (async () => {
    try {
      const listed = await api('/api/metrics');
      // A token that stopped being valid (the collector restarted with others): the login, saying so.
      if (listed.status === 401) { clearInterval(state.timer); await start(); }
      else if (listed.ok) await show(listed.body.metrics);
    } catch (e) {
      $('#updated').textContent = `Refresh failed: ${e.message}`;
    } finally {
      state.refreshing = null;
    }
  })();
  return state.refreshing;
}

$('#login').addEventListener('submit', signIn);
$('#sign-out').addEventListener('click', signOut);
$('#refresh').addEventListener('click', refresh);
start();
