// The demo page: a survey, a simulator and a dashboard over the collector's
// HTTP API. Every randomization is the localdp package's (its web build,
// served at /pkg/); this file builds the page, draws the simulated users'
// true answers, sends reports, and draws the estimates the collector returns.
import init, { Client, plan } from '/pkg/localdp.js';
import { categorical, normal, uniform } from './random.js';

/** Reports per POST: about 100 KB, well under the collector's 1 MiB limit. */
const BATCH = 1000;
const REFRESH_MS = 2000;
const count = new Intl.NumberFormat('en');
const percent = (x, digits = 1) => `${(100 * x).toFixed(digits)}%`;

const state = { metrics: [], post: 'none', refreshing: null, simulating: false };

const $ = (selector, root = document) => root.querySelector(selector);

/** An element; `attributes` become properties where the element has them. */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key in node && !key.startsWith('data-')) node[key] = value;
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

/** Places `node` from `from`% to `to`% of its track (CSSOM: allowed by the page's CSP). */
function span(node, from, to) {
  node.style.left = `${Math.min(from, to)}%`;
  node.style.width = `${Math.abs(to - from)}%`;
  return node;
}

function at(node, position) {
  node.style.left = `${position}%`;
  return node;
}

// --- metrics --------------------------------------------------------------

const labelsOf = (m) => (Array.isArray(m.config.domain)
  ? m.config.domain.map(String)
  : Array.from({ length: m.config.domain }, (_, i) => String(i)));
const isRecord = (m) => Array.isArray(m.config.range?.[0]);
/** Numbers: a numeric metric's mean, or a distribution's histogram and quantiles. */
const isNumber = (m) => m.kind === 'numeric' || m.kind === 'distribution';
const rangesOf = (m) => (isRecord(m) ? m.config.range : [m.config.range]);
/** What the package's Client takes for answer `i` of a frequency metric. */
const valueOf = (m, i) => (Array.isArray(m.config.domain) ? m.config.domain[i] : i);
/** The pages simulated users of an open-text metric came from: nobody tells the collector this list. */
const PAGES = ['/', '/pricing', '/docs', '/blog/ldp', '/signup', '/about', '/careers', '/blog/rust', '/status', '/legal'];
/** The values a metric's simulated users draw from, with their labels (open text: the pages above). */
const choicesOf = (m) => (m.kind === 'heavy-hitter' ? PAGES : isKeyValue(m) ? keysOf(m) : labelsOf(m));
const isOpenText = (m) => m.kind === 'heavy-hitter';
/** A user's key-value map: which keys, and a number for each. */
const isKeyValue = (m) => m.kind === 'key_value';
const keysOf = (m) => (Array.isArray(m.config.keys) ? m.config.keys.map(String) : Array.from({ length: m.config.keys }, (_, i) => String(i)));
/** Events with several fields: a marginals metric. */
const isEvent = (m) => m.kind === 'marginals';
const fieldLabels = (attribute) => (Array.isArray(attribute.domain)
  ? attribute.domain.map(String)
  : Array.from({ length: attribute.domain }, (_, i) => String(i)));
/** The event object the package's Client takes for each field's value index. */
const eventOf = (m, indices) => Object.fromEntries(m.config.attributes.map((a, i) => [a.name, Array.isArray(a.domain) ? a.domain[indices[i]] : indices[i]]));

function guarantee(m) {
  const ratio = Math.exp(m.epsilon);
  const subject = m.kind === 'frequency' ? 'choice' : 'answer';
  return `ε = ${m.epsilon}: whatever the report, your ${subject} made it at most ` +
    `e^ε ≈ ${ratio.toFixed(2)}× more likely than any other ${subject} would have.`;
}

async function api(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({ error: response.statusText }));
  return { ok: response.ok, status: response.status, body };
}

const postReports = (name, body) => api(`/api/metrics/${encodeURIComponent(name)}/reports`, {
  method: 'POST', headers: { 'content-type': 'application/json' }, body,
});

// --- 1. the survey ----------------------------------------------------------

