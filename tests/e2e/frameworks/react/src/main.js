// The React app of tests/e2e/frameworks.test.mjs: `window.app` mounts lists
// of one live query (in StrictMode; each with its own parameters, given
// `lists`), changes their SQL and parameters, shows media, and unmounts.
// `renders` records what the first list showed, render by render. The
// provider gets the tab's `window.db` when the test opened one (a memory
// database, which only this tab can reach), else the database `open()`
// opens.
import { StrictMode, createElement as h, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { open } from 'resq-wasm';
import { DatabaseProvider, useBlobUrl, useQuery } from 'resq-wasm/react';
import { liveUrls } from './urls.js';

window.resq = { open };
const renders = [];
let setInputs = null;
let root = null;

function List({ index, sql, params }) {
  const { rows, error, loading } = useQuery(sql, params);
  const text = error ? `error: ${error.code}` : loading ? 'loading' : rows.map((r) => r.s).join(',');
  if (index === 0) renders.push(text);
  return h('p', { className: 'list' }, text);
}

function Media({ image, video }) {
  const img = useBlobUrl('m', 'data', image, { type: 'image/png' });
  const clip = useBlobUrl('m', 'data', video, { type: 'video/webm' });
  return h(
    'div',
    null,
    img && h('img', { id: 'img', src: img }),
    clip && h('video', { id: 'video', src: clip, muted: true, preload: 'auto' }),
  );
}

function App({ initial }) {
  const [inputs, set] = useState(initial);
  setInputs = set;
  // `lists`: a parameter set for each list; else `copies` lists of `params`.
  const sets = inputs.lists ?? Array.from({ length: inputs.copies }, () => inputs.params);
  const lists = sets.map((params, i) => h(List, { key: i, index: i, sql: inputs.sql, params }));
  return h('div', null, ...lists, inputs.media ? h(Media, inputs.media) : null);
}

window.app = {
  renders,
  liveUrls,
  mount(initial) {
    root = createRoot(document.querySelector('#app'));
    root.render(h(StrictMode, null, h(DatabaseProvider, { database: window.db ?? open(initial.name) }, h(App, { initial }))));
  },
  set(next) {
    setInputs((inputs) => ({ ...inputs, ...next }));
  },
  unmount() {
    root.unmount();
    root = null;
  },
};
