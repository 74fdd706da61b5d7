// The Vue app of tests/e2e/frameworks.test.mjs: `window.app` mounts lists
// of one live query (each with its own parameters, given `lists`), changes
// their SQL and parameters, shows media, and unmounts. `renders` records
// what the first list showed, render by render.
// The app is given the tab's `window.db` when the test opened one (a memory
// database, which only this tab can reach), else the database `open()` opens.
import { createApp, defineComponent, h, shallowRef } from 'vue';
import { open } from 'resq-wasm';
import { provideDatabase, useBlobUrl, useQuery } from 'resq-wasm/vue';
import { liveUrls } from './urls.js';

window.resq = { open };
const renders = [];
const inputs = shallowRef(null);
let app = null;

const List = defineComponent({
  props: { index: Number },
  setup(props) {
    const { rows, error, loading } = useQuery(
      () => inputs.value.sql,
      () => inputs.value.lists?.[props.index] ?? inputs.value.params,
    );
    return () => {
      const text = error.value ? `error: ${error.value.code}` : loading.value ? 'loading' : rows.value.map((r) => r.s).join(',');
      if (props.index === 0) renders.push(text);
      return h('p', { class: 'list' }, text);
    };
  },
});

const Media = defineComponent({
  setup() {
    const img = useBlobUrl('m', 'data', () => inputs.value.media.image, { type: 'image/png' });
    const clip = useBlobUrl('m', 'data', () => inputs.value.media.video, { type: 'video/webm' });
    return () =>
      h('div', null, [
        img.value ? h('img', { id: 'img', src: img.value }) : null,
        clip.value ? h('video', { id: 'video', src: clip.value, muted: true, preload: 'auto' }) : null,
      ]);
  },
});

const App = defineComponent({
  setup() {
    provideDatabase(window.db ?? open(inputs.value.name));
    return () =>
      h('div', null, [
        // `lists`: a parameter set for each list; else `copies` lists of `params`.
        ...Array.from({ length: inputs.value.lists?.length ?? inputs.value.copies }, (_, i) => h(List, { key: i, index: i })),
        inputs.value.media ? h(Media) : null,
      ]);
  },
});

window.app = {
  renders,
  liveUrls,
  mount(initial) {
    inputs.value = initial;
    app = createApp(App);
    app.mount('#app');
  },
  set(next) {
    inputs.value = { ...inputs.value, ...next };
  },
  unmount() {
    app.unmount();
    app = null;
  },
};