function buildSurvey(loadTime) {
  const questions = $('#questions');
  questions.replaceChildren();
  for (const m of state.metrics) {
    const fieldset = el('fieldset', { class: 'question', 'data-metric': m.name }, el('legend', { text: m.title ?? m.name }));
    if (m.kind === 'frequency') {
      const choices = el('div', { class: 'choices' });
      labelsOf(m).forEach((label, i) => {
        const input = el('input', { type: 'radio', name: m.name, value: String(i), required: true });
        choices.append(el('label', { class: 'choice' }, input, el('span', { text: label })));
      });
      fieldset.append(choices);
    } else if (isKeyValue(m)) {
      const [lo, hi] = m.config.range;
      const rows = keysOf(m).map((key, i) => el('label', { class: 'number key' },
        el('input', { type: 'checkbox', name: `${m.name}-held-${i}` }),
        el('span', { text: key }),
        el('input', { type: 'number', name: `${m.name}-${i}`, min: lo, max: hi, step: 'any', value: '10', 'aria-label': `${key} ${m.unit ?? ''}` })));
      fieldset.append(el('div', { class: 'keys' }, ...rows),
        el('p', { class: 'muted', text: `Tick any number of them: the whole map is one report, charged ε once (${m.unit ?? ''} from ${lo} to ${hi}; clipped).` }));
    } else if (isNumber(m)) {
      rangesOf(m).forEach(([lo, hi], a) => {
        const input = el('input', { type: 'number', name: `${m.name}-${a}`, min: lo, max: hi, step: 'any', required: true });
        if (m.unit === 'ms' && !isRecord(m)) input.value = String(Math.min(hi, Math.max(lo, loadTime)));
        fieldset.append(el('label', { class: 'number' }, input, el('span', { text: `${m.unit ?? ''} (${lo} to ${hi}; clipped)` })));
      });
      if (m.unit === 'ms' && !isRecord(m)) {
        fieldset.append(el('p', { class: 'muted', text: `Filled in with this page's own load time, ${loadTime} ms, as measured here.` }));
      }
    } else if (isEvent(m)) {
      for (const attribute of m.config.attributes) {
        const select = el('select', { name: `${m.name}-${attribute.name}` }, ...fieldLabels(attribute).map((label) => el('option', { value: label, text: label })));
        fieldset.append(el('label', { class: 'number' }, select, el('span', { text: attribute.name })));
      }
      fieldset.append(el('p', { class: 'muted', text: 'One report for the whole event, which spends ε once: it tells which fields go together.' }));
    } else {
      fieldset.append(el('input', { type: 'text', name: m.name, required: true, maxLength: 200, placeholder: '/pricing' }));
      if (isOpenText(m)) {
        fieldset.append(el('p', { class: 'muted', text: `Any text: nobody listed the possible answers. The collector discovers the frequent ones from randomized prefixes (at most ${m.config.max_length} bytes are used).` }));
      }
    }
    fieldset.append(el('p', { class: 'guarantee', text: guarantee(m) }));
    questions.append(fieldset);
  }
}

async function submitSurvey(event) {
  event.preventDefault();
  const data = new FormData(event.target);
  const rows = $('#sent-rows');
  rows.replaceChildren();
  $('#sent').hidden = false;
  $('#send').disabled = true;
  try {
    await Promise.all(state.metrics.map(async (m) => {
      let value;
      let shown;
      if (m.kind === 'frequency') {
        const i = Number(data.get(m.name));
        value = valueOf(m, i);
        shown = labelsOf(m)[i];
      } else if (isKeyValue(m)) {
        value = {};
        keysOf(m).forEach((key, i) => {
          if (data.get(`${m.name}-held-${i}`)) value[key] = Number(data.get(`${m.name}-${i}`));
        });
        shown = Object.entries(value).map(([k, v]) => `${k} ${v} ${m.unit ?? ''}`.trim()).join(', ') || 'none';
      } else if (isNumber(m)) {
        const numbers = rangesOf(m).map((_, a) => Number(data.get(`${m.name}-${a}`)));
        value = isRecord(m) ? numbers : numbers[0];
        shown = `${numbers.join(', ')} ${m.unit ?? ''}`.trim();
      } else if (isEvent(m)) {
        value = Object.fromEntries(m.config.attributes.map((a) => [a.name, String(data.get(`${m.name}-${a.name}`))]));
        shown = Object.values(value).join(' · ');
      } else {
        value = String(data.get(m.name));
        shown = value;
      }
      const report = await m.surveyClient.randomize(value);
      const text = JSON.stringify(report);
      const reply = el('p', { class: 'reply', text: 'sending…' });
      rows.append(el('div', { class: 'sent-row', 'data-metric': m.name },
        el('h4', { text: m.title ?? m.name }),
        el('div', { class: 'stays' }, el('span', { class: 'tag', text: 'stays on this device' }), el('strong', { class: 'value', text: shown })),
        el('div', { class: 'leaves' },
          el('span', { class: 'tag', text: `leaves the page · ${new TextEncoder().encode(text).length} bytes` }),
          el('pre', { class: 'report', text })),
        reply));
      const answer = await postReports(m.name, text);
      reply.textContent = answer.ok
        ? `Collector: accepted ${answer.body.accepted}, stored.`
        : `Collector: ${answer.status}, ${answer.body.error ?? 'refused'}.`;
      reply.classList.toggle('error', !answer.ok);
    }));
    const memo = state.metrics.some((m) => !isNumber(m));
    rows.append(el('p', {
      class: 'muted',
      text: memo
        ? 'Send the same choice again, in any tab or after a reload, and the same report is sent again (the client memoizes it in IndexedDB), so repeating reveals nothing new. A numeric answer is randomized afresh each time.'
        : 'Each answer is randomized afresh.',
    }));
  } finally {
    $('#send').disabled = false;
  }
  refresh();
}

// --- 2. the simulator ---------------------------------------------------------

