// Small DOM helpers shared by the app's modules: element building, number
// formats, the progress bar, messages and the confirmation dialog.

export const $ = (selector) => document.querySelector(selector);

/** `h('p', { className: 'x' }, 'text', child)`: an element with properties and children. */
export function h(tag, props = {}, ...children) {
  const el = Object.assign(document.createElement(tag), props);
  el.append(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return el;
}

export function icon(name) {
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  const use = document.createElementNS('http://www.w3.org/2000/svg', 'use');
  use.setAttribute('href', `#i-${name}`);
  svg.append(use);
  return svg;
}

/** Bytes in binary units, as the package's docs count them (1 MB = 2^20 bytes). */
export function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let i = -1;
  do {
    n /= 1024;
    i++;
  } while (n >= 1024 && i < units.length - 1);
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '';
  const s = Math.round(seconds);
  const hms = [Math.floor(s / 3600), Math.floor(s / 60) % 60, s % 60];
  return (hms[0] ? [hms[0], String(hms[1]).padStart(2, '0')] : [hms[1]]).concat(String(hms[2]).padStart(2, '0')).join(':');
}

const dateFormat = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', year: 'numeric' });
export const formatDate = (ms) => dateFormat.format(new Date(ms));

/** A short message at the bottom of the page; errors stay until the next one. */
let toastTimer;
export function toast(text, { error = false } = {}) {
  const el = $('#toast');
  el.textContent = text;
  el.classList.toggle('error', error);
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), error ? 10000 : 4000);
}

/** An error for people: the package's code where there is one. */
export const describeError = (err) => (err?.code ? `${err.code}: ${err.message}` : String(err?.message ?? err));

/**
 * The progress panel. `bytes(done, total)` fills the bar; `busy(from, to)`
 * marks the part in flight, which the package stores in one call and so
 * cannot report on as it goes (a striped band, not a guess).
 */
export const progress = {
  start(title) {
    $('#progress-title').textContent = title;
    $('#progress-detail').textContent = '';
    $('#progress').hidden = false;
    this.bytes(0, 1);
  },
  bytes(done, total, detail) {
    const part = total ? done / total : 0;
    $('#progress .done').style.width = `${(100 * part).toFixed(2)}%`;
    $('#progress .busy').style.width = '0';
    $('#progress').dataset.fraction = part.toFixed(4);
    if (detail !== undefined) $('#progress-detail').textContent = detail;
  },
  busy(from, to, total) {
    $('#progress .busy').style.left = `${(100 * from) / total}%`;
    $('#progress .busy').style.width = `${(100 * (to - from)) / total}%`;
  },
  end() {
    $('#progress').hidden = true;
  },
};

/** Asks with the app's own dialog; resolves to true when confirmed. */
export function confirmed(text, ok) {
  const dialog = $('#confirm');
  $('#confirm-text').textContent = text;
  $('#confirm-ok').textContent = ok;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true }));
}
