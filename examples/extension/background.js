// The extension's service worker (a module): randomizes the browser's UI
// language on this device with localdp's client build and posts only the
// report to a localdp collector. The metric's config comes from
// metrics.json, the same file the collector serves it from, so the two
// cannot drift apart; the collector's address from settings.json.
// A service worker cannot import() a module later, so it imports the entry of
// its metric's family (GRR's own; localdp/client/web/FAMILY), which setup.mjs
// copied with that family's wasm alone.
import { Client, chromeStorage } from './localdp/dist/client/web/families/grr/localdp.js';

const METRIC = 'ui_language';

/** The client and the collector's address, once per service worker start. */
const ready = (async () => {
  const json = async (file) => (await fetch(chrome.runtime.getURL(file))).json();
  const [metrics, settings] = await Promise.all([json('metrics.json'), json('settings.json')]);
  const { config } = metrics.find((m) => m.name === METRIC);
  // chrome.storage.local is shared by the service worker and the extension's
  // pages (serialized with Web Locks), and survives the worker's restarts:
  // one permanent response per value and one ledger for the whole extension.
  const client = await Client.open(config, { storage: chromeStorage() });
  return { client, collector: settings.collector, domain: config.domain };
})();

/** Randomizes the UI language and posts the report; resolves to the collector's answer. */
async function sendReport() {
  const { client, collector, domain } = await ready;
  const language = navigator.language.split('-')[0];
  const report = await client.randomize(domain.includes(language) ? language : 'other');
  const response = await fetch(`${collector}/api/metrics/${METRIC}/reports`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(report),
  });
  if (!response.ok) throw new Error(`the collector answered ${response.status}`);
  return response.json();
}

// Once when installed or updated, and once per browser start. The value is
// memoized, so every report of one language is the same report; the budget
// refuses (PrivacyBudgetExceeded) before it would be exceeded.
chrome.runtime.onInstalled.addListener(() => sendReport().catch((e) => console.error('localdp:', e.name)));
chrome.runtime.onStartup.addListener(() => sendReport().catch((e) => console.error('localdp:', e.name)));