function buildSimulator() {
  const panel = $('#distributions');
  panel.replaceChildren();
  for (const m of state.metrics) {
    const box = el('fieldset', { class: 'distribution', 'data-metric': m.name }, el('legend', { text: m.title ?? m.name }));
    if (m.kind === 'frequency' || isOpenText(m)) {
      const labels = choicesOf(m);
      const sliders = labels.map((label, i) => el('input', {
        type: 'range', min: 0, max: 100, step: 1, value: String(Math.round(100 / (i + 1) ** 1.2)), 'aria-label': `${label} weight`,
      }));
      const shares = labels.map(() => el('output'));
      const update = () => {
        const weights = sliders.map((s) => Number(s.value));
        const total = weights.reduce((a, b) => a + b, 0);
        shares.forEach((o, i) => { o.textContent = total ? percent(weights[i] / total, 0) : '–'; });
      };
      sliders.forEach((s) => s.addEventListener('input', update));
      const preset = (name, weights) => el('button', {
        type: 'button', class: 'preset', text: name,
        onclick: () => { sliders.forEach((s, i) => { s.value = String(weights(i)); }); update(); },
      });
      box.append(
        el('div', { class: 'presets' },
          preset('skewed', (i) => Math.round(100 / (i + 1) ** 1.2)),
          preset('uniform', () => 50),
          preset('one wins', (i) => (i === 0 ? 100 : 4))),
        el('div', { class: 'sliders' }, ...labels.flatMap((label, i) => [el('span', { text: label }), sliders[i], shares[i]])),
      );
      update();
      m.draw = () => categorical(sliders.map((s) => Number(s.value)));
      m.drawable = () => sliders.some((s) => Number(s.value) > 0);
    } else if (isKeyValue(m)) {
      // Each key held with its own probability, for a key-specific number of minutes.
      const [lo, hi] = m.config.range;
      const keys = keysOf(m);
      const sliders = keys.map((key, i) => el('input', {
        type: 'range', min: 0, max: 100, step: 1, value: String(Math.round(90 / (i + 1) ** 0.8)), 'aria-label': `${key}: share of users`,
      }));
      const shares = keys.map(() => el('output'));
      const update = () => sliders.forEach((s, i) => { shares[i].textContent = `${s.value}%`; });
      sliders.forEach((s) => s.addEventListener('input', update));
      update();
      const typical = (i) => lo + ((i % 4) + 1) * 0.15 * (hi - lo);
      box.append(el('div', { class: 'sliders' }, ...keys.flatMap((key, i) => [el('span', { text: key }), sliders[i], shares[i]])),
        el('p', { class: 'muted', text: `Each simulated user holds each key with its share; ${keys[0]} for about ${Math.round(typical(0))} ${m.unit ?? ''}, ${keys[1]} ${Math.round(typical(1))}, … (normal, clipped to [${lo}, ${hi}]).` }));
      m.draw = () => Object.fromEntries(keys.flatMap((key, i) => (100 * uniform() < Number(sliders[i].value)
        ? [[key, Math.min(hi, Math.max(lo, typical(i) + 0.08 * (hi - lo) * normal()))]]
        : [])));
      m.drawable = () => true;
    } else if (m.kind === 'distribution') {
      // Page-load times: log-normal, a median and a spread (σ of the logarithm).
      const [lo, hi] = m.config.range;
      const median = el('input', { type: 'range', min: lo, max: hi, step: 'any', value: String(lo + 0.16 * (hi - lo)), 'aria-label': 'median' });
      const spread = el('input', { type: 'range', min: 0.05, max: 1.5, step: 0.01, value: '0.6', 'aria-label': 'spread' });
      const shown = el('output');
      const update = () => {
        shown.textContent = `log-normal, median ${count.format(Math.round(Number(median.value)))} ${m.unit ?? ''}, σ ${Number(spread.value).toFixed(2)} (in logs), clipped to [${lo}, ${hi}]`;
      };
      median.addEventListener('input', update);
      spread.addEventListener('input', update);
      update();
      box.append(el('div', { class: 'sliders numeric' }, el('span', { text: 'median' }), median, el('span', { text: 'spread' }), spread), shown);
      m.draw = () => [Math.min(hi, Math.max(lo, Math.max(1e-9, Number(median.value)) * Math.exp(Number(spread.value) * normal())))];
      m.drawable = () => true;
    } else if (isEvent(m)) {
      // A latent kind of user drives every field: the fields go together.
      const strength = el('input', { type: 'range', min: 0, max: 100, step: 1, value: '80', 'aria-label': 'correlation' });
      const shown = el('output');
      const update = () => { shown.textContent = `each user is one of 3 kinds; a field takes its kind's value with probability ${strength.value}%, else any value`; };
      strength.addEventListener('input', update);
      update();
      box.append(el('div', { class: 'sliders numeric' }, el('span', { text: 'together' }), strength), shown);
      const sizes = m.config.attributes.map((a) => fieldLabels(a).length);
      m.draw = () => {
        const kind = categorical([5, 3, 2]);
        return sizes.map((d, a) => (100 * uniform() < Number(strength.value) ? (2 * kind + a) % d : categorical(new Array(d).fill(1))));
      };
      m.drawable = () => true;
    } else if (m.kind === 'numeric') {
      const controls = rangesOf(m).map(([lo, hi], a) => {
        const mean = el('input', { type: 'range', min: lo, max: hi, step: 'any', value: String(lo + 0.25 * (hi - lo)), 'aria-label': `mean of attribute ${a}` });
        const spread = el('input', { type: 'range', min: 0, max: 0.5, step: 0.01, value: '0.12', 'aria-label': `spread of attribute ${a}` });
        const shown = el('output');
        const update = () => {
          shown.textContent = `normal, mean ${count.format(Math.round(Number(mean.value)))}, sd ${count.format(Math.round(Number(spread.value) * (hi - lo)))} ${m.unit ?? ''}, clipped to [${lo}, ${hi}]`;
        };
        mean.addEventListener('input', update);
        spread.addEventListener('input', update);
        update();
        box.append(el('div', { class: 'sliders numeric' }, el('span', { text: 'mean' }), mean, el('span', { text: 'spread' }), spread), shown);
        return { lo, hi, mean, spread };
      });
      m.draw = () => controls.map(({ lo, hi, mean, spread }) => {
        const x = Number(mean.value) + Number(spread.value) * (hi - lo) * normal();
        return Math.min(hi, Math.max(lo, x));
      });
      m.drawable = () => true;
    } else {
      box.append(el('p', { class: 'muted', text: 'Not simulated: an open domain has no list of values to draw from.' }));
    }
    if (isOpenText(m)) {
      box.append(el('p', { class: 'muted', text: 'The simulator knows these pages; the collector is never told them.' }));
    }
    panel.append(box);
  }
}

