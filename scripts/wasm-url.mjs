// After the worker is bundled (scripts/build.sh): the wasm-bindgen glue in
// it looks for the wasm beside itself, which is now pkg/, not pkg/wasm/.
// Points that one URL at wasm/, and fails the build if the glue's URL is
// not there exactly once (a new wasm-bindgen may write it otherwise).
//   node scripts/wasm-url.mjs pkg/worker.js
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.argv[2];
const from = 'new URL("resq_wasm_bg.wasm", import.meta.url)';
const text = readFileSync(file, 'utf8');
const found = text.split(from).length - 1;
if (found !== 1) throw new Error(`${file}: the glue's ${from} is there ${found} times, not once`);
writeFileSync(file, text.replace(from, 'new URL("./wasm/resq_wasm_bg.wasm", import.meta.url)'));
