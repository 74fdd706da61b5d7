// WebDriver client for WebKitWebDriver on :4477 (started by run-webkit.sh)
const D = 'http://127.0.0.1:4477';
const MB = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
async function wd(method, path, body) {
  const r = await fetch(D + path, { method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
  const j = await r.json(); if (j.value && j.value.error) throw new Error(JSON.stringify(j.value)); return j.value;
}
(async () => {
  const s = await wd('POST', '/session', { capabilities: { alwaysMatch: { 'webkitgtk:browserOptions': { binary: MB,
    args: ['--automation', '--features=+StorageAPI,+StorageAPIEstimate,+FileSystem,+AccessHandle,+FileSystemWritableStream'] } } } });
  const id = s.sessionId; const out = { engine: 'webkit', version: s.capabilities && s.capabilities.browserVersion };
  await wd('POST', `/session/${id}/timeouts`, { script: 300000, pageLoad: 60000 });
  for (const phase of ['write', 'read']) {
    await wd('POST', `/session/${id}/url`, { url: 'http://localhost:8765/index.html?phase=' + phase });
    out[phase] = await wd('POST', `/session/${id}/execute/async`, { script:
      'const cb = arguments[arguments.length-1]; (function poll(){ if (window.__result) cb(window.__result); else setTimeout(poll, 250); })();', args: [] });
    await wd('POST', `/session/${id}/url`, { url: 'about:blank' });
  }
  await wd('DELETE', `/session/${id}`);
  require('fs').writeFileSync('result-webkit.json', JSON.stringify(out, null, 1));
  console.log(JSON.stringify(out, null, 1));
})().catch((e) => { console.error(e); process.exit(1); });