/** The truth of the simulated users so far: counts, sums of clipped values, or the values. */
function emptyTruth(m) {
  if (m.kind === 'distribution' || isEvent(m)) return { users: 0, values: [] };
  if (isKeyValue(m)) return { users: 0, counts: new Array(keysOf(m).length).fill(0), sums: new Array(keysOf(m).length).fill(0) };
  return m.kind === 'numeric'
    ? { users: 0, sums: new Array(rangesOf(m).length).fill(0) }
    : { users: 0, counts: new Array(choicesOf(m).length).fill(0) };
}

async function simulate() {
  const users = Number($('#users').value);
  const metrics = state.metrics.filter((m) => m.draw && m.drawable());
  const button = $('#simulate');
  const bar = $('#sim-progress');
  const status = $('#sim-status');
  state.simulating = true;
  button.disabled = true;
  bar.hidden = false;
  status.dataset.state = 'running';
  const started = performance.now();
  let failed = 0;
  try {
    for (let done = 0; done < users; done += BATCH) {
      const size = Math.min(BATCH, users - done);
      await Promise.all(metrics.map(async (m) => {
        const truth = emptyTruth(m);
        const reports = new Array(size);
        for (let u = 0; u < size; u++) {
          const answer = m.draw();
          if (m.kind === 'frequency') {
            truth.counts[answer]++;
            reports[u] = m.simulationClient.randomize(valueOf(m, answer));
          } else if (isOpenText(m)) {
            truth.counts[answer]++;
            reports[u] = m.simulationClient.randomize(PAGES[answer]);
          } else if (isKeyValue(m)) {
            keysOf(m).forEach((key, i) => {
              if (key in answer) { truth.counts[i]++; truth.sums[i] += answer[key]; }
            });
            reports[u] = m.simulationClient.randomize(answer);
          } else if (m.kind === 'distribution') {
            truth.values.push(answer[0]);
            reports[u] = m.simulationClient.randomize(answer[0]);
          } else if (isEvent(m)) {
            truth.values.push(answer);
            reports[u] = m.simulationClient.randomize(eventOf(m, answer));
          } else {
            answer.forEach((x, a) => { truth.sums[a] += x; });
            reports[u] = m.simulationClient.randomize(isRecord(m) ? answer : answer[0]);
          }
        }
        truth.users = size;
        const reply = await postReports(m.name, JSON.stringify(reports));
        if (reply.ok) {
          // Only what the collector stored counts as truth.
          m.truth.users += truth.users;
          if (truth.values) m.truth.values.push(...truth.values);
          for (const part of ['counts', 'sums']) truth[part]?.forEach((v, i) => { m.truth[part][i] += v; });
        } else {
          failed += size;
        }
      }));
      bar.value = (done + size) / users;
      status.textContent = `Sent ${count.format(done + size)} of ${count.format(users)} simulated users' reports…`;
      if ((done / BATCH) % 4 === 3) refresh();
    }
    const seconds = (performance.now() - started) / 1000;
    status.textContent = `Simulated ${count.format(users)} users in ${seconds.toFixed(1)} s` +
      (failed ? `; ${count.format(failed)} reports were refused.` : ': only their reports left the page.');
  } catch (e) {
    status.textContent = `Simulation stopped: ${e.message}`;
  } finally {
    status.dataset.state = 'done';
    state.simulating = false;
    button.disabled = false;
    bar.hidden = true;
    // After any refresh still under way (it may have fetched some estimates
    // before the last batch landed), one that sees every report.
    Promise.resolve(state.refreshing).then(refresh);
  }
}

// --- 3. the dashboard ---------------------------------------------------------

function buildDashboard() {
  const cards = $('#cards');
  cards.replaceChildren();
  for (const m of state.metrics) {
    m.card = el('article', { class: `card ${m.kind}`, 'data-metric': m.name },
      el('h3', { text: m.title ?? m.name }),
      el('p', { class: 'meta' }),
      el('div', { class: 'plot' }),
      el('p', { class: 'note muted' }),
      el('p', { class: 'privacy' }));
    cards.append(m.card);
  }
}

function meta(m, estimate) {
  const rejected = Object.values(estimate.rejected ?? {}).reduce((a, b) => a + b, 0);
  const epsilon = m.kind === 'rappor' ? `ε₁ = ${m.epsilon}` : `ε = ${m.epsilon}`;
  return [
    el('span', { text: `${m.protocol} · ${epsilon} · n = ` }),
    el('b', { class: 'n', text: count.format(estimate.n) }),
    el('span', { text: ` · rejected ${count.format(rejected)}` }),
  ];
}

function truthNote(m, n) {
  if (!m.truth?.users) return 'No users simulated in this page yet.';
  const others = n - m.truth.users;
  return `Truth: the ${count.format(m.truth.users)} users simulated in this page` +
    (others > 0 ? `; the collector also holds ${count.format(others)} other report${others === 1 ? '' : 's'}, which the truth does not cover.` : '.');
}

/** Bounds and at most five ticks for shares, at round steps. */
function shareAxis(values) {
  const lo = Math.min(0, ...values);
  const hi = Math.max(0.05, ...values);
  const step = [0.05, 0.1, 0.2, 0.25, 0.5, 1].find((s) => Math.ceil(hi / s) - Math.floor(lo / s) <= 4) ?? 1;
  const axis = { lo: Math.floor(lo / step) * step, hi: Math.ceil(hi / step) * step, step };
  axis.x = (v) => (100 * (v - axis.lo)) / (axis.hi - axis.lo);
  return axis;
}

function ticks(axis, format) {
  const row = el('div', { class: 'ticks' });
  const steps = Math.round((axis.hi - axis.lo) / axis.step);
  for (let i = 0; i <= steps; i++) {
    const v = axis.lo + i * axis.step;
    row.append(at(el('span', { text: format(Math.abs(v) < 1e-12 ? 0 : v) }), axis.x(v)));
  }
  return row;
}

function renderShares(m, estimate) {
  const rows = estimate.heavy_hitters ?? estimate.estimates;
  const shares = m.truth?.users ? m.truth.counts.map((c) => c / m.truth.users) : null;
  // Open text: the truth of a discovered value, by its text (0 if no simulated user holds it).
  const truth = shares && isOpenText(m) ? rows.map((r) => shares[PAGES.indexOf(r.value)] ?? 0) : shares;
  if (rows.length === 0) return el('p', { class: 'empty', text: 'Nothing discovered yet: a value must be frequent among many reports.' });
  const axis = shareAxis([...rows.flatMap((r) => [r.frequency, ...r.ci95]), ...(truth ?? [])]);
  const plot = el('div', { class: 'bars' });
  rows.forEach((r, i) => {
    const track = el('div', { class: 'track' },
      at(el('span', { class: 'zero' }), axis.x(0)),
      span(el('span', { class: 'bar' }), axis.x(0), axis.x(r.frequency)),
      span(el('span', { class: 'ci' }), axis.x(r.ci95[0]), axis.x(r.ci95[1])));
    if (truth) track.append(at(el('span', { class: 'truth', title: `true share ${percent(truth[i])}` }), axis.x(truth[i])));
    const label = String(r.value);
    plot.append(el('div', { class: 'bar-row', title: `${label}: ${percent(r.frequency, 2)}, 95% interval ${percent(r.ci95[0], 2)} to ${percent(r.ci95[1], 2)}${truth ? `, truth ${percent(truth[i], 2)}` : ''}` },
      el('span', { class: 'label', text: label }),
      track,
      el('span', { class: 'figure', text: `${percent(r.frequency)} ±${(50 * (r.ci95[1] - r.ci95[0])).toFixed(1)}` })));
  });
  plot.append(el('div', { class: 'bar-row axis' }, el('span'), ticks(axis, (v) => percent(v, 0)), el('span')));
  return plot;
}

function renderMeans(m, estimate) {
  const attributes = estimate.attributes ?? [estimate];
  const plot = el('div', { class: 'means' });
  const digits = (se) => Math.max(0, Math.min(4, 1 - Math.floor(Math.log10(se || 1))));
  rangesOf(m).forEach(([lo, hi], a) => {
    const { mean, ci95, std_error: se } = attributes[a];
    const truth = m.truth?.users ? m.truth.sums[a] / m.truth.users : null;
    const low = Math.min(lo, ci95[0]);
    const high = Math.max(hi, ci95[1]);
    const x = (v) => (100 * (v - low)) / (high - low);
    const d = digits(se);
    const unit = m.unit ? ` ${m.unit}` : '';
    const track = el('div', { class: 'track' },
      span(el('span', { class: 'range' }), x(lo), x(hi)),
      span(el('span', { class: 'ci' }), x(ci95[0]), x(ci95[1])),
      at(el('span', { class: 'dot' }), x(mean)));
    if (truth !== null) track.append(at(el('span', { class: 'truth', title: `true mean ${truth.toFixed(d)}` }), x(truth)));
    plot.append(el('div', { class: 'mean-row' },
      el('p', { class: 'figure' },
        el('span', { class: 'mean', text: `${isRecord(m) ? `attribute ${a}: ` : ''}${mean.toFixed(d)}${unit}` }),
        el('span', { text: ` ± ${((ci95[1] - ci95[0]) / 2).toFixed(d)}${unit} (95%)` }),
        truth !== null ? el('span', { class: 'truth-figure', text: ` · truth ${truth.toFixed(d)}${unit}` }) : null),
      track,
      el('div', { class: 'ends' }, el('span', { text: `${lo}` }), el('span', { text: `${hi}${unit}` }))));
  });
  return plot;
}

/** The simulated users' own q-quantile (the smallest value with a share q at or below it). */
function trueQuantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length))) - 1];
}

/** The histogram (a column per bin, the truth's share as a marker) and p50, p95 with their intervals beside the truth. */
function renderDistribution(m, estimate) {
  const [lo, hi] = m.config.range;
  const unit = m.unit ? ` ${m.unit}` : '';
  const values = m.truth?.users ? m.truth.values : null;
  const width = (hi - lo) / estimate.histogram.length;
  const shares = values && estimate.histogram.map((_, b) => values.filter((v) => Math.min(estimate.histogram.length - 1, Math.floor((v - lo) / width)) === b).length / values.length);
  const top = Math.max(1e-9, ...estimate.histogram.map((b) => b.ci95[1]), ...(shares ?? []));
  const y = (f) => Math.max(0, Math.min(100, (100 * f) / top));
  // Vertical placement through CSSOM, as span() and at() place horizontally.
  const rise = (node, from, to) => Object.assign(node.style, { bottom: `${y(from)}%`, height: `${y(to) - y(from)}%` }) && node;
  const hist = el('div', { class: 'hist' });
  estimate.histogram.forEach((b, i) => {
    const column = el('div', { class: 'column', title: `${b.lo}–${b.hi}${unit}: ${percent(b.frequency, 1)}, ${estimate.protocol === 'square_wave' ? '≈95%' : '95%'} interval ${percent(b.ci95[0], 1)} to ${percent(b.ci95[1], 1)}${shares ? `, truth ${percent(shares[i], 1)}` : ''}` },
      rise(el('span', { class: 'bin' }), 0, b.frequency),
      rise(el('span', { class: 'bin-ci' }), b.ci95[0], b.ci95[1]));
    if (shares) column.append(rise(el('span', { class: 'bin-truth' }), shares[i], shares[i]));
    hist.append(column);
  });
  const x = (v) => (100 * (v - lo)) / (hi - lo);
  const rows = estimate.quantiles.filter((q) => q.q === 0.5 || q.q === 0.95).map((q) => {
    const truth = values ? trueQuantile(values, q.q) : null;
    const name = `p${Math.round(q.q * 100)}`;
    const track = el('div', { class: 'track' },
      span(el('span', { class: 'range' }), 0, 100),
      span(el('span', { class: 'ci' }), x(q.ci95[0]), x(q.ci95[1])),
      at(el('span', { class: 'dot' }), x(q.value)));
    if (truth !== null) track.append(at(el('span', { class: 'truth', title: `true ${name} ${Math.round(truth)}` }), x(truth)));
    return el('div', { class: 'mean-row quantile', 'data-q': String(q.q) },
      el('p', { class: 'figure' },
        el('span', { class: 'mean', text: `${name} ${count.format(Math.round(q.value))}${unit}` }),
        el('span', { text: ` (95%: ${count.format(Math.round(q.ci95[0]))} to ${count.format(Math.round(q.ci95[1]))}${unit})` }),
        truth !== null ? el('span', { class: 'truth-figure', text: ` · truth ${count.format(Math.round(truth))}${unit}` }) : null),
      track);
  });
  return el('div', { class: 'distribution' }, hist,
    el('div', { class: 'ends' }, el('span', { text: `${lo}` }), el('span', { text: `${hi}${unit}` })), ...rows);
}

/** Each key's share of users (bars, as for frequencies) and, where the share is clear of noise, the mean of its value. */
function renderKeyValue(m, estimate) {
  const shares = renderShares(m, { estimates: estimate.keys.map((k) => ({ value: k.key, frequency: k.frequency.estimate, ci95: k.frequency.ci95 })) });
  const unit = m.unit ? ` ${m.unit}` : '';
  const truth = m.truth?.users ? m.truth : null;
  const means = estimate.keys.filter((k) => k.frequency.estimate > 2 * k.frequency.se).map((k) => {
    const i = keysOf(m).indexOf(k.key);
    const half = (k.mean.ci95[1] - k.mean.ci95[0]) / 2;
    return el('p', { class: 'figure key-mean', 'data-key': k.key },
      el('span', { class: 'mean', text: `${k.key}: ${k.mean.estimate.toFixed(1)}${unit}` }),
      el('span', { text: ` ± ${half.toFixed(1)}${unit} (95%)` }),
      truth?.counts[i] ? el('span', { class: 'truth-figure', text: ` · truth ${(truth.sums[i] / truth.counts[i]).toFixed(1)}${unit}` }) : null);
  });
  return el('div', { class: 'key-value' }, shares, el('div', { class: 'key-means' }, ...means));
}

/** Each pair's joint histogram as a grid: a cell's shade is its estimated share; its title the interval and the truth. */
function renderMarginals(m, estimate) {
  const names = m.config.attributes.map((a) => a.name);
  const events = m.truth?.users ? m.truth.values : null;
  return el('div', { class: 'marginals' }, ...estimate.marginals.map((marginal) => {
    const [first, second] = marginal.attributes.map((name) => names.indexOf(name));
    const [rows, columns] = [first, second].map((a) => fieldLabels(m.config.attributes[a]));
    const top = Math.max(1e-9, ...marginal.cells.map((c) => c.frequency));
    const grid = el('div', { class: 'grid' }, el('span'), ...columns.map((label) => el('span', { class: 'head', text: label })));
    rows.forEach((row, r) => {
      grid.append(el('span', { class: 'head', text: row }));
      columns.forEach((_, c) => {
        const cell = marginal.cells[r * columns.length + c];
        const truth = events && events.filter((e) => e[first] === r && e[second] === c).length / events.length;
        const node = el('span', {
          class: 'cell', text: percent(Math.abs(cell.frequency) < 0.005 ? 0 : cell.frequency, 0),
          title: `${row} · ${columns[c]}: ${percent(cell.frequency, 1)}, 95% interval ${percent(cell.ci95[0], 1)} to ${percent(cell.ci95[1], 1)}${events ? `, truth ${percent(truth, 1)}` : ''}`,
        });
        node.style.backgroundColor = `rgba(76, 120, 168, ${Math.max(0, cell.frequency / top).toFixed(3)})`;
        grid.append(node);
      });
    });
    grid.style.gridTemplateColumns = `auto repeat(${columns.length}, 1fr)`;
    return el('div', { class: 'marginal' }, el('h4', { text: marginal.attributes.join(' × ') }), grid);
  }));
}

/**
 * The privacy of the metric's reports: the local ε of each. (The central ε
 * of reports a shuffler forwarded needs a collector with tokens, so it is
 * shown by the operator's dashboard, /dashboard, not by this page.)
 */
function renderPrivacy(m) {
  const local = m.kind === 'rappor' ? `ε₁ = ${m.epsilon}` : `ε = ${m.epsilon}`;
  $('.privacy', m.card).replaceChildren(el('span', { class: 'local', text: `Local ${local} per report.` }));
}

function render(m, answer) {
  const card = m.card;
  const plot = $('.plot', card);
  const note = $('.note', card);
  if (!answer.ok) {
    $('.meta', card).replaceChildren(...meta(m, { n: answer.body.n ?? 0, rejected: answer.body.rejected }));
    plot.replaceChildren(el('p', { class: 'empty', text: answer.status === 409 ? 'No reports yet.' : `Error: ${answer.body.error}` }));
    note.textContent = '';
    return;
  }
  const estimate = answer.body;
  $('.meta', card).replaceChildren(...meta(m, estimate));
  if (m.kind === 'distribution') {
    plot.replaceChildren(renderDistribution(m, estimate));
    note.textContent = `${truthNote(m, estimate.n)} Columns: each bin's share with its ${m.protocol === 'square_wave' ? '≈95%' : '95%'} interval; diamonds: the simulated users' shares. ${m.protocol === 'square_wave' ? 'Square Wave, EMS reconstruction: its intervals add the smoothing\'s estimated bias; in the tests each bin\'s interval held its share in at least 96.5% of collections on a smooth density and a steep tail, but only 87.5–91.7% where it bends within a bin or two (a peak about a bin wide, the foot of a mode).' : 'Hierarchical histogram.'}`;
  } else if (isKeyValue(m)) {
    plot.replaceChildren(renderKeyValue(m, estimate));
    note.textContent = `${truthNote(m, estimate.n)} Bars: the share of users holding each key, with 95% intervals; below, the mean of each key's value among its holders (keys clear of noise only). ${m.protocol}, one report per user's whole map.`;
  } else if (isEvent(m)) {
    plot.replaceChildren(renderMarginals(m, estimate));
    note.textContent = `${truthNote(m, estimate.n)} Every pair of fields from one report per event (${m.protocol}); hover a cell for its interval and the truth.${estimate.post === 'none' ? '' : ` Post-processed (${estimate.post}): each grid sums to 1 and agrees with the others on shared fields.`}`;
  } else if (m.kind === 'numeric') {
    plot.replaceChildren(renderMeans(m, estimate));
    note.textContent = `${truthNote(m, estimate.n)} The mean is unbiased for the clipped values; post-processing applies to frequencies only.`;
  } else {
    plot.replaceChildren(renderShares(m, estimate));
    note.textContent = m.kind === 'rappor'
      ? `Candidates detected by the decoder; ${estimate.not_detected.length} not detected.`
      : isOpenText(m)
        ? `Discovered with no list of pages: the ${estimate.heavy_hitters.length} most frequent the reports support, by ${m.protocol}. ${truthNote(m, estimate.n)}`
        : `${truthNote(m, estimate.n)}${estimate.post === 'none' ? '' : ` Bars are post-processed (${estimate.post}); intervals belong to the unbiased estimate.`}`;
  }
}

function refresh() {
  state.refreshing ??= (async () => {
    try {
      const post = state.post;
      // The counts first: a metric without reports has no estimate (409).
      const listed = await api('/api/metrics');
      const counts = new Map(listed.ok ? listed.body.metrics.map((m) => [m.name, m]) : []);
      const answers = await Promise.all(state.metrics.map((m) => {
        const now = counts.get(m.name);
        if (now && now.n === 0) return { ok: false, status: 409, body: { n: 0, rejected: now.rejected } };
        return api(`/api/metrics/${encodeURIComponent(m.name)}/estimate${m.kind === 'frequency' || isEvent(m) ? `?post=${post}` : ''}`);
      }));
      state.metrics.forEach((m, i) => {
        render(m, answers[i]);
        renderPrivacy(m);
      });
      document.body.dataset.refreshed = String(Date.now());
    } catch (e) {
      console.warn('refresh failed:', e.message);
    } finally {
      state.refreshing = null;
    }
  })();
  return state.refreshing;
}

// --- 4. the planner ---------------------------------------------------------------

/** Two significant digits: what a slider at log10 position `v` stands for. */
const sliderValue = (input) => Number((10 ** Number(input.value)).toPrecision(2));

function buildPlanner() {
  const select = $('#plan-metric');
  // RAPPOR's ε follows from f, p, q and h: no ε slider applies.
  select.replaceChildren(...state.metrics.filter((m) => m.kind !== 'rappor')
    .map((m) => el('option', { value: m.name, text: m.title ?? m.name })));
  const epsilon = $('#plan-epsilon');
  const toMetric = () => {
    epsilon.value = String(Math.log10(state.metrics.find((m) => m.name === select.value).config.epsilon));
    renderPlan();
  };
  select.addEventListener('change', toMetric);
  epsilon.addEventListener('input', renderPlan);
  $('#plan-users').addEventListener('input', renderPlan);
  toMetric();
}

/** The plan of the chosen metric at the sliders' ε and users, as error bars. */
function renderPlan() {
  const m = state.metrics.find((x) => x.name === $('#plan-metric').value);
  const epsilon = sliderValue($('#plan-epsilon'));
  const users = sliderValue($('#plan-users'));
  $('#plan-epsilon-value').textContent = String(epsilon);
  $('#plan-users-value').textContent = count.format(users);
  const result = plan({ ...m.config, epsilon }, { users });
  // A mean's error is in the range's units; every other error is a share.
  const [lo, hi] = m.kind === 'numeric' && !isRecord(m) ? m.config.range : [0, 1];
  const unit = m.kind === 'numeric' ? (m.unit ? ` ${m.unit}` : '') : ' points';
  const scale = m.kind === 'numeric' ? 1 : 100;
  const figure = (h) => `±${Number((scale * h).toPrecision(2))}${unit}`;
  // The axis ends where an estimate starts to mean something (min_users:
  // ±5 points, or ±5% of the range); wider errors run off it.
  const axis = 0.05 * (hi - lo);
  const x = (v) => 50 + 50 * Math.max(-1, Math.min(1, v / axis));
  const rows = el('div', { class: 'bars' });
  for (const p of result.protocols) {
    const half = p.errors[0].half_width;
    const track = el('div', { class: 'track' }, at(el('span', { class: 'zero' }), 50));
    if (half !== null) track.append(span(el('span', { class: half > axis ? 'ci off' : 'ci' }), x(-half), x(half)));
    rows.append(el('div', { class: `bar-row${p.auto ? ' auto' : ''}`, 'data-protocol': p.protocol, title: p.errors[0].quantity },
      el('span', { class: 'label', text: p.auto ? `${p.protocol} · auto` : p.protocol }),
      track,
      el('span', { class: 'figure', text: half === null ? 'no closed form' : figure(half) })));
  }
  rows.append(el('div', { class: 'bar-row axis' }, el('span'),
    ticks({ lo: -axis, hi: axis, step: axis, x: (v) => x(v) }, (v) => (v === 0 ? 'truth' : figure(Math.abs(v)).replace('±', v < 0 ? '−' : '+'))),
    el('span')));
  $('#plan-rows').replaceChildren(rows);
  const chosen = result.protocols.find((p) => p.auto) ?? result.protocols.find((p) => p.configured);
  const error = chosen.errors[0];
  $('#plan-note').textContent = `${result.auto ? `auto's choice: ${chosen.protocol}. ` : ''}Error shown: the ${error.quantity}. ` +
    `With ${chosen.protocol}, an estimate means little below ${count.format(chosen.min_users)} users ` +
    `(its 95% error is then wider than ±${m.kind === 'numeric' ? `5% of the range` : '5 points'}).`;
  document.body.dataset.planned = `${m.name}:${epsilon}:${users}`;
}

// --- start ----------------------------------------------------------------------

async function main() {
  try {
    await init();
    const { ok, body } = await api('/api/metrics');
    if (!ok) throw new Error(body.error);
    const loadTime = Math.round(performance.now());
    state.metrics = await Promise.all(body.metrics.map(async (m) => ({
      ...m,
      // Each simulated user is a new device: a client in memory, one fresh report each.
      simulationClient: new Client(m.config),
      // This visitor's device, one in every tab (its state in IndexedDB): a repeated choice resends its memoized report.
      surveyClient: await Client.open(isNumber(m) ? m.config : { ...m.config, memoize: true }),
    })));
    state.metrics.forEach((m) => { m.truth = m.kind === 'rappor' ? null : emptyTruth(m); });
    buildSurvey(loadTime);
    buildSimulator();
    buildDashboard();
    buildPlanner();
  } catch (e) {
    $('#questions').replaceChildren(el('p', { class: 'error', text: `The demo could not start: ${e.message}` }));
    return;
  }
  $('#survey-form').addEventListener('submit', submitSurvey);
  $('#simulate').addEventListener('click', simulate);
  const users = $('#users');
  const label = () => { $('#simulate').textContent = `Simulate ${count.format(Number(users.value))} users`; };
  users.addEventListener('change', label);
  label();
  $('#post').addEventListener('change', (e) => { state.post = e.target.value; refresh(); });
  $('#send').disabled = false;
  $('#simulate').disabled = false;
  await refresh();
  setInterval(() => { if (!document.hidden && !state.simulating) refresh(); }, REFRESH_MS);
  document.body.dataset.ready = 'true';
}

main();
